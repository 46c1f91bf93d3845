/**
 * NetworkActor: one IRC network of one account, kept connected and recorded. It owns the connection (through the
 * IrcTransport port), the connection state machine, the network's ISUPPORT, our nick and the wanted nick, the
 * channel state (ChannelState: members, prefixes, away, topics, keys), the stored channel keys it rejoins with, the
 * get_mode_list queries in flight (ModeListRequests), and writing what it sees into the MessageStore.
 *
 * Concurrency rule (STYLE habit 3, soju `doc/architecture.md`): one inbox, one dispatcher. Commands (each with a
 * Deferred reply), transport events (pushed by irc-framework callbacks with `unsafeOffer`, never handled there),
 * end-to-end key changes (delivered by the supervisor the same way) and timer expiries all go through the unbounded
 * inbox, and the dispatcher (`run`) is the only code that reads or changes the actor's state. Timers are entries in
 * the supervisor's ActorTimers, whose one fiber only enqueues when they are due. Repository writes (channels, keys,
 * enabled, away) wait in the actor's `unsaved` list for a writer fiber that exists only while there is something to
 * write, so a slow or absent database never stalls the connection; the dispatcher and the writer share that list,
 * one synchronous step at a time. Other services read the public status from a SubscriptionRef and talk to the actor
 * only through the supervisor.
 *
 * Memory (issue 3: 500 idle networks, at most 64 KiB of heap each): an idle connected actor is one fiber (the
 * supervisor runs `run` in the fiber that supervises the network), one inbox and its state; everything else is
 * module-level functions over that state, with no closures per actor. Every Effect fiber costs kilobytes (its
 * FiberRefs are copied at fork), so nothing here forks a fiber that lives while the network idles.
 *
 * Connection lifecycle (soju `network.run`, made event-driven):
 *
 *   offline ──connect──▶ connecting ──001──▶ connected
 *      ▲                    │   ▲                │
 *      │ permanent refusal  │   │ retry timer    │ socket closed / keepalive drop / registration timeout
 *      └────────────────────┴── backoff ◀────────┘
 *
 * Every attempt (boot, retry, connect_network) first takes a slot from the supervisor's ConnectThrottle; while no slot
 * is free the actor waits in `backoff` with `nextRetryAt` at its slot.
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
  Cause,
  Clock,
  Data,
  Deferred,
  Duration,
  Effect,
  Either,
  Exit,
  Fiber,
  Option,
  Queue,
  Schedule,
  type Scope,
  SubscriptionRef
} from "effect"
import type { NetworkConfig, StoredChannel } from "../../services/Networks.js"
import type { MessageStoreService, NewMessage } from "../../services/MessageStoreApi.js"
import type { E2eKeyChange, E2eKeyEntry } from "../../services/E2eKeys.js"
import type { FishKey } from "../../services/crypto/Fish.js"
import type { ActorTimers, TimerEntry } from "../ActorTimers.js"
import type { ConnectThrottle } from "../ConnectThrottle.js"
import * as E2e from "./E2eCodec.js"
import * as Channels from "./ChannelState.js"
import { type HistoryContext, messagesFor, ownMessages } from "./History.js"
import { CaseMappedMap, type CaseMapping, DEFAULT_CASE_MAPPING, equalsFolded } from "../../irc/CaseMapping.js"
import { encodeAction } from "../../irc/Ctcp.js"
import { formatLine, type IrcLine, parseLine } from "../../irc/IrcLine.js"
import { applyISupport, defaultISupport, isChannel, type ISupport } from "../../irc/ISupport.js"
import { Numeric } from "../../irc/Numerics.js"
import { joinLines } from "../../irc/JoinLines.js"
import { modeLines } from "../../irc/ModeLines.js"
import { hasLineBreakingChars, isMiddleParam } from "../../irc/Safety.js"
import { prefixAllowance, splitText } from "../../irc/TextSplit.js"
import type { IrcConnection, IrcTransportService, TransportEvent, TransportOptions } from "../IrcTransport.js"
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
} from "../NetworkApi.js"
import { serverBuffer } from "../NetworkApi.js"
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
  type Stepper,
  WHO_TIMEOUT
} from "../ReconnectPolicy.js"

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
  /**
   * Hands this network's key changes (published once stored) to `deliver` until the scope closes. Attached before
   * `load`, so a key set while the keys are read is applied afterwards, never lost. `deliver` must not block.
   */
  readonly attach: (deliver: (change: E2eKeyChange) => void) => Effect.Effect<void, never, Scope.Scope>
}

export interface ActorDeps {
  readonly networkId: number
  readonly repo: NetworkRepo
  readonly store: MessageStoreService
  readonly transport: IrcTransportService
  /** BELAY_ALLOWED_HOSTS, lower-cased; None allows every host. */
  readonly allowedHosts: Option.Option<ReadonlySet<string>>
  readonly e2e: E2eKeySource
  /** The supervisor's timers (one fiber for every actor). */
  readonly timers: ActorTimers
  /** The supervisor's connect throttle (connects of every actor spaced CONNECT_SPACING apart). */
  readonly throttle: ConnectThrottle
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
  /** `slot`: the throttle's slot is reserved, connect now; otherwise the backoff is over, reserve a slot first. */
  | { readonly _tag: "RetryDue"; readonly token: number; readonly slot: boolean }
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
  /** Completes (with the dispatcher's failure) when the actor's scope closes: the dispatcher died or was stopped. */
  readonly await: Effect.Effect<never>
  /**
   * The dispatcher: takes the inbox one input at a time until interrupted (or a defect). It runs in the caller's
   * fiber, so the supervisor spends one fiber per network, not two; `start` forks it instead.
   */
  readonly run: Effect.Effect<never>
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
// The actor's state: one record per actor, read and changed by its dispatcher only (except `unsaved`/`writing`,
// shared with its writer, see the module comment). The functions below take it as their first argument.

interface Actor {
  readonly networkId: number
  readonly deps: ActorDeps
  readonly config: NetworkConfig
  readonly inbox: Queue.Queue<Input>
  readonly status: SubscriptionRef.SubscriptionRef<NetworkStatus>
  /** The actor's scope: the writer and the channel reader are forked into it. */
  readonly scope: Scope.Scope
  readonly backoff: Stepper
  readonly regain: Stepper
  /** Armed timers by name (entries of the supervisor's ActorTimers). */
  readonly timers: Map<string, TimerEntry>
  state: ConnectionState
  nextRetryAt: number | null
  lastError: string | null
  session: Session | undefined
  sessionSeq: number
  retryToken: number
  stopping: boolean
  readonly shutdownWaiters: Array<Reply<void>>
  wantedNick: string
  awayMessage: string | null
  /** ISUPPORT of the last connection: casemapping stays known while offline (buffers are folded with it). */
  isupport: ISupport
  /** Channels we rejoin, with their keys (null: none); mirrors the store, kept in step by the dispatcher. */
  storedKeys: CaseMappedMap<string | null>
  /** FiSH keys of the network's encrypted channels and DMs (E2eCodec.ts), kept current from E2eKeys.changes. */
  e2eKeys: E2e.E2eKeyTable
  /** Callers of get_mode_list waiting for an answer, by request id (their queries are in `session.modeLists`). */
  readonly modeListWaiters: Map<ModeLists.RequestId, Reply<Result<ModeListAnswer>>>
  modeListSeq: number
  /** Repository writes not done yet, oldest first; the head is the one being written while `writing`. */
  readonly unsaved: Array<Effect.Effect<void>>
  writing: boolean
  /** The fiber reading the stored channels after registration, while it runs. */
  channelsReader: Fiber.RuntimeFiber<void> | undefined
}

const now = Clock.currentTimeMillis
const mapping = (a: Actor) => a.isupport.caseMapping
const sameNick = (a: Actor, x: string, y: string) => equalsFolded(mapping(a), x, y)
const enqueue = (a: Actor, input: Input) => Queue.offer(a.inbox, input)

const publish = (a: Actor) =>
  Effect.suspend(() =>
    SubscriptionRef.set(a.status, {
      networkId: a.networkId,
      state: a.state,
      nick: a.state === "connected" && a.session !== undefined ? a.session.nick : null,
      nextRetryAt: a.nextRetryAt === null ? null : new Date(a.nextRetryAt),
      lastError: a.lastError,
      caseMapping: a.isupport.caseMapping,
      channelTypes: a.isupport.chanTypes
    })
  )

const transition = (a: Actor, next: ConnectionState, details: Record<string, unknown> = {}) =>
  Effect.suspend(() => {
    const from = a.state
    a.state = next
    if (next !== "backoff") a.nextRetryAt = null
    const log = from === next
      ? Effect.void
      : (next === "offline" && a.lastError !== null ? Effect.logWarning : Effect.logInfo)(
        `connection ${from} → ${next}`
      ).pipe(Effect.annotateLogs({ from, to: next, ...(a.lastError !== null ? { reason: a.lastError } : {}), ...details }))
    return Effect.zipRight(log, publish(a))
  })

// ---- repository writes, off the dispatcher ----

/**
 * Queues a repository write. MessageStore.append never waits for the database, but these writes (Networks) go
 * straight to SQL and would hold the dispatcher through an outage; so they run on a writer fiber, forked when the
 * first write is queued and ended when the list is empty (an idle network keeps no fiber for it).
 */
const persist = (a: Actor, effect: Effect.Effect<void>) =>
  Effect.suspend(() => {
    a.unsaved.push(effect)
    if (a.writing) return Effect.void
    a.writing = true
    return Effect.asVoid(Effect.forkIn(writeUnsaved(a), a.scope))
  })

/**
 * Writes the list in order. A write leaves the list once done, so one interrupted by shutdown is written again by
 * the drain (every write is idempotent); one that fails is logged and dropped, the connection goes on.
 */
const writeUnsaved = (a: Actor): Effect.Effect<void> =>
  Effect.suspend(() => {
    const next = a.unsaved[0]
    if (next === undefined) {
      a.writing = false
      return Effect.void
    }
    return next.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("could not save network state; continuing", cause)),
      Effect.zipRight(Effect.suspend(() => {
        a.unsaved.shift()
        return writeUnsaved(a)
      }))
    )
  })

/**
 * At shutdown, after the writer was interrupted: what it had not written yet (disconnect's `enabled = false`, a
 * channel just joined) is written now, briefly bounded so a dead database cannot hold the shutdown.
 */
const drainUnsaved = (a: Actor) =>
  Effect.suspend(() => Effect.forEach(a.unsaved.splice(0), (effect) => effect, { discard: true })).pipe(
    Effect.interruptible,
    Effect.timeout(PERSIST_DRAIN),
    Effect.catchAllCause((cause) => Effect.logWarning("unsaved network state lost at shutdown", cause)),
    Effect.annotateLogs({ networkId: a.networkId })
  )

// ---- history ----

const append = (a: Actor, messages: ReadonlyArray<NewMessage>) =>
  Effect.forEach(messages, a.deps.store.append, { discard: true })

const historyContext = (a: Actor, s: Session, time: number): HistoryContext => ({
  networkId: a.networkId,
  selfNick: s.nick,
  registered: s.registered,
  isupport: s.isupport,
  channels: s.channels,
  lastModeChannel: s.lastModeChannel,
  time: new Date(time)
})

/** A note in the server buffer about the connection itself (lost, refused), so history explains the gaps. */
const connectionNote = (a: Actor, text: string) =>
  Effect.flatMap(now, (time) =>
    a.deps.store.append({
      networkId: a.networkId,
      target: serverBuffer(a.networkId),
      targetFolded: serverBuffer(a.networkId),
      bufferKind: "server",
      time: new Date(time),
      kind: "error",
      nick: null,
      text,
      numeric: null,
      self: false,
      raw: null
    }))

// ---- timers: entries in the supervisor's ActorTimers that only enqueue ----
// A timer is armed for an absolute time read when the dispatcher arms it: the deadline is then exactly the published
// one (nextRetryAt), whenever the timers fiber gets to it.

const arm = (a: Actor, name: string, at: number, input: Input) => {
  disarm(a, name)
  a.timers.set(name, a.deps.timers.schedule(at, () => a.inbox.unsafeOffer(input)))
}

const disarm = (a: Actor, name: string) => {
  const entry = a.timers.get(name)
  if (entry === undefined) return
  a.deps.timers.cancel(entry)
  a.timers.delete(name)
}

const startTimerAt = (a: Actor, name: string, at: number, input: Input) => Effect.sync(() => arm(a, name, at, input))
const startTimer = (a: Actor, name: string, delay: Duration.Duration, input: Input) =>
  Effect.flatMap(now, (t) => startTimerAt(a, name, t + Duration.toMillis(delay), input))
const stopTimer = (a: Actor, name: string) => Effect.sync(() => disarm(a, name))

const SESSION_TIMERS = ["registration", "keepalive", "regain", "rejoin", "quit", "who"] as const

/** Everything bound to the connection that just ended: its timers and the channel reader. */
const stopSessionTimers = (a: Actor) =>
  Effect.suspend(() => {
    for (const name of SESSION_TIMERS) disarm(a, name)
    return stopChannelsReader(a)
  })

const stopChannelsReader = (a: Actor) =>
  Effect.suspend(() => {
    const reader = a.channelsReader
    a.channelsReader = undefined
    // Not awaited: the dispatcher never waits on the database, and a late ChannelsLoaded names an old session.
    return reader === undefined ? Effect.void : Fiber.interruptFork(reader)
  })

const write = (s: Session, line: string) => Effect.sync(() => s.connection.write(line))

// ---- get_mode_list waiters ----

const modeListTimer = (id: ModeLists.RequestId) => `mode-list-${id}`

const answerModeList = (a: Actor, id: ModeLists.RequestId, result: Result<ModeListAnswer>) =>
  Effect.suspend(() => {
    const reply = a.modeListWaiters.get(id)
    if (reply === undefined) return Effect.void
    a.modeListWaiters.delete(id)
    disarm(a, modeListTimer(id))
    return Deferred.succeed(reply, result)
  })

/** The connection is gone, and every query with it: each caller still waiting hears `not-connected`. */
const failModeLists = (a: Actor, s: Session) =>
  Effect.gen(function*() {
    s.modeLists = ModeLists.reset(s.modeLists).state
    for (const id of [...a.modeListWaiters.keys()]) yield* answerModeList(a, id, NOT_CONNECTED)
  })

// ---- connection lifecycle ----

const transportOptions = (a: Actor): TransportOptions => ({
  host: a.config.host,
  port: a.config.port,
  tls: a.config.tls,
  tlsInsecure: a.config.tlsInsecure,
  nick: a.wantedNick,
  username: a.config.username ?? a.config.nick,
  realname: a.config.realname ?? "Belay",
  serverPassword: a.config.serverPassword,
  sasl: a.config.sasl
})

const lockedDown = (a: Actor) =>
  Effect.suspend(() => {
    a.lastError = lockedDownMessage(a.config.host)
    return transition(a, "offline")
  })

/**
 * An attempt is due (boot, retry, connect_network): take a slot from the supervisor's ConnectThrottle, and connect at
 * once when it is free, else wait for it in `backoff`, publishing the slot as `nextRetryAt`.
 */
const requestAttempt = (a: Actor) =>
  Effect.gen(function*() {
    disarm(a, "retry")
    if (!isAllowedHost(a.deps.allowedHosts, a.config.host)) return yield* lockedDown(a)
    const wait = yield* a.deps.throttle.reserve
    if (Duration.isZero(wait)) return yield* startAttempt(a)
    const token = ++a.retryToken
    a.nextRetryAt = (yield* now) + Duration.toMillis(wait)
    arm(a, "retry", a.nextRetryAt, { _tag: "RetryDue", token, slot: true })
    yield* transition(a, "backoff", { connectSlotInMs: Duration.toMillis(wait) })
  })

const startAttempt = (a: Actor) =>
  Effect.gen(function*() {
    disarm(a, "retry")
    if (!isAllowedHost(a.deps.allowedHosts, a.config.host)) return yield* lockedDown(a)
    const id = ++a.sessionSeq
    const time = yield* now
    const inbox = a.inbox
    const connection = a.deps.transport.open(transportOptions(a), (event) => {
      // Called on Node's event loop by irc-framework: only enqueue (the inbox is unbounded, so this never fails).
      inbox.unsafeOffer({ _tag: "Transport", session: id, event })
    })
    a.session = {
      id,
      connection,
      registered: false,
      registeredAt: null,
      nick: a.wantedNick,
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
    arm(a, "registration", time + Duration.toMillis(REGISTRATION_TIMEOUT), { _tag: "RegistrationTimeout", session: id })
    yield* transition(a, "connecting", { host: a.config.host, port: a.config.port, tls: a.config.tls })
  })

/** Ask the current connection to end; its Closed event then decides what comes next. */
const closeSession = (s: Session, reason: string, how: "quit" | "destroy") =>
  Effect.sync(() => {
    s.closeReason ??= reason
    if (how === "quit") s.connection.quit(`Belay: ${reason}`)
    else s.connection.destroy()
  })

/** Forget the current connection at once (disconnect, forced reconnect): its later events are ignored. */
const dropSession = (a: Actor, quitMessage: string) =>
  Effect.gen(function*() {
    const s = a.session
    if (s === undefined) return
    a.session = undefined
    s.connection.quit(quitMessage)
    yield* stopSessionTimers(a)
    yield* failModeLists(a, s)
  })

const scheduleRetry = (a: Actor, s: Session, reason: string) =>
  Effect.gen(function*() {
    const time = yield* now
    if (s.registeredAt !== null && time - s.registeredAt >= Duration.toMillis(STABLE_CONNECTION)) yield* a.backoff.reset
    const delay = yield* a.backoff.next
    const token = ++a.retryToken
    a.lastError = reason
    a.nextRetryAt = time + Duration.toMillis(delay)
    arm(a, "retry", a.nextRetryAt, { _tag: "RetryDue", token, slot: false })
    yield* transition(a, "backoff", { retryInMs: Duration.toMillis(delay), reason })
  })

const onClosed = (a: Actor, s: Session, error: string | null) =>
  Effect.gen(function*() {
    a.session = undefined
    yield* stopSessionTimers(a)
    yield* failModeLists(a, s)
    const reason = s.permanent ?? s.closeReason ??
      (s.serverError !== null ? `closed by the server: ${s.serverError}` : error ?? "connection closed by the server")
    if (a.stopping) {
      a.lastError = null
      yield* transition(a, "offline")
      for (const waiter of a.shutdownWaiters.splice(0)) yield* Deferred.succeed(waiter, undefined)
      return
    }
    yield* connectionNote(a, s.registered ? `disconnected: ${reason}` : `connection failed: ${reason}`)
    if (s.permanent !== null) {
      a.lastError = s.permanent
      return yield* transition(a, "offline", { permanent: true })
    }
    yield* scheduleRetry(a, s, reason)
  })

// ---- after registration ----

const stopRegain = (a: Actor, s: Session) =>
  Effect.gen(function*() {
    disarm(a, "regain")
    if (s.monitoring !== null) {
      yield* write(s, formatLine({ command: "MONITOR", params: ["-", s.monitoring] }))
      s.monitoring = null
    }
  })

const scheduleRegain = (a: Actor, s: Session) =>
  Effect.flatMap(a.regain.next, (delay) => startTimer(a, "regain", delay, { _tag: "RegainDue", session: s.id }))

/** Our nick is not the wanted one: watch for it with MONITOR when offered, else retry on a backing-off timer. */
const startRegain = (a: Actor, s: Session) =>
  Effect.gen(function*() {
    if (sameNick(a, s.nick, a.wantedNick) || !isMiddleParam(a.wantedNick)) return
    if (s.isupport.monitor !== undefined) {
      // IRCv3 monitor: the server answers at once (730 online / 731 offline) and again on every change.
      s.monitoring = a.wantedNick
      yield* write(s, formatLine({ command: "MONITOR", params: ["+", a.wantedNick] }))
    } else {
      yield* a.regain.reset
      yield* scheduleRegain(a, s)
    }
  })

/** Reads the stored channels on a fiber of its own: during an outage it keeps trying while this connection lives. */
const loadChannels = (a: Actor, s: Session) =>
  Effect.zipRight(
    stopChannelsReader(a),
    Effect.flatMap(Effect.forkIn(readChannels(a, s.id), a.scope), (reader) =>
      Effect.sync(() => {
        a.channelsReader = reader
      }))
  )

const readChannels = (a: Actor, session: number) =>
  a.deps.repo.channels.pipe(
    // Networks turns SQL errors into defects; during an outage keep trying every CHANNELS_RELOAD.
    Effect.sandbox,
    Effect.tapError((cause) => Effect.logWarning("could not read the stored channels; retrying", cause)),
    Effect.retry({ schedule: CHANNELS_SCHEDULE }),
    Effect.flatMap((channels) => enqueue(a, { _tag: "ChannelsLoaded", session, channels })),
    Effect.ignore
  )

/** End of the registration burst (376/422, or the fallback timer): rejoin, restore away, start nick regain. */
const afterBurst = (a: Actor, s: Session) =>
  Effect.gen(function*() {
    if (s.burstDone) return
    s.burstDone = true
    disarm(a, "rejoin")
    yield* loadChannels(a, s)
    if (a.awayMessage !== null && !hasLineBreakingChars(a.awayMessage)) {
      yield* write(s, formatLine({ command: "AWAY", params: [a.awayMessage] }))
    }
    yield* startRegain(a, s)
  })

const onChannelsLoaded = (a: Actor, s: Session, channels: ReadonlyArray<StoredChannel>) =>
  Effect.gen(function*() {
    a.storedKeys = CaseMappedMap.fromEntries(mapping(a), channels.map((c) => [c.name, c.key] as const))
    const missing = channels.filter((c) => !Channels.isJoined(s.channels, c.name))
    for (const line of joinLines(missing)) yield* write(s, line)
    if (missing.length > 0) {
      yield* Effect.logInfo("rejoining stored channels").pipe(Effect.annotateLogs({ channels: missing.length }))
    }
  })

const setISupport = (a: Actor, s: Session, next: ISupport) =>
  Effect.suspend(() => {
    const changed = next.caseMapping !== s.isupport.caseMapping
    s.isupport = next
    a.isupport = next
    if (changed) {
      s.channels = Channels.withCaseMapping(s.channels, next.caseMapping)
      s.pendingKeys = s.pendingKeys.withMapping(next.caseMapping)
      a.storedKeys = a.storedKeys.withMapping(next.caseMapping)
    }
    return publish(a)
  })

/** Our own JOIN came back: remember the channel (and an explicitly given key) for the next rejoin. */
const onSelfJoin = (a: Actor, s: Session, channel: string) =>
  Effect.gen(function*() {
    const explicitKey = s.pendingKeys.get(channel)
    s.pendingKeys = s.pendingKeys.remove(channel)
    // The key we joined with is the channel's key until a MODE says otherwise: set_channel_modes' bare `-k`.
    s.channels = Channels.rememberKey(s.channels, channel, explicitKey ?? a.storedKeys.get(channel) ?? null)
    if (explicitKey !== undefined) {
      a.storedKeys = a.storedKeys.set(channel, explicitKey)
      yield* persist(a, a.deps.repo.rememberChannel(mapping(a), channel, explicitKey))
    } else if (!a.storedKeys.has(channel)) {
      a.storedKeys = a.storedKeys.set(channel, null)
      yield* persist(a, a.deps.repo.rememberChannel(mapping(a), channel))
    }
  })

const forgetChannel = (a: Actor, channel: string) =>
  Effect.suspend(() => {
    if (!a.storedKeys.has(channel)) return Effect.void
    a.storedKeys = a.storedKeys.remove(channel)
    return persist(a, a.deps.repo.forgetChannel(mapping(a), channel))
  })

/** Keys follow `MODE +k/-k` (ZNC, The Lounge; research/bouncers.md row 9), for channels we rejoin. */
const trackKey = (a: Actor, channel: string, seen: string | null) =>
  Effect.suspend(() => {
    // `+k *` is a server hiding the key from us (ChannelState reports `-k`, whatever its param, as null).
    if (!a.storedKeys.has(channel) || seen === "*" || a.storedKeys.get(channel) === seen) return Effect.void
    a.storedKeys = a.storedKeys.set(channel, seen)
    return persist(a, a.deps.repo.rememberChannel(mapping(a), channel, seen))
  })

const nickFallback = (a: Actor, s: Session) =>
  Effect.gen(function*() {
    s.nickAttempts++
    if (s.nickAttempts > MAX_NICK_ATTEMPTS) {
      return yield* closeSession(s, `no free nick after ${MAX_NICK_ATTEMPTS} attempts`, "quit")
    }
    s.nick = fallbackNick(a.wantedNick, s.nickAttempts, s.isupport.nickLen ?? ASSUMED_NICKLEN)
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
const applyChannelLine = (a: Actor, s: Session, line: IrcLine, time: number) =>
  Effect.gen(function*() {
    const update = Channels.applyLine(s.channels, line, channelContext(s, time))
    s.channels = update.state
    for (const event of update.events) {
      switch (event._tag) {
        case "SelfJoined":
          yield* onSelfJoin(a, s, event.channel)
          break
        case "SelfLeft":
          // Parting is the account's intent to be out; a KICK is not, so a kicked channel is still rejoined.
          if (event.how === "part") yield* forgetChannel(a, event.channel)
          break
        case "KeyChanged":
          yield* trackKey(a, event.channel, event.key)
          break
        case "NamesComplete":
          // IRCv3 away-notify keeps away state current by itself; without it (ngircd), WHO's H/G flags say it.
          if (!s.caps.has("away-notify")) yield* queueWho(a, s, event.channel)
          break
        default:
          break
      }
    }
  })

/** One automatic WHO at a time (irc-framework serialises WHO too): its 315 then says which one ended. */
const queueWho = (a: Actor, s: Session, channel: string) =>
  Effect.suspend(() => {
    const same = (c: string) => equalsFolded(s.isupport.caseMapping, c, channel)
    if ((s.whoInFlight !== null && same(s.whoInFlight)) || s.whoQueue.some(same)) return Effect.void
    s.whoQueue = [...s.whoQueue, channel]
    return sendNextWho(a, s)
  })

const sendNextWho = (a: Actor, s: Session) =>
  Effect.gen(function*() {
    while (s.whoInFlight === null) {
      const [next, ...rest] = s.whoQueue
      if (next === undefined) return
      s.whoQueue = rest
      if (!Channels.isJoined(s.channels, next)) continue
      s.whoInFlight = next
      yield* write(s, formatLine({ command: "WHO", params: [next] }))
      yield* startTimer(a, "who", WHO_TIMEOUT, { _tag: "WhoTimeout", session: s.id })
    }
  })

/**
 * True when the line answers one of our own queries, which it then answers: a get_mode_list fence (PONG, list
 * entry, end numeric or refusal: ModeListRequests.onLine) or the automatic WHO (352 feeds the away state, 315
 * lets the next WHO go). Such a line is not history and changes nothing else.
 */
const consumeOwnReply = (a: Actor, s: Session, line: IrcLine, time: number) =>
  Effect.gen(function*() {
    const outcome = ModeLists.onLine(s.modeLists, line, { caseMapping: s.isupport.caseMapping, isupport: s.isupport })
    s.modeLists = outcome.state
    for (const { requestId, result } of outcome.completed) {
      yield* answerModeList(a, requestId, ModeLists.toCommandResult(result))
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
      disarm(a, "who")
      yield* sendNextWho(a, s)
      return true
    }
    return false
  })

// ---- inbound lines ----

const onLine = (a: Actor, s: Session, line: IrcLine, raw: string) =>
  Effect.gen(function*() {
    const time = yield* now
    s.lastTrafficAt = time
    s.pingSent = false
    // Replies to our own queries answer them and go no further (see the module comment).
    if (yield* consumeOwnReply(a, s, line, time)) return
    // History first, from the state before this line (a QUIT must still find the user's channels).
    // FiSH lines are stored opened: the plaintext, marked decrypted or undecryptable (E2eCodec.ts).
    const context = historyContext(a, s, time)
    const stored = raw.replace(/[\r\n]+$/, "")
    yield* append(a, E2e.historyOfInbound(a.e2eKeys, s.isupport, s.nick, line, (l) => messagesFor(context, l, stored)))

    const p = line.params
    const nick = line.source?.nick
    const isSelf = nick !== undefined && sameNick(a, nick, s.nick)

    const refusal = permanentRefusal(line.command, p, s.registered)
    if (refusal !== undefined) {
      s.permanent ??= refusal
      return yield* closeSession(s, refusal, "quit")
    }

    yield* applyChannelLine(a, s, line, time)

    switch (line.command) {
      case "001": {
        s.registered = true
        s.registeredAt = time
        s.nick = p[0] ?? s.nick
        disarm(a, "registration")
        if (a.config.sasl !== null && !s.saslSucceeded) {
          // irc-framework registers without SASL when the server offers no `sasl` cap; we asked for a login.
          const reason = "SASL authentication did not happen (the server did not offer SASL)"
          s.permanent ??= reason
          return yield* closeSession(s, reason, "quit")
        }
        a.lastError = null
        arm(a, "rejoin", time + Duration.toMillis(REJOIN_FALLBACK), { _tag: "RejoinFallback", session: s.id })
        return yield* transition(a, "connected", { nick: s.nick })
      }
      case "005":
        return yield* setISupport(a, s, applyISupport(s.isupport, p))
      case "376":
      case "422":
        return yield* afterBurst(a, s)
      case "433":
      case "437":
        // RFC 2812 §5.2: nick in use / temporarily unavailable. After registration it only answers a change.
        return s.registered ? undefined : yield* nickFallback(a, s)
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
        if (s.registered && sameNick(a, nick, a.wantedNick) && !sameNick(a, s.nick, a.wantedNick)) {
          yield* write(s, formatLine({ command: "NICK", params: [a.wantedNick] }))
        }
        return
      case "NICK":
        return yield* onNick(a, s, nick, p[0])
      case "731": {
        // RPL_MONOFFLINE: `<client> :target[!user@host],...`
        const offline = (p[1] ?? "").split(",").map((t) => t.split("!")[0] ?? t)
        if (s.registered && offline.some((t) => sameNick(a, t, a.wantedNick)) && !sameNick(a, s.nick, a.wantedNick)) {
          yield* write(s, formatLine({ command: "NICK", params: [a.wantedNick] }))
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

const onNick = (a: Actor, s: Session, from: string | undefined, to: string | undefined) =>
  Effect.gen(function*() {
    if (from === undefined || to === undefined) return
    if (sameNick(a, from, s.nick)) {
      s.nick = to
      if (s.requestedNick !== null && sameNick(a, s.requestedNick, to)) {
        // set_nick succeeded: this is the nick to keep (and regain) from now on.
        a.wantedNick = to
        s.requestedNick = null
      }
      if (sameNick(a, to, a.wantedNick)) yield* stopRegain(a, s)
      else if (s.burstDone && s.monitoring === null) yield* startRegain(a, s)
      yield* Effect.logInfo("nick changed").pipe(Effect.annotateLogs({ from, to }))
      return yield* publish(a)
    }
    if (s.registered && sameNick(a, from, a.wantedNick) && !sameNick(a, s.nick, a.wantedNick)) {
      yield* write(s, formatLine({ command: "NICK", params: [a.wantedNick] }))
    }
  })

// ---- commands ----

const connected = (a: Actor): Session | undefined => (a.state === "connected" ? a.session : undefined)

const storeOwn = (a: Actor, s: Session, lines: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    // With echo-message the server sends our messages back and they are stored from the echo (with its time).
    if (s.caps.has("echo-message")) return
    yield* append(a, ownMessages(historyContext(a, s, yield* now), lines))
  })

const ownPrefixAllowance = (s: Session) =>
  prefixAllowance({
    nick: s.nick,
    ...(s.user !== undefined ? { user: s.user } : {}),
    ...(s.host !== undefined ? { host: s.host } : {})
  })

const say = (a: Actor, kind: SayKind, target: string, text: string): Effect.Effect<Result> =>
  Effect.gen(function*() {
    if (!isSingleName(target)) return fail("invalid-arguments", "target must be one channel or nick")
    if (text === "") return fail("invalid-arguments", "text is empty")
    const s = connected(a)
    if (s === undefined) return NOT_CONNECTED
    const e2eKey = E2e.keyForTarget(a.e2eKeys, s.isupport, target)
    if (e2eKey !== undefined) return yield* saySealed(a, s, e2eKey, kind, target, text)
    const command = kind === "notice" ? "NOTICE" : "PRIVMSG"
    // Budget for our relayed prefix (`:nick!user@host `) as far as we know it, so no server truncates a piece.
    const chunks = splitText(target, text, {
      command,
      ...(kind === "action" ? { ctcp: "ACTION" } : {}),
      prefixAllowance: ownPrefixAllowance(s)
    })
    const lines = chunks.map((chunk) =>
      formatLine({ command, params: [target, kind === "action" ? encodeAction(chunk) : chunk] })
    )
    for (const line of lines) yield* write(s, line)
    yield* storeOwn(a, s, lines)
    return OK
  })

/**
 * send_message to an encrypted target: every piece encrypted and sized for the line limit. The local copy (no
 * echo-message) is the plaintext marked decrypted, with the line actually sent as its raw; with echo-message the
 * echo is opened and stored instead, once.
 */
const saySealed = (a: Actor, s: Session, key: FishKey, kind: SayKind, target: string, text: string) =>
  Effect.gen(function*() {
    const sealed = E2e.sealMessage(key, { kind, target, text, prefixAllowance: ownPrefixAllowance(s) })
    if (!sealed.ok) return fail("invalid-arguments", sealed.reason)
    for (const line of sealed.lines) yield* write(s, line.wire)
    if (!s.caps.has("echo-message")) {
      const context = historyContext(a, s, yield* now)
      yield* append(
        a,
        sealed.lines.flatMap((line) =>
          ownMessages(context, [line.plain]).map((m) => ({ ...m, raw: line.wire, encryption: "decrypted" as const }))
        )
      )
    }
    return OK
  })

const raw = (a: Actor, line: string): Effect.Effect<Result> =>
  Effect.gen(function*() {
    if (line.trim() === "") return fail("invalid-arguments", "the line is empty")
    // interface.md send_raw: never plaintext to an encrypted target. Checked here too, against the keys the
    // dispatcher holds, so no key change can slip between the check and the write.
    const keyed = E2e.encryptedTargetOfRaw(a.e2eKeys, a.isupport, line)
    if (keyed !== undefined) {
      return fail("e2e-channel-use-send-message", `${keyed} is end-to-end encrypted; use send_message`)
    }
    const s = connected(a)
    if (s === undefined) return NOT_CONNECTED
    yield* write(s, line)
    const parsed = parseLine(line)
    if (parsed?.command === "NICK" && parsed.params[0] !== undefined) s.requestedNick = parsed.params[0]
    yield* storeOwn(a, s, [line])
    return OK
  })

const join = (a: Actor, channel: string, key: Option.Option<string>): Effect.Effect<Result> =>
  Effect.gen(function*() {
    const s = connected(a)
    if (s === undefined) return NOT_CONNECTED
    if (!isSingleName(channel) || !isChannel(s.isupport, channel)) {
      return fail("invalid-arguments", `${JSON.stringify(channel)} is not a channel name on this network`)
    }
    if (Option.isSome(key) && !isSingleName(key.value)) {
      return fail("invalid-arguments", "the key must be one word without commas")
    }
    const sent = Option.getOrElse(key, () => a.storedKeys.get(channel) ?? null)
    if (Option.isSome(key)) s.pendingKeys = s.pendingKeys.set(channel, key.value)
    yield* write(s, formatLine({ command: "JOIN", params: sent === null ? [channel] : [channel, sent] }))
    return OK
  })

const part = (a: Actor, channel: string, reason: Option.Option<string>): Effect.Effect<Result> =>
  Effect.gen(function*() {
    const s = connected(a)
    if (s === undefined) return NOT_CONNECTED
    if (!isSingleName(channel)) return fail("invalid-arguments", "channel must be one channel name")
    const joined = Channels.isJoined(s.channels, channel)
    if (!joined && !a.storedKeys.has(channel)) return fail("not-in-channel", `not in ${channel}`)
    // The account's intent is to be out of it: no rejoin, even if the PART never comes back.
    yield* forgetChannel(a, channel)
    if (joined) {
      yield* write(s, formatLine({ command: "PART", params: Option.isSome(reason) ? [channel, reason.value] : [channel] }))
    }
    return OK
  })

const away = (a: Actor, message: Option.Option<string>): Effect.Effect<Result> =>
  Effect.gen(function*() {
    // Remembered even while offline: set_away covers every network and is applied at the next registration.
    a.awayMessage = Option.getOrNull(message)
    yield* persist(a, a.deps.repo.setAwayMessage(a.awayMessage))
    const s = connected(a)
    if (s !== undefined) {
      yield* write(s, formatLine({ command: "AWAY", params: Option.isSome(message) ? [message.value] : [] }))
    }
    return OK
  })

/** A one-word command (NICK, WHOIS) written as is once connected; `after` notes what it asked for. */
const simple = (
  a: Actor,
  command: "NICK" | "WHOIS",
  word: string,
  after?: (s: Session) => void
): Effect.Effect<Result> =>
  Effect.sync(() => {
    const s = connected(a)
    if (s === undefined) return NOT_CONNECTED
    if (!isSingleName(word)) return fail("invalid-arguments", "nick must be one word")
    s.connection.write(formatLine({ command, params: [word] }))
    after?.(s)
    return OK
  })

const connect = (a: Actor, reconnect: boolean): Effect.Effect<Result> =>
  Effect.gen(function*() {
    if (!isAllowedHost(a.deps.allowedHosts, a.config.host)) {
      yield* lockedDown(a)
      return fail("locked-down", a.lastError ?? lockedDownMessage(a.config.host))
    }
    a.stopping = false
    yield* persist(a, a.deps.repo.setEnabled(true))
    if (a.session !== undefined && !reconnect) return OK
    if (a.session !== undefined) yield* dropSession(a, "Belay: reconnecting")
    yield* a.backoff.reset
    yield* requestAttempt(a)
    return OK
  })

const disconnect = (a: Actor): Effect.Effect<Result> =>
  Effect.gen(function*() {
    yield* persist(a, a.deps.repo.setEnabled(false))
    disarm(a, "retry")
    yield* dropSession(a, "Belay: disconnected")
    a.lastError = null
    yield* transition(a, "offline", { requested: true })
    return OK
  })

/** Reads a joined channel's state; `not-in-channel` when the account is not in it (interface.md list_members). */
const inChannel = <A extends object>(a: Actor, channel: string, read: (s: Session) => A | undefined): Result<A> => {
  const s = connected(a)
  if (s === undefined) return NOT_CONNECTED
  const found = read(s)
  return found === undefined ? fail("not-in-channel", `not in ${channel}`) : { ok: true as const, ...found }
}

const setTopic = (a: Actor, channel: string, topic: string): Effect.Effect<Result> =>
  Effect.gen(function*() {
    const s = connected(a)
    if (s === undefined) return NOT_CONNECTED
    if (!isSingleName(channel) || !isChannel(s.isupport, channel)) {
      return fail("invalid-arguments", `${JSON.stringify(channel)} is not a channel name on this network`)
    }
    // interface.md: always written, "" clears (`TOPIC #c :`). A refusal (482, 442…) comes back as a numeric
    // that History files in the channel as an `error` line (ChannelErrors.ts).
    yield* write(s, formatLine({ command: "TOPIC", params: [channel, topic] }))
    return OK
  })

const setModes = (a: Actor, channel: string, changes: ReadonlyArray<ModeChange>) =>
  Effect.gen(function*() {
    const s = connected(a)
    if (s === undefined) return NOT_CONNECTED
    // A bare `-k` takes the key last seen on the channel (MODE +k, or the one we joined with), else the stored one.
    const storedKey = Channels.channelKey(s.channels, channel) ?? a.storedKeys.get(channel) ?? null
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

const modeList = (a: Actor, channel: string, letter: string, reply: Reply<Result<ModeListAnswer>>) =>
  Effect.gen(function*() {
    const s = connected(a)
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
    const id = ++a.modeListSeq
    const registered = ModeLists.register(s.modeLists, { channel, letter, requestId: id }, s.isupport.caseMapping)
    s.modeLists = registered.state
    a.modeListWaiters.set(id, reply)
    // PING, MODE, PING back to back: nothing of ours may come between the fences.
    for (const line of registered.lines) yield* write(s, line)
    yield* startTimer(a, modeListTimer(id), MODE_LIST_TIMEOUT, { _tag: "ModeListTimeout", requestId: id })
  })

const onModeListTimeout = (a: Actor, id: ModeLists.RequestId) =>
  Effect.suspend(() => {
    if (!a.modeListWaiters.has(id)) return Effect.void
    // The query stays as an orphan that swallows its late replies (ModeListRequests.expire).
    if (a.session !== undefined) a.session.modeLists = ModeLists.expire(a.session.modeLists, id).state
    return answerModeList(
      a,
      id,
      fail("timeout", `the server did not answer the list query within ${Duration.format(MODE_LIST_TIMEOUT)}`)
    )
  })

const shutdown = (a: Actor, reply: Reply<void>) =>
  Effect.gen(function*() {
    a.stopping = true
    disarm(a, "retry")
    const s = a.session
    if (s === undefined) {
      a.lastError = null
      yield* transition(a, "offline")
      return yield* Deferred.succeed(reply, undefined)
    }
    a.shutdownWaiters.push(reply)
    yield* closeSession(s, "shutting down", "quit")
    yield* startTimer(a, "quit", QUIT_GRACE, { _tag: "QuitGraceOver", session: s.id })
  })

const LINE_BREAK_REFUSED = fail("invalid-arguments", "CR, LF and NUL are not allowed in IRC arguments")

/** Answers a command's Deferred with `result`, or refuses it when its text carries a line break. */
const answer = <A extends object>(refused: boolean, reply: Reply<Result<A>>, result: () => Effect.Effect<Result<A>>) =>
  refused ? Deferred.succeed(reply, LINE_BREAK_REFUSED) : Effect.flatMap(result(), (r) => Deferred.succeed(reply, r))

const onCommand = (a: Actor, command: Command): Effect.Effect<unknown> => {
  // The supervisor refuses CR, LF and NUL naming the field; this is the actor's own line of defence, since the
  // transport writes verbatim and formatLine would throw (a defect that restarts the actor).
  const refused = carriesLineBreak(command)
  switch (command._tag) {
    case "Say":
      return answer(refused, command.reply, () => say(a, command.kind, command.target, command.text))
    case "Raw":
      return answer(refused, command.reply, () => raw(a, command.line))
    case "Join":
      return answer(refused, command.reply, () => join(a, command.channel, command.key))
    case "Part":
      return answer(refused, command.reply, () => part(a, command.channel, command.reason))
    case "Nick":
      return answer(refused, command.reply, () =>
        simple(a, "NICK", command.nick, (s) => {
          s.requestedNick = command.nick
        }))
    case "Away":
      return answer(refused, command.reply, () => away(a, command.message))
    case "Whois":
      return answer(refused, command.reply, () => simple(a, "WHOIS", command.nick))
    case "Connect":
      return answer(refused, command.reply, () => connect(a, command.reconnect))
    case "Disconnect":
      return answer(refused, command.reply, () => disconnect(a))
    case "Members":
      return answer(refused, command.reply, () =>
        Effect.sync(() =>
          inChannel(a, command.channel, (s) => {
            const members = Channels.members(s.channels, command.channel, s.isupport)
            return members === undefined ? undefined : { members }
          })
        ))
    case "Topic":
      return answer(refused, command.reply, () =>
        Effect.sync(() =>
          inChannel(a, command.channel, (s) => {
            const topic = Channels.topic(s.channels, command.channel)
            return topic === undefined ? undefined : { topic }
          })
        ))
    case "SetTopic":
      return answer(refused, command.reply, () => setTopic(a, command.channel, command.topic))
    case "SetModes":
      return answer(refused, command.reply, () => setModes(a, command.channel, command.changes))
    case "ModeList":
      return refused
        ? Deferred.succeed(command.reply, LINE_BREAK_REFUSED)
        : modeList(a, command.channel, command.letter, command.reply)
    case "Shutdown":
      return shutdown(a, command.reply)
  }
}

// ---- the dispatcher ----

const current = (a: Actor, id: number): Session | undefined =>
  a.session !== undefined && a.session.id === id ? a.session : undefined

const onTransport = (a: Actor, s: Session, event: TransportEvent) =>
  Effect.gen(function*() {
    switch (event._tag) {
      case "Opened":
        s.lastTrafficAt = yield* now
        return armKeepalive(a, s)
      case "Line": {
        const line = parseLine(event.line)
        return line === undefined ? undefined : yield* onLine(a, s, line, event.line)
      }
      case "SaslFailed": {
        const reason = `SASL authentication failed (${event.reason}${event.message !== null ? `: ${event.message}` : ""})`
        s.permanent ??= reason
        return yield* closeSession(s, reason, "quit")
      }
      case "Closed":
        return yield* onClosed(a, s, event.error)
    }
  })

/**
 * One timer per connection, armed for the next moment the silence could matter: last traffic + 90 s (PING), or
 * + 180 s once the PING is out (drop). Lines only move `lastTrafficAt`; the timer re-arms itself when it fires
 * early, so a busy connection costs no timer churn (ZNC checks every 30 s instead; this is exact).
 */
const armKeepalive = (a: Actor, s: Session) =>
  arm(
    a,
    "keepalive",
    s.lastTrafficAt + Duration.toMillis(s.pingSent ? KEEPALIVE_DEAD : KEEPALIVE_IDLE),
    { _tag: "KeepaliveDue", session: s.id }
  )

const onKeepalive = (a: Actor, s: Session) =>
  Effect.gen(function*() {
    const silence = (yield* now) - s.lastTrafficAt
    if (silence >= Duration.toMillis(KEEPALIVE_DEAD)) {
      return yield* closeSession(s, `no data from the server for ${Math.round(silence / 1000)} s (ping timeout)`, "destroy")
    }
    if (silence >= Duration.toMillis(KEEPALIVE_IDLE) && !s.pingSent) {
      s.pingSent = true
      yield* write(s, formatLine({ command: "PING", params: ["belay-keepalive"] }))
    }
    armKeepalive(a, s)
  })

const dispatch = (a: Actor, input: Input): Effect.Effect<unknown> => {
  switch (input._tag) {
    case "Start":
      return a.config.enabled
        ? requestAttempt(a)
        : Effect.zipRight(Effect.logInfo("network disconnected by the account; staying offline"), publish(a))
    case "Transport": {
      const s = current(a, input.session)
      return s === undefined ? Effect.void : onTransport(a, s, input.event)
    }
    case "RetryDue":
      if (input.token !== a.retryToken || a.state !== "backoff" || a.stopping) return Effect.void
      return input.slot ? startAttempt(a) : requestAttempt(a)
    case "RegistrationTimeout": {
      const s = current(a, input.session)
      return s === undefined || s.registered
        ? Effect.void
        : closeSession(s, `registration did not complete within ${Duration.format(REGISTRATION_TIMEOUT)}`, "destroy")
    }
    case "KeepaliveDue": {
      const s = current(a, input.session)
      return s === undefined ? Effect.void : onKeepalive(a, s)
    }
    case "RegainDue": {
      const s = current(a, input.session)
      if (s === undefined || !s.registered || sameNick(a, s.nick, a.wantedNick)) return Effect.void
      return Effect.zipRight(write(s, formatLine({ command: "NICK", params: [a.wantedNick] })), scheduleRegain(a, s))
    }
    case "RejoinFallback": {
      const s = current(a, input.session)
      return s === undefined ? Effect.void : afterBurst(a, s)
    }
    case "ChannelsLoaded": {
      const s = current(a, input.session)
      if (s === undefined) return Effect.void
      // The reader has ended; forget it so the finished fiber is not kept.
      a.channelsReader = undefined
      return a.state !== "connected" ? Effect.void : onChannelsLoaded(a, s, input.channels)
    }
    case "QuitGraceOver": {
      const s = current(a, input.session)
      return s === undefined ? Effect.void : Effect.sync(() => s.connection.destroy())
    }
    case "ModeListTimeout":
      return onModeListTimeout(a, input.requestId)
    case "WhoTimeout": {
      const s = current(a, input.session)
      if (s === undefined || s.whoInFlight === null) return Effect.void
      // Its late replies, if any, are stored as ordinary numerics; the queue moves on.
      s.whoInFlight = null
      return sendNextWho(a, s)
    }
    case "E2eKeyChanged":
      return Effect.sync(() => {
        a.e2eKeys = a.e2eKeys.apply(input.change)
      })
    default:
      return onCommand(a, input)
  }
}

/**
 * Runs when the actor's scope closes, after its dispatcher stopped (the supervisor interrupts `run` before closing
 * the scope), so it sees the final state: a removed network or a dead actor still says QUIT instead of leaking its
 * socket, and leaves no timer behind in the shared ActorTimers.
 */
const release = (a: Actor) =>
  Effect.sync(() => {
    for (const entry of a.timers.values()) a.deps.timers.cancel(entry)
    a.timers.clear()
    const s = a.session
    a.session = undefined
    s?.connection.quit("Belay: network stopped")
  })

// ---------------------------------------------------------------------------------------------------------------
// Building and running an actor.

/**
 * Builds the actor in the caller's scope: reads the network's config and end-to-end keys, attaches to the key
 * changes, and queues its Start. Nothing runs until `run` does (the supervisor runs it in its own fiber).
 */
export const make = (deps: ActorDeps): Effect.Effect<NetworkActor, NetworkGone, Scope.Scope> =>
  Effect.gen(function*() {
    const { networkId } = deps
    const loaded = yield* deps.repo.config
    if (Option.isNone(loaded)) return yield* new NetworkGone({ networkId })
    const config: NetworkConfig = loaded.value
    const inbox = yield* Queue.unbounded<Input>()
    // Keys are known before anything can be sent: without them a message to an encrypted channel would go out in
    // plaintext. Attaching first means a key set while they are read is applied afterwards, never lost.
    yield* deps.e2e.attach((change) => {
      inbox.unsafeOffer({ _tag: "E2eKeyChanged", change })
    })
    const initialE2eKeys = yield* deps.e2e.load
    const a: Actor = {
      networkId,
      deps,
      config,
      inbox,
      status: yield* SubscriptionRef.make<NetworkStatus>({
        networkId,
        state: "offline",
        nick: null,
        nextRetryAt: null,
        lastError: null,
        caseMapping: DEFAULT_CASE_MAPPING,
        channelTypes: defaultISupport.chanTypes
      }),
      scope: yield* Effect.scope,
      backoff: yield* makeStepper(reconnectSchedule),
      regain: yield* makeStepper(regainNickSchedule),
      timers: new Map(),
      state: "offline",
      nextRetryAt: null,
      lastError: null,
      session: undefined,
      sessionSeq: 0,
      retryToken: 0,
      stopping: false,
      shutdownWaiters: [],
      wantedNick: config.nick,
      awayMessage: config.awayMessage,
      isupport: defaultISupport,
      storedKeys: CaseMappedMap.empty<string | null>(DEFAULT_CASE_MAPPING),
      e2eKeys: E2e.E2eKeyTable.fromEntries(initialE2eKeys),
      modeListWaiters: new Map(),
      modeListSeq: 0,
      unsaved: [],
      writing: false,
      channelsReader: undefined
    }
    // Finalizers run in reverse order: the writer (forked later, so closed first) is interrupted, then the drain
    // writes what is left, then `release` says QUIT.
    yield* Effect.addFinalizer(() => release(a))
    yield* Effect.addFinalizer(() => drainUnsaved(a))
    // `await` ends when the scope closes, which the supervisor does with the dispatcher's exit as soon as `run` ends
    // (no frame around `run` for it: the dispatcher's fiber keeps its stack while the network idles).
    const died = yield* Deferred.make<never, unknown>()
    yield* Effect.addFinalizer((exit) =>
      Deferred.failCause(died, Exit.isFailure(exit) ? exit.cause : Cause.die("the network actor stopped"))
    )
    yield* enqueue(a, { _tag: "Start" })
    return {
      networkId,
      status: a.status,
      statusMsg: Effect.sync(() => a.isupport.statusMsg),
      offer: (command) => Effect.asVoid(Queue.offer(inbox, command)),
      await: Effect.orDie(Deferred.await(died)),
      run: Effect.forever(Effect.flatMap(Queue.take(inbox), (input) => dispatch(a, input)))
    } satisfies NetworkActor
  })

/** `make`, with the dispatcher forked into the same scope (tests; the supervisor runs `run` itself). */
export const start = (deps: ActorDeps): Effect.Effect<NetworkActor, NetworkGone, Scope.Scope> =>
  Effect.tap(make(deps), (actor) => Effect.forkScoped(Effect.annotateLogs(actor.run, { networkId: deps.networkId })))

/** Reading the stored channels during an outage: every CHANNELS_RELOAD while the connection lives. */
const CHANNELS_SCHEDULE = Schedule.spaced(CHANNELS_RELOAD)
