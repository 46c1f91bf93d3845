/**
 * Database owns the connection to PostgreSQL and the schema migrations.
 *
 * - `DATABASE_URL` set: `@effect/sql-pg` against that server, pool of 10.
 * - unset: the embedded PostgreSQL (PGlite) under `BELAY_DATA_DIR`, served over a
 *   private Unix socket by pglite-socket to the very same `@effect/sql-pg` client.
 *
 * Why a pool of ONE for PGlite: pglite-socket multiplexes every connection onto one
 * backend session, so two pooled connections would share SET state and one open
 * transaction would interleave with the other's statements (research/stack.md §2, §5.6).
 * With a single pooled connection the pool itself serialises access — a transaction
 * holds the only connection until it commits — which is exactly PGlite's real
 * concurrency (one backend) with none of the leakage. The same driver code path runs
 * in both modes, so what the tests prove on PGlite holds on PostgreSQL and back.
 *
 * Ids: int8 columns are parsed as JS numbers at this edge (ids and counts stay far
 * below 2^53), so the rest of the code and the JSON output see integers.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { NodeContext } from "@effect/platform-node"
import { Migrator, SqlClient } from "@effect/sql"
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted } from "effect"
import pg from "pg"
import { AppConfig } from "./AppConfig.js"
import migration0001 from "./migrations/0001_init.js"

/** Ordered record of migrations; keys are `NNNN_name` (the migrator stores id and name). */
export const migrations = {
  "0001_init": migration0001
}

const INT8_OID = 20
const NUMERIC_OID = 1700

const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if (oid === INT8_OID) return (value: string) => Number(value)
    if (oid === NUMERIC_OID) return (value: string) => Number(value)
    return format === "binary" ? pg.types.getTypeParser(oid, "binary") : pg.types.getTypeParser(oid, "text")
  }) as pg.CustomTypesConfig["getTypeParser"]
}

/** Starts PGlite on `dataDir` and serves it on a Unix socket only this user can reach. */
const embeddedServer = (dataDir: string) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const pgDir = Path.join(dataDir, "pgdata")
        Fs.mkdirSync(pgDir, { recursive: true, mode: 0o700 })
        // Socket paths are limited to ~107 bytes, so the socket lives in a short private
        // temp directory rather than under a possibly deep data dir.
        const socketDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "belay-pg-"))
        Fs.chmodSync(socketDir, 0o700)
        const db = await PGlite.create({ dataDir: pgDir })
        const server = new PGLiteSocketServer({ db, path: Path.join(socketDir, ".s.PGSQL.5432"), maxConnections: 4 })
        await server.start()
        return { db, server, socketDir }
      },
      catch: (cause) => new Error(`could not start the embedded database in ${dataDir}: ${String(cause)}`)
    }),
    ({ db, server, socketDir }) =>
      Effect.promise(async () => {
        await server.stop().catch(() => undefined)
        await db.close().catch(() => undefined)
        Fs.rmSync(socketDir, { recursive: true, force: true })
      })
  )

/** SqlClient (and PgClient) for the configured database, without running migrations. */
export const SqlLive: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, unknown, AppConfig> = Layer.unwrapScoped(
  Effect.gen(function*() {
    const config = yield* AppConfig
    if (Option.isSome(config.databaseUrl)) {
      return PgClient.layer({ url: config.databaseUrl.value, maxConnections: 10, types, applicationName: "belay" })
    }
    const { socketDir } = yield* embeddedServer(config.dataDir)
    yield* Effect.logInfo("using the embedded database").pipe(Effect.annotateLogs("dataDir", config.dataDir))
    return PgClient.layer({
      host: socketDir,
      port: 5432,
      database: "postgres",
      username: "postgres",
      password: Redacted.make("postgres"),
      maxConnections: 1,
      types
    })
  })
)

/** Runs pending migrations once at start-up; idempotent (applied ids are recorded). */
export const MigrationsLive = PgMigrator.layer({ loader: Migrator.fromRecord(migrations) }).pipe(
  Layer.provide(NodeContext.layer)
)

/** The database, migrated. Everything that touches SQL depends on this. */
export const DatabaseLive = MigrationsLive.pipe(Layer.provideMerge(SqlLive))

/** Liveness probe for /healthz: the database answers a trivial query. */
export const ping = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`SELECT 1`
})
