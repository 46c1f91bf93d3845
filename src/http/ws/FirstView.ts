/**
 * FirstView: what a new tab draws first, carried by the socket's `hello` when the tab asks with `?first=`
 * (docs/contract.md "The member's browser surface", WebSocket): the member's networks with their state, every buffer
 * as `GET /api/buffers` lists them, and the newest page of the buffer the tab opens first as `recent_messages` answers
 * it, through the same dispatcher and checks as a `call` frame. A tab that had to wait for the upgrade, then for the
 * buffer list and the socket's hello, and only then ask for the page, draws after the one exchange, as The Lounge's
 * `init` does.
 *
 * `?first=<networkId>:<target>` names the buffer the tab will open (its URL's, or the one it showed last); `?first=`
 * (empty) leaves it to the server, which picks as the web client does without one: the most recently active channel,
 * else the server buffer of the member's first network. A name that is none of the member's buffers, or does not
 * read as one, is that empty pick: it is a preference, and a tab with a stale one must still open. No `first`: the
 * hello of before, nothing read.
 *
 * Stateless; one call per socket, on the socket's fiber, before `hello` is sent.
 */
import { Effect, Option } from "effect"
import { foldCase } from "../../irc/CaseMapping.js"
import { SERVER_BUFFER_PREFIX } from "../../schema/Ids.js"
import type { NetworkControlService } from "../../actors/NetworkApi.js"
import type { ReadMarkers, SelfOnNetwork } from "../../services/history/ReadMarkers.js"
import type { Networks } from "../../services/networks/Networks.js"
import { bufferJson } from "../buffers/BufferRoutes.js"
import type { McpDispatcher } from "../mcp/McpDispatcher.js"
import type { ToolCaller } from "../mcp/ToolHandlers.js"

/** What the first view reads (SocketSession's services). */
export interface FirstViewServices {
  readonly networks: Networks
  readonly control: NetworkControlService
  readonly markers: ReadMarkers
  readonly dispatcher: McpDispatcher
}

/** The page of the first buffer: the web client's page (client/src/Store.ts `PAGE`), which it also asks for later. */
export const FIRST_PAGE = 150

/** The longest `first` read (a network id, `:`, and a target far longer than any IRC name). */
const FIRST_MAX = 1024

/** What the tab asked for: the server's pick, or a buffer it names. */
export type FirstWish =
  | { readonly _tag: "Pick" }
  | { readonly _tag: "Named"; readonly networkId: number; readonly target: string }

/** `?first=`: None when absent; a name that does not read as `<networkId>:<target>` is the server's pick. */
export const parseFirst = (raw: string | null): Option.Option<FirstWish> => {
  if (raw === null) return Option.none()
  const named = raw.length <= FIRST_MAX ? /^(\d{1,15}):(.+)$/su.exec(raw) : null
  if (named === null) return Option.some({ _tag: "Pick" })
  return Option.some({ _tag: "Named", networkId: Number(named[1]), target: named[2]! })
}

/**
 * The `first` member of `hello`, as JSON (src/schema/SocketFrame.ts `FirstView`): `{networks, buffers, open}`, `open`
 * the buffer drawn first with its page (`{networkId, target, limit, page}`, `page` the payload `recent_messages`
 * gives), or null when the member has no buffer with history or the page could not be read.
 */
export const firstView = (
  services: FirstViewServices,
  accountId: number,
  caller: Option.Option<ToolCaller>,
  wish: FirstWish
): Effect.Effect<string> =>
  Effect.gen(function*() {
    const owned = yield* services.networks.listForAccount(accountId)
    const statuses = yield* Effect.forEach(owned, (network) => services.control.status(network.id))
    const networks = JSON.stringify(owned.map((network, i) => ({
      id: network.id,
      name: network.name,
      state: statuses[i]!.state,
      nick: statuses[i]!.nick
    })))
    const selves = owned.map((network, i): SelfOnNetwork => ({
      networkId: network.id,
      nick: statuses[i]!.nick ?? network.nick,
      caseMapping: statuses[i]!.caseMapping
    }))
    const rows = yield* services.markers.buffers(selves)
    // The same rows as GET /api/buffers (src/http/buffers/BufferRoutes.ts), most recently active first.
    const buffers = JSON.stringify(rows.map(bufferJson))
    // The name the tab gave, compared as the network compares names (the tab folds with RFC 1459's rule).
    const mapping = wish._tag === "Named" ? selves.find((s) => s.networkId === wish.networkId)?.caseMapping : undefined
    const wanted = wish._tag === "Named" && mapping !== undefined
      ? rows.find((row) => row.networkId === wish.networkId && foldCase(mapping, row.target) === foldCase(mapping, wish.target))
      : undefined
    const channel = wanted ?? rows.find((row) => row.kind === "channel")
    const first = owned[0]
    const open = channel ?? (first === undefined ? undefined : { networkId: first.id, target: `${SERVER_BUFFER_PREFIX}${first.id}` })
    if (open === undefined || Option.isNone(caller)) return `{"networks":${networks},"buffers":${buffers},"open":null}`
    const outcome = yield* services.dispatcher.call(caller.value, "recent_messages", {
      networkId: open.networkId,
      target: open.target,
      limit: FIRST_PAGE
    })
    if (outcome.isError) return `{"networks":${networks},"buffers":${buffers},"open":null}`
    // The payload's JSON as the dispatcher made it, spliced in as a `result` frame's is (SocketSession.ts).
    const head = JSON.stringify({ networkId: open.networkId, target: open.target, limit: FIRST_PAGE })
    return `{"networks":${networks},"buffers":${buffers},"open":${head.slice(0, -1)},"page":${outcome.result.json}}}`
  })
