/**
 * NetworkActor: one IRC network of one account, kept connected and recorded. It owns the connection (through the
 * IrcTransport port), the connection state machine, the network's ISUPPORT, our nick and the wanted nick, the
 * channel state (ChannelState: members, prefixes, away, topics, keys), the stored channel keys it rejoins with, the
 * get_mode_list queries in flight (ModeListRequests), and writing what it sees into the MessageStore.
 *
 * Concurrency rule (STYLE habit 3, soju `doc/architecture.md`): one inbox, one dispatcher. Commands (each with a
 * Deferred reply), transport events (pushed by irc-framework callbacks with `unsafeOffer`, never handled there) and
 * timer expiries all go through the unbounded inbox, and the single dispatcher fiber is the only code that reads or
 * changes the actor's state. Timers are fibers in a FiberMap that only sleep and then enqueue; database writes go to
 * a second queue drained by a persistence fiber, so a slow or absent database never stalls the connection. Other
 * services read the public status from a SubscriptionRef and talk to the actor only through the supervisor.
 *
 * Connection lifecycle (soju `network.run`, made event-driven):
 *
 *   offline ──connect──▶ connecting ──001──▶ connected
 *      ▲                    │   ▲                │
 *      │ permanent refusal  │   │ retry timer    │ socket closed / keepalive drop / registration timeout
 *      └────────────────────┴── backoff ◀────────┘
 *
 * Every transition is logged with the network id. `connected` means registered on an open socket: the one write
 * gate of interface.md ("backoff counts as not connected"). Permanent refusals (ReconnectPolicy.permanentRefusal,
 * SASL failure) end in `offline` with the reason kept in `lastError`; disconnect_network ends in `offline` and is
 * remembered (`enabled = false`) across restarts.
 *
 * Replies to Belay's own queries answer them and are not history (interface.md get_mode_list: "reply goes only to
 * the caller, nothing is written to the server buffer"): list entries, end numerics, refusals and PONGs inside a
 * get_mode_list fence (ModeListRequests.ts), and the replies to the `WHO #chan` the actor sends after NAMES when the
 * server has no away-notify (they only feed the away state; storing them would fill the server buffer with a line
 * per member on every join). Those WHOs go out one at a time, so a reply is matched by its channel alone.
 *
 * End-to-end encryption (issue 7, E2eCodec.ts): the actor holds the network's FiSH key table, read before the first
 * connection and kept current from E2eKeys' change feed through the inbox. Messages to a keyed target go out
 * encrypted; inbound FiSH lines are stored decrypted (or marked undecryptable); a raw line that would carry
 * plaintext to a keyed target is refused in the dispatcher, atomically with the write.
 */
import {
  Clock,
  Data,
  Deferred,
  Duration,
  Effect,
  Either,
  Fiber,
  FiberMap,
  Option,
  Queue,
  Schedule,
  type Scope,
  SubscriptionRef
} from "effect"
import type { NetworkConfig, StoredChannel } from "../services/Networks.js"
import type { MessageStoreService, NewMessage } from "../services/MessageStoreApi.js"
import type { E2eKeyChange, E2eKeyEntry } from "../services/E2eKeys.js"
import type { FishKey } from "../services/crypto/Fish.js"
import * as E2e from "./E2eCodec.js"
import * as Channels from "./ChannelState.js"
import { type HistoryContext, messagesFor, ownMessages } from "./History.js"
import { CaseMappedMap, type CaseMapping, DEFAULT_CASE_MAPPING, equalsFolded } from "./irc/CaseMapping.js"
import { encodeAction } from "./irc/Ctcp.js"
import { formatLine, type IrcLine, parseLine } from "./irc/IrcLine.js"
import { applyISupport, defaultISupport, isChannel, type ISupport } from "./irc/ISupport.js"
import { Numeric } from "./irc/Numerics.js"
import { joinLines } from "./irc/JoinLines.js"
import { modeLines } from "./irc/ModeLines.js"
import { hasLineBreakingChars, isMiddleParam } from "./irc/Safety.js"
import { prefixAllowance, splitText } from "./irc/TextSplit.js"
import type { IrcConnection, IrcTransportService, TransportEvent, TransportOptions } from "./IrcTransport.js"
import * as ModeLists from "./ModeListRequests.js"
import type {
  CommandFailure,
  CommandResult,
  ConnectionState,
  MemberInfo,
  ModeChange,
  ModeListEntry,
  NetworkStatus,
  SayKind,
  TopicInfo
} from "./NetworkApi.js"
import { serverBuffer } from "./NetworkApi.js"
import {
  ASSUMED_NICKLEN,
  CHANNELS_RELOAD,
  KEEPALIVE_DEAD,
  KEEPALIVE_IDLE,
  makeStepper,
  MODE_LIST_TIMEOUT,
  permanentRefusal,
  PERSIST_DRAIN,
  QUIT_GRACE,
  reconnectSchedule,
  regainNickSchedule,
  REGISTRATION_TIMEOUT,
  REJOIN_FALLBACK,
  STABLE_CONNECTION,
  WHO_TIMEOUT
} from "./ReconnectPolicy.js"

// ---------------------------------------------------------------------------------------------------------------
// Ports the actor needs, bound to its network id by the supervisor (tests pass in-memory ones).

/** The stored side of one network (services/Networks.ts). Reads may die during an outage; the actor copes. */
export interface NetworkRepo {
  readonly config: Effect.Effect<Option.Option<NetworkConfig>>
  readonly channels: Effect.Effect<ReadonlyArray<StoredChannel>>
  /** `key`: a string stores it, null clears it, undefined keeps what is stored. */
  readonly rememberChannel: (mapping: CaseMapping, name: string, key?: string | null) => Effect.Effect<void>
  readonly forgetChannel: (mapping: CaseMapping, name: string) => Effect.Effect<void>
  readonly setEnabled: (enabled: boolean) => Effect.Effect<void>
  readonly setAwayMessage: (message: string | null) => Effect.Effect<void>
}

/** The network's end-to-end encryption keys (services/E2eKeys.ts, issue 7). */
export interface E2eKeySource {
  /** Every key of the network, read once at start; may die during an outage (the start then fails and is retried). */
  readonly load: Effect.Effect<ReadonlyArray<E2eKeyEntry>>
  /** Key changes of every network, published once stored; the actor keeps its own. Subscribed before `load`. */
  readonly subscribe: Effect.Effect<Queue.Dequeue<E2eKeyChange>, never, Scope.Scope>
}

export interface ActorDeps {
  readonly networkId: number
  readonly repo: NetworkRepo
  readonly store: MessageStoreService
  readonly transport: IrcTransportService
  /** BELAY_ALLOWED_HOSTS, lower-cased; None allows every host. */
  readonly allowedHosts: Option.Option<ReadonlySet<string>>
  readonly e2e: E2eKeySource
}

// ---------------------------------------------------------------------------------------------------------------
// The actor protocol.

type Reply<A> = Deferred.Deferred<A>
type Result<A extends object = {}> = CommandResult<A>

/** get_mode_list's success payload (CONTRACT "MCP tool shapes"). */
export interface ModeListAnswer {
  readonly channel: string
  readonly letter: string
  readonly entries: ReadonlyArray<ModeListEntry>
}

/** Tagged commands, each answered through its Deferred (STYLE habit 3). */
export type Command =
  | { readonly _tag: "Say"; readonly kind: SayKind; readonly target: string; readonly text: string; readonly reply: Reply<Result> }
  | { readonly _tag: "Raw"; readonly line: string; readonly reply: Reply<Result> }
  | { readonly _tag: "Join"; readonly channel: string; readonly key: Option.Option<string>; readonly reply: Reply<Result> }
  | { readonly _tag: "Part"; readonly channel: string; readonly reason: Option.Option<string>; readonly reply: Reply<Result> }
  | { readonly _tag: "Nick"; readonly nick: string; readonly reply: Reply<Result> }
  | { readonly _tag: "Away"; readonly message: Option.Option<string>; readonly reply: Reply<Result> }
  | { readonly _tag: "Whois"; readonly nick: string; readonly reply: Reply<Result> }
  | { readonly _tag: "Connect"; readonly reconnect: boolean; readonly reply: Reply<Result> }
  | { readonly _tag: "Disconnect"; readonly reply: Reply<Result> }
  | {
    readonly _tag: "Members"
    readonly channel: string
    readonly reply: Reply<Result<{ readonly members: ReadonlyArray<MemberInfo> }>>
  }
  | { readonly _tag: "Topic"; readonly channel: string; readonly reply: Reply<Result<{ readonly topic: TopicInfo }>> }
  | { readonly _tag: "SetTopic"; readonly channel: string; readonly topic: string; readonly reply: Reply<Result> }
  /** Answered when the list (or a refusal) arrives, at MODE_LIST_TIMEOUT, or `not-connected` on disconnect. */
  | {
    readonly _tag: "ModeList"
    readonly channel: string
    readonly letter: string
    readonly reply: Reply<Result<ModeListAnswer>>
  }
  | {
    readonly _tag: "SetModes"
    readonly channel: string
    readonly changes: ReadonlyArray<ModeChange>
    readonly reply: Reply<Result<{ readonly lines: ReadonlyArray<string> }>>
  }
  /** QUIT and wait (bounded by QUIT_GRACE) for the socket to close; the actor then stays offline. */
  | { readonly _tag: "Shutdown"; readonly reply: Reply<void> }

/** Everything else the dispatcher reacts to: transport events and timer expiries, tagged with their session. */
type Internal =
  | { readonly _tag: "Start" }
  | { readonly _tag: "Transport"; readonly session: number; readonly event: TransportEvent }
  | { readonly _tag: "RetryDue"; readonly token: number }
  | { readonly _tag: "RegistrationTimeout"; readonly session: number }
  | { readonly _tag: "KeepaliveDue"; readonly session: number }
  | { readonly _tag: "RegainDue"; readonly session: number }
  | { readonly _tag: "RejoinFallback"; readonly session: number }
  | { readonly _tag: "ChannelsLoaded"; readonly session: number; readonly channels: ReadonlyArray<StoredChannel> }
  | { readonly _tag: "QuitGraceOver"; readonly session: number }
  | { readonly _tag: "E2eKeyChanged"; readonly change: E2eKeyChange }
  | { readonly _tag: "ModeListTimeout"; readonly requestId: ModeLists.RequestId }
  | { readonly _tag: "WhoTimeout"; readonly session: number }

type Input = Command | Internal

/** The network no longer exists (removed while the actor was starting): the supervisor stops supervising it. */
export class NetworkGone extends Data.TaggedError("NetworkGone")<{ readonly networkId: number }> {}

export interface NetworkActor {
  readonly networkId: number
  readonly status: SubscriptionRef.SubscriptionRef<NetworkStatus>
  /** STATUSMSG of the network (for send_raw's end-to-end guard); "" before ISUPPORT. */
  readonly statusMsg: Effect.Effect<string>
  /** Enqueues a command; the caller awaits its Deferred. Never blocks (unbounded inbox). */
  readonly offer: (command: Command) => Effect.Effect<void>
  /** Completes (with the dispatcher's failure) only if the dispatcher dies. */
  readonly await: Effect.Effect<never>
}

// ---------------------------------------------------------------------------------------------------------------
// Small pure helpers.

const fail = (error: CommandFailure["error"], message?: string): CommandFailure =>
  message === undefined ? { ok: false, error } : { ok: false, error, message }

const NOT_CONNECTED = fail("not-connected", "the network is not connected (it may be reconnecting); try again later")
const OK = { ok: true } as const

/** Anything that must be one IRC parameter: a middle param without a comma (which would make it a list). */
const isSingleName = (s: string) => isMiddleParam(s) && !s.includes(",")

/**
 * The nick to try after 433 during registration: `nick_`, `nick__`, … while within NICKLEN (30 assumed before
 * ISUPPORT, as soju), then the wanted nick cut short with the attempt number.
 */
export const fallbackNick = (wanted: string, attempt: number, nickLen: number = ASSUMED_NICKLEN): string => {
  const underscores = wanted + "_".repeat(attempt)
  if (underscores.length <= nickLen && attempt <= 3) return underscores
  const suffix = String(attempt)
  return wanted.slice(0, Math.max(1, nickLen - suffix.length)) + suffix
}

const MAX_NICK_ATTEMPTS = 9

/** Whether any text a command carries (strings, options, mode params) holds CR, LF or NUL. */
const carriesLineBreak = (command: Command): boolean => {
  const check = (value: unknown): boolean => {
    if (typeof value === "string") return hasLineBreakingChars(value)
    if (Option.isOption(value)) return Option.isSome(value) && check(value.value)
    if (Array.isArray(value)) return value.some(check)
    // Mode changes: plain records of strings.
    if (typeof value === "object" && value !== null) return Object.values(value).some(check)
    return false
  }
  return Object.entries(command).some(([key, value]) => key !== "reply" && check(value))
}

/** Why get_mode_list refuses a letter here: not a list at all, or a list this network does not have. */
const notAListMessage = (isupport: ISupport, letter: string): string => {
  if (!["b", "e", "I", "q"].includes(letter)) return `letter must be one of b, e, I or q, got ${JSON.stringify(letter)}`
  const lists = isupport.chanModes.a
  if (letter === "q") {
    return `this network has no quiet list: q is not a list mode in its CHANMODES (list modes: ${lists || "none"})`
  }
  return `this network has no ${letter} list (list modes in its CHANMODES: ${lists || "none"})`
}

const isAllowedHost = (allowed: Option.Option<ReadonlySet<string>>, host: string) =>
  Option.match(allowed, { onNone: () => true, onSome: (hosts) => hosts.has(host.toLowerCase()) })

const lockedDownMessage = (host: string) =>
  `locked-down: this instance does not allow connections to ${host} (BELAY_ALLOWED_HOSTS)`

// ---------------------------------------------------------------------------------------------------------------
// Mutable per-connection state, touched only by the dispatcher.

interface Session {
  readonly id: number
  readonly connection: IrcConnection
  registered: boolean
  registeredAt: number | null
  /** Our nick: the one being tried until 001, then the server's view. */
  nick: string
  nickAttempts: number
  user: string | undefined
  host: string | undefined
  isupport: ISupport
  caps: Set<string>
  /** Channels, members, topics and away state (ChannelState.ts), replaced on every line. */
  channels: Channels.ChannelState
  /** get_mode_list queries in flight on this connection; their waiters are in `modeListWaiters`. */
  modeLists: ModeLists.ModeListRequests
  /** Channel of the last MODE change we sent, which a 472 (it names no channel) is about (ChannelErrors.ts). */
  lastModeChannel: string | null
  /** The automatic `WHO #chan` awaiting its 315, and the channels queued behind it (away state without away-notify). */
  whoInFlight: string | null
  whoQueue: ReadonlyArray<string>
  lastTrafficAt: number
  pingSent: boolean
  burstDone: boolean
  saslSucceeded: boolean
  /** The nick we asked the server to MONITOR for us, if any. */
  monitoring: string | null
  /** A nick we asked for (set_nick or a raw NICK): when the server grants it, it becomes the wanted nick. */
  requestedNick: string | null
  /** Keys given explicitly to join_channel, stored once the server confirms the JOIN. */
  pendingKeys: CaseMappedMap<string>
  /** Why we are closing it, when we are. */
  closeReason: string | null
  /** Set by a permanent refusal: no retry after the close. */
  permanent: string | null
  /** The text of the server's ERROR line, if one came. */
  serverError: string | null
}

// ---------------------------------------------------------------------------------------------------------------
// The actor.

export const make = (deps: ActorDeps): Effect.Effect<NetworkActor, NetworkGone, Scope.Scope> =>
  Effect.gen(function*() {
    const { networkId, repo, store, transport } = deps
    const loaded = yield* repo.config
    if (Option.isNone(loaded)) return yield* new NetworkGone({ networkId })
    const config: NetworkConfig = loaded.value
    // Keys are known before anything can be sent: without them a message to an encrypted channel would go out in
    // plaintext. Subscribing first means a key set while they are read is applied afterwards, never lost.
    const e2eChanges = yield* deps.e2e.subscribe
    const initialE2eKeys = yield* deps.e2e.load

    const inbox = yield* Queue.unbounded<Input>()
    const persistQueue = yield* Queue.unbounded<Effect.Effect<void>>()
    const timers = yield* FiberMap.make<string>()
    const backoff = yield* makeStepper(reconnectSchedule)
    const regain = yield* makeStepper(regainNickSchedule)

    const initialStatus: NetworkStatus = {
      networkId,
      state: "offline",
      nick: null,
      nextRetryAt: null,
      lastError: null,
      caseMapping: DEFAULT_CASE_MAPPING,
      channelTypes: defaultISupport.chanTypes
    }
    const status = yield* SubscriptionRef.make(initialStatus)

    // ---- dispatcher-owned state ----
    let state: ConnectionState = "offline"
    let nextRetryAt: number | null = null
    let lastError: string | null = null
    let session: Session | undefined
    let sessionSeq = 0
    let retryToken = 0
    let stopping = false
    const shutdownWaiters: Array<Reply<void>> = []
    let wantedNick = config.nick
    let awayMessage = config.awayMessage
    /** ISUPPORT of the last connection: casemapping stays known while offline (buffers are folded with it). */
    let isupport: ISupport = defaultISupport
    /** Channels we rejoin, with their keys (null: none); mirrors the store, kept in step by the dispatcher. */
    let storedKeys = CaseMappedMap.empty<string | null>(DEFAULT_CASE_MAPPING)
    /** FiSH keys of the network's encrypted channels and DMs (E2eCodec.ts), kept current from E2eKeys.changes. */
    let e2eKeys = E2e.E2eKeyTable.fromEntries(initialE2eKeys)
    /** Callers of get_mode_list waiting for an answer, by request id (their queries are in `session.modeLists`). */
    const modeListWaiters = new Map<ModeLists.RequestId, Reply<Result<ModeListAnswer>>>()
    let modeListSeq = 0

    const enqueue = (input: Input) => Queue.offer(inbox, input)
    const persist = (effect: Effect.Effect<void>) => Queue.offer(persistQueue, effect)
    const now = Clock.currentTimeMillis
    const mapping = () => isupport.caseMapping
    const sameNick = (a: string, b: string) => equalsFolded(mapping(), a, b)

    const publish = Effect.suspend(() =>
      SubscriptionRef.set(status, {
        networkId,
        state,
        nick: state === "connected" && session !== undefined ? session.nick : null,
        nextRetryAt: nextRetryAt === null ? null : new Date(nextRetryAt),
        lastError,
        caseMapping: isupport.caseMapping,
        channelTypes: isupport.chanTypes
      })
    )

    const transition = (next: ConnectionState, details: Record<string, unknown> = {}) =>
      Effect.suspend(() => {
        const from = state
        state = next
        if (next !== "backoff") nextRetryAt = null
        const log = from === next
          ? Effect.void
          : (next === "offline" && lastError !== null ? Effect.logWarning : Effect.logInfo)(
            `connection ${from} → ${next}`
          ).pipe(Effect.annotateLogs({ from, to: next, ...(lastError !== null ? { reason: lastError } : {}), ...details }))
        return Effect.zipRight(log, publish)
      })

    const append = (messages: ReadonlyArray<NewMessage>) => Effect.forEach(messages, store.append, { discard: true })

    const historyContext = (s: Session, time: number): HistoryContext => ({
      networkId,
      selfNick: s.nick,
      registered: s.registered,
      isupport: s.isupport,
      channels: s.channels,
      lastModeChannel: s.lastModeChannel,
      time: new Date(time)
    })

    /** A note in the server buffer about the connection itself (lost, refused), so history explains the gaps. */
    const connectionNote = (text: string) =>
      Effect.flatMap(now, (time) =>
        store.append({
          networkId,
          target: serverBuffer(networkId),
          targetFolded: serverBuffer(networkId),
          bufferKind: "server",
          time: new Date(time),
          kind: "error",
          nick: null,
          text,
          numeric: null,
          self: false,
          raw: null
        }))

    // ---- timers: fibers that sleep on Effect's Clock and then enqueue ----
    // A timer is armed for an absolute time read when the dispatcher arms it, not for a delay counted from whenever
    // the forked fiber first runs: the deadline is then exactly the published one (nextRetryAt) and does not drift
    // by the fork's scheduling latency (which TestClock would otherwise expose).
    const startTimerAt = (name: string, at: number, input: Input) =>
      FiberMap.run(
        timers,
        name,
        Effect.flatMap(Clock.currentTimeMillis, (t) => Effect.sleep(Duration.millis(Math.max(0, at - t)))).pipe(
          Effect.zipRight(enqueue(input))
        )
      )
    const startTimer = (name: string, delay: Duration.Duration, input: Input) =>
      Effect.flatMap(now, (t) => startTimerAt(name, t + Duration.toMillis(delay), input))
    const stopTimer = (name: string) => FiberMap.remove(timers, name)
    const SESSION_TIMERS = ["registration", "keepalive", "regain", "rejoin", "channels", "quit", "who"] as const
    const stopSessionTimers = Effect.forEach(SESSION_TIMERS, stopTimer, { discard: true })

    const write = (s: Session, line: string) => Effect.sync(() => s.connection.write(line))

    // ---- get_mode_list waiters ----

    const modeListTimer = (id: ModeLists.RequestId) => `mode-list-${id}`

    const answerModeList = (id: ModeLists.RequestId, result: Result<ModeListAnswer>) =>
      Effect.gen(function*() {
        const reply = modeListWaiters.get(id)
        if (reply === undefined) return
        modeListWaiters.delete(id)
        yield* stopTimer(modeListTimer(id))
        yield* Deferred.succeed(reply, result)
      })

    /** The connection is gone, and every query with it: each caller still waiting hears `not-connected`. */
    const failModeLists = (s: Session) =>
      Effect.gen(function*() {
        s.modeLists = ModeLists.reset(s.modeLists).state
        for (const id of [...modeListWaiters.keys()]) yield* answerModeList(id, NOT_CONNECTED)
      })

    // ---- connection lifecycle ----

    const transportOptions = (): TransportOptions => ({
      host: config.host,
      port: config.port,
      tls: config.tls,
      tlsInsecure: config.tlsInsecure,
      nick: wantedNick,
      username: config.username ?? config.nick,
      realname: config.realname ?? "Belay",
      serverPassword: config.serverPassword,
      sasl: config.sasl
    })

    const startAttempt = Effect.gen(function*() {
      yield* stopTimer("retry")
      if (!isAllowedHost(deps.allowedHosts, config.host)) {
        lastError = lockedDownMessage(config.host)
        return yield* transition("offline")
      }
      const id = ++sessionSeq
      const time = yield* now
      const connection = transport.open(transportOptions(), (event) => {
        // Called on Node's event loop by irc-framework: only enqueue (the inbox is unbounded, so this never fails).
        inbox.unsafeOffer({ _tag: "Transport", session: id, event })
      })
      session = {
        id,
        connection,
        registered: false,
        registeredAt: null,
        nick: wantedNick,
        nickAttempts: 0,
        user: undefined,
        host: undefined,
        isupport: defaultISupport,
        caps: new Set(),
        channels: Channels.emptyChannelState(DEFAULT_CASE_MAPPING),
        modeLists: ModeLists.emptyModeListRequests,
        lastModeChannel: null,
        whoInFlight: null,
        whoQueue: [],
        lastTrafficAt: time,
        pingSent: false,
        burstDone: false,
        saslSucceeded: false,
        monitoring: null,
        requestedNick: null,
        pendingKeys: CaseMappedMap.empty(DEFAULT_CASE_MAPPING),
        closeReason: null,
        permanent: null,
        serverError: null
      }
      yield* startTimer("registration", REGISTRATION_TIMEOUT, { _tag: "RegistrationTimeout", session: id })
      yield* transition("connecting", { host: config.host, port: config.port, tls: config.tls })
    })

    /** Ask the current connection to end; its Closed event then decides what comes next. */
    const closeSession = (s: Session, reason: string, how: "quit" | "destroy") =>
      Effect.sync(() => {
        s.closeReason ??= reason
        if (how === "quit") s.connection.quit(`Belay: ${reason}`)
        else s.connection.destroy()
      })

    /** Forget the current connection at once (disconnect, forced reconnect): its later events are ignored. */
    const dropSession = (quitMessage: string) =>
      Effect.gen(function*() {
        const s = session
        if (s === undefined) return
        session = undefined
        s.connection.quit(quitMessage)
        yield* stopSessionTimers
        yield* failModeLists(s)
      })

    const scheduleRetry = (s: Session, reason: string) =>
      Effect.gen(function*() {
        const time = yield* now
        if (s.registeredAt !== null && time - s.registeredAt >= Duration.toMillis(STABLE_CONNECTION)) yield* backoff.reset
        const delay = yield* backoff.next
        const token = ++retryToken
        lastError = reason
        nextRetryAt = time + Duration.toMillis(delay)
        yield* startTimerAt("retry", nextRetryAt, { _tag: "RetryDue", token })
        yield* transition("backoff", { retryInMs: Duration.toMillis(delay), reason })
      })

    const onClosed = (s: Session, error: string | null) =>
      Effect.gen(function*() {
        session = undefined
        yield* stopSessionTimers
        yield* failModeLists(s)
        const reason = s.permanent ?? s.closeReason ??
          (s.serverError !== null ? `closed by the server: ${s.serverError}` : error ?? "connection closed by the server")
        if (stopping) {
          lastError = null
          yield* transition("offline")
          for (const waiter of shutdownWaiters.splice(0)) yield* Deferred.succeed(waiter, undefined)
          return
        }
        yield* connectionNote(s.registered ? `disconnected: ${reason}` : `connection failed: ${reason}`)
        if (s.permanent !== null) {
          lastError = s.permanent
          return yield* transition("offline", { permanent: true })
        }
        yield* scheduleRetry(s, reason)
      })

    // ---- after registration ----

    const stopRegain = (s: Session) =>
      Effect.gen(function*() {
        yield* stopTimer("regain")
        if (s.monitoring !== null) {
          yield* write(s, formatLine({ command: "MONITOR", params: ["-", s.monitoring] }))
          s.monitoring = null
        }
      })

    const scheduleRegain = (s: Session) =>
      Effect.flatMap(regain.next, (delay) => startTimer("regain", delay, { _tag: "RegainDue", session: s.id }))

    /** Our nick is not the wanted one: watch for it with MONITOR when offered, else retry on a backing-off timer. */
    const startRegain = (s: Session) =>
      Effect.gen(function*() {
        if (sameNick(s.nick, wantedNick) || !isMiddleParam(wantedNick)) return
        if (s.isupport.monitor !== undefined) {
          // IRCv3 monitor: the server answers at once (730 online / 731 offline) and again on every change.
          s.monitoring = wantedNick
          yield* write(s, formatLine({ command: "MONITOR", params: ["+", wantedNick] }))
        } else {
          yield* regain.reset
          yield* scheduleRegain(s)
        }
      })

    const loadChannels = (s: Session) =>
      FiberMap.run(
        timers,
        "channels",
        repo.channels.pipe(
          // Networks turns SQL errors into defects; during an outage keep trying while this connection lives.
          Effect.sandbox,
          Effect.tapError((cause) => Effect.logWarning("could not read the stored channels; retrying", cause)),
          Effect.retry({ schedule: CHANNELS_SCHEDULE }),
          Effect.flatMap((channels) => enqueue({ _tag: "ChannelsLoaded", session: s.id, channels })),
          Effect.ignore
        )
      )

    /** End of the registration burst (376/422, or the fallback timer): rejoin, restore away, start nick regain. */
    const afterBurst = (s: Session) =>
      Effect.gen(function*() {
        if (s.burstDone) return
        s.burstDone = true
        yield* stopTimer("rejoin")
        yield* loadChannels(s)
        if (awayMessage !== null && !hasLineBreakingChars(awayMessage)) {
          yield* write(s, formatLine({ command: "AWAY", params: [awayMessage] }))
        }
        yield* startRegain(s)
      })

    const onChannelsLoaded = (s: Session, channels: ReadonlyArray<StoredChannel>) =>
      Effect.gen(function*() {
        storedKeys = CaseMappedMap.fromEntries(mapping(), channels.map((c) => [c.name, c.key] as const))
        const missing = channels.filter((c) => !Channels.isJoined(s.channels, c.name))
        for (const line of joinLines(missing)) yield* write(s, line)
        if (missing.length > 0) {
          yield* Effect.logInfo("rejoining stored channels").pipe(Effect.annotateLogs({ channels: missing.length }))
        }
      })

    const setISupport = (s: Session, next: ISupport) =>
      Effect.gen(function*() {
        const changed = next.caseMapping !== s.isupport.caseMapping
        s.isupport = next
        isupport = next
        if (changed) {
          s.channels = Channels.withCaseMapping(s.channels, next.caseMapping)
          s.pendingKeys = s.pendingKeys.withMapping(next.caseMapping)
          storedKeys = storedKeys.withMapping(next.caseMapping)
        }
        yield* publish
      })

    /** Our own JOIN came back: remember the channel (and an explicitly given key) for the next rejoin. */
    const onSelfJoin = (s: Session, channel: string) =>
      Effect.gen(function*() {
        const explicitKey = s.pendingKeys.get(channel)
        s.pendingKeys = s.pendingKeys.remove(channel)
        // The key we joined with is the channel's key until a MODE says otherwise: set_channel_modes' bare `-k`.
        s.channels = Channels.rememberKey(s.channels, channel, explicitKey ?? storedKeys.get(channel) ?? null)
        if (explicitKey !== undefined) {
          storedKeys = storedKeys.set(channel, explicitKey)
          yield* persist(repo.rememberChannel(mapping(), channel, explicitKey))
        } else if (!storedKeys.has(channel)) {
          storedKeys = storedKeys.set(channel, null)
          yield* persist(repo.rememberChannel(mapping(), channel))
        }
      })

    const forgetChannel = (channel: string) =>
      Effect.gen(function*() {
        if (!storedKeys.has(channel)) return
        storedKeys = storedKeys.remove(channel)
        yield* persist(repo.forgetChannel(mapping(), channel))
      })

    /** Keys follow `MODE +k/-k` (ZNC, The Lounge; research/bouncers.md row 9), for channels we rejoin. */
    const trackKey = (channel: string, seen: string | null) =>
      Effect.gen(function*() {
        // `+k *` is a server hiding the key from us (ChannelState reports `-k`, whatever its param, as null).
        if (!storedKeys.has(channel) || seen === "*" || storedKeys.get(channel) === seen) return
        storedKeys = storedKeys.set(channel, seen)
        yield* persist(repo.rememberChannel(mapping(), channel, seen))
      })

    const nickFallback = (s: Session) =>
      Effect.gen(function*() {
        s.nickAttempts++
        if (s.nickAttempts > MAX_NICK_ATTEMPTS) {
          return yield* closeSession(s, `no free nick after ${MAX_NICK_ATTEMPTS} attempts`, "quit")
        }
        s.nick = fallbackNick(wantedNick, s.nickAttempts, s.isupport.nickLen ?? ASSUMED_NICKLEN)
        yield* write(s, formatLine({ command: "NICK", params: [s.nick] }))
        yield* Effect.logInfo("nick in use at registration; trying another").pipe(Effect.annotateLogs({ nick: s.nick }))
      })

    // ---- channel state and the replies to our own queries ----

    const channelContext = (s: Session, time: number): Channels.ChannelContext => ({
      selfNick: s.nick,
      isupport: s.isupport,
      caseMapping: s.isupport.caseMapping,
      now: new Date(time)
    })

    /** Reduces a line into the channel state (seen with our nick from before it) and acts on what it did. */
    const applyChannelLine = (s: Session, line: IrcLine, time: number) =>
      Effect.gen(function*() {
        const update = Channels.applyLine(s.channels, line, channelContext(s, time))
        s.channels = update.state
        for (const event of update.events) {
          switch (event._tag) {
            case "SelfJoined":
              yield* onSelfJoin(s, event.channel)
              break
            case "SelfLeft":
              // Parting is the account's intent to be out; a KICK is not, so a kicked channel is still rejoined.
              if (event.how === "part") yield* forgetChannel(event.channel)
              break
            case "KeyChanged":
              yield* trackKey(event.channel, event.key)
              break
            case "NamesComplete":
              // IRCv3 away-notify keeps away state current by itself; without it (ngircd), WHO's H/G flags say it.
              if (!s.caps.has("away-notify")) yield* queueWho(s, event.channel)
              break
            default:
              break
          }
        }
      })

    /** One automatic WHO at a time (irc-framework serialises WHO too): its 315 then says which one ended. */
    const queueWho = (s: Session, channel: string) =>
      Effect.gen(function*() {
        const same = (c: string) => equalsFolded(s.isupport.caseMapping, c, channel)
        if ((s.whoInFlight !== null && same(s.whoInFlight)) || s.whoQueue.some(same)) return
        s.whoQueue = [...s.whoQueue, channel]
        yield* sendNextWho(s)
      })

    const sendNextWho = (s: Session) =>
      Effect.gen(function*() {
        while (s.whoInFlight === null) {
          const [next, ...rest] = s.whoQueue
          if (next === undefined) return
          s.whoQueue = rest
          if (!Channels.isJoined(s.channels, next)) continue
          s.whoInFlight = next
          yield* write(s, formatLine({ command: "WHO", params: [next] }))
          yield* startTimer("who", WHO_TIMEOUT, { _tag: "WhoTimeout", session: s.id })
        }
      })

    /**
     * True when the line answers one of our own queries, which it then answers: a get_mode_list fence (PONG, list
     * entry, end numeric or refusal: ModeListRequests.onLine) or the automatic WHO (352 feeds the away state, 315
     * lets the next WHO go). Such a line is not history and changes nothing else.
     */
    const consumeOwnReply = (s: Session, line: IrcLine, time: number) =>
      Effect.gen(function*() {
        const outcome = ModeLists.onLine(s.modeLists, line, { caseMapping: s.isupport.caseMapping, isupport: s.isupport })
        s.modeLists = outcome.state
        for (const { requestId, result } of outcome.completed) {
          yield* answerModeList(requestId, ModeLists.toCommandResult(result))
        }
        if (outcome.consumed) return true

        const who = s.whoInFlight
        const subject = line.params[1]
        if (who === null || subject === undefined || !equalsFolded(s.isupport.caseMapping, subject, who)) return false
        if (line.command === Numeric.RPL_WHOREPLY) {
          s.channels = Channels.applyLine(s.channels, line, channelContext(s, time)).state
          return true
        }
        if (line.command === Numeric.RPL_ENDOFWHO) {
          s.whoInFlight = null
          yield* stopTimer("who")
          yield* sendNextWho(s)
          return true
        }
        return false
      })

    // ---- inbound lines ----

    const onLine = (s: Session, line: IrcLine, raw: string) =>
      Effect.gen(function*() {
        const time = yield* now
        s.lastTrafficAt = time
        s.pingSent = false
        // Replies to our own queries answer them and go no further (see the module comment).
        if (yield* consumeOwnReply(s, line, time)) return
        // History first, from the state before this line (a QUIT must still find the user's channels).
        // FiSH lines are stored opened: the plaintext, marked decrypted or undecryptable (E2eCodec.ts).
        const context = historyContext(s, time)
        const stored = raw.replace(/[\r\n]+$/, "")
        yield* append(E2e.historyOfInbound(e2eKeys, s.isupport, s.nick, line, (l) => messagesFor(context, l, stored)))

        const p = line.params
        const nick = line.source?.nick
        const isSelf = nick !== undefined && sameNick(nick, s.nick)

        const refusal = permanentRefusal(line.command, p, s.registered)
        if (refusal !== undefined) {
          s.permanent ??= refusal
          return yield* closeSession(s, refusal, "quit")
        }

        yield* applyChannelLine(s, line, time)

        switch (line.command) {
          case "001": {
            s.registered = true
            s.registeredAt = time
            s.nick = p[0] ?? s.nick
            yield* stopTimer("registration")
            if (config.sasl !== null && !s.saslSucceeded) {
              // irc-framework registers without SASL when the server offers no `sasl` cap; we asked for a login.
              const reason = "SASL authentication did not happen (the server did not offer SASL)"
              s.permanent ??= reason
              return yield* closeSession(s, reason, "quit")
            }
            lastError = null
            yield* startTimer("rejoin", REJOIN_FALLBACK, { _tag: "RejoinFallback", session: s.id })
            return yield* transition("connected", { nick: s.nick })
          }
          case "005":
            return yield* setISupport(s, applyISupport(s.isupport, p))
          case "376":
          case "422":
            return yield* afterBurst(s)
          case "433":
          case "437":
            // RFC 2812 §5.2: nick in use / temporarily unavailable. After registration it only answers a change.
            return s.registered ? undefined : yield* nickFallback(s)
          case "900":
          case "903":
            s.saslSucceeded = true
            return
          case "396":
            if (p[1] !== undefined) s.host = p[1]
            return
          case "ERROR":
            s.serverError = p[0] ?? "ERROR"
            return
          case "CAP":
            return onCap(s, p)
          case "JOIN":
            // Membership is ChannelState's (applied above); our own JOIN also tells us our user and host.
            if (isSelf) {
              if (line.source?.user !== undefined) s.user = line.source.user
              if (line.source?.host !== undefined) s.host = line.source.host
            }
            return
          case "QUIT":
            if (nick === undefined) return
            // The holder of our wanted nick left: take it now rather than at the next timer.
            if (s.registered && sameNick(nick, wantedNick) && !sameNick(s.nick, wantedNick)) {
              yield* write(s, formatLine({ command: "NICK", params: [wantedNick] }))
            }
            return
          case "NICK":
            return yield* onNick(s, nick, p[0])
          case "731": {
            // RPL_MONOFFLINE: `<client> :target[!user@host],...`
            const offline = (p[1] ?? "").split(",").map((t) => t.split("!")[0] ?? t)
            if (s.registered && offline.some((t) => sameNick(t, wantedNick)) && !sameNick(s.nick, wantedNick)) {
              yield* write(s, formatLine({ command: "NICK", params: [wantedNick] }))
            }
            return
          }
          default:
            return
        }
      })

    /** CAP ACK/DEL/NEW: which capabilities are on (echo-message decides who stores our own messages). */
    const onCap = (s: Session, p: ReadonlyArray<string>) => {
      const sub = (p[1] ?? "").toUpperCase()
      const caps = (p[p.length - 1] ?? "").split(" ").filter((c) => c !== "")
      if (sub === "ACK") {
        for (const cap of caps) {
          if (cap.startsWith("-")) s.caps.delete(cap.slice(1))
          else s.caps.add(cap.split("=")[0] ?? cap)
        }
      } else if (sub === "DEL") {
        for (const cap of caps) s.caps.delete(cap.split("=")[0] ?? cap)
      }
    }

    const onNick = (s: Session, from: string | undefined, to: string | undefined) =>
      Effect.gen(function*() {
        if (from === undefined || to === undefined) return
        if (sameNick(from, s.nick)) {
          s.nick = to
          if (s.requestedNick !== null && sameNick(s.requestedNick, to)) {
            // set_nick succeeded: this is the nick to keep (and regain) from now on.
            wantedNick = to
            s.requestedNick = null
          }
          if (sameNick(to, wantedNick)) yield* stopRegain(s)
          else if (s.burstDone && s.monitoring === null) yield* startRegain(s)
          yield* Effect.logInfo("nick changed").pipe(Effect.annotateLogs({ from, to }))
          return yield* publish
        }
        if (s.registered && sameNick(from, wantedNick) && !sameNick(s.nick, wantedNick)) {
          yield* write(s, formatLine({ command: "NICK", params: [wantedNick] }))
        }
      })

    // ---- commands ----

    const connected = (): Session | undefined => (state === "connected" ? session : undefined)

    const storeOwn = (s: Session, lines: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        // With echo-message the server sends our messages back and they are stored from the echo (with its time).
        if (s.caps.has("echo-message")) return
        yield* append(ownMessages(historyContext(s, yield* now), lines))
      })

    const say = (kind: SayKind, target: string, text: string): Effect.Effect<Result> =>
      Effect.gen(function*() {
        if (!isSingleName(target)) return fail("invalid-arguments", "target must be one channel or nick")
        if (text === "") return fail("invalid-arguments", "text is empty")
        const s = connected()
        if (s === undefined) return NOT_CONNECTED
        const e2eKey = E2e.keyForTarget(e2eKeys, s.isupport, target)
        if (e2eKey !== undefined) return yield* saySealed(s, e2eKey, kind, target, text)
        const command = kind === "notice" ? "NOTICE" : "PRIVMSG"
        // Budget for our relayed prefix (`:nick!user@host `) as far as we know it, so no server truncates a piece.
        const chunks = splitText(target, text, {
          command,
          ...(kind === "action" ? { ctcp: "ACTION" } : {}),
          prefixAllowance: prefixAllowance({
            nick: s.nick,
            ...(s.user !== undefined ? { user: s.user } : {}),
            ...(s.host !== undefined ? { host: s.host } : {})
          })
        })
        const lines = chunks.map((chunk) =>
          formatLine({ command, params: [target, kind === "action" ? encodeAction(chunk) : chunk] })
        )
        for (const line of lines) yield* write(s, line)
        yield* storeOwn(s, lines)
        return OK
      })

    /**
     * send_message to an encrypted target: every piece encrypted and sized for the line limit. The local copy (no
     * echo-message) is the plaintext marked decrypted, with the line actually sent as its raw; with echo-message the
     * echo is opened and stored instead, once.
     */
    const saySealed = (s: Session, key: FishKey, kind: SayKind, target: string, text: string) =>
      Effect.gen(function*() {
        const sealed = E2e.sealMessage(key, {
          kind,
          target,
          text,
          prefixAllowance: prefixAllowance({
            nick: s.nick,
            ...(s.user !== undefined ? { user: s.user } : {}),
            ...(s.host !== undefined ? { host: s.host } : {})
          })
        })
        if (!sealed.ok) return fail("invalid-arguments", sealed.reason)
        for (const line of sealed.lines) yield* write(s, line.wire)
        if (!s.caps.has("echo-message")) {
          const context = historyContext(s, yield* now)
          yield* append(sealed.lines.flatMap((line) =>
            ownMessages(context, [line.plain]).map((m) => ({ ...m, raw: line.wire, encryption: "decrypted" as const }))
          ))
        }
        return OK
      })

    const raw = (line: string): Effect.Effect<Result> =>
      Effect.gen(function*() {
        if (line.trim() === "") return fail("invalid-arguments", "the line is empty")
        // interface.md send_raw: never plaintext to an encrypted target. Checked here too, against the keys the
        // dispatcher holds, so no key change can slip between the check and the write.
        const keyed = E2e.encryptedTargetOfRaw(e2eKeys, isupport, line)
        if (keyed !== undefined) {
          return fail("e2e-channel-use-send-message", `${keyed} is end-to-end encrypted; use send_message`)
        }
        const s = connected()
        if (s === undefined) return NOT_CONNECTED
        yield* write(s, line)
        const parsed = parseLine(line)
        if (parsed?.command === "NICK" && parsed.params[0] !== undefined) s.requestedNick = parsed.params[0]
        yield* storeOwn(s, [line])
        return OK
      })

    const join = (channel: string, key: Option.Option<string>): Effect.Effect<Result> =>
      Effect.gen(function*() {
        const s = connected()
        if (s === undefined) return NOT_CONNECTED
        if (!isSingleName(channel) || !isChannel(s.isupport, channel)) {
          return fail("invalid-arguments", `${JSON.stringify(channel)} is not a channel name on this network`)
        }
        if (Option.isSome(key) && !isSingleName(key.value)) {
          return fail("invalid-arguments", "the key must be one word without commas")
        }
        const sent = Option.getOrElse(key, () => storedKeys.get(channel) ?? null)
        if (Option.isSome(key)) s.pendingKeys = s.pendingKeys.set(channel, key.value)
        yield* write(s, formatLine({ command: "JOIN", params: sent === null ? [channel] : [channel, sent] }))
        return OK
      })

    const part = (channel: string, reason: Option.Option<string>): Effect.Effect<Result> =>
      Effect.gen(function*() {
        const s = connected()
        if (s === undefined) return NOT_CONNECTED
        if (!isSingleName(channel)) return fail("invalid-arguments", "channel must be one channel name")
        const joined = Channels.isJoined(s.channels, channel)
        if (!joined && !storedKeys.has(channel)) return fail("not-in-channel", `not in ${channel}`)
        // The account's intent is to be out of it: no rejoin, even if the PART never comes back.
        yield* forgetChannel(channel)
        if (joined) {
          yield* write(s, formatLine({ command: "PART", params: Option.isSome(reason) ? [channel, reason.value] : [channel] }))
        }
        return OK
      })

    const away = (message: Option.Option<string>): Effect.Effect<Result> =>
      Effect.gen(function*() {
        // Remembered even while offline: set_away covers every network and is applied at the next registration.
        awayMessage = Option.getOrNull(message)
        yield* persist(repo.setAwayMessage(awayMessage))
        const s = connected()
        if (s !== undefined) {
          yield* write(s, formatLine({ command: "AWAY", params: Option.isSome(message) ? [message.value] : [] }))
        }
        return OK
      })

    const simple = (build: () => Either.Either<string, string>, after?: (s: Session) => void): Effect.Effect<Result> =>
      Effect.gen(function*() {
        const s = connected()
        if (s === undefined) return NOT_CONNECTED
        const line = build()
        if (Either.isLeft(line)) return fail("invalid-arguments", line.left)
        yield* write(s, line.right)
        after?.(s)
        return OK
      })

    const connect = (reconnect: boolean): Effect.Effect<Result> =>
      Effect.gen(function*() {
        if (!isAllowedHost(deps.allowedHosts, config.host)) {
          lastError = lockedDownMessage(config.host)
          yield* transition("offline")
          return fail("locked-down", lastError)
        }
        stopping = false
        yield* persist(repo.setEnabled(true))
        if (session !== undefined && !reconnect) return OK
        if (session !== undefined) yield* dropSession("Belay: reconnecting")
        yield* backoff.reset
        yield* startAttempt
        return OK
      })

    const disconnect = Effect.gen(function*() {
      yield* persist(repo.setEnabled(false))
      yield* stopTimer("retry")
      yield* dropSession("Belay: disconnected")
      lastError = null
      yield* transition("offline", { requested: true })
      return OK
    })

    /** Reads a joined channel's state; `not-in-channel` when the account is not in it (interface.md list_members). */
    const inChannel = <A extends object>(channel: string, read: (s: Session) => A | undefined): Result<A> => {
      const s = connected()
      if (s === undefined) return NOT_CONNECTED
      const found = read(s)
      return found === undefined ? fail("not-in-channel", `not in ${channel}`) : { ok: true as const, ...found }
    }

    const setTopic = (channel: string, topic: string): Effect.Effect<Result> =>
      Effect.gen(function*() {
        const s = connected()
        if (s === undefined) return NOT_CONNECTED
        if (!isSingleName(channel) || !isChannel(s.isupport, channel)) {
          return fail("invalid-arguments", `${JSON.stringify(channel)} is not a channel name on this network`)
        }
        // interface.md: always written, "" clears (`TOPIC #c :`). A refusal (482, 442…) comes back as a numeric
        // that History files in the channel as an `error` line (ChannelErrors.ts).
        yield* write(s, formatLine({ command: "TOPIC", params: [channel, topic] }))
        return OK
      })

    const setModes = (channel: string, changes: ReadonlyArray<ModeChange>) =>
      Effect.gen(function*() {
        const s = connected()
        if (s === undefined) return NOT_CONNECTED
        // A bare `-k` takes the key last seen on the channel (MODE +k, or the one we joined with), else the stored one.
        const storedKey = Channels.channelKey(s.channels, channel) ?? storedKeys.get(channel) ?? null
        const lines = modeLines(
          channel,
          changes.map((c) => (c.param === undefined ? { sign: c.sign, letter: c.letter } : { sign: c.sign, letter: c.letter, param: c.param })),
          s.isupport,
          storedKey !== null ? { storedKey } : {}
        )
        if (Either.isLeft(lines)) return fail("invalid-arguments", lines.left.message)
        for (const line of lines.right) yield* write(s, line)
        // A 472 (unknown mode) names no channel; it is filed under this one (ChannelErrors.ts).
        s.lastModeChannel = channel
        return { ok: true as const, lines: lines.right }
      })

    const modeList = (channel: string, letter: string, reply: Reply<Result<ModeListAnswer>>) =>
      Effect.gen(function*() {
        const s = connected()
        if (s === undefined) return yield* Deferred.succeed(reply, NOT_CONNECTED)
        if (!isSingleName(channel) || !isChannel(s.isupport, channel)) {
          return yield* Deferred.succeed(
            reply,
            fail("invalid-arguments", `${JSON.stringify(channel)} is not a channel name on this network`)
          )
        }
        if (!ModeLists.isListLetter(s.isupport, letter)) {
          return yield* Deferred.succeed(reply, fail("invalid-arguments", notAListMessage(s.isupport, letter)))
        }
        const id = ++modeListSeq
        const registered = ModeLists.register(s.modeLists, { channel, letter, requestId: id }, s.isupport.caseMapping)
        s.modeLists = registered.state
        modeListWaiters.set(id, reply)
        // PING, MODE, PING back to back: nothing of ours may come between the fences.
        for (const line of registered.lines) yield* write(s, line)
        yield* startTimer(modeListTimer(id), MODE_LIST_TIMEOUT, { _tag: "ModeListTimeout", requestId: id })
      })

    const onModeListTimeout = (id: ModeLists.RequestId) =>
      Effect.gen(function*() {
        if (!modeListWaiters.has(id)) return
        // The query stays as an orphan that swallows its late replies (ModeListRequests.expire).
        if (session !== undefined) session.modeLists = ModeLists.expire(session.modeLists, id).state
        yield* answerModeList(
          id,
          fail("timeout", `the server did not answer the list query within ${Duration.format(MODE_LIST_TIMEOUT)}`)
        )
      })

    const shutdown = (reply: Reply<void>) =>
      Effect.gen(function*() {
        stopping = true
        yield* stopTimer("retry")
        const s = session
        if (s === undefined) {
          lastError = null
          yield* transition("offline")
          return yield* Deferred.succeed(reply, undefined)
        }
        shutdownWaiters.push(reply)
        yield* closeSession(s, "shutting down", "quit")
        yield* startTimer("quit", QUIT_GRACE, { _tag: "QuitGraceOver", session: s.id })
      })

    const onCommand = (command: Command): Effect.Effect<void> => {
      // The supervisor refuses CR, LF and NUL naming the field; this is the actor's own line of defence, since the
      // transport writes verbatim and formatLine would throw (a defect that restarts the actor).
      const refused = carriesLineBreak(command)
      const answer = <A extends object>(reply: Reply<Result<A>>, result: Effect.Effect<Result<A>>) =>
        refused
          ? Deferred.succeed(reply, fail("invalid-arguments", "CR, LF and NUL are not allowed in IRC arguments"))
          : Effect.flatMap(result, (a) => Deferred.succeed(reply, a))
      switch (command._tag) {
        case "Say":
          return answer(command.reply, say(command.kind, command.target, command.text))
        case "Raw":
          return answer(command.reply, raw(command.line))
        case "Join":
          return answer(command.reply, join(command.channel, command.key))
        case "Part":
          return answer(command.reply, part(command.channel, command.reason))
        case "Nick":
          return answer(
            command.reply,
            simple(
              () => isSingleName(command.nick) ? Either.right(formatLine({ command: "NICK", params: [command.nick] })) : Either.left("nick must be one word"),
              (s) => {
                s.requestedNick = command.nick
              }
            )
          )
        case "Away":
          return answer(command.reply, away(command.message))
        case "Whois":
          return answer(
            command.reply,
            simple(() => isSingleName(command.nick) ? Either.right(formatLine({ command: "WHOIS", params: [command.nick] })) : Either.left("nick must be one word"))
          )
        case "Connect":
          return answer(command.reply, connect(command.reconnect))
        case "Disconnect":
          return answer(command.reply, disconnect)
        case "Members":
          return answer(
            command.reply,
            Effect.sync(() =>
              inChannel(command.channel, (s) => {
                const members = Channels.members(s.channels, command.channel, s.isupport)
                return members === undefined ? undefined : { members }
              })
            )
          )
        case "Topic":
          return answer(
            command.reply,
            Effect.sync(() =>
              inChannel(command.channel, (s) => {
                const topic = Channels.topic(s.channels, command.channel)
                return topic === undefined ? undefined : { topic }
              })
            )
          )
        case "SetTopic":
          return answer(command.reply, setTopic(command.channel, command.topic))
        case "SetModes":
          return answer(command.reply, setModes(command.channel, command.changes))
        case "ModeList":
          return refused
            ? Deferred.succeed(command.reply, fail("invalid-arguments", "CR, LF and NUL are not allowed in IRC arguments"))
            : modeList(command.channel, command.letter, command.reply)
        case "Shutdown":
          return shutdown(command.reply)
      }
    }

    // ---- the dispatcher ----

    const current = (id: number): Session | undefined => (session !== undefined && session.id === id ? session : undefined)

    const onTransport = (s: Session, event: TransportEvent) =>
      Effect.gen(function*() {
        switch (event._tag) {
          case "Opened":
            s.lastTrafficAt = yield* now
            return yield* armKeepalive(s)
          case "Line": {
            const line = parseLine(event.line)
            return line === undefined ? undefined : yield* onLine(s, line, event.line)
          }
          case "SaslFailed": {
            const reason = `SASL authentication failed (${event.reason}${event.message !== null ? `: ${event.message}` : ""})`
            s.permanent ??= reason
            return yield* closeSession(s, reason, "quit")
          }
          case "Closed":
            return yield* onClosed(s, event.error)
        }
      })

    /**
     * One timer per connection, armed for the next moment the silence could matter: last traffic + 90 s (PING), or
     * + 180 s once the PING is out (drop). Lines only move `lastTrafficAt`; the timer re-arms itself when it fires
     * early, so a busy connection costs no timer churn (ZNC checks every 30 s instead; this is exact).
     */
    const armKeepalive = (s: Session) =>
      startTimerAt(
        "keepalive",
        s.lastTrafficAt + Duration.toMillis(s.pingSent ? KEEPALIVE_DEAD : KEEPALIVE_IDLE),
        { _tag: "KeepaliveDue", session: s.id }
      )

    const onKeepalive = (s: Session) =>
      Effect.gen(function*() {
        const silence = (yield* now) - s.lastTrafficAt
        if (silence >= Duration.toMillis(KEEPALIVE_DEAD)) {
          return yield* closeSession(s, `no data from the server for ${Math.round(silence / 1000)} s (ping timeout)`, "destroy")
        }
        if (silence >= Duration.toMillis(KEEPALIVE_IDLE) && !s.pingSent) {
          s.pingSent = true
          yield* write(s, formatLine({ command: "PING", params: ["belay-keepalive"] }))
        }
        yield* armKeepalive(s)
      })

    const dispatch = (input: Input): Effect.Effect<void> => {
      switch (input._tag) {
        case "Start":
          return config.enabled
            ? startAttempt
            : Effect.zipRight(Effect.logInfo("network disconnected by the account; staying offline"), publish)
        case "Transport": {
          const s = current(input.session)
          return s === undefined ? Effect.void : onTransport(s, input.event)
        }
        case "RetryDue":
          return input.token === retryToken && state === "backoff" && !stopping ? startAttempt : Effect.void
        case "RegistrationTimeout": {
          const s = current(input.session)
          return s === undefined || s.registered
            ? Effect.void
            : closeSession(s, `registration did not complete within ${Duration.format(REGISTRATION_TIMEOUT)}`, "destroy")
        }
        case "KeepaliveDue": {
          const s = current(input.session)
          return s === undefined ? Effect.void : onKeepalive(s)
        }
        case "RegainDue": {
          const s = current(input.session)
          if (s === undefined || !s.registered || sameNick(s.nick, wantedNick)) return Effect.void
          return Effect.zipRight(write(s, formatLine({ command: "NICK", params: [wantedNick] })), scheduleRegain(s))
        }
        case "RejoinFallback": {
          const s = current(input.session)
          return s === undefined ? Effect.void : afterBurst(s)
        }
        case "ChannelsLoaded": {
          const s = current(input.session)
          return s === undefined || state !== "connected" ? Effect.void : onChannelsLoaded(s, input.channels)
        }
        case "QuitGraceOver": {
          const s = current(input.session)
          return s === undefined ? Effect.void : Effect.sync(() => s.connection.destroy())
        }
        case "ModeListTimeout":
          return onModeListTimeout(input.requestId)
        case "WhoTimeout": {
          const s = current(input.session)
          if (s === undefined || s.whoInFlight === null) return Effect.void
          // Its late replies, if any, are stored as ordinary numerics; the queue moves on.
          s.whoInFlight = null
          return sendNextWho(s)
        }
        case "E2eKeyChanged":
          return Effect.sync(() => {
            e2eKeys = e2eKeys.apply(input.change)
          })
        default:
          return onCommand(input)
      }
    }

    // Runs after the dispatcher fiber is interrupted (finalizers run in reverse order of registration), so it sees
    // the final state: a removed network or a dead actor still says QUIT instead of leaking its socket.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        const s = session
        session = undefined
        s?.connection.quit("Belay: network stopped")
      })
    )

    // Runs after the persistence fiber is interrupted: what it had not written yet (disconnect's `enabled = false`,
    // a channel just joined) is written now, briefly bounded so a dead database cannot hold the shutdown.
    yield* Effect.addFinalizer(() =>
      Queue.takeAll(persistQueue).pipe(
        Effect.flatMap((pending) => Effect.forEach(pending, (effect) => effect, { discard: true })),
        Effect.interruptible,
        Effect.timeout(PERSIST_DRAIN),
        Effect.catchAllCause((cause) => Effect.logWarning("unsaved network state lost at shutdown", cause)),
        Effect.annotateLogs({ networkId })
      )
    )

    yield* Queue.take(persistQueue).pipe(
      Effect.flatMap((effect) =>
        effect.pipe(
          Effect.catchAllCause((cause) => Effect.logWarning("could not save network state; continuing", cause))
        )
      ),
      Effect.forever,
      Effect.annotateLogs({ networkId }),
      Effect.forkScoped
    )

    // Key changes of this network join the inbox, so the dispatcher alone changes the key table.
    yield* Queue.take(e2eChanges).pipe(
      Effect.flatMap((change) => (change.networkId === networkId ? enqueue({ _tag: "E2eKeyChanged", change }) : Effect.void)),
      Effect.forever,
      Effect.forkScoped
    )

    const dispatcher = yield* Queue.take(inbox).pipe(
      Effect.flatMap(dispatch),
      Effect.forever,
      Effect.annotateLogs({ networkId }),
      Effect.forkScoped
    )
    yield* enqueue({ _tag: "Start" })

    return {
      networkId,
      status,
      statusMsg: Effect.sync(() => isupport.statusMsg),
      offer: (command) => Effect.asVoid(Queue.offer(inbox, command)),
      await: Fiber.join(dispatcher)
    } satisfies NetworkActor
  })

/** Reading the stored channels during an outage: every CHANNELS_RELOAD while the connection lives. */
const CHANNELS_SCHEDULE = Schedule.spaced(CHANNELS_RELOAD)
