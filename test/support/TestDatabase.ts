/**
 * The database a test runs against: a fresh PostgreSQL database on the server named
 * by TEST_DATABASE_URL (created per call, dropped on scope close), or, when that is
 * unset, a fresh embedded PGlite data directory. The same migrations run either way,
 * so every database test proves both back ends (CI runs the suite once per mode).
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted } from "effect"
import pg from "pg"
import { AppConfig, type AppSettings, appSettings } from "../../src/services/AppConfig.js"
import { DatabaseLive } from "../../src/services/Database.js"
import { ConfigProvider } from "effect"

export const testDatabaseUrl = process.env.TEST_DATABASE_URL

/** Creates an empty database on the TEST_DATABASE_URL server and returns its URL. */
const createDatabase = Effect.acquireRelease(
  Effect.promise(async () => {
    const admin = new pg.Client({ connectionString: testDatabaseUrl })
    await admin.connect()
    const name = `belay_t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
    await admin.query(`CREATE DATABASE ${name}`)
    await admin.end()
    const url = new URL(testDatabaseUrl!)
    url.pathname = `/${name}`
    return { name, url: url.toString() }
  }),
  ({ name }) =>
    Effect.promise(async () => {
      const admin = new pg.Client({ connectionString: testDatabaseUrl })
      await admin.connect()
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.end()
    })
)

/** A temp dir removed on scope close. */
export const tempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), prefix))),
    (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
  )

/**
 * Environment for a Belay under test: its own data dir and, in PostgreSQL mode, its
 * own fresh database. Scoped: both are removed afterwards.
 */
export const testEnvironment = (extra: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const dataDir = yield* tempDir("belay-test-")
    const env: Record<string, string> = { BELAY_DATA_DIR: dataDir, LOG_LEVEL: "warning", LOG_FORMAT: "json", PORT: "0", ...extra }
    if (testDatabaseUrl) env.DATABASE_URL = (yield* createDatabase).url
    return env
  })

export const settingsFrom = (env: Record<string, string>) =>
  Effect.withConfigProvider(appSettings, ConfigProvider.fromMap(new Map(Object.entries(env)))).pipe(Effect.orDie)

/** AppConfig + a migrated SqlClient over a fresh database; for service tests. */
export const TestDatabaseLive = (extra: Record<string, string> = {}): Layer.Layer<AppConfig | SqlClient.SqlClient | PgClient.PgClient> =>
  Layer.unwrapScoped(
    Effect.gen(function*() {
      const settings: AppSettings = yield* settingsFrom(yield* testEnvironment(extra))
      const config = Layer.succeed(AppConfig, settings)
      return DatabaseLive.pipe(Layer.provideMerge(config), Layer.orDie)
    })
  )

export const describeMode = testDatabaseUrl ? "PostgreSQL (TEST_DATABASE_URL)" : "embedded PGlite"
export { Option, Redacted }
