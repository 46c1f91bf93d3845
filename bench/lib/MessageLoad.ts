/**
 * MessageLoad owns seeding one buffer with the bench's history by direct SQL while Belay is stopped: BENCH_MCP_MESSAGES
 * (default 1,000,000) messages from the corpus (bench/lib/Corpus.ts), one a second ending now, 100,000 rows a
 * statement, through the application's own Database layer on the data dir's database. Sections A (MCP) and the export
 * section load the same history.
 *
 * Concurrency rule: one call at a time per database; it owns the temporary table it makes.
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { corpus, NICKS } from "./Corpus.js"
import { withDatabase } from "./Db.js"

export const MESSAGES = Number(process.env.BENCH_MCP_MESSAGES ?? 1_000_000)
/** The channel the history goes into. */
export const TARGET = "#bench"
const LOAD_CHUNK = 100_000

/**
 * `count` messages into buffer `bufferId`, generated server-side from the corpus: one a second, ending now; message i
 * (1-based) by nick `user(i % NICKS)`, its text the corpus sentence i cycles to. The corpus goes into a temporary
 * table of the session first.
 */
export const insertCorpusHistory = (sql: SqlClient.SqlClient, bufferId: number, count: number) =>
  Effect.gen(function*() {
    yield* sql`CREATE TEMP TABLE bench_corpus (id int PRIMARY KEY, text text NOT NULL)`
    const sentences = corpus()
    for (let i = 0; i < sentences.length; i += 1000) {
      yield* sql`INSERT INTO pg_temp.bench_corpus ${
        sql.insert(sentences.slice(i, i + 1000).map((text, k) => ({ id: i + k, text })))
      }`
    }
    for (let from = 1; from <= count; from += LOAD_CHUNK) {
      const to = Math.min(count, from + LOAD_CHUNK - 1)
      yield* sql`
        INSERT INTO messages (buffer_id, time, kind, nick, text)
        SELECT ${bufferId}, now() - make_interval(secs => ${count} - i), 'privmsg', 'user' || (i % ${NICKS}), c.text
        FROM generate_series(${from}::int, ${to}::int) AS i
        JOIN pg_temp.bench_corpus c ON c.id = i % ${sentences.length}`
    }
  })

/**
 * 1,000,000 rows into one buffer, generated server-side from the corpus. With `settle`, then VACUUM (ANALYZE) of the
 * whole database and a CHECKPOINT: the state autovacuum leaves a running service in (statistics, visibility map, hint
 * bits set, the GIN pending list merged), reached before Belay starts rather than beside the measurements.
 */
export const loadMessages = (env: Record<string, string>, networkId: number, options: { readonly settle?: boolean } = {}) =>
  withDatabase(env, (sql) =>
    Effect.gen(function*() {
      const started = performance.now()
      const buffer = yield* sql<{ id: number }>`
        INSERT INTO buffers (network_id, target, target_folded, kind) VALUES (${networkId}, ${TARGET}, ${TARGET}, 'channel')
        RETURNING id`
      const bufferId = buffer[0]!.id
      yield* insertCorpusHistory(sql, bufferId, MESSAGES)
      yield* sql`UPDATE buffers SET last_message_at = now() WHERE id = ${bufferId}`
      const rows = yield* sql<{ n: number }>`SELECT count(*)::int8 AS n FROM messages WHERE buffer_id = ${bufferId}`
      const seconds = (performance.now() - started) / 1000
      if (options.settle !== true) return { seconds, stored: rows[0]!.n }
      const settling = performance.now()
      // VACUUM refuses a transaction block; each unsafe statement here is one simple query of its own.
      yield* sql.unsafe("VACUUM (ANALYZE)")
      // CHECKPOINT needs a superuser or pg_checkpoint: the embedded server's `postgres` is one; a DATABASE_URL role may not be.
      const checkpoint = yield* sql.unsafe("CHECKPOINT").pipe(Effect.as("done"), Effect.catchAll((e) => Effect.succeed(String(e))))
      return { seconds, stored: rows[0]!.n, settleSeconds: (performance.now() - settling) / 1000, checkpoint }
    }))

