/**
 * Db opens a Belay database from the bench process with the application's own Database layer
 * (src/services/Database.ts: the embedded PostgreSQL under BELAY_DATA_DIR, or DATABASE_URL; migrations applied), so
 * loading and counting go through the same driver, schema and indexes as the server. The embedded server is started
 * by one process at a time: call this only while no Belay runs on that data dir.
 *
 * Concurrency rule: one `withDatabase` call owns the connection for the duration of `use` and closes it after.
 */
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, Logger, LogLevel } from "effect"
import { AppConfig, appSettings } from "../../src/services/AppConfig.js"
import { DatabaseLive } from "../../src/services/Database.js"

export const withDatabase = async <A>(
  env: Record<string, string>,
  use: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>
): Promise<A> => {
  const settings = await Effect.runPromise(
    Effect.withConfigProvider(appSettings, ConfigProvider.fromMap(new Map(Object.entries(env))))
  )
  const program = Effect.flatMap(SqlClient.SqlClient, use).pipe(
    Effect.provide(DatabaseLive.pipe(Layer.provide(Layer.succeed(AppConfig, settings)))),
    Effect.scoped,
    Logger.withMinimumLogLevel(LogLevel.Warning)
  )
  return Effect.runPromise(program as Effect.Effect<A, unknown>)
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
