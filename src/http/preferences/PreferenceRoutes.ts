/**
 * PreferenceRoutes owns the web client's REST routes of what the member chose (docs/contract.md "Preferences"), JSON
 * in and out, every answer `no-store`, credentials as every /api route of the member (MemberCredential.memberRequest:
 * the session cookie, same-origin for writes, or a Bearer OAuth / password-sign-in token; an API token → 401; a write
 * on a paused account → 403 account_paused):
 *
 * - `GET /api/preferences` → `{client: {theme, linkPreviews, …}, buffers: [{networkId, target, pinned, muted,
 *   detached, notify}]}`: the client document and every buffer with a non-default choice.
 * - `PUT /api/preferences/client` with a JSON object of settings → 200 `{client}` as stored (merged over what was
 *   stored; null removes an extra key). A bad value → 400 invalid_request naming it; nothing changes.
 * - `PUT /api/buffers/{networkId}/{target}/preferences` (the target percent-encoded: `%23belay`) with any of
 *   `{pinned, muted, detached, notify}` → 200 `{networkId, target, pinned, muted, detached, notify}` as stored. Not a
 *   network of the member → 404 not_found; a bad body or target → 400 invalid_request; the account holds
 *   BUFFER_PREFERENCES_PER_ACCOUNT buffers with a choice → 409 `{error: "quota_exceeded", limit: "buffer-preferences",
 *   max}`; nothing changes.
 *
 * Stateless; the services are safe under concurrency.
 */
import { Effect, Either, Schema } from "effect"
import { NetworkControl } from "../../actors/NetworkApi.js"
import { BufferChoicePatch } from "../../schema/Preferences.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { Authenticator } from "../../services/identity/Authenticator.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { BufferPreferences, TARGET_MAX, validTarget } from "../../services/preferences/BufferPreferences.js"
import { ClientPreferences } from "../../services/preferences/ClientPreferences.js"
import { memberRequest, memberRequestServices } from "../auth/MemberCredential.js"
import { json, type Route } from "../HttpServer.js"
import { noStore, readOAuthBody } from "../oauth/OAuthHttp.js"

export const PreferencePaths = {
  all: "/api/preferences",
  client: "/api/preferences/client",
  buffer: "/api/buffers/:networkId/:target/preferences"
} as const

const decodePatch = Schema.decodeUnknownEither(Schema.Struct({ ...BufferChoicePatch.fields }), { onExcessProperty: "error" })

const invalid = (description: string) => json(400, { error: "invalid_request", error_description: description }, noStore)
const notFound = () => json(404, { error: "not_found", error_description: "no such network of yours" }, noStore)

export const preferenceRoutes = Effect.gen(function*() {
  const services = yield* memberRequestServices
  const buffers = yield* BufferPreferences
  const client = yield* ClientPreferences
  const control = yield* NetworkControl

  const all: Route = {
    method: "GET",
    path: PreferencePaths.all,
    name: "preferences.get",
    handler: (request) =>
      Effect.gen(function*() {
        const who = yield* memberRequest(services, request, false)
        if (Either.isLeft(who)) return who.left
        const [document, list] = yield* Effect.all([client.get(who.right.accountId), buffers.list(who.right.accountId)])
        return json(200, { client: document, buffers: list }, noStore)
      })
  }

  const putClient: Route = {
    method: "PUT",
    path: PreferencePaths.client,
    name: "preferences.client",
    handler: (request) =>
      Effect.gen(function*() {
        const who = yield* memberRequest(services, request, true)
        if (Either.isLeft(who)) return who.left
        const body = yield* readOAuthBody(request, { form: false, json: true })
        const value = body instanceof URLSearchParams ? undefined : body.json
        const stored = yield* Effect.either(client.update(who.right.accountId, value))
        if (Either.isLeft(stored)) return invalid(stored.left.message)
        return json(200, { client: stored.right }, noStore)
      }).pipe(Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)))
  }

  const putBuffer: Route = {
    method: "PUT",
    path: PreferencePaths.buffer,
    name: "preferences.buffer",
    handler: (request) =>
      Effect.gen(function*() {
        const who = yield* memberRequest(services, request, true)
        if (Either.isLeft(who)) return who.left
        const rawId = request.params.networkId ?? ""
        if (!/^\d{1,15}$/.test(rawId)) return notFound()
        const networkId = Number(rawId)
        const target = request.params.target ?? ""
        if (!validTarget(target)) return invalid(`target must be 1 to ${TARGET_MAX} characters without spaces or commas`)
        const body = yield* readOAuthBody(request, { form: false, json: true })
        const decoded = decodePatch(body instanceof URLSearchParams ? undefined : body.json)
        if (Either.isLeft(decoded)) {
          return invalid("send an object with any of pinned, muted, detached (booleans) and notify (all, highlights or none)")
        }
        const status = yield* control.status(networkId)
        const stored = yield* Effect.either(buffers.set(who.right.accountId, networkId, status.caseMapping, target, decoded.right))
        if (Either.isRight(stored)) return json(200, stored.right, noStore)
        const error = stored.left
        if (error._tag === "PreferencesFull") {
          return json(409, { error: "quota_exceeded", error_description: error.message, limit: "buffer-preferences", max: error.max }, noStore)
        }
        return error.reason === "unknown-network" ? notFound() : invalid(error.message)
      }).pipe(Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)))
  }

  return [all, putClient, putBuffer] as ReadonlyArray<Route>
})
