/**
 * SocketSession: the life of one open browser WebSocket, after SocketServer let it in (docs/contract.md "The member's browser
 * surface", WebSocket; docs/decisions/web.md "The browser WebSocket"):
 *
 *   1. subscribe to the account's events (MemberEvents) — before anything is read, so nothing published from now on
 *      can be missed;
 *   2. `hello`, with the account and the newest message id, and with `?first=` the tab's first view (FirstView.ts);
 *   3. with `?since=<id>`: every message after it, oldest first, from the database, and the redactions since of
 *      the messages up to it, at most REPLAY_LIMIT frames, else one `resync`; live `message` events are then sent
 *      only past the last one replayed (or past hello's `lastMessageId` without `since`), so the tab gets each
 *      message once and in order;
 *   4. every network drawn whole (NetworkControl.view), through this subscription, in order with its later changes;
 *   5. then the events as they come, while the tab's frames are answered: `react`, `reply`, `typing` and `redact`
 *      upstream as the member (TagFrames.ts), `call` through McpDispatcher.call — the
 *      one path of /mcp's tools/call, with the credential judged again at each call (a paused account gets the read
 *      tools only) — `focus`, and `read` through ReadMarkers.set (the target folded with the network's CASEMAPPING;
 *      the `read-marker` event reaches every tab of the member through MemberEvents, this one included; a buffer
 *      that is not the member's gets an `error` frame on this socket alone and nothing is stored).
 *
 * Bounds: a tab that stops reading (RFC 6455 gives no flow control beyond TCP) is closed with 1013 once more than
 * MAX_BUFFERED bytes wait to be sent, or when its subscription overflows; the replay waits for the socket to drain
 * past REPLAY_HIGH_WATER instead, so a large resume is paced, not refused. At most MAX_CALLS_IN_FLIGHT calls run at
 * once per socket; more are answered with an `error` frame.
 *
 * Concurrency rule: one fiber per socket runs steps 1–5 and then writes the events; each call runs in its own fiber
 * (in the socket's scope) and writes its `result` itself. `ws` callbacks only record time or fork; nothing here
 * blocks the event loop.
 */
import { Effect, Either, Fiber, Option, Runtime, type Scope } from "effect"
import type WebSocket from "ws"
import { foldCase } from "../../irc/CaseMapping.js"
import { isToolName } from "../../schema/McpTools.js"
import { type CallId, decodeClientFrame, type ServerFrame, type TagFrame } from "../../schema/SocketFrame.js"
import type { NetworkControlService } from "../../actors/NetworkApi.js"
import type { Accounts } from "../../services/identity/Accounts.js"
import type { MemberEvents, Subscription } from "../../services/events/MemberEvents.js"
import type { MessageHistory, StoredMessageInBuffer } from "../../services/history/MessageHistory.js"
import { toMessageRecord } from "../../services/history/MessageRecord.js"
import type { Networks } from "../../services/networks/Networks.js"
import type { NickNotes } from "../../services/networks/NickNotes.js"
import type { ReadMarkers } from "../../services/history/ReadMarkers.js"
import type { McpDispatcher } from "../mcp/McpDispatcher.js"
import type { ToolCaller } from "../mcp/ToolHandlers.js"
import { firstView, type FirstWish } from "./FirstView.js"
import { onTagFrame, type TypingLimiter } from "./TagFrames.js"

/** docs/contract.md: `?since=` replays at most this many messages, else one `resync`. */
export const REPLAY_LIMIT = 10_000
/** docs/contract.md: a peer with more than this queued (ws `bufferedAmount`) is closed with 1013. */
export const MAX_BUFFERED = 1024 * 1024
/** The replay waits for the socket to drain below this before it sends more. */
const REPLAY_HIGH_WATER = 256 * 1024
/** Events written per wake-up of the writer. */
const WRITE_BATCH = 256
const MAX_CALLS_IN_FLIGHT = 16

/** Close codes (RFC 6455 §7.4): 4001 is ours, in the private range 4000–4999. */
export const CloseCode = {
  /** The credential the socket was opened with was revoked or ended. */
  revoked: 4001,
  /** Try again later: the tab fell behind (§7.4.1 1013 Try Again Later, IANA registry). */
  tryAgainLater: 1013,
  goingAway: 1001
} as const

export interface SocketServices {
  readonly accounts: Accounts
  readonly events: MemberEvents
  readonly history: MessageHistory
  readonly notes: NickNotes
  readonly networks: Networks
  readonly control: NetworkControlService
  readonly dispatcher: McpDispatcher
  readonly markers: ReadMarkers
}

export interface SocketOptions {
  readonly accountId: number
  /** The tab's `?since=`, if it gave one. */
  readonly since: Option.Option<number>
  /** The tab's `?first=`, if it gave one: `hello` then carries its first view (FirstView.ts). */
  readonly first: Option.Option<FirstWish>
  /** The caller as it is now (the account may have been paused); None when the credential no longer works. */
  readonly caller: Effect.Effect<Option.Option<ToolCaller>>
  readonly close: (code: number, reason: string) => void
}

const frame = (f: ServerFrame) => JSON.stringify(f)

/** Sends, and resolves once the frame left for the kernel (or the socket closed). */
const sendAndWait = (ws: WebSocket, data: string) =>
  Effect.async<void>((resume) => {
    ws.send(data, () => resume(Effect.void))
  })

/**
 * Every stored message after `since`, as `message` frames, oldest first, then a `redaction` frame for each message up
 * to `since` redacted since (MessageHistory.redactedSince: the tab shows it, and its live frame may have come while
 * the tab was away; one after `since` comes redacted in its `message` frame); the last id sent; or, past REPLAY_LIMIT
 * frames in all, too many.
 */
const replay = (services: SocketServices, ws: WebSocket, accountId: number, since: number) =>
  Effect.gen(function*() {
    const rows = yield* services.history.after(accountId, since, REPLAY_LIMIT + 1)
    if (rows.length > REPLAY_LIMIT) return Option.none<number>()
    const redactions = yield* services.history.redactedSince(accountId, since, REPLAY_LIMIT - rows.length + 1)
    if (rows.length + redactions.length > REPLAY_LIMIT) return Option.none<number>()
    const renderers = new Map<number, (m: StoredMessageInBuffer) => string>()
    let last = since
    for (const row of rows) {
      let render = renderers.get(row.networkId)
      if (render === undefined) {
        const bots = yield* services.notes.relayBots(row.networkId)
        const status = yield* services.control.status(row.networkId)
        render = (m) => frame({ type: "message", message: toMessageRecord(m, bots, status.caseMapping) })
        renderers.set(row.networkId, render)
      }
      if (ws.readyState !== ws.OPEN) return Option.some(last)
      const data = render(row)
      if (ws.bufferedAmount > REPLAY_HIGH_WATER) yield* sendAndWait(ws, data)
      else ws.send(data)
      last = row.id
    }
    for (const r of redactions) {
      if (ws.readyState !== ws.OPEN) break
      const data = frame({ type: "redaction", networkId: r.networkId, target: r.target, messageId: r.messageId })
      if (ws.bufferedAmount > REPLAY_HIGH_WATER) yield* sendAndWait(ws, data)
      else ws.send(data)
    }
    return Option.some(last)
  })

/** Writes the subscription's events until the socket's scope closes; live messages only past `floor`. */
const writeEvents = (ws: WebSocket, subscription: Subscription, floor: number, close: SocketOptions["close"]) =>
  Effect.gen(function*() {
    for (;;) {
      const events = yield* subscription.take(WRITE_BATCH)
      if (ws.readyState !== ws.OPEN) return
      for (const event of events) {
        if (event.messageId !== null && event.messageId <= floor) continue
        ws.send(event.frame)
      }
      if (ws.bufferedAmount > MAX_BUFFERED) {
        close(CloseCode.tryAgainLater, "the client is not reading")
        return
      }
    }
  })

/** Answers the tab's frames: calls (each its own fiber, in `scope`, answered once `hello` is out) and focus. */
const reader = (
  services: SocketServices,
  ws: WebSocket,
  subscription: Subscription,
  options: SocketOptions,
  runtime: Runtime.Runtime<never>,
  scope: Scope.Scope,
  helloSent: Effect.Effect<void>
) => {
  let inFlight = 0
  const send = (f: ServerFrame) => {
    if (ws.readyState === ws.OPEN) ws.send(frame(f))
  }

  const call = (id: CallId, name: string, args: unknown) =>
    Effect.gen(function*() {
      yield* helloSent
      if (!isToolName(name)) return send({ type: "error", id, message: `unknown tool: ${name}` })
      const caller = yield* options.caller
      if (Option.isNone(caller)) return options.close(CloseCode.revoked, "credential revoked")
      const outcome = yield* services.dispatcher.call(caller.value, name, args)
      // The result holds the payload's JSON already (ToolCatalog's CallToolResult): spliced in, not serialized again.
      if (ws.readyState === ws.OPEN) {
        ws.send(`{"type":"result","id":${JSON.stringify(id)},"isError":${outcome.isError},"payload":${outcome.result.json}}`)
      }
    })

  /** Moves a read marker; the `read-marker` event comes back through the subscription, to every tab. */
  const read = (networkId: number, target: string, messageId: number) =>
    Effect.gen(function*() {
      yield* helloSent
      const { caseMapping } = yield* services.control.status(networkId)
      const moved = yield* services.markers.set(options.accountId, networkId, foldCase(caseMapping, target), messageId)
      if (Option.isNone(moved)) send({ type: "error", id: null, message: `no buffer ${target} on network ${networkId}` })
    })

  /** A tag frame (TagFrames.ts): sent upstream as the member, answered once `hello` is out. */
  const typing: TypingLimiter = new Map()
  const tagFrame = (f: TagFrame) =>
    Effect.gen(function*() {
      yield* helloSent
      const caller = yield* options.caller
      if (Option.isNone(caller)) return options.close(CloseCode.revoked, "credential revoked")
      const answer = yield* onTagFrame(services, caller.value, f, typing)
      if (answer !== undefined) send(answer)
    })

  return (data: WebSocket.RawData, isBinary: boolean) => {
    if (isBinary) return send({ type: "error", id: null, message: "frames are text, one JSON object each" })
    const decoded = decodeClientFrame(data.toString())
    if (Either.isLeft(decoded)) return send(decoded.left)
    const f = decoded.right
    if (f.type === "focus") return subscription.setFocused(f.focused)
    const id = f.type === "call" ? f.id : f.type === "read" ? null : (f.id ?? null)
    if (inFlight >= MAX_CALLS_IN_FLIGHT) {
      return send({ type: "error", id, message: `at most ${MAX_CALLS_IN_FLIGHT} calls at once per socket` })
    }
    inFlight++
    Runtime.runFork(runtime)(
      (f.type === "call"
        ? call(f.id, f.name, f.arguments)
        : f.type === "read"
        ? read(f.networkId, f.target, f.messageId)
        : tagFrame(f)).pipe(
        Effect.catchAllCause((cause) =>
          Effect.zipRight(
            Effect.logError("socket call failed", cause),
            Effect.sync(() => send({ type: "error", id, message: "internal error" }))
          )
        ),
        Effect.ensuring(Effect.sync(() => {
          inFlight--
        })),
        Effect.forkIn(scope)
      )
    )
  }
}

/**
 * One socket, from its first frame to its end; runs until the socket closes (then its scope, subscription and calls
 * end with it).
 */
export const runSocket = (services: SocketServices, ws: WebSocket, options: SocketOptions) =>
  Effect.scoped(Effect.gen(function*() {
    const scope = yield* Effect.scope
    const runtime = yield* Effect.runtime<never>()
    const subscription = yield* services.events.subscribe(options.accountId)
    const closed = yield* Effect.makeLatch(false)
    const onClose = () => closed.unsafeOpen()
    ws.on("close", onClose)
    yield* Effect.addFinalizer(() => Effect.sync(() => ws.off("close", onClose)))
    if (ws.readyState !== ws.OPEN) return

    // Listening from the start (ws drops frames no one listens for); calls wait for hello to be out.
    const helloSent = yield* Effect.makeLatch(false)
    ws.on("message", reader(services, ws, subscription, options, runtime, scope, helloSent.await))

    const account = yield* services.accounts.findById(options.accountId)
    if (Option.isNone(account)) return options.close(CloseCode.revoked, "the account is gone")
    const lastMessageId = Option.getOrNull(yield* services.history.lastId(options.accountId))
    const hello = frame({
      type: "hello",
      account: { name: account.value.name, paused: account.value.status === "paused" },
      lastMessageId
    })
    // The first view is read after lastMessageId: what is stored later comes live (or in both, merged by id), never in
    // neither.
    if (Option.isSome(options.first)) {
      const first = yield* firstView(services, options.accountId, yield* options.caller, options.first.value)
      if (ws.readyState !== ws.OPEN) return
      ws.send(`${hello.slice(0, -1)},"first":${first}}`)
    } else ws.send(hello)
    yield* helloSent.open

    let floor = lastMessageId ?? 0
    if (Option.isSome(options.since)) {
      const replayed = yield* replay(services, ws, options.accountId, options.since.value)
      if (Option.isNone(replayed)) ws.send(frame({ type: "resync" }))
      else floor = replayed.value
    }

    const owned = yield* services.networks.listForAccount(options.accountId)
    for (const network of owned) yield* services.control.view(network.id, subscription.deliver)

    const writer = yield* Effect.fork(writeEvents(ws, subscription, floor, options.close))
    const overflowed = Effect.zipRight(
      subscription.overflowed,
      Effect.sync(() => options.close(CloseCode.tryAgainLater, "the client fell behind"))
    )
    yield* Effect.raceAll([closed.await, Fiber.join(writer), overflowed])
    yield* closed.await
  }))
