/**
 * NetworkRoutes owns `/api/networks`: the member's IRC networks added, edited and removed from the browser
 * (docs/decisions/web.md "The web client's server surface"). JSON in and out, every answer `no-store`, credentials as
 * every /api route of the member (MemberCredential.memberRequest: the session cookie, same-origin for writes, or a
 * Bearer OAuth / password-sign-in token; an API token → 401; a write on a paused account → 403 account_paused).
 *
 * - `GET /api/networks` → `{networks: [<network>]}`.
 * - `POST /api/networks` `{name, host, port, tls, nick, username?, realname?, password?, channels?}` → 201
 *   `<network>`, through Networks.add as `belay network add` (the same Schemas, src/schema/Network.ts; lockdown
 *   applies when the network connects, as for the CLI); a name the account already uses → 409 network_exists; a
 *   limit reached (networks, or channels in `channels`) → 409 quota_exceeded, nothing added.
 * - `PATCH /api/networks/{id}` with any of those fields (`password`, `username`, `realname`: null clears) → 200
 *   `<network>` (Networks.update; the supervisor reconnects the network when host, port, tls, nick or password
 *   changed). Not a network of the member → 404.
 * - `DELETE /api/networks/{id}` → 204 (Networks.remove, as `belay network remove`: the actor stops and the
 *   history goes with the network).
 *
 * `<network>` is `{id, name, host, port, tls, nick, username, realname, channels, hasPassword, state, currentNick,
 * lastError, nextRetryAt}`: the stored settings (`nick` the configured one, `channels` those joined on connect)
 * and the live connection as list_networks shows it; never a password. Bad input → 400 invalid_request naming the
 * field, and nothing changes. Stateless.
 */
import { Effect, Either, Option, ParseResult, Schema } from "effect"
import { NetworkControl } from "../../actors/NetworkApi.js"
import {
  AutojoinChannel,
  NetworkHost,
  NetworkName,
  NetworkNick,
  NetworkPort,
  NetworkRealname,
  NetworkUsername,
  ServerPassword
} from "../../schema/Network.js"
import { listProblems } from "../../schema/ProblemList.js"
import { QuotaExceeded } from "../../schema/ToolErrors.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { Authenticator } from "../../services/identity/Authenticator.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { type NetworkSummary, Networks } from "../../services/networks/Networks.js"
import { memberRequest, memberRequestServices } from "../auth/MemberCredential.js"
import { type HttpRequest, type HttpResponse, json, type Route } from "../HttpServer.js"
import { noStore, readOAuthBody } from "../oauth/OAuthHttp.js"
import { quotaExceeded } from "../QuotaResponse.js"

export const NetworkPaths = {
  networks: "/api/networks",
  network: "/api/networks/:id"
} as const

const strict = { onExcessProperty: "error" } as const

const NewNetwork = Schema.Struct({
  name: NetworkName,
  host: NetworkHost,
  port: NetworkPort,
  tls: Schema.Boolean,
  nick: NetworkNick,
  username: Schema.optional(NetworkUsername),
  realname: Schema.optional(NetworkRealname),
  password: Schema.optional(ServerPassword),
  channels: Schema.optional(Schema.Array(AutojoinChannel))
})

const NetworkPatch = Schema.Struct({
  name: Schema.optional(NetworkName),
  host: Schema.optional(NetworkHost),
  port: Schema.optional(NetworkPort),
  tls: Schema.optional(Schema.Boolean),
  nick: Schema.optional(NetworkNick),
  username: Schema.optional(Schema.NullOr(NetworkUsername)),
  realname: Schema.optional(Schema.NullOr(NetworkRealname)),
  password: Schema.optional(Schema.NullOr(ServerPassword)),
  channels: Schema.optional(Schema.Array(AutojoinChannel))
})

const decodeNew = Schema.decodeUnknownEither(NewNetwork, strict)
const decodePatch = Schema.decodeUnknownEither(NetworkPatch, strict)

const invalid = (description: string) => json(400, { error: "invalid_request", error_description: description }, noStore)
const notFound = () => json(404, { error: "not_found", error_description: "no such network" }, noStore)

/** The problems of a body that does not decode (ProblemList), each with the field it is about. */
const describe = (error: ParseResult.ParseError): string =>
  listProblems(ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => (issue.path.length === 0 ? issue.message : `${issue.path.join(".")}: ${issue.message}`)))

/** `:id` as a network id, when it is one. */
const idOf = (request: HttpRequest): Option.Option<number> => {
  const raw = request.params.id ?? ""
  return /^\d{1,15}$/.test(raw) ? Option.some(Number(raw)) : Option.none()
}

export const networkRoutes = Effect.gen(function*() {
  const services = yield* memberRequestServices
  const networks = yield* Networks
  const control = yield* NetworkControl

  const view = (network: NetworkSummary, channels: ReadonlyArray<string>) =>
    Effect.map(control.status(network.id), (status) => ({
      id: network.id,
      name: network.name,
      host: network.host,
      port: network.port,
      tls: network.tls,
      nick: network.nick,
      username: network.username,
      realname: network.realname,
      channels,
      hasPassword: network.hasServerPassword,
      state: status.state,
      currentNick: status.nick,
      lastError: status.lastError,
      nextRetryAt: status.nextRetryAt
    }))

  /** One network of the account as the routes answer it; None when it is not the account's (or is gone). */
  const viewOne = (accountId: number, networkId: number) =>
    Effect.gen(function*() {
      const network = yield* networks.owned(accountId, networkId)
      if (Option.isNone(network)) return Option.none()
      const channels = (yield* networks.autojoin(accountId)).get(networkId) ?? []
      return Option.some(yield* view(network.value, channels))
    })

  /** The JSON body, decoded; or the answer that refuses it. */
  const bodyOf = <A>(request: HttpRequest, decode: (u: unknown) => Either.Either<A, ParseResult.ParseError>) =>
    readOAuthBody(request, { form: false, json: true }).pipe(
      Effect.map((body) => {
        const decoded = decode(body instanceof URLSearchParams ? undefined : body.json)
        return Either.mapLeft(decoded, (error) => invalid(describe(error)))
      }),
      Effect.catchTag("BodyRefused", (refused) => Effect.succeed(Either.left<HttpResponse>(refused.response)))
    )

  const list: Route = {
    method: "GET",
    path: NetworkPaths.networks,
    name: "networks.list",
    handler: (request) =>
      Effect.gen(function*() {
        const who = yield* memberRequest(services, request, false)
        if (Either.isLeft(who)) return who.left
        const owned = yield* networks.listForAccount(who.right.accountId)
        const channels = yield* networks.autojoin(who.right.accountId)
        const views = yield* Effect.forEach(owned, (network) => view(network, channels.get(network.id) ?? []))
        return json(200, { networks: views }, noStore)
      })
  }

  /**
   * A change the service refused: the name is taken → 409 network_exists; a limit reached → 409 quota_exceeded
   * (docs/contract.md "Account limits"); an address the destination guard refuses → 400 invalid_request naming the
   * host, the address and its class (docs/decisions/hosting.md "One destination guard"); anything else (not the member's network) → 404.
   */
  const refused = (error: { readonly _tag: string; readonly message: string }) =>
    error instanceof QuotaExceeded
      ? quotaExceeded(error)
      : error._tag === "NetworkExists"
      ? json(409, { error: "network_exists", error_description: error.message }, noStore)
      : error._tag === "DestinationRefused"
      ? invalid(`host: ${error.message}`)
      : notFound()

  /** The network as it is now, with `status`; 404 if it went meanwhile. */
  const answerWith = (accountId: number, networkId: number, status: number) =>
    Effect.map(viewOne(accountId, networkId), (view) =>
      Option.match(view, { onNone: notFound, onSome: (network) => json(status, network, noStore) }))

  const add: Route = {
    method: "POST",
    path: NetworkPaths.networks,
    name: "networks.add",
    handler: (request) =>
      Effect.gen(function*() {
        const who = yield* memberRequest(services, request, true)
        if (Either.isLeft(who)) return who.left
        const body = yield* bodyOf(request, decodeNew)
        if (Either.isLeft(body)) return body.left
        const input = body.right
        const account = yield* services.accounts.findById(who.right.accountId)
        if (Option.isNone(account)) return notFound()
        const added = yield* networks.add(account.value.name, {
          name: input.name,
          host: input.host,
          port: input.port,
          tls: input.tls,
          tlsInsecure: false,
          nick: input.nick,
          username: Option.fromNullable(input.username),
          realname: Option.fromNullable(input.realname),
          serverPassword: Option.fromNullable(input.password),
          sasl: Option.none(),
          join: input.channels ?? []
        }).pipe(Effect.either)
        if (Either.isLeft(added)) return refused(added.left)
        return yield* answerWith(who.right.accountId, added.right, 201)
      })
  }

  const edit: Route = {
    method: "PATCH",
    path: NetworkPaths.network,
    name: "networks.edit",
    handler: (request) =>
      Effect.gen(function*() {
        const who = yield* memberRequest(services, request, true)
        if (Either.isLeft(who)) return who.left
        const id = idOf(request)
        if (Option.isNone(id)) return notFound()
        const body = yield* bodyOf(request, decodePatch)
        if (Either.isLeft(body)) return body.left
        const patch = body.right
        const updated = yield* networks.update(who.right.accountId, id.value, {
          name: patch.name,
          host: patch.host,
          port: patch.port,
          tls: patch.tls,
          nick: patch.nick,
          username: patch.username,
          realname: patch.realname,
          serverPassword: patch.password,
          join: patch.channels
        }).pipe(Effect.either)
        if (Either.isLeft(updated)) return refused(updated.left)
        return yield* answerWith(who.right.accountId, id.value, 200)
      })
  }

  const remove: Route = {
    method: "DELETE",
    path: NetworkPaths.network,
    name: "networks.remove",
    handler: (request) =>
      Effect.gen(function*() {
        const who = yield* memberRequest(services, request, true)
        if (Either.isLeft(who)) return who.left
        const id = idOf(request)
        if (Option.isNone(id)) return notFound()
        const account = yield* services.accounts.findById(who.right.accountId)
        if (Option.isNone(account)) return notFound()
        const removed = yield* networks.remove(account.value.name, id.value).pipe(Effect.either)
        return Either.isLeft(removed) ? notFound() : { status: 204, headers: noStore }
      })
  }

  return [list, add, edit, remove] as ReadonlyArray<Route>
})
