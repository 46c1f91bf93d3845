/**
 * EventChannel is the wire between Belay processes on one database: PostgreSQL's LISTEN/NOTIFY, on one connection of
 * its own, outside the pool (docs/decisions/secrets.md "What carries events between nodes").
 *
 * - It always LISTENs on `belay_revocations` (RevocationChannel.ts): a `belay` admin command or another process
 *   revokes a credential and this one must stop honouring it at once. In cluster mode (BELAY_CLUSTER_ADDRESS) it also
 *   LISTENs on `belay_events`, the live events of the other nodes (ClusterEvents.ts), and sends itself a heartbeat
 *   there every HEARTBEAT_EVERY through the pool: a LISTEN that died silently (a half-open TCP connection, a proxy
 *   that dropped it) delivers nothing and reports nothing, so a heartbeat of its own that is not back within
 *   HEARTBEAT_MISSED_AFTER counts as the connection lost: it is closed and opened again.
 * - @effect/sql-pg's own `listen` swallows the connection's errors and never reconnects, so this keeps its own
 *   `pg.Client`, reconnecting after 100 ms doubling to 5 s.
 * - While the connection is down (or a heartbeat is missed) notices may be lost: `state().listening` is false, and
 *   consumers that answer from memory what a notice would invalidate (the credential cache, the newest pages) must
 *   not. `generation` counts the LISTENs that took effect; `watch` tells consumers of each loss and each return, so
 *   they can read again what they may have missed.
 * - Payloads are sent with `SELECT pg_notify($1, $2)` (a bind parameter cannot be NOTIFY's payload), are never empty
 *   (sql-pg drops empty ones) and stay below PostgreSQL's 8000-byte limit (MAX_PAYLOAD_BYTES, the senders' job).
 *
 * Concurrency: one fiber runs the connection, one (cluster mode) the heartbeat. Handlers and watchers are called
 * synchronously from the connection's data callback, in the order PostgreSQL sent the notices (commit order); they
 * must not block. Notices that arrive before LISTEN's own answer is read are held and handed over right after
 * `onListening`, so a consumer hears of the return before any notice sent after it.
 */
import * as Crypto from "node:crypto"
import { SqlClient, type SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Cause, Clock, Deferred, Duration, Effect, Exit, Option, Redacted, type Scope } from "effect"
import pg from "pg"
import { AppConfig } from "../AppConfig.js"

export const REVOCATIONS_CHANNEL = "belay_revocations"
export const EVENTS_CHANNEL = "belay_events"
/** PostgreSQL refuses a payload of 8000 bytes or more; senders keep theirs under this. */
export const MAX_PAYLOAD_BYTES = 7000
/** The LISTEN connection's application_name (pg_stat_activity), so operators and tests can find it. */
export const APPLICATION_NAME = "belay-events"

const RETRY_FIRST = Duration.millis(100)
const RETRY_MAX = Duration.seconds(5)
export const HEARTBEAT_EVERY = Duration.seconds(2)
export const HEARTBEAT_MISSED_AFTER = Duration.seconds(5)
/** How long opening the connection, or its LISTEN, may take before it is tried again. */
const CONNECT_TIMEOUT = Duration.seconds(10)
/** How long start-up waits for the first LISTEN before serving without it (the caches stay off meanwhile). */
const FIRST_LISTEN = Duration.seconds(10)

/** Whether notices from other processes are arriving; `generation` counts the LISTENs that took effect. */
export interface ListenState {
  readonly listening: boolean
  readonly generation: number
}

export interface ChannelWatcher {
  /** LISTEN is in effect again (`generation` > 1: after a loss; what was sent meanwhile was not heard). */
  readonly onListening: (generation: number) => void
  /** The connection failed, was lost or missed a heartbeat: notices may be missed until `onListening`. */
  readonly onLost: () => void
  /** This process's heartbeat came back: every notice committed before it has been handed over. */
  readonly onHeartbeat?: () => void
}

/** The settings of the pool (Database.ts), for a connection of its own. */
const clientConfig = (config: PgClient.PgClientConfig): pg.ClientConfig => ({
  connectionString: config.url ? Redacted.value(config.url) : undefined,
  host: config.host,
  port: config.port,
  database: config.database,
  user: config.username,
  password: config.password ? Redacted.value(config.password) : undefined,
  ssl: config.ssl,
  application_name: APPLICATION_NAME,
  // A peer that vanishes without a FIN (a cut network) is noticed by TCP keepalive, or sooner by the heartbeat.
  keepAlive: true,
  // A connect into a black hole would otherwise wait forever, and the connection would never come back.
  connectionTimeoutMillis: Duration.toMillis(CONNECT_TIMEOUT)
})

const asError = (cause: unknown) => (cause instanceof Error ? cause : new Error(String(cause)))

interface SessionHooks {
  readonly channels: ReadonlyArray<string>
  readonly onNotice: (channel: string, payload: string) => void
  readonly onListening: () => void
  /** The session's kill switch, while it runs. */
  readonly onSession: (kill: ((reason: string) => void) | undefined) => void
}

/** One LISTEN connection, until it fails or is killed. */
const session = (config: PgClient.PgClientConfig, hooks: SessionHooks) =>
  Effect.scoped(Effect.gen(function*() {
    const lost = yield* Deferred.make<never, Error>()
    const fail = (error: Error) => Deferred.unsafeDone(lost, Exit.fail(error))
    let ready = false
    const early: Array<readonly [string, string]> = []
    const client = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const client = new pg.Client(clientConfig(config))
          // An 'error' event without a listener would throw out of the socket callback.
          client.on("error", fail)
          client.on("end", () => fail(new Error("the connection ended")))
          client.on("notification", (message) => {
            if (message.payload === undefined || message.payload === "") return
            if (ready) hooks.onNotice(message.channel, message.payload)
            else early.push([message.channel, message.payload])
          })
          await client.connect()
          return client
        },
        catch: asError
      }),
      (client) =>
        Effect.promise(() => client.end().catch(() => undefined)).pipe(Effect.timeoutOption(Duration.seconds(1)))
    )
    yield* Effect.tryPromise({
      try: () => client.query(hooks.channels.map((channel) => `LISTEN ${channel}`).join("; ")),
      catch: asError
    }).pipe(Effect.timeoutFail({ duration: CONNECT_TIMEOUT, onTimeout: () => new Error("LISTEN got no answer") }))
    hooks.onSession((reason) => fail(new Error(reason)))
    ready = true
    hooks.onListening()
    for (const [channel, payload] of early.splice(0)) hooks.onNotice(channel, payload)
    return yield* Deferred.await(lost)
  }).pipe(Effect.ensuring(Effect.sync(() => hooks.onSession(undefined)))))

export class EventChannel extends Effect.Service<EventChannel>()("belay/EventChannel", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pgClient = yield* PgClient.PgClient
    const settings = yield* AppConfig
    const cluster = Option.isSome(settings.clusterAddress)
    /** This process (this service instance) on the channels: senders put it in payloads, receivers skip their own. */
    const origin = Crypto.randomUUID()
    const channels = cluster ? [REVOCATIONS_CHANNEL, EVENTS_CHANNEL] : [REVOCATIONS_CHANNEL]
    // Waits on the real clock: a test that stands the clock still must not stop a reconnect or a heartbeat.
    const clock = Clock.make()
    const heartbeat = JSON.stringify({ o: origin, t: "h" })

    const handlers = new Map<string, Set<(payload: string) => void>>()
    const watchers = new Set<ChannelWatcher>()
    let state: ListenState = { listening: false, generation: 0 }
    let kill: ((reason: string) => void) | undefined
    /** When the current LISTEN took effect, or this process's heartbeat last came back (real clock, ms). */
    let lastHeard = 0

    const onNotice = (channel: string, payload: string) => {
      if (channel === EVENTS_CHANNEL && payload === heartbeat) {
        lastHeard = clock.unsafeCurrentTimeMillis()
        for (const watcher of watchers) watcher.onHeartbeat?.()
        return
      }
      const set = handlers.get(channel)
      if (set !== undefined) for (const handler of set) handler(payload)
    }

    const lose = () => {
      if (!state.listening) return
      state = { listening: false, generation: state.generation }
      for (const watcher of watchers) watcher.onLost()
    }

    const firstListen = yield* Deferred.make<void>()
    const hooks: SessionHooks = {
      channels,
      onNotice,
      onListening: () => {
        lastHeard = clock.unsafeCurrentTimeMillis()
        state = { listening: true, generation: state.generation + 1 }
        Deferred.unsafeDone(firstListen, Effect.void)
        for (const watcher of watchers) watcher.onListening(state.generation)
      },
      onSession: (k) => {
        kill = k
      }
    }

    const listenForever = Effect.suspend(() => {
      let delay = RETRY_FIRST
      const once = Effect.gen(function*() {
        const generation = state.generation
        const exit = yield* Effect.exit(session(pgClient.config, hooks))
        const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
        const reason = error instanceof Error ? error.message : String(error)
        lose()
        if (state.generation !== generation) delay = RETRY_FIRST
        yield* Effect.logWarning("the LISTEN connection was lost; reconnecting").pipe(
          Effect.annotateLogs({ reason, retryInMs: Duration.toMillis(delay) })
        )
        yield* Effect.sleep(delay)
        delay = Duration.min(Duration.times(delay, 2), RETRY_MAX)
      })
      return Effect.forever(once)
    }).pipe(Effect.withClock(clock))
    yield* Effect.forkScoped(listenForever)

    if (cluster) {
      // Sent through the pool, so a heartbeat coming back proves the whole path: a commit on the database and its
      // delivery on this connection.
      const beat = Effect.gen(function*() {
        yield* Effect.sleep(HEARTBEAT_EVERY)
        if (!state.listening) return
        const silent = clock.unsafeCurrentTimeMillis() - lastHeard
        if (silent > Duration.toMillis(HEARTBEAT_MISSED_AFTER)) {
          yield* Effect.logWarning("the LISTEN connection missed its heartbeat; reconnecting").pipe(
            Effect.annotateLogs({ silentMs: silent })
          )
          lose()
          kill?.("heartbeat missed")
          return
        }
        // Not waited for: a database that does not answer must not stop the next check.
        yield* sql`SELECT pg_notify(${EVENTS_CHANNEL}, ${heartbeat})`.pipe(
          Effect.timeout(HEARTBEAT_MISSED_AFTER),
          Effect.catchAllCause((cause) => Effect.logDebug("heartbeat not sent", cause)),
          Effect.forkScoped
        )
      })
      yield* beat.pipe(Effect.forever, Effect.withClock(clock), Effect.forkScoped)
    }

    const listened = yield* Deferred.await(firstListen).pipe(Effect.timeoutOption(FIRST_LISTEN), Effect.withClock(clock))
    if (Option.isNone(listened)) yield* Effect.logWarning("no LISTEN connection yet; serving without the caches that need it")

    /** Hands every notice on `channel` from now on to `handler` (synchronously, in commit order) until the scope closes. */
    const subscribe = (channel: string, handler: (payload: string) => void): Effect.Effect<void, never, Scope.Scope> =>
      Effect.acquireRelease(
        Effect.sync(() => {
          let set = handlers.get(channel)
          if (set === undefined) handlers.set(channel, (set = new Set()))
          set.add(handler)
        }),
        () => Effect.sync(() => handlers.get(channel)?.delete(handler))
      )

    /** Tells `watcher` of every loss and return of the connection from now on, until the scope closes. */
    const watch = (watcher: ChannelWatcher): Effect.Effect<void, never, Scope.Scope> =>
      Effect.acquireRelease(
        Effect.sync(() => {
          watchers.add(watcher)
        }),
        () =>
          Effect.sync(() => {
            watchers.delete(watcher)
          })
      )

    /** Sends `payloads` on `channel`, in order, in one statement: inside a transaction, delivered when it commits. */
    const notify = (channel: string, payloads: ReadonlyArray<string>): Effect.Effect<void, SqlError.SqlError> => {
      if (payloads.length === 0) return Effect.void
      if (payloads.length === 1) return Effect.asVoid(sql`SELECT pg_notify(${channel}, ${payloads[0]!})`)
      // Called row by row in the sorted subquery's order: the notices are queued, and delivered, in the array's order.
      return Effect.asVoid(sql`
        SELECT count(pg_notify(${channel}, p)) FROM (
          SELECT p FROM json_array_elements_text(${JSON.stringify(payloads)}::json) WITH ORDINALITY AS t(p, i) ORDER BY i
        ) AS ordered`)
    }

    return {
      origin,
      cluster,
      state: (): ListenState => state,
      subscribe,
      watch,
      notify
    } as const
  })
}) {}
