/**
 * PasskeysSettings owns Settings > Passkeys: the list (name, added, last used), adding one
 * — `POST /settings/passkeys/options` `{name}` → the WebAuthn creation options with a
 * single-use challenge bound to this session (409 `quota_exceeded` when the account already
 * holds its `passkeys` limit: refused before the authenticator is asked); `POST /settings/passkeys` `{credential}` →
 * verified (PasskeyCeremonies.register: origin and RP ID of the issuer, user verification)
 * and stored → 201 `{id}` — and removing one (a form). The JSON routes are driven by
 * PasskeyScript.ts and answer refusals as `{error, message}` for it to show.
 * Checks: SettingsHttp. Stateless.
 */
import { Effect, Either, Schema } from "effect"
import { MemberPaths, PasskeyOptionsRequest, PasskeyRegisterRequest } from "../../schema/MemberApi.js"
import type { QuotaExceeded } from "../../schema/ToolErrors.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { PasskeyCeremonies } from "../../services/identity/PasskeyCeremonies.js"
import { isValidPasskeyName, Passkeys } from "../../services/identity/Passkeys.js"
import { json, type Route } from "../HttpServer.js"
import { noStore, page, seeOther } from "../oauth/OAuthHttp.js"
import { type Notice, passkeysPage } from "../pages/SettingsPages.js"
import { guarded, makeSettingsHttp } from "./SettingsHttp.js"

const notices: Readonly<Record<string, Notice>> = {
  removed: { kind: "ok", text: "The passkey was removed. It can no longer sign you in." },
  "not-found": { kind: "error", text: "You have no such passkey." }
}

const decodeOptions = Schema.decodeUnknownEither(PasskeyOptionsRequest)
const decodeRegister = Schema.decodeUnknownEither(PasskeyRegisterRequest)

const refusal = (status: number, message: string) => json(status, { error: "invalid_request", message }, noStore)

/** docs/contract.md "Account limits": `message` for PasskeyScript to show, the limit named for a program. */
const quotaRefusal = (e: QuotaExceeded) =>
  Effect.succeed(json(409, { error: "quota_exceeded", message: e.message, limit: e.limit, max: e.max }, noStore))

export const passkeysSettingsRoutes = Effect.gen(function*() {
  const config = yield* AppConfig
  const passkeys = yield* Passkeys
  const ceremonies = yield* PasskeyCeremonies
  const http = makeSettingsHttp(config, { sessions: yield* BrowserSessions, accounts: yield* Accounts })

  const show: Route = {
    method: "GET",
    path: MemberPaths.passkeys,
    name: "settings.passkeys",
    handler: (request) =>
      guarded(http.visit(request), (visit) =>
        Effect.map(passkeys.list(visit.member.session.accountId), (list) =>
          page(200, passkeysPage(visit.context, { passkeys: list, notice: notices[request.query.get("done") ?? ""] }))))
  }

  const options: Route = {
    method: "POST",
    path: MemberPaths.passkeyOptions,
    name: "settings.passkeys.options",
    handler: (request) =>
      guarded(http.jsonPost(request), (post) => {
        const decoded = decodeOptions(post.json)
        const name = Either.isRight(decoded) ? decoded.right.name.trim() : ""
        if (!isValidPasskeyName(name)) return Effect.succeed(refusal(400, "Give the passkey a name of 1 to 64 characters."))
        const session = post.member.session
        return ceremonies.registrationOptions(post.issuer, { accountId: session.accountId, accountName: post.member.accountName, sessionId: session.sessionId }, name).pipe(
          Effect.map((body) => json(200, body, noStore)),
          // Refused before the authenticator is asked (and again at the end, for a race): the same 409 as there.
          Effect.catchTag("QuotaExceeded", quotaRefusal)
        )
      }).pipe(Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)))
  }

  const register: Route = {
    method: "POST",
    path: MemberPaths.passkeys,
    name: "settings.passkeys.add",
    handler: (request) =>
      guarded(http.jsonPost(request), (post) => {
        const decoded = decodeRegister(post.json)
        if (Either.isLeft(decoded)) return Effect.succeed(refusal(400, "The passkey answer could not be read."))
        const session = post.member.session
        return ceremonies.register(post.issuer, { accountId: session.accountId, sessionId: session.sessionId }, decoded.right.credential).pipe(
          Effect.map((id) => json(201, { id }, noStore)),
          Effect.catchTag("PasskeyNotRegistered", (e) => Effect.succeed(refusal(400, `The passkey was not added: ${e.reason}.`))),
          Effect.catchTag("QuotaExceeded", quotaRefusal)
        )
      }).pipe(Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)))
  }

  const remove: Route = {
    method: "POST",
    path: MemberPaths.passkeyRemove,
    name: "settings.passkeys.remove",
    handler: (request) =>
      guarded(http.formPost(request, MemberPaths.passkeys), (post) =>
        Effect.gen(function*() {
          const id = Number(request.params["id"])
          const removed = Number.isSafeInteger(id) && id > 0 ? yield* passkeys.remove(post.member.session.accountId, id) : false
          return seeOther(`${MemberPaths.passkeys}?done=${removed ? "removed" : "not-found"}`)
        })).pipe(Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)))
  }

  return [show, options, register, remove] as ReadonlyArray<Route>
})
