/**
 * Db opens a Belay database from the bench process with the application's own layers (src/services/storage/Database.ts), so
 * loading, counting and the direct-SQL baselines go through the same driver, schema and indexes as the server:
 * - `withDatabase` while no Belay runs on the data dir: DatabaseLive, which starts the embedded PostgreSQL of that
 *   data dir in this process (or uses DATABASE_URL) and applies the migrations;
 * - `withRunningDatabase` beside a running Belay: the database that Belay serves, reached over the embedded server's
 *   socket in the data dir (or DATABASE_URL), without starting or migrating anything;
 * and, beside a running Belay, whether its database has settled (`settleDatabase`) and its embedded server's process.
 *
 * Concurrency rule: one call owns its connections for the duration of `use` and closes them after.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { SqlClient } from "@effect/sql"
import type { PgClient } from "@effect/sql-pg"
import { ConfigProvider, Effect, Layer, Logger, LogLevel, type Scope } from "effect"
import pg from "pg"
import { AppConfig, appSettings } from "../../src/services/AppConfig.js"
import { DatabaseLive, SqlLive } from "../../src/services/storage/Database.js"

const settingsOf = (env: Record<string, string>) =>
  Effect.runPromise(Effect.withConfigProvider(appSettings, ConfigProvider.fromMap(new Map(Object.entries(env)))))

export const withDatabase = async <A>(
  env: Record<string, string>,
  use: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>
): Promise<A> => {
  const settings = await settingsOf(env)
  const program = Effect.flatMap(SqlClient.SqlClient, use).pipe(
    Effect.provide(DatabaseLive.pipe(Layer.provide(Layer.succeed(AppConfig, settings)))),
    Effect.scoped,
    Logger.withMinimumLogLevel(LogLevel.Warning)
  )
  return Effect.runPromise(program as Effect.Effect<A, unknown>)
}

/**
 * The `postgres://` URL of the database a running Belay with environment `env` uses: its DATABASE_URL, or the
 * embedded server's socket in `<BELAY_DATA_DIR>/pg` (superuser `postgres`, database `belay`, socket port 5432: the
 * constants of src/services/storage/EmbeddedPostgres.ts). The bench's scratch paths are short, so the socket is in the data
 * dir rather than in a temp dir.
 */
export const runningDatabaseUrl = (env: Record<string, string>): string =>
  env.DATABASE_URL ??
    `postgresql://postgres@localhost/belay?host=${encodeURIComponent(Path.resolve(env.BELAY_DATA_DIR!, "pg"))}&port=5432`

/** Runs `use` against the database of a running Belay; the app's config (and its secret key file) come from `env`. */
export const withRunningDatabase = async <A>(
  env: Record<string, string>,
  use: Effect.Effect<A, unknown, SqlClient.SqlClient | PgClient.PgClient | AppConfig | Scope.Scope>
): Promise<A> => {
  const settings = await settingsOf({ ...env, DATABASE_URL: runningDatabaseUrl(env) })
  const program = use.pipe(
    Effect.provide(SqlLive.pipe(Layer.provideMerge(Layer.succeed(AppConfig, settings)))),
    Effect.scoped,
    Logger.withMinimumLogLevel(LogLevel.Warning)
  )
  return Effect.runPromise(program)
}

/** Messages stored in one buffer of one network. */
export const countMessages = (env: Record<string, string>, networkId: number, targetFolded: string) =>
  withDatabase(env, (sql) =>
    Effect.map(
      sql<{ n: number }>`
        SELECT count(*)::int8 AS n FROM messages m JOIN buffers b ON b.id = m.buffer_id
        WHERE b.network_id = ${networkId} AND b.target_folded = ${targetFolded}`,
      (rows) => rows[0]?.n ?? 0
    ))

/** Autovacuum's last ANALYZE and VACUUM of `messages` in the database of a running Belay, as PostgreSQL records them. */
export const autovacuumState = async (env: Record<string, string>) => {
  const client = new pg.Client({ connectionString: runningDatabaseUrl(env) })
  await client.connect()
  try {
    const { rows } = await client.query<{ analyzed: Date | null; vacuumed: Date | null; now: Date }>(
      `SELECT last_autoanalyze AS analyzed, last_autovacuum AS vacuumed, now() AS now
       FROM pg_stat_user_tables WHERE relname = 'messages'`
    )
    return rows[0]!
  } finally {
    await client.end()
  }
}

/** When `messages` was last vacuumed and analyzed, by hand or by autovacuum, in the database of a running Belay. */
export const maintenanceState = async (env: Record<string, string>) => {
  const client = new pg.Client({ connectionString: runningDatabaseUrl(env) })
  await client.connect()
  try {
    const { rows } = await client.query<{ analyzed: Date | null; vacuumed: Date | null }>(
      `SELECT greatest(last_analyze, last_autoanalyze) AS analyzed, greatest(last_vacuum, last_autovacuum) AS vacuumed
       FROM pg_stat_user_tables WHERE relname = 'messages'`
    )
    return rows[0]!
  } finally {
    await client.end()
  }
}

/** What `settleDatabase` saw: how long it waited, what autovacuum worked on meanwhile, and how its statements went. */
export interface Settled {
  readonly seconds: number
  readonly quiet: boolean
  readonly autovacuumOn: ReadonlyArray<string>
  /** "done", or why it could not run. */
  readonly vacuum: string
  readonly checkpoint: string
}

/**
 * Waits until no autovacuum worker has been at work on the server of a running Belay for `quietMs` (polled twice a
 * second, for at most `timeoutMs`), then runs VACUUM (ANALYZE) over the database (cheap on tables already vacuumed:
 * it skips all-visible pages; it leaves no table past autovacuum's thresholds, such as the networks a section just
 * added) and a CHECKPOINT, so that neither autovacuum nor the writing of the pages it and the load left dirty runs
 * beside a measurement on the server's core. CHECKPOINT needs a superuser or the pg_checkpoint role (the embedded
 * server's `postgres` is one); a statement refused is reported, not thrown.
 */
export const settleDatabase = async (
  env: Record<string, string>,
  options: { readonly quietMs: number; readonly timeoutMs: number }
): Promise<Settled> => {
  const client = new pg.Client({ connectionString: runningDatabaseUrl(env) })
  await client.connect()
  const started = performance.now()
  const seen = new Set<string>()
  try {
    let quietSince = performance.now()
    let quiet = false
    while (performance.now() - started < options.timeoutMs) {
      const { rows } = await client.query<{ query: string }>(
        `SELECT coalesce(query, '') AS query FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'`
      )
      for (const r of rows) seen.add(r.query.replace(/\s+/g, " ").slice(0, 80))
      if (rows.length > 0) quietSince = performance.now()
      else if (performance.now() - quietSince >= options.quietMs) {
        quiet = true
        break
      }
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
    const run = (statement: string) =>
      client.query(statement).then(() => "done", (e: unknown) => (e instanceof Error ? e.message : String(e)))
    const vacuum = await run("VACUUM (ANALYZE)")
    const checkpoint = await run("CHECKPOINT")
    return { seconds: (performance.now() - started) / 1000, quiet, autovacuumOn: [...seen], vacuum, checkpoint }
  } finally {
    await client.end()
  }
}

/** The embedded PostgreSQL's postmaster among Belay's children (Linux /proc), or undefined (DATABASE_URL, or not Linux). */
export const embeddedPostmaster = (belayPid: number): number | undefined => {
  try {
    const children = Fs.readFileSync(`/proc/${belayPid}/task/${belayPid}/children`, "utf8").trim().split(" ").filter((p) => p !== "")
    return children.map(Number).find((pid) => /\/postgres\0/.test(Fs.readFileSync(`/proc/${pid}/cmdline`, "latin1")))
  } catch {
    return undefined
  }
}

/**
 * Sends captured statements in turn on `client` as the service sent them: from the first that sets planner settings
 * for its transaction (`set_config(…, true)`) on, inside a transaction, as MessageHistory.search runs the part of a
 * search below its window.
 */
export const replayStatements = async (client: pg.Client, statements: ReadonlyArray<readonly [string, ReadonlyArray<unknown>]>) => {
  let open = false
  try {
    for (const [text, params] of statements) {
      if (!open && /\bset_config\(/.test(text)) {
        await client.query("BEGIN")
        open = true
      }
      await client.query(text, [...params])
    }
  } finally {
    if (open) await client.query("COMMIT")
  }
}
