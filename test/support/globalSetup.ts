/**
 * The database server of a whole test run, made once before any test file (vitest `globalSetup`): the embedded
 * PostgreSQL that users get (EmbeddedPostgres.ts, data in a temp dir removed at the end), or the server named by
 * TEST_DATABASE_URL. On it, one migrated TEMPLATE database; TestDatabase.ts copies it for each test file or layer
 * (`CREATE DATABASE … TEMPLATE`, a file copy, so a fresh database costs no migration run).
 *
 * Concurrency: runs in vitest's main process, before the workers start and after they have all finished.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { ConfigProvider, Effect, Exit, Layer, Logger, LogLevel, Scope } from "effect"
import pg from "pg"
import type { TestProject } from "vitest/node"
import { AppConfig, appSettings } from "../../src/services/AppConfig.js"
import { DatabaseLive } from "../../src/services/storage/Database.js"
import * as EmbeddedPostgres from "../../src/services/storage/EmbeddedPostgres.js"

export interface TestDatabaseServer {
  /** URL of a database on the server to connect to for CREATE and DROP DATABASE. */
  readonly adminUrl: string
  /** The migrated template database. */
  readonly template: string
}

declare module "vitest" {
  export interface ProvidedContext {
    testDatabaseServer: TestDatabaseServer
  }
}

const withAdmin = async (adminUrl: string, statements: ReadonlyArray<string>) => {
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  try {
    for (const statement of statements) await admin.query(statement)
  } finally {
    await admin.end()
  }
}

const databaseUrl = (adminUrl: string, database: string) => {
  const url = new URL(adminUrl)
  url.pathname = `/${database}`
  return url.toString()
}

export default async function setup(project: TestProject) {
  const scope = Effect.runSync(Scope.make())
  // Only the server's own errors (FATAL, PANIC) reach the test output: statement errors are the tests' business
  // and show in their results, and DROP DATABASE … WITH (FORCE) ends sessions on purpose.
  const quiet = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) =>
    effect.pipe(Scope.extend(scope), Logger.withMinimumLogLevel(LogLevel.Error), Effect.runPromise)
  const external = process.env.TEST_DATABASE_URL
  let dataDir: string | undefined
  let adminUrl: string
  if (external !== undefined && external !== "") {
    adminUrl = external
  } else {
    dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "belay-test-pg-"))
    // As root the server runs as its own OS user, which may pass through this dir of the test's (execute only), so
    // the cluster stays inside it and goes with it (TestDatabase.ts serverDataDir).
    Fs.chmodSync(dataDir, 0o711)
    // Every test file's pool and every spawned Belay connect at once: far more than a user's server needs.
    const server = await quiet(EmbeddedPostgres.start({ dataDir, maxConnections: 300 }))
    adminUrl = server.url("postgres")
  }
  // Named per run: runs against one external server must not share (or drop) each other's template.
  const template = `belay_template_${process.pid}`
  await withAdmin(adminUrl, [`DROP DATABASE IF EXISTS ${template}`, `CREATE DATABASE ${template}`])
  const settings = await Effect.runPromise(
    Effect.withConfigProvider(
      appSettings,
      ConfigProvider.fromMap(new Map([["DATABASE_URL", databaseUrl(adminUrl, template)], ["BELAY_DATA_DIR", Os.tmpdir()]]))
    )
  )
  await quiet(Layer.build(DatabaseLive.pipe(Layer.provide(Layer.succeed(AppConfig, settings)))).pipe(Effect.scoped))
  // No one may connect to it (a connection would make CREATE DATABASE … TEMPLATE fail), and it is marked as a template.
  await withAdmin(adminUrl, [`ALTER DATABASE ${template} WITH ALLOW_CONNECTIONS false IS_TEMPLATE true`])
  project.provide("testDatabaseServer", { adminUrl, template })

  return async () => {
    await withAdmin(adminUrl, [`ALTER DATABASE ${template} WITH IS_TEMPLATE false`, `DROP DATABASE IF EXISTS ${template}`])
      .catch(() => undefined)
    await Effect.runPromise(Scope.close(scope, Exit.void))
    if (dataDir !== undefined) Fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
