/**
 * BufferRoutes owns `GET /api/buffers` (docs/decisions/web.md "The web client's server surface"): every buffer with
 * history of every network of the member — channels, queries and the `:server:<id>` buffers — with its last
 * message, its read marker and the unread and highlight counts (ReadMarkers.buffers), so a tab opening draws its
 * buffer list in one request. Highlights are judged against the member's nick on each network as its actor reports
 * it now (NetworkControl), or the configured nick while not connected, compared under the network's CASEMAPPING.
 * Credentials as every /api route of the member (MemberCredential.memberRequest); `no-store`. Stateless.
 */
import { Effect, Either } from "effect"
import { NetworkControl } from "../../actors/NetworkApi.js"
import { toIsoTime } from "../../schema/Ids.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { Authenticator } from "../../services/identity/Authenticator.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { Networks } from "../../services/networks/Networks.js"
import { type BufferState, ReadMarkers, type SelfOnNetwork } from "../../services/history/ReadMarkers.js"
import { memberRequest, memberRequestServices } from "../auth/MemberCredential.js"
import { json, type Route } from "../HttpServer.js"
import { noStore } from "../oauth/OAuthHttp.js"

/** A buffer as `GET /api/buffers` lists it, and as the socket's first view carries it (src/http/ws/FirstView.ts). */
export const bufferJson = (row: BufferState) => ({
  networkId: row.networkId,
  target: row.target,
  kind: row.kind,
  lastMessageId: row.lastMessageId,
  lastMessageAt: toIsoTime(row.lastMessageAt),
  readMessageId: row.readMessageId,
  unread: row.unread,
  highlights: row.highlights
})

export const BUFFERS_PATH = "/api/buffers"

export const bufferRoutes = Effect.gen(function*() {
  const services = yield* memberRequestServices
  const networks = yield* Networks
  const control = yield* NetworkControl
  const markers = yield* ReadMarkers

  const list: Route = {
    method: "GET",
    path: BUFFERS_PATH,
    name: "buffers.list",
    handler: (request) =>
      Effect.gen(function*() {
        const who = yield* memberRequest(services, request, false)
        if (Either.isLeft(who)) return who.left
        const owned = yield* networks.listForAccount(who.right.accountId)
        const selves = yield* Effect.forEach(owned, (network) =>
          Effect.map(control.status(network.id), (status): SelfOnNetwork => ({
            networkId: network.id,
            nick: status.nick ?? network.nick,
            caseMapping: status.caseMapping
          })))
        const rows = yield* markers.buffers(selves)
        return json(200, {
          buffers: rows.map(bufferJson)
        }, noStore)
      })
  }

  return [list] as ReadonlyArray<Route>
})
