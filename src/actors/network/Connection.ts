/**
 * Connection: a network actor's connection lifecycle — attempts paced by the supervisor's ConnectThrottle, the
 * socket opened through the IrcTransport port, its close and what follows (retry after backoff, or offline), the
 * keepalive, and the connect, disconnect and shutdown the account or the supervisor ask for (soju `network.run`,
 * made event-driven):
 *
 *   offline ──connect──▶ connecting ──001──▶ connected
 *      ▲                    │   ▲                │
 *      │ permanent refusal  │   │ retry timer    │ socket closed / keepalive drop / registration timeout
 *      └────────────────────┴── backoff ◀────────┘
 *
 * Every attempt (boot, retry, connect_network) first takes a slot from the ConnectThrottle; while no slot is free the
 * actor waits in `backoff` with `nextRetryAt` at its slot. Every transition is logged with the network id.
 * `connected` means registered on an open socket: the one write gate of the interface ("backoff counts as not
 * connected"). Permanent refusals (ReconnectPolicy.permanentRefusal, SASL failure) end in `offline` with the reason
 * kept in `lastError`; disconnect_network ends in `offline` and is remembered (`enabled = false`) across restarts.
 * What happens on the socket once it is open (registration, nick, rejoin) is Registration.ts.
 *
 * Concurrency rule: runs on the actor's dispatcher fiber only, which alone changes the actor's state. The transport
 * callbacks given to `open` only enqueue (irc-framework calls them on Node's event loop); each carries its session
 * id, so the events of a connection that was dropped are ignored.
 */
import { Deferred, Duration, Effect, Option } from "effect"
import { CaseMappedMap, DEFAULT_CASE_MAPPING } from "../../irc/CaseMapping.js"
import { defaultISupport } from "../../irc/ISupport.js"
import { identOf, sourceAddressOf } from "../../net/UpstreamFace.js"
import { LockedDown } from "../../schema/ToolErrors.js"
import type { TransportOptions } from "../IrcTransport.js"
import {
  KEEPALIVE_DEAD,
  KEEPALIVE_IDLE,
  QUIT_GRACE,
  REGISTRATION_TIMEOUT,
  STABLE_CONNECTION
} from "../ReconnectPolicy.js"
import { type Actor, now, type Session, transition } from "./ActorState.js"
import * as Channels from "./ChannelState.js"
import type { Reply } from "./Inbox.js"
import * as ModeListWaiters from "./ModeListWaiters.js"
import * as ModeLists from "./ModeListRequests.js"
import * as Outbound from "./Outbound.js"
import { connectionNote, persist, stopChannelsReader } from "./Persistence.js"
import { arm, disarm, disarmSessionTimers, startTimer } from "./Timers.js"

/** How long an attempt the fence refused waits before asking it again. */
export const FENCE_RECHECK = Duration.seconds(1)
const FENCED = "this node does not hold the network now (cluster fence)"

const isAllowedHost = (allowed: Option.Option<ReadonlySet<string>>, host: string) =>
  Option.match(allowed, { onNone: () => true, onSome: (hosts) => hosts.has(host.toLowerCase()) })

const lockedDownMessage = (host: string) =>
  `locked-down: this instance does not allow connections to ${host} (BELAY_ALLOWED_HOSTS)`

/**
 * The member's face upstream, the same on every node and at every attempt (docs/decisions/hosting.md "Each member
 * their own face upstream"): its ident, and its source address when BELAY_UPSTREAM_SOURCE gives a range; or why the
 * range has no address for it.
 */
const upstreamFace = (a: Actor): Pick<TransportOptions, "ident" | "localAddress"> | { readonly error: string } => {
  const ident = identOf(a.config.accountId) ?? null
  const range = a.deps.upstreamSource
  if (range === undefined) return { ident, localAddress: null }
  const source = sourceAddressOf(range, a.config.accountId)
  return "error" in source ? source : { ident, localAddress: source.address }
}

/**
 * Field by field, not `{ ...face, host, … }`: V8 gives every object made by a spread followed by more properties a
 * hidden class of its own (about 450 bytes), and the transport keeps this one for as long as the connection lives
 * (bench/results/memory-breakdown.md "At 10,000 networks, per-network objects").
 */
const transportOptions = (a: Actor, face: Pick<TransportOptions, "ident" | "localAddress">): TransportOptions => ({
  ident: face.ident,
  localAddress: face.localAddress,
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

/**
 * No source address for this member: connecting from another member's or the node's own would share its bans, so it
 * stays offline (retrying would not change the range); connect_network asks again.
 */
const unplaced = (a: Actor, reason: string) =>
  Effect.suspend(() => {
    a.lastError = reason
    return transition(a, "offline", { permanent: true, reason })
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
export const requestAttempt = (a: Actor, dueAt?: number) =>
  Effect.gen(function*() {
    disarm(a, "retry")
    if (!isAllowedHost(a.deps.allowedHosts, a.config.host)) return yield* lockedDown(a)
    // A retry counts its slot from when its backoff ended (ConnectThrottle.reserveSince), however late it is handled.
    const wait = yield* (dueAt === undefined ? a.deps.throttle.reserve : a.deps.throttle.reserveSince(dueAt))
    if (Duration.isZero(wait)) return yield* startAttempt(a)
    const token = ++a.retryToken
    a.nextRetryAt = (yield* now) + Duration.toMillis(wait)
    arm(a, "retry", a.nextRetryAt, { _tag: "RetryDue", token, slot: true })
    yield* transition(a, "backoff", { connectSlotInMs: Duration.toMillis(wait) })
  })

/**
 * The fence refused the attempt (a cluster node that no longer holds the network's shard): no socket; the actor
 * waits in `backoff` and asks again after FENCE_RECHECK, so a node that keeps the shard after all still connects.
 */
const fenced = (a: Actor) =>
  Effect.gen(function*() {
    const token = ++a.retryToken
    a.lastError = FENCED
    a.nextRetryAt = (yield* now) + Duration.toMillis(FENCE_RECHECK)
    arm(a, "retry", a.nextRetryAt, { _tag: "RetryDue", token, slot: false })
    yield* transition(a, "backoff", { retryInMs: Duration.toMillis(FENCE_RECHECK), reason: FENCED })
  })

const startAttempt = (a: Actor) =>
  Effect.gen(function*() {
    disarm(a, "retry")
    if (!isAllowedHost(a.deps.allowedHosts, a.config.host)) return yield* lockedDown(a)
    // Asked here, right before the socket, not when the attempt was requested: the throttle's wait may have outlasted
    // this node's claim on the network.
    if (a.deps.fence !== undefined && !a.deps.fence()) return yield* fenced(a)
    const face = upstreamFace(a)
    if ("error" in face) return yield* unplaced(a, face.error)
    const id = ++a.sessionSeq
    const time = yield* now
    const inbox = a.inbox
    const connection = a.deps.transport.open(transportOptions(a, face), (event) => {
      // Called on Node's event loop by irc-framework: only enqueue (the inbox is unbounded, so this never fails).
      inbox.unsafeOffer({ _tag: "Transport", session: id, event })
    })
    a.session = {
      id,
      connection,
      outbound: Outbound.make(),
      registered: false,
      registeredAt: null,
      nick: a.wantedNick,
      nickAttempts: 0,
      user: undefined,
      host: undefined,
      isupport: defaultISupport,
      caps: new Set(),
      capValues: undefined,
      channels: Channels.emptyChannelState(DEFAULT_CASE_MAPPING),
      modeLists: ModeLists.emptyModeListRequests,
      lastModeChannel: null,
      whoInFlight: null,
      whoQueue: [],
      lastTrafficAt: time,
      pingSentAt: null,
      burstDone: false,
      saslSucceeded: false,
      monitoring: null,
      requestedNick: null,
      pendingKeys: CaseMappedMap.empty(DEFAULT_CASE_MAPPING),
      closeReason: null,
      permanent: null,
      serverError: null,
      selfDeliveries: []
    }
    arm(a, "registration", time + Duration.toMillis(REGISTRATION_TIMEOUT), { _tag: "RegistrationTimeout", session: id })
    yield* transition(a, "connecting", { host: a.config.host, port: a.config.port, tls: a.config.tls })
  })

/** The backoff (or the throttle's wait) is over: `slot` says whether the throttle's slot is already reserved. */
export const onRetryDue = (a: Actor, token: number, slot: boolean) =>
  token !== a.retryToken || a.state !== "backoff" || a.stopping
    ? Effect.void
    : slot
    ? startAttempt(a)
    : requestAttempt(a, a.nextRetryAt ?? undefined)

/** Ask the current connection to end; its Closed event then decides what comes next. */
export const closeSession = (s: Session, reason: string, how: "quit" | "destroy") =>
  Effect.sync(() => {
    s.closeReason ??= reason
    if (how === "quit") s.connection.quit(`Belay: ${reason}`)
    else s.connection.destroy()
  })

/** Ends a permanently refused connection: no retry after it closes, the reason kept as `lastError`. */
export const refuse = (s: Session, reason: string) =>
  Effect.suspend(() => {
    s.permanent ??= reason
    return closeSession(s, reason, "quit")
  })

/** Everything bound to the connection that just ended: its timers, the channel reader, the lines never sent. */
const stopSessionTimers = (a: Actor, s: Session) =>
  Effect.suspend(() => {
    disarmSessionTimers(a)
    return Effect.zipRight(stopChannelsReader(a), Outbound.logDropped(s))
  })

/** Forget the current connection at once (disconnect, forced reconnect): its later events are ignored. */
const dropSession = (a: Actor, quitMessage: string) =>
  Effect.gen(function*() {
    const s = a.session
    if (s === undefined) return
    a.session = undefined
    s.connection.quit(quitMessage)
    yield* stopSessionTimers(a, s)
    yield* ModeListWaiters.failAll(a, s)
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

export const onClosed = (a: Actor, s: Session, error: string | null) =>
  Effect.gen(function*() {
    a.session = undefined
    yield* stopSessionTimers(a, s)
    yield* ModeListWaiters.failAll(a, s)
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

export const onRegistrationTimeout = (s: Session) =>
  s.registered
    ? Effect.void
    : closeSession(s, `registration did not complete within ${Duration.format(REGISTRATION_TIMEOUT)}`, "destroy")

export const onQuitGraceOver = (s: Session) => Effect.sync(() => s.connection.destroy())

// ---- keepalive ----

/**
 * Keepalive deadlines are rounded up to a whole second: the keepalives of thousands of idle connections
 * then fall due together, one wake of the shared ActorTimers a second rather than one per connection, and a PING
 * goes out at most a second later than 90 s of silence (docs/decisions/irc-connections.md "Keepalive").
 */
const KEEPALIVE_GRAIN_MS = 1000

/**
 * One timer per connection, armed for the next moment the silence could matter: last traffic + 90 s (PING), or
 * the PING + 90 s once it is out (its answer, else the drop, 180 s after the last traffic). Lines only move
 * `lastTrafficAt`; the timer re-arms itself when it fires early, so a busy connection costs no timer churn (ZNC
 * checks every 30 s instead). The one line that re-arms it is the first after our PING (Inbound.ts): else every idle
 * connection's timer would fire once more for nothing, at the PING's drop deadline, 90 s after it was answered.
 */
export const armKeepalive = (a: Actor, s: Session) => {
  const due = s.pingSentAt !== null
    ? s.pingSentAt + Duration.toMillis(KEEPALIVE_DEAD) - Duration.toMillis(KEEPALIVE_IDLE)
    : s.lastTrafficAt + Duration.toMillis(KEEPALIVE_IDLE)
  arm(a, "keepalive", Math.ceil(due / KEEPALIVE_GRAIN_MS) * KEEPALIVE_GRAIN_MS, { _tag: "KeepaliveDue", session: s.id })
}

/**
 * The server's PONG to the keepalive PING never comes as a line (IrcTransport.ts): when nothing else came, this
 * deadline asks the connection whether it came. Answered, the link was alive when the PING went, which is then
 * the last traffic: 90 s ago, so the next PING goes now. An idle connection costs one wake every 90 s.
 */
export const onKeepalive = (a: Actor, s: Session) =>
  // No generator: this runs for every idle connection every 90 s, and what it allocates is most of what an idle
  // Belay allocates (docs/architecture.md "Memory").
  Effect.flatMap(now, (time) => {
    if (s.pingSentAt !== null && s.connection.keepaliveAnswered()) {
      s.lastTrafficAt = s.pingSentAt
      s.pingSentAt = null
    }
    const silence = time - s.lastTrafficAt
    if (silence >= Duration.toMillis(KEEPALIVE_DEAD)) {
      return closeSession(s, `no data from the server for ${Math.round(silence / 1000)} s (ping timeout)`, "destroy")
    }
    if (silence >= Duration.toMillis(KEEPALIVE_IDLE) && s.pingSentAt === null) {
      s.pingSentAt = time
      // Ahead of the lines waiting: its PONG must come back within KEEPALIVE_DEAD however long the queue is.
      Outbound.sendKeepalive(s, time)
    }
    armKeepalive(a, s)
    return Effect.void
  })

// ---- what the account and the supervisor ask for ----

export const connect = (a: Actor, reconnect: boolean): Effect.Effect<void, LockedDown> =>
  Effect.gen(function*() {
    if (!isAllowedHost(a.deps.allowedHosts, a.config.host)) {
      yield* lockedDown(a)
      return yield* new LockedDown({ networkId: a.networkId, host: a.config.host })
    }
    a.stopping = false
    yield* persist(a, a.deps.repo.setEnabled(true))
    if (a.session !== undefined && !reconnect) return
    if (a.session !== undefined) yield* dropSession(a, "Belay: reconnecting")
    yield* a.backoff.reset
    yield* requestAttempt(a)
  })

export const disconnect = (a: Actor): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* persist(a, a.deps.repo.setEnabled(false))
    disarm(a, "retry")
    yield* dropSession(a, "Belay: disconnected")
    a.lastError = null
    yield* transition(a, "offline", { requested: true })
  })

/** QUIT and wait (bounded by QUIT_GRACE) for the socket to close; the actor then stays offline. */
export const shutdown = (a: Actor, reply: Reply<void>) =>
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

/** The end of the actor's life, after its dispatcher stopped: QUIT rather than leak the socket. */
export const release = (a: Actor) => {
  const s = a.session
  a.session = undefined
  s?.connection.quit("Belay: network stopped")
  if (a.deps.closeAtOnce === true) s?.connection.destroy()
}
