/**
 * MessageWriter owns the writes of the message history: `messages` and `buffers` (ids,
 * the buffer-id cache, last_message_at), filled from the network actors through `append`
 * and `flush`. MessageHistory.ts reads them.
 *
 * Ordering rule: messages appended for one buffer are stored in append order (ids increase
 * with append order). Concurrency rule: one writer fiber alone writes. Appenders only push
 * onto its bounded in-memory inbox (they may wait for room, never for the database), and
 * the writer stores rows in inbox order (one writer, one multi-row INSERT per batch, rows
 * in queue order). Nothing here holds a transaction across a wait, so a
 * database outage never pins a pooled connection (Database.ts).
 *
 * Choices the interface leaves open:
 * - Batching: a batch goes out at 500 pending rows, 100 ms after the first pending row
 *   (Effect's Clock), or at once when `flush` waits for it. On the hot path a batch is one
 *   statement: the messages INSERT and the buffers' last_message_at = GREATEST(...) update
 *   in one CTE. Buffer ids are cached (`${networkId}\u0000${targetFolded}` → id); unknown
 *   buffers are upserted first in one multi-row INSERT … ON CONFLICT. The display name
 *   (`target`) keeps its first-seen casing: channel names are canonical on the server, and a
 *   DM peer's casing is cosmetic (every lookup goes through `target_folded`).
 * - Outage: a failed batch is kept (in order) and retried on `retry` (exponential from
 *   100 ms, capped at 5 s), one warning with the cause per failed attempt. Meanwhile the
 *   inbox keeps accepting rows up to `bufferRows` (100,000). Beyond that bound `append`
 *   waits for room (backpressure on the caller, whose own inbox grows instead), with one
 *   warning per episode: nothing is ever dropped for lack of room.
 * - Unknown commits: a batch whose statement got no answer (the connection dropped after
 *   it was sent) may have committed. Each batch statement records a random key in
 *   message_batches; before retrying, the writer looks the key up and takes the rows as
 *   stored if it is there, and a retry reuses the key, so a late commit makes it fail on
 *   the key rather than store the rows twice (docs/decisions/history.md "Message batches and
 *   unknown commits"; StatementFailure.ts says which failures are answers).
 * - A cached buffer may vanish (network removed → ON DELETE CASCADE): on a foreign-key
 *   violation the batch's cached ids are forgotten, rows of networks that no longer exist
 *   (Networks says which do) are dropped (debug log) and the rest retried at once.
 * - A row PostgreSQL will never accept (SQLSTATE class 22, 23 or 54: data exception,
 *   integrity, program limit) must not wedge the writer: such a batch is retried row by
 *   row and only the refused rows are dropped, each with a warning. NUL, which a
 *   PostgreSQL text cannot hold, is replaced by U+FFFD at append.
 * - Stored rows are announced on `stored` (StoredAnnouncer.ts) with their ids, one batch at a time in id order,
 *   after the statement that stored them has committed (the member's open tabs and Web Push
 *   hear of them there; docs/decisions/web.md "The browser WebSocket"). A PubSub without
 *   subscribers drops them; the writer never waits for a subscriber.
 * - Cluster mode (docs/decisions/secrets.md "What carries events between nodes"): each batch statement
 *   also NOTIFYs the other nodes (MessageBatches.ts), and the rows other nodes stored reach
 *   this node's `stored` through `relay` (ClusterEvents reads them back), after RecentPages
 *   like this writer's own, so every consumer here hears every node's messages in one stream;
 *   `storedHere` tells a batch of this node's from a relayed one (Web Push sends from the
 *   node that stored the message, once for the cluster).
 * - Append order, for consumers that must place other live events among the stored rows (the IRC listener,
 *   docs/decisions/irc-listener.md "Live lines in the upstream's order"): `appended()` is how many rows were appended so far, so
 *   the row an appender just appended has that number; `sequenceOf(batch)` gives each row of a batch announced on
 *   `stored` its number. Every row numbered at most the last of a batch is then announced or dropped.
 * - Redactions (`redact`, MessageRedactions.ts): applied after the rows appended before them are stored, announced
 *   on `redacted`.
 * - Shutdown: closing the scope flushes, bounded by `shutdownTimeout` (5 s), retrying
 *   every 250 ms meanwhile; if the database is still down, a warning counts the rows lost.
 */
import { SqlClient } from "@effect/sql"
import {
  Cause,
  Chunk,
  Deferred,
  Duration,
  Effect,
  Exit,
  Fiber,
  FiberId,
  Layer,
  Option,
  PubSub,
  Queue,
  Schedule
} from "effect"
import { EventChannel, EVENTS_CHANNEL } from "../storage/EventChannel.js"
import { BATCH_KEY_CONSTRAINT, committedBatch, insertBatch, newKey, type Unsure } from "./MessageBatches.js"
import { bufferKey, type NewMessage, type PendingRow, type StoredRow, toPendingRow } from "./MessageRow.js"
import { makeRedactions } from "./MessageRedactions.js"
import { Metrics } from "../upkeep/Metrics.js"
import { Networks } from "../networks/Networks.js"
import { RecentPages } from "./RecentPages.js"
import { answered, classify, describeFailure, violatedConstraint } from "../storage/StatementFailure.js"
import { StoredAnnouncer } from "./StoredAnnouncer.js"

export interface MessageWriterOptions {
  /** A batch goes out as soon as this many rows are pending. */
  readonly batchRows: number
  /** … or this long after the first pending row. */
  readonly flushInterval: Duration.DurationInput
  /** Rows the inbox holds (during an outage) before `append` waits for room. */
  readonly bufferRows: number
  /** Delays between attempts to store a failed batch. */
  readonly retry: Schedule.Schedule<unknown, unknown>
  /** How long closing the scope waits for the last rows to be stored. */
  readonly shutdownTimeout: Duration.DurationInput
}

export const defaultOptions: MessageWriterOptions = {
  batchRows: 500,
  flushInterval: "100 millis",
  bufferRows: 100_000,
  retry: Schedule.exponential("100 millis").pipe(Schedule.either(Schedule.spaced("5 seconds"))),
  shutdownTimeout: "5 seconds"
}

/** While shutting down, the remaining rows are retried this often until the deadline. */
const SHUTDOWN_RETRY = "250 millis"

/** A batch's NOTIFY lists its networks only while the list stays this short (payloads stay under 8000 bytes). */
const MAX_NOTICE_NETWORKS_CHARS = 5000

const makeWriter = (options: MessageWriterOptions) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const metrics = yield* Metrics
    const networks = yield* Networks
    const pages = yield* RecentPages
    const channel = yield* EventChannel
    const clock = yield* Effect.clock
    const batchRows = options.batchRows
    const intervalMillis = Duration.toMillis(options.flushInterval)

    const inbox = yield* Queue.bounded<PendingRow>(options.bufferRows)
    const stored = yield* PubSub.unbounded<ReadonlyArray<StoredRow>>()
    const announcer = new StoredAnnouncer(stored, metrics, pages, channel.cluster)
    /** Open while the inbox has room; appenders that found it full wait on it. */
    const room = yield* Effect.makeLatch(true)
    const bufferIds = new Map<string, number>()
    const writerId = newKey() // its id in message_batches: a writer reasons only about its own keys (MessageBatches.ts)

    // Counters in rows. enqueued − taken is what waits in the inbox; processed counts rows
    // the writer is done with (stored, or dropped as orphans or refused).
    let enqueued = 0
    let taken = 0
    let processed = 0
    /** `flush` wants the first flushTarget rows out now rather than at the interval. */
    let flushTarget = 0
    let firstPendingAt = 0
    /** Rows taken from the inbox but not yet stored (counted as lost at shutdown). */
    let inFlight = 0
    let closing = false
    /** The writer is gone: a flush that still waits for rows could never end. */
    let closed = false
    let fullWarned = false
    const waiters: Array<{ readonly target: number; readonly done: Deferred.Deferred<void> }> = []

    const queued = () => enqueued - taken

    // --- Waking the writer: it parks on a fresh Deferred; appenders, flush and shutdown
    // complete it. Check-and-park happens in one synchronous step, so no wake-up is lost.
    let signal: Deferred.Deferred<void> | undefined
    const poke = () => {
      const s = signal
      if (s !== undefined) {
        signal = undefined
        Deferred.unsafeDone(s, Exit.void)
      }
    }
    const parkUnless = (ready: () => boolean, millis?: number): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (ready()) return Effect.void
        const s = Deferred.unsafeMake<void>(FiberId.none)
        signal = s
        return millis === undefined ? Deferred.await(s) : Effect.raceFirst(Deferred.await(s), Effect.sleep(millis))
      })

    // --- Append: no Effect work per row beyond the offer.
    const toRow = (m: NewMessage): PendingRow =>
      toPendingRow(m, Number.isNaN(m.time.getTime()) ? new Date(clock.unsafeCurrentTimeMillis()) : m.time)

    const accepted = () => {
      const pending = ++enqueued - taken
      if (pending === 1) {
        firstPendingAt = clock.unsafeCurrentTimeMillis()
        poke()
      } else if (pending === batchRows) {
        poke()
      }
    }

    /** The inbox is full: wait for the writer to take rows, then try again. */
    const appendWhenRoom = (row: PendingRow) =>
      Effect.gen(function*() {
        if (!fullWarned) {
          fullWarned = true
          yield* Effect.logWarning("message buffer full; appends wait until the database takes rows").pipe(
            Effect.annotateLogs({ bufferedRows: queued() + inFlight })
          )
        }
        let done = false
        while (!done) {
          done = yield* Effect.suspend(() => {
            if (inbox.unsafeOffer(row)) {
              accepted()
              return Effect.succeed(true)
            }
            room.unsafeClose()
            return Effect.as(room.await, false)
          })
        }
      })

    /**
     * Enqueues for the batched writer. Never fails and never waits for the database: during
     * an outage rows are buffered (bounded, with a warning) and retried; nothing is lost
     * while the buffer has room.
     */
    const append = (message: NewMessage): Effect.Effect<void> =>
      Effect.suspend(() => {
        const row = toRow(message)
        if (inbox.unsafeOffer(row)) {
          accepted()
          return Effect.void
        }
        return appendWhenRoom(row)
      })

    /** Resolves once everything appended before the call is durably stored. */
    const flush: Effect.Effect<void> = Effect.suspend(() => {
      const target = enqueued
      if (processed >= target) return Effect.void
      if (closed) return Effect.interrupt
      if (target > flushTarget) flushTarget = target
      const done = Deferred.unsafeMake<void>(FiberId.none)
      waiters.push({ target, done })
      poke()
      return Deferred.await(done)
    })

    const release = () => {
      while (waiters.length > 0 && waiters[0]!.target <= processed) {
        Deferred.unsafeDone(waiters.shift()!.done, Exit.void)
      }
    }

    // --- Writing

    /** Ids of the rows' buffers, upserting those not cached yet (one statement). */
    const resolveBuffers = (rows: ReadonlyArray<PendingRow>) =>
      Effect.gen(function*() {
        let missing: Map<string, PendingRow> | undefined
        for (const row of rows) {
          if (!bufferIds.has(row.key)) (missing ??= new Map()).set(row.key, row)
        }
        if (missing === undefined) return
        const created = yield* sql<{ id: number; networkId: number; targetFolded: string }>`
          INSERT INTO buffers ${
          sql.insert(
            Array.from(missing.values(), (r) => ({
              network_id: r.networkId,
              target: r.target,
              target_folded: r.targetFolded,
              kind: r.bufferKind
            }))
          )
        }
          ON CONFLICT (network_id, target_folded) DO UPDATE SET target = buffers.target
          RETURNING id, network_id AS "networkId", target_folded AS "targetFolded"`
        for (const b of created) bufferIds.set(bufferKey(b.networkId, b.targetFolded), b.id)
      })

    /** The batch's NOTIFY: its networks, unless listing them would not fit a payload (then every row of the range). */
    const batchNotice = (rows: ReadonlyArray<PendingRow>) => {
      const networkIds = Array.from(new Set(rows.map((r) => r.networkId)))
      return {
        channel: EVENTS_CHANNEL,
        origin: channel.origin,
        networkIds: JSON.stringify(networkIds).length > MAX_NOTICE_NETWORKS_CHARS ? [] : networkIds
      }
    }

    /** A batch found committed after all: announced when its rows are all still there. */
    const recovered = (rows: ReadonlyArray<PendingRow>, ids: ReadonlyArray<number>) =>
      Effect.gen(function*() {
        yield* Effect.logInfo("a batch whose commit was not confirmed had been stored; not storing it again").pipe(
          Effect.annotateLogs({ rows: rows.length })
        )
        if (ids.length === rows.length) yield* announcer.announce(rows, ids)
      })

    /**
     * One batch, one statement on the hot path; atomic: all rows or none. The statement also records the batch's
     * `key` (and drops this writer's earlier keys: their answers have been heard by the time this one is sent), so
     * a second attempt of a batch that did commit fails on the key, and is then taken as stored
     * (docs/decisions/history.md "Message batches and unknown commits").
     */
    const insert = (rows: ReadonlyArray<PendingRow>, key: string) =>
      Effect.gen(function*() {
        yield* resolveBuffers(rows)
        const values = rows.map((r) => ({
          buffer_id: bufferIds.get(r.key)!,
          time: r.time,
          kind: r.kind,
          nick: r.nick,
          text: r.text,
          numeric: r.numeric,
          self: r.self,
          encryption: r.encryption,
          raw: r.raw,
          msgid: r.msgid,
          reply_to: r.replyTo
        }))
        const notice = channel.cluster ? batchNotice(rows) : undefined
        yield* announcer.announce(rows, yield* insertBatch(sql, values, key, writerId, notice))
      }).pipe(
        Effect.catchAll((error) =>
          violatedConstraint(Cause.fail(error)) === BATCH_KEY_CONSTRAINT
            ? Effect.flatMap(committedBatch(sql, key), (found) =>
              Option.isSome(found) ? recovered(rows, found.value) : Effect.fail(error))
            : Effect.fail(error)
        ),
        Effect.uninterruptible,
        Effect.exit
      )

    const forget = (rows: ReadonlyArray<PendingRow>) => {
      for (const row of rows) bufferIds.delete(row.key)
    }

    /** Drops the rows of networks that no longer exist; fails if the check itself fails. */
    const dropOrphans = (rows: ReadonlyArray<PendingRow>) =>
      Effect.gen(function*() {
        const ids = Array.from(new Set(rows.map((r) => r.networkId)))
        const live = new Set(yield* networks.allIds())
        const kept = rows.filter((r) => live.has(r.networkId))
        if (kept.length < rows.length) {
          yield* Effect.logDebug("dropped messages of removed networks").pipe(
            Effect.annotateLogs({ rows: rows.length - kept.length, networkIds: ids.filter((id) => !live.has(id)) })
          )
        }
        return kept
      }).pipe(Effect.exit)

    /**
     * After an orphan or refused batch: store row by row, dropping only the rows at fault.
     * Stops at the first transient failure and returns the rows from there on, and the key of
     * that row's attempt when its outcome is unknown.
     */
    const oneByOne = (rows: ReadonlyArray<PendingRow>) =>
      Effect.gen(function*() {
        for (let i = 0; i < rows.length; i++) {
          const row = rows[i]!
          const key = newKey()
          inFlight = rows.length - i
          let exit = yield* insert([row], key)
          if (Exit.isFailure(exit) && classify(exit.cause) === "orphan") {
            forget([row])
            exit = yield* insert([row], key)
          }
          if (Exit.isSuccess(exit)) continue
          const failure = classify(exit.cause)
          if (failure === "transient") {
            const unsure: Unsure | undefined = answered(exit.cause) ? undefined : { key, rows: 1 }
            return { rest: rows.slice(i), cause: exit.cause, unsure }
          }
          if (failure === "orphan") {
            yield* Effect.logDebug("dropped a message whose buffer or network no longer exists").pipe(
              Effect.annotateLogs({ networkId: row.networkId, target: row.target })
            )
          } else {
            yield* Effect.logWarning("the database refused a message; dropped", exit.cause).pipe(
              Effect.annotateLogs({
                networkId: row.networkId,
                target: row.target,
                kind: row.kind,
                error: describeFailure(exit.cause)
              })
            )
          }
        }
        return { rest: [] as ReadonlyArray<PendingRow>, cause: Cause.empty, unsure: undefined }
      })

    const untilClosing: Effect.Effect<void> = Effect.gen(function*() {
      while (!closing) yield* parkUnless(() => closing)
    })

    /**
     * Stores one batch, however long the database takes to come back. An attempt that got no
     * answer may have committed: before anything else the batch's key is looked up, and the
     * rows it held are taken as stored if it is there; otherwise they are sent again under the
     * same key, so that if that attempt still commits, this one fails on the key instead of
     * storing them twice.
     */
    const store = (batch: ReadonlyArray<PendingRow>) =>
      Effect.gen(function*() {
        let rest = batch
        let key = newKey()
        let unsure: Unsure | undefined
        let failures = 0
        let orphanChecked = false
        const retry = yield* Schedule.driver(options.retry)
        while (rest.length > 0) {
          inFlight = rest.length
          let cause: Cause.Cause<unknown>
          if (unsure !== undefined) {
            const found = yield* committedBatch(sql, unsure.key).pipe(Effect.uninterruptible, Effect.exit)
            if (Exit.isSuccess(found)) {
              if (Option.isSome(found.value)) {
                yield* recovered(rest.slice(0, unsure.rows), found.value.value)
                rest = rest.slice(unsure.rows)
                key = newKey()
              } else {
                key = unsure.rows === rest.length ? unsure.key : newKey()
              }
              unsure = undefined
              continue
            }
            cause = found.cause
          } else {
            const exit = yield* insert(rest, key)
            if (Exit.isSuccess(exit)) break
            cause = exit.cause
            const failure = classify(exit.cause)
            if (!answered(exit.cause)) {
              unsure = { key, rows: rest.length }
            } else if (failure === "orphan" && !orphanChecked) {
              orphanChecked = true
              forget(rest)
              const kept = yield* dropOrphans(rest)
              if (Exit.isSuccess(kept)) {
                rest = kept.value
                key = newKey()
                continue
              }
              cause = kept.cause
            } else if (failure !== "transient") {
              const left = yield* oneByOne(rest)
              rest = left.rest
              unsure = left.unsure
              key = newKey()
              if (rest.length === 0) break
              cause = left.cause
            }
          }
          failures++
          yield* Effect.logWarning("could not store messages; keeping them and retrying", cause).pipe(
            Effect.annotateLogs({ attempt: failures, pendingRows: rest.length + queued(), error: describeFailure(cause) })
          )
          if (closing) yield* Effect.sleep(SHUTDOWN_RETRY)
          else yield* Effect.raceFirst(Effect.ignore(retry.next(undefined)), untilClosing)
        }
        inFlight = 0
        if (failures > 0) {
          yield* Effect.logInfo("messages stored again after database failures").pipe(
            Effect.annotateLogs({ failedAttempts: failures })
          )
        }
      })

    /** Waits for a batch to be due, takes it and stores it. */
    const writeNext = Effect.gen(function*() {
      yield* parkUnless(() => queued() > 0)
      if (queued() < batchRows && flushTarget <= taken && !closing) {
        const wait = firstPendingAt + intervalMillis - clock.unsafeCurrentTimeMillis()
        if (wait > 0) yield* parkUnless(() => queued() >= batchRows || flushTarget > taken || closing, wait)
      }
      const batch = Chunk.toReadonlyArray(yield* Queue.takeUpTo(inbox, batchRows))
      // The inbox is FIFO: the n-th row taken is the n-th appended.
      for (let i = 0; i < batch.length; i++) batch[i]!.seq = taken + i + 1
      taken += batch.length
      room.unsafeOpen()
      yield* store(batch)
      processed += batch.length
      release()
      if (fullWarned && queued() <= options.bufferRows / 2) {
        fullWarned = false
        yield* Effect.logInfo("message buffer has room again")
      }
    })

    // Database failures never reach here (store keeps and retries); only a bug could. The
    // writer must outlive it, or history would stop and every flush hang: the batch at hand
    // is counted lost and the loop goes on (the Sharder habit: catch every cause, log, go on).
    const writer = writeNext.pipe(
      Effect.catchAllCause((cause) =>
        Effect.suspend(() => {
          const lost = taken - processed
          processed = taken
          inFlight = 0
          release()
          return Effect.logError("message writer failed; batch lost", cause).pipe(Effect.annotateLogs({ lostRows: lost }))
        })
      ),
      Effect.forever
    )

    // A daemon, interrupted by the finalizer below: a write in flight is uninterruptible,
    // and if the database hangs the scope must still close after the timeout.
    const writerFiber = yield* Effect.forkDaemon(writer)

    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        closing = true
        poke()
        // Finalizers run uninterruptibly; the waits must be interruptible for the timeouts to cut them.
        const flushed = yield* Effect.timeoutOption(Effect.interruptible(flush), options.shutdownTimeout)
        if (Option.isNone(flushed)) {
          yield* Effect.logWarning("database unavailable at shutdown; messages lost").pipe(
            Effect.annotateLogs({ lostRows: inFlight + queued() })
          )
        }
        yield* Effect.timeoutOption(Effect.interruptible(Fiber.interrupt(writerFiber)), "1 second")
        closed = true
        for (const w of waiters.splice(0)) Deferred.unsafeDone(w.done, Effect.interrupt)
      })
    )

    /** How many rows were appended so far: the number of the row appended last (see the module comment). */
    const appended = (): number => enqueued

    const redactions = yield* makeRedactions({ sql, flush, pages, retry: options.retry })

    return {
      append,
      flush,
      stored,
      appended,
      /** Each row's number in append order, for a batch this writer announced on `stored`; undefined for any other. */
      sequenceOf: announcer.sequenceOf,
      /** Rows another node stored (ids ascending), announced on `stored` like this writer's own (StoredAnnouncer). */
      relay: announcer.relay,
      /** Whether a batch heard on `stored` was stored by this node (not relayed from another). */
      storedHere: announcer.storedHere,
      /** Cluster mode: the newest id announced on `stored` (0 before any); a lower bound for a catch-up. */
      highestAnnounced: (): number => announcer.highest,
      /** Queues an upstream redaction (MessageRedactions.ts); never waits for the database. */
      redact: redactions.redact,
      /** The messages redacted, this node's and (`redactedElsewhere`) the other nodes'. */
      redacted: redactions.redacted,
      /** A message another node redacted: into the kept pages, then on `redacted`. */
      redactedElsewhere: redactions.redactedElsewhere
    }
  })

export class MessageWriter extends Effect.Service<MessageWriter>()("belay/MessageWriter", {
  scoped: makeWriter(defaultOptions),
  dependencies: [Metrics.Default, Networks.Default, RecentPages.Default, EventChannel.Default]
}) {}

/**
 * The writer with other bounds and timeouts (tests shrink them), over the Metrics, Networks, RecentPages and
 * EventChannel in context.
 */
export const messageWriterWith = (
  options: MessageWriterOptions
): Layer.Layer<MessageWriter, never, SqlClient.SqlClient | Metrics | Networks | RecentPages | EventChannel> =>
  Layer.scoped(MessageWriter, Effect.map(makeWriter(options), MessageWriter.make))
