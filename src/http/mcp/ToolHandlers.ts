/**
 * ToolHandlers binds each of the 23 tool contracts (src/schema/McpTools.ts) to the
 * services that do the work: reads go to the stores, IRC actions to the network actors
 * through their port `NetworkControl`. Handlers receive decoded, defaulted arguments and an
 * authenticated principal whose scope the dispatcher has already checked; they fail only
 * with the typed ToolFailures of src/schema/ToolErrors.ts. The port speaks the same
 * vocabulary (src/schema records, ToolErrors failures), so its answers and failures pass
 * through unchanged; ToolErrors.toToolFailurePayload is the one place a failure becomes wire
 * data. Stateless.
 */
import { Effect, Either, Option, type Schema } from "effect"
import { NetworkControl } from "../../actors/NetworkApi.js"
import { type CaseMapping, foldCase } from "../../irc/CaseMapping.js"
import { serverBufferTarget, toIsoTime } from "../../schema/Ids.js"
import type { ToolByName, ToolInput, ToolName } from "../../schema/McpTools.js"
import type { Message as MessageSchema } from "../../schema/Message.js"
import type { NetworkStatus } from "../../schema/Network.js"
import { type SerializedPart, serializedPart, SerializedPayload } from "../../schema/ToolCatalog.js"
import { NotConnected, type ToolFailure, UnknownNetwork } from "../../schema/ToolErrors.js"
import type { Principal } from "../../services/identity/Authenticator.js"
import { MessageHistory, type StoredMessage } from "../../services/history/MessageHistory.js"
import { type NetworkListing, Networks } from "../../services/networks/Networks.js"
import { NickNotes, type RelayBotMarks } from "../../services/networks/NickNotes.js"
import { serializedMessageRecord, toMessageRecord } from "../../services/history/MessageRecord.js"
import { flatMapNow, mapNow } from "../Immediate.js"

/** What a handler returns: the output in its wire (encoded) form, which is what is serialized. */
export type ToolPayload<N extends ToolName> = Schema.Schema.Encoded<ToolByName<N>["output"]>

/**
 * Who calls a tool, as far as the tools care: the account, and the scope it may use now. A bearer token's Principal
 * is one; the browser session of the WebSocket is another (src/http/ws/).
 */
export type ToolCaller = Pick<Principal, "accountId" | "grantedScope" | "paused" | "scope">

/** A handler's output: the payload as a value, or already serialized (ToolCatalog's SerializedPayload). */
export type ToolHandler<N extends ToolName> = (
  principal: ToolCaller,
  input: ToolInput<N>
) => Effect.Effect<ToolPayload<N> | SerializedPayload<ToolPayload<N>>, ToolFailure>

export type ToolHandlerTable = { readonly [N in ToolName]: ToolHandler<N> }

type Message = Schema.Schema.Encoded<typeof MessageSchema>

export const makeToolHandlers = Effect.gen(function*() {
  const networks = yield* Networks
  const store = yield* MessageHistory
  const notes = yield* NickNotes
  const control = yield* NetworkControl

  /**
   * The network (its id) if it belongs to the principal's account; every tool with a networkId starts here. An owner
   * kept in memory gives an Exit (Immediate.ts), so a read answered from memory needs no fiber.
   */
  const owned = (principal: ToolCaller, networkId: number): Effect.Effect<{ readonly id: number }, UnknownNetwork> =>
    flatMapNow(
      networks.isOwnedBy(principal.accountId, networkId),
      (mine) => (mine ? Effect.succeed({ id: networkId }) : Effect.fail(new UnknownNetwork({ networkId })))
    )

  /** The network's status: read at once when the port has it at hand (NetworkApi's `statusNow`), else asked. */
  const statusOf = (networkId: number): Effect.Effect<NetworkStatus> => {
    const now = control.statusNow?.(networkId)
    return now === undefined ? control.status(networkId) : Effect.succeed(now)
  }

  const ownedWithStatus = (principal: ToolCaller, networkId: number) =>
    Effect.zip(owned(principal, networkId), Effect.suspend(() => statusOf(networkId)))

  /**
   * set_away without networkId (docs/contract.md "MCP tool shapes"): every connected network of the account is told,
   * each through the one write gate, and a network that is not connected keeps its away state. Done when at least
   * one network took it; NotConnected when none is connected; any other failure when nothing took it.
   */
  const awayEverywhere = (principal: ToolCaller, message: Option.Option<string>) =>
    Effect.gen(function*() {
      const rows = yield* networks.listForAccount(principal.accountId)
      const outcomes = yield* Effect.forEach(rows, (n) => Effect.either(control.away(n.id, message)), {
        concurrency: "unbounded"
      })
      if (outcomes.some(Either.isRight)) return
      const failures = outcomes.flatMap((o) => (Either.isLeft(o) ? [o.left] : []))
      // A network removed meanwhile is one fewer network, not a failure of the call.
      const other = failures.find((e) => e._tag !== "NotConnected" && e._tag !== "UnknownNetwork")
      return yield* Effect.fail(other ?? new NotConnected({}))
    })

  /** Relay-bot marks applied when history is read (MessageRecord.ts); a message keeps its stored form otherwise. */
  const renderer = (networkId: number, status: NetworkStatus) =>
    Effect.map(notes.relayBots(networkId), (bots) => (m: StoredMessage): Message => toMessageRecord(m, bots, status.caseMapping))

  const renderAll = (messages: ReadonlyArray<StoredMessage>) =>
    Effect.gen(function*() {
      const byNetwork = new Map<number, (m: StoredMessage) => Message>()
      const out: Array<Message> = []
      for (const m of messages) {
        let render = byNetwork.get(m.networkId)
        if (!render) {
          render = yield* renderer(m.networkId, yield* control.status(m.networkId))
          byNetwork.set(m.networkId, render)
        }
        out.push(render(m))
      }
      return out
    })

  /**
   * recent_messages' answers, kept with the page they were made from. The newest page of a buffer is served from memory
   * (RecentPages), which gives the same array while the buffer has not changed; an agent polling a quiet buffer then
   * gets the answer it got last time, and a busy buffer's page joins records serialized once each (MessageRecord.ts).
   * The entry names everything else the answer was made from: the network and target as asked, the relay-bot marks
   * (NickNotes makes a new map on every change) and the case mapping.
   */
  const pageAnswers = new WeakMap<ReadonlyArray<StoredMessage>, {
    readonly networkId: number
    readonly target: string
    readonly bots: RelayBotMarks
    readonly caseMapping: CaseMapping
    readonly payload: SerializedPayload<ToolPayload<"recent_messages">>
  }>()

  const recentPage = (
    networkId: number,
    target: string,
    rows: ReadonlyArray<StoredMessage>,
    bots: RelayBotMarks,
    caseMapping: CaseMapping
  ): SerializedPayload<ToolPayload<"recent_messages">> => {
    const kept = pageAnswers.get(rows)
    if (
      kept !== undefined && kept.networkId === networkId && kept.target === target && kept.bots === bots &&
      kept.caseMapping === caseMapping
    ) return kept.payload
    const payload = new SerializedPayload<ToolPayload<"recent_messages">>(
      `{"networkId":${networkId},"target":${JSON.stringify(target)},"messages":[`,
      rows.map((m) => serializedMessageRecord(m, bots, caseMapping)),
      "]}"
    )
    pageAnswers.set(rows, { networkId, target, bots, caseMapping, payload })
    return payload
  }

  /**
   * list_networks' record of a network, serialized once per row and status: the listing keeps its rows until a network
   * changes (Networks.listing) and an actor publishes a new status object on each change, so an account of 1,000
   * networks, polled, joins 1,000 strings rather than serializing and escaping 1,000 records each time.
   */
  const networkRecords = new WeakMap<NetworkListing, { readonly status: NetworkStatus; readonly part: SerializedPart }>()
  const networkRecord = (n: NetworkListing, status: NetworkStatus): SerializedPart => {
    const kept = networkRecords.get(n)
    if (kept !== undefined && kept.status === status) return kept.part
    const { state, nick, lastError, nextRetryAt } = status
    const part = serializedPart(
      JSON.stringify({ id: n.id, name: n.name, host: n.host, port: n.port, tls: n.tls, state, nick, lastError, nextRetryAt })
    )
    networkRecords.set(n, { status, part })
    return part
  }

  /**
   * The last list_networks answer per listing (an account's rows, Networks.listing), with the statuses it was made
   * from: polled while nothing changed, the same answer, its bytes encoded once (ToolCatalog's CallToolResult).
   */
  const networkAnswers = new WeakMap<ReadonlyArray<NetworkListing>, {
    readonly statuses: ReadonlyArray<NetworkStatus>
    readonly payload: SerializedPayload<ToolPayload<"list_networks">>
  }>()

  const ok = { ok: true } as const

  const handlers: ToolHandlerTable = {
    list_networks: (principal) =>
      Effect.flatMap(networks.listing(principal.accountId), (rows) =>
        Effect.map(Effect.forEach(rows, (n) => control.status(n.id)), (statuses) => {
          const kept = networkAnswers.get(rows)
          if (kept !== undefined && kept.statuses.every((s, i) => s === statuses[i])) return kept.payload
          const payload = new SerializedPayload<ToolPayload<"list_networks">>(
            `{"networks":[`,
            rows.map((n, i) => networkRecord(n, statuses[i]!)),
            "]}"
          )
          networkAnswers.set(rows, { statuses, payload })
          return payload
        })),

    list_buffers: (principal, input) =>
      Effect.gen(function*() {
        if (input.networkId !== undefined) yield* owned(principal, input.networkId)
        const buffers = yield* store.listBuffers(principal.accountId, Option.fromNullable(input.networkId))
        return {
          buffers: buffers.map((b) => ({
            networkId: b.networkId,
            target: b.target,
            kind: b.kind,
            lastMessageAt: b.lastMessageAt ? toIsoTime(b.lastMessageAt) : null
          }))
        }
      }),

    // Written without a generator, in Immediate.ts's combinators: it is the tool agents poll, and when the owner, the
    // status, the page and the relay-bot marks are all in memory its answer is an Exit, sent without a fiber. The steps
    // run in the order they always did: ownership, status, page, marks.
    recent_messages: (principal, input) =>
      flatMapNow(owned(principal, input.networkId), () =>
        flatMapNow(statusOf(input.networkId), (status) =>
          flatMapNow(
            store.recent(input.networkId, foldCase(status.caseMapping, input.target), {
              before: Option.fromNullable(input.before),
              limit: input.limit
            }),
            (rows) =>
              mapNow(
                notes.relayBots(input.networkId),
                (bots) => recentPage(input.networkId, input.target, rows, bots, status.caseMapping)
              )
          ))),

    search_messages: (principal, input) =>
      Effect.gen(function*() {
        let targetFolded = Option.none<string>()
        if (input.networkId !== undefined) {
          const [, status] = yield* ownedWithStatus(principal, input.networkId)
          if (input.target !== undefined) targetFolded = Option.some(foldCase(status.caseMapping, input.target))
        } else if (input.target !== undefined) {
          targetFolded = Option.some(foldCase("rfc1459", input.target))
        }
        const rows = yield* store.search({
          accountId: principal.accountId,
          query: input.query,
          networkId: Option.fromNullable(input.networkId),
          targetFolded,
          nick: Option.fromNullable(input.nick),
          limit: input.limit
        })
        return { messages: yield* renderAll(rows) }
      }),

    get_nick_note: (principal, input) =>
      Effect.gen(function*() {
        const [, status] = yield* ownedWithStatus(principal, input.networkId)
        const note = yield* notes.get(input.networkId, status.caseMapping, input.nick)
        return { networkId: input.networkId, nick: input.nick, note }
      }),

    set_nick_note: (principal, input) =>
      Effect.gen(function*() {
        const [, status] = yield* ownedWithStatus(principal, input.networkId)
        yield* notes.set(input.networkId, status.caseMapping, input.nick, input.note)
        return { ok: true as const, networkId: input.networkId, nick: input.nick, note: input.note }
      }),

    set_relay_bot: (principal, input) =>
      Effect.gen(function*() {
        const [, status] = yield* ownedWithStatus(principal, input.networkId)
        return yield* notes.setRelayBot(
          input.networkId,
          status.caseMapping,
          input.nick,
          input.marked,
          Option.fromNullable(input.pattern)
        )
      }),

    send_message: (principal, input) =>
      Effect.flatMap(owned(principal, input.networkId), (n) =>
        Effect.as(control.say(n.id, "privmsg", input.target, input.text), ok)),

    send_action: (principal, input) =>
      Effect.flatMap(owned(principal, input.networkId), (n) =>
        Effect.as(control.say(n.id, "action", input.target, input.text), ok)),

    send_notice: (principal, input) =>
      Effect.flatMap(owned(principal, input.networkId), (n) =>
        Effect.as(control.say(n.id, "notice", input.target, input.text), ok)),

    // The port refuses plaintext to an end-to-end encrypted target (e2e-channel-use-send-message) before the
    // actor is asked, with the network's STATUSMSG and CASEMAPPING; the actor checks again as it writes.
    send_raw: (principal, input) =>
      Effect.flatMap(owned(principal, input.networkId), (n) =>
        Effect.as(control.raw(n.id, input.line), { ok: true as const, serverBuffer: serverBufferTarget(n.id) })),

    join_channel: (principal, input) =>
      Effect.flatMap(owned(principal, input.networkId), (n) =>
        Effect.as(control.join(n.id, input.channel, Option.fromNullable(input.key)), ok)),

    part_channel: (principal, input) =>
      Effect.flatMap(owned(principal, input.networkId), (n) =>
        Effect.as(control.part(n.id, input.channel, Option.fromNullable(input.reason)), ok)),

    set_nick: (principal, input) =>
      Effect.flatMap(owned(principal, input.networkId), (n) =>
        Effect.as(control.nick(n.id, input.nick), { ok: true as const, serverBuffer: serverBufferTarget(n.id) })),

    set_away: (principal, input) =>
      Effect.gen(function*() {
        const message = Option.fromNullable(input.message)
        if (input.networkId !== undefined) {
          const n = yield* owned(principal, input.networkId)
          yield* control.away(n.id, message)
        } else {
          yield* awayEverywhere(principal, message)
        }
        return { ok: true as const, away: Option.isSome(message) }
      }),

    list_members: (principal, input) =>
      Effect.gen(function*() {
        const n = yield* owned(principal, input.networkId)
        const members = yield* control.members(n.id, input.channel)
        return {
          channel: input.channel,
          count: members.length,
          truncated: members.length > input.limit,
          members: members.slice(0, input.limit)
        }
      }),

    whois: (principal, input) =>
      Effect.flatMap(owned(principal, input.networkId), (n) =>
        Effect.as(control.whois(n.id, input.nick), { ok: true as const, serverBuffer: serverBufferTarget(n.id) })),

    connect_network: (principal, input) =>
      Effect.flatMap(owned(principal, input.networkId), (n) => Effect.as(control.connect(n.id, input.reconnect), ok)),

    disconnect_network: (principal, input) =>
      Effect.flatMap(owned(principal, input.networkId), (n) => Effect.as(control.disconnect(n.id), ok)),

    get_topic: (principal, input) =>
      Effect.flatMap(owned(principal, input.networkId), (n) => control.topic(n.id, input.channel)),

    set_topic: (principal, input) =>
      Effect.flatMap(owned(principal, input.networkId), (n) =>
        Effect.as(control.setTopic(n.id, input.channel, input.topic), ok)),

    get_mode_list: (principal, input) =>
      Effect.flatMap(owned(principal, input.networkId), (n) =>
        Effect.map(control.modeList(n.id, input.channel, input.letter), (list) => ({ ok: true as const, ...list }))),

    set_channel_modes: (principal, input) =>
      Effect.flatMap(owned(principal, input.networkId), (n) =>
        Effect.map(control.setModes(n.id, input.channel, input.changes), (lines) => ({ ok: true as const, lines })))
  }
  return handlers
})
