/**
 * HistoryRetention owns the pruning of `messages` older than BELAY_HISTORY_RETENTION_DAYS (docs/decisions/account-limits.md
 * "Retention: windows of the oldest ids, one node at a time"). Unset, it does nothing and starts nothing.
 *
 * Each round walks the table from its oldest id in windows of BATCH rows (the primary key's order, so a window costs
 * an index range and no scan), deletes the window's rows older than the cutoff in one short transaction, rests
 * `restPerWork` times as long as the window took (`pause` at least, `longestRest` at most) so that the writer's
 * batches and readers go first,
 * and stops at the first window with nothing old in it: ids
 * follow arrival, and arrival follows time, so what lies beyond is newer. A line stored late with an old time (a
 * server's playback) goes when its neighbours do. Pages kept in memory (RecentPages) lose the same messages.
 *
 * Concurrency rule: one fiber per process runs the rounds: the first `firstRound` after start-up (a restart after a
 * long stop catches up at once), then every `roundEvery`. A failed round is logged and the next runs on time. Several nodes of a
 * cluster may run it at once: each window's transaction first takes a transaction-scoped advisory lock without
 * waiting, and a node that does not get it leaves the round to the one that did. Every window is idempotent (it
 * deletes by the cutoff, whoever deleted before), so a round interrupted anywhere is simply resumed by the next.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Option, Schedule } from "effect"
import { AppConfig } from "../AppConfig.js"
import { RecentPages } from "./RecentPages.js"

export const RetentionTiming = {
  /** Rows looked at, and at most deleted, per transaction: a lock on a few hundred rows for a few milliseconds. */
  batch: 500,
  /** Between two windows at least, for the writer and the readers. */
  pause: Duration.millis(20),
  /**
   * Between two windows, this many times as long as the window took: the job takes at most a twentieth of the
   * database's time however slow a window is, so the ingest it shares a machine with keeps its rate (the ingest bench
   * with pruning: bench/sections/Ingest.ts, target ≥ 0.9× without). A fixed pause alone gave the job a fifth of the
   * time where a window took 5 ms. At 500 rows a window that still deletes a few thousand rows a second.
   */
  restPerWork: 19,
  /**
   * The longest rest: a window that was slow once (the first of a round reads cold pages, a second under a burst)
   * must not stop the job for half a minute; rounds keep a pace of at least a window a second.
   */
  longestRest: Duration.seconds(1),
  firstRound: Duration.seconds(10),
  roundEvery: Duration.minutes(10)
} as const

/**
 * The advisory lock (two-int key space, which PostgreSQL keeps apart from the one-bigint space @effect/cluster uses):
 * "Bela", then 1 for retention.
 */
const LOCK = [0x42656c61, 1] as const

export interface WindowOutcome {
  /** Rows deleted in this window. */
  readonly deleted: number
  /** Where the next window starts; None when the round is over (nothing old here, or another node holds the lock). */
  readonly next: Option.Option<number>
}

export class HistoryRetention extends Effect.Service<HistoryRetention>()("belay/HistoryRetention", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const pages = yield* RecentPages

    /** One window from id `from`: its rows older than `cutoff` deleted, in one transaction under the lock. */
    const pruneWindow = (from: number, cutoff: Date, batch: number = RetentionTiming.batch) =>
      sql.withTransaction(Effect.gen(function*() {
        const [locked] = yield* sql<{ ok: boolean }>`SELECT pg_try_advisory_xact_lock(${LOCK[0]}, ${LOCK[1]}) AS ok`
        if (locked?.ok !== true) return { deleted: 0, next: Option.none<number>() } satisfies WindowOutcome
        const [row] = yield* sql<{ deleted: number; seen: number; fresh: number; last: number | null }>`
          WITH span AS (SELECT id, time FROM messages WHERE id >= ${from} ORDER BY id LIMIT ${batch}),
          doomed AS (DELETE FROM messages m USING span s WHERE m.id = s.id AND s.time < ${cutoff} RETURNING m.id)
          SELECT (SELECT count(*)::int FROM doomed) AS deleted, (SELECT count(*)::int FROM span) AS seen,
                 (SELECT count(*)::int FROM span WHERE time >= ${cutoff}) AS fresh, (SELECT max(id) FROM span) AS last`
        const over = row === undefined || row.seen === 0 || row.fresh === row.seen || row.last === null
        return { deleted: row?.deleted ?? 0, next: over ? Option.none() : Option.some(row.last! + 1) } satisfies WindowOutcome
      })).pipe(Effect.orDie)

    /** A whole round for `cutoff`: windows from the oldest id until one has nothing old; how many rows went. */
    const pruneBefore = (cutoff: Date, pause: Duration.DurationInput = RetentionTiming.pause) =>
      Effect.gen(function*() {
        let deleted = 0
        let next = Option.some(0)
        while (Option.isSome(next)) {
          const started = yield* Clock.currentTimeNanos
          const outcome = yield* pruneWindow(next.value, cutoff)
          const worked = Duration.nanos((yield* Clock.currentTimeNanos) - started)
          deleted += outcome.deleted
          next = outcome.next
          const rest = Duration.min(Duration.times(worked, RetentionTiming.restPerWork), RetentionTiming.longestRest)
          if (Option.isSome(next)) yield* Effect.sleep(Duration.max(pause, rest))
        }
        const dropped = pages.expire(cutoff)
        if (deleted > 0 || dropped > 0) {
          yield* Effect.logInfo("history retention pruned old messages").pipe(
            Effect.annotateLogs({ deleted, droppedFromMemory: dropped, cutoff: cutoff.toISOString() })
          )
        }
        return deleted
      })

    /** The cutoff now: BELAY_HISTORY_RETENTION_DAYS before the Clock's time; None without retention. */
    const cutoffNow = Effect.map(Clock.currentTimeMillis, (now) =>
      Option.map(config.historyRetentionDays, (days) => new Date(now - Duration.toMillis(Duration.days(days)))))

    const round = Effect.flatMap(cutoffNow, Option.match({ onNone: () => Effect.succeed(0), onSome: (c) => pruneBefore(c) }))

    if (Option.isSome(config.historyRetentionDays)) {
      yield* round.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("pruning old history failed", cause)),
        Effect.repeat(Schedule.spaced(RetentionTiming.roundEvery)),
        Effect.delay(RetentionTiming.firstRound),
        Effect.forkScoped
      )
    }

    return { pruneWindow, pruneBefore, round } as const
  }),
  dependencies: [RecentPages.Default]
}) {}

/** For the bench: rounds back to back with `pause` between windows, until interrupted. */
export const pruneContinuously = (retention: HistoryRetention, cutoff: Date, pause: Duration.DurationInput) =>
  Effect.repeat(retention.pruneBefore(cutoff, pause), Schedule.spaced(pause))
