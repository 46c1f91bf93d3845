/**
 * ActorState: the state of one network actor — the `Actor` record (connection state machine, wanted nick, away
 * message, stored channel keys, end-to-end keys, waiters, unsaved writes) and the `Session` of its current
 * connection — with the few helpers every part of the actor uses to read it, publish it and write to the socket.
 *
 * Concurrency rule: one actor, one dispatcher fiber (NetworkActor.ts), and only that fiber reads or changes these
 * records; the other modules of this folder are functions over them that run on it. Lines reach the socket only
 * through Outbound.ts, which paces them (flood control). The one exception is
 * `unsaved`/`writing`, shared with the writer fiber of Persistence.ts one synchronous step at a time (JavaScript
 * runs one fiber step at a time). Other services see the state only as the published status (`publish`).
 *
 * Memory: an idle connected actor is one fiber, one inbox and these records; everything else is module-level
 * functions over them, with no closures per actor.
 */
import { Clock, Effect, type Fiber, type Scope } from "effect"
import { type CaseMappedMap, equalsFolded } from "../../irc/CaseMapping.js"
import type { ISupport } from "../../irc/ISupport.js"
import type { ModeList, ModeListLetter } from "../../schema/ChannelMode.js"
import { toIsoTime } from "../../schema/Ids.js"
import type { NetworkState, NetworkStatus } from "../../schema/Network.js"
import { NO_FEATURES, type NetworkFeatures } from "../../schema/NetworkEvent.js"
import { NotConnected, type Refused, type Timeout } from "../../schema/ToolErrors.js"
import type { NetworkConfig } from "../../services/networks/Networks.js"
import type { TimerEntry } from "../ActorTimers.js"
import type { IrcConnection } from "../IrcTransport.js"
import type { Stepper } from "../ReconnectPolicy.js"
import type { ActorDeps } from "./ActorDeps.js"
import type * as Channels from "./ChannelState.js"
import type * as E2e from "./E2eCodec.js"
import type { Gated, Input, Reply } from "./Inbox.js"
import type { InputQueue } from "./InputQueue.js"
import type { StatusCell } from "./StatusCell.js"
import type * as ModeLists from "./ModeListRequests.js"
import type { Outbound } from "./OutboundState.js"

/** A message we sent our own nick, by what identifies it among the copies the server sends back (Persistence). */
export interface SelfDelivery {
  /** The command and text (`PRIVMSG hi`). */
  readonly key: string
  /** It is history: stored as sent, or from the first copy back (echo-message). */
  stored: boolean
  /** The msgid of the copy it was stored from, when that had one. */
  msgid: string | undefined
}

/** Mutable per-connection state: one per socket, forgotten when it closes. */
export interface Session {
  readonly id: number
  readonly connection: IrcConnection
  /** The lines waiting to be written, and the bucket that paces them (Outbound.ts). */
  readonly outbound: Outbound
  registered: boolean
  registeredAt: number | null
  /** Our nick: the one being tried until 001, then the server's view. */
  nick: string
  nickAttempts: number
  user: string | undefined
  host: string | undefined
  isupport: ISupport
  caps: Set<string>
  /**
   * The values the server gave its capabilities in CAP LS or NEW (`draft/multiline` → `max-bytes=…,max-lines=…`); made
   * on the first value, as a server offering none leaves an empty Map of 184 bytes (docs/architecture.md "Memory").
   */
  capValues: Map<string, string> | undefined
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
  /** When the keepalive PING went out, while it waits for its answer (any line from the server ends the wait). */
  pingSentAt: number | null
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
  /**
   * Our own PRIVMSG/NOTICE lines to our own nick, whose copies back from the server (the delivery, and the echo with
   * echo-message) are history once (Persistence.storeOwn, isOwnDelivery); at most SELF_DELIVERIES, oldest first.
   */
  selfDeliveries: Array<SelfDelivery>
}

/** A get_mode_list caller, with what its timeout message names. */
export interface ModeListWaiter {
  readonly reply: Reply<ModeList, Gated | Refused | Timeout>
  readonly channel: string
  readonly letter: ModeListLetter
}

/** The actor's state: one record per actor life. */
export interface Actor {
  readonly networkId: number
  readonly deps: ActorDeps
  /** The stored settings; replaced whole by a Reconfigure input (a change that keeps the connection). */
  config: NetworkConfig
  readonly inbox: InputQueue<Input>
  readonly status: StatusCell
  /** The actor's scope: the writer and the channel reader are forked into it. */
  readonly scope: Scope.Scope
  readonly backoff: Stepper
  readonly regain: Stepper
  /** Armed timers by name (entries of the supervisor's ActorTimers, Timers.ts). */
  readonly timers: Map<string, TimerEntry>
  state: NetworkState
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
  /**
   * Callers of get_mode_list waiting for an answer, by request id (their queries are in `session.modeLists`); made on
   * the first wait, as most networks never have one (an empty Map is 184 bytes: docs/architecture.md "Memory").
   */
  modeListWaiters: Map<ModeLists.RequestId, ModeListWaiter> | undefined
  modeListSeq: number
  /** Repository writes not done yet, oldest first; the head is the one being written while `writing`. */
  readonly unsaved: Array<Effect.Effect<void>>
  writing: boolean
  /** The fiber reading the stored channels after registration, while it runs. */
  channelsReader: Fiber.RuntimeFiber<void> | undefined
  /** The channel state the member's open tabs were last told of (LiveView.ts); undefined while not connected. */
  viewed: Channels.ChannelState | undefined
}

export const now = Clock.currentTimeMillis
export const mapping = (a: Actor) => a.isupport.caseMapping
export const sameNick = (a: Actor, x: string, y: string) => equalsFolded(mapping(a), x, y)

/** The session when it may be written to: registered on an open socket (the interface's one write gate). */
export const connected = (a: Actor): Session | undefined => (a.state === "connected" ? a.session : undefined)

/** `connected` as the gate of a command: the session, or NotConnected (reconnect backoff included). */
export const gate = (a: Actor): Effect.Effect<Session, NotConnected> =>
  Effect.suspend(() => {
    const s = connected(a)
    return s === undefined ? Effect.fail(new NotConnected({ networkId: a.networkId })) : Effect.succeed(s)
  })

/** The session named by an input, if it is still the current one (inputs of an ended connection are ignored). */
export const current = (a: Actor, id: number): Session | undefined =>
  a.session !== undefined && a.session.id === id ? a.session : undefined

/** What the connection can carry for the browser; all false while not connected (docs/contract.md, `features`). */
export const featuresOf = (a: Actor): NetworkFeatures => {
  const s = connected(a)
  if (s === undefined) return NO_FEATURES
  return {
    tags: s.caps.has("message-tags"),
    redaction: s.caps.has("draft/message-redaction"),
    multiline: s.caps.has("draft/multiline") && s.caps.has("batch")
  }
}

export const publish = (a: Actor) =>
  Effect.suspend(() => {
    const status: NetworkStatus = {
      networkId: a.networkId,
      state: a.state,
      nick: a.state === "connected" && a.session !== undefined ? a.session.nick : null,
      nextRetryAt: a.nextRetryAt === null ? null : toIsoTime(new Date(a.nextRetryAt)),
      lastError: a.lastError,
      caseMapping: a.isupport.caseMapping,
      channelTypes: a.isupport.chanTypes
    }
    a.deps.events?.status(a.config.accountId, a.config.name, status, featuresOf(a))
    return a.status.set(status)
  })

/** Moves the connection state machine (Connection.ts), logging every transition with its reason, and publishes. */
export const transition = (a: Actor, next: NetworkState, details: Record<string, unknown> = {}) =>
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
