/**
 * The database a test runs against: a fresh PostgreSQL database, created per call from the migrated template of
 * the run's server (globalSetup.ts: the embedded PostgreSQL users get, or TEST_DATABASE_URL) and dropped on scope
 * close. Every test file or layer gets its own database, so files run in parallel without seeing each other.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { ConfigProvider, Effect, Layer, Option, Redacted } from "effect"
import pg from "pg"
import { inject } from "vitest"
import { AppConfig, type AppSettings, appSettings } from "../../src/services/AppConfig.js"
import { DatabaseLive } from "../../src/services/storage/Database.js"

export const testDatabaseUrl = process.env.TEST_DATABASE_URL

const admin = (statement: string) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: inject("testDatabaseServer").adminUrl })
    await client.connect()
    try {
      await client.query(statement)
    } finally {
      await client.end()
    }
  })

/** Creates a database from the run's migrated template and returns its URL; dropped on scope close. */
export const createDatabase = Effect.acquireRelease(
  Effect.gen(function*() {
    const { adminUrl, template } = inject("testDatabaseServer")
    const name = `belay_t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
    yield* admin(`CREATE DATABASE ${name} TEMPLATE ${template}`)
    const url = new URL(adminUrl)
    url.pathname = `/${name}`
    return { name, url: url.toString() }
  }),
  ({ name }) => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
)

/** A temp dir removed on scope close. */
export const tempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), prefix))),
    (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
  )

/**
 * A temp dir for an embedded PostgreSQL's data directory, removed on scope close. mkdtemp makes it 0700; as root the
 * server runs as its own OS user, which may then pass through (execute only: it still cannot list it), so the
 * cluster stays in `<dir>/pg` and goes with the dir. Belay itself changes no directory it did not create
 * (PostgresClusterDirectory.ts).
 */
export const serverDataDir = (prefix: string) =>
  Effect.tap(tempDir(prefix), (dir) => Effect.sync(() => Fs.chmodSync(dir, 0o711)))

/**
 * Environment for a Belay under test: its own data dir and its own fresh database (DATABASE_URL). Scoped: both
 * are removed afterwards. Tests of the embedded default leave out DATABASE_URL themselves.
 */
export const testEnvironment = (extra: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const dataDir = yield* tempDir("belay-test-")
    const { url } = yield* createDatabase
    const env: Record<string, string> = {
      BELAY_DATA_DIR: dataDir,
      DATABASE_URL: url,
      LOG_LEVEL: "warning",
      LOG_FORMAT: "json",
      PORT: "0",
      ...extra
    }
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

export const describeMode = testDatabaseUrl ? "PostgreSQL (TEST_DATABASE_URL)" : "embedded PostgreSQL"
export { Option, Redacted }
