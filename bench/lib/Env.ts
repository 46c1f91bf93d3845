/**
 * Env owns where the benchmark runs: the repository root, CPU pinning (`taskset`: Belay on core 0, load generators on
 * core 1; the embedded PostgreSQL that Belay spawns inherits core 0, so the whole service shares one core), the
 * database mode (Belay's embedded PostgreSQL by default, src/services/storage/EmbeddedPostgres.ts; the server named by
 * DATABASE_URL when set) and fresh, throw-away databases for every Belay the bench starts.
 *
 * Concurrency rule: plain module state written once at start-up (`pinSelf`); `freshDatabase` may be called from any
 * async flow, each call owns what it creates and removes it in `dispose`.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import pg from "pg"

/** dist-bench/bench/lib → the repository root. */
export const ROOT = Path.resolve(import.meta.dirname, "../../..")
export const BIN = Path.join(ROOT, "bin/belay")
export const RESULTS_DIR = Path.join(ROOT, "bench/results")

const hasTaskset = (() => {
  try {
    execFileSync("taskset", ["-p", String(process.pid)], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()

/** Two cores or more and taskset present: the server and the load get a core each. */
export const pinning = hasTaskset && Os.cpus().length >= 2

/** Core of Belay (and of the insert baseline, so both pay the same). */
export const SERVER_CORE = "0"
/** Core of the bench process itself: fake IRC server, autocannon, pollers. */
export const LOAD_CORE = "1"

/** argv for running `argv` on `core` (unchanged when pinning is off). */
export const onCore = (core: string, argv: ReadonlyArray<string>): [string, Array<string>] =>
  pinning ? ["taskset", ["-c", core, ...argv]] : [argv[0]!, argv.slice(1)]

/** Pins this process (every thread) to the load core. */
export const pinSelf = () => {
  if (!pinning) return
  execFileSync("taskset", ["-a", "-cp", LOAD_CORE, String(process.pid)], { stdio: "ignore" })
}

export const databaseUrl = process.env.DATABASE_URL !== undefined && process.env.DATABASE_URL !== ""
  ? process.env.DATABASE_URL
  : undefined

export const databaseMode = databaseUrl === undefined
  ? "embedded PostgreSQL (Belay's default, DATABASE_URL unset)"
  : "PostgreSQL (DATABASE_URL)"

let scratchDir: string | undefined

/**
 * The scratch directory of the whole run, made on first use (child scripts that import this module make none);
 * removed at the end unless BENCH_KEEP=1.
 */
export const scratch = () => {
  if (scratchDir === undefined) {
    scratchDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "belay-bench-"))
    // Run as root, Belay runs its PostgreSQL as another user (EmbeddedPostgres.ts), which must pass through this
    // directory to reach each data dir's cluster: execute only, so it still cannot list it.
    Fs.chmodSync(scratchDir, 0o711)
  }
  return scratchDir
}

export const removeScratch = () => {
  if (scratchDir === undefined || process.env.BENCH_KEEP === "1") return
  Fs.rmSync(scratchDir, { recursive: true, force: true })
}

let serial = 0

/** The environment of one Belay (or one baseline): its own data dir, its own database. */
export interface DatabaseEnv {
  readonly env: Record<string, string>
  readonly dispose: () => Promise<void>
}

/**
 * A fresh data dir under the scratch dir (where the embedded PostgreSQL puts its cluster) and, with DATABASE_URL, a
 * fresh database on that server (created here, dropped by `dispose`; the role needs CREATEDB).
 */
export const freshDatabase = async (label: string): Promise<DatabaseEnv> => {
  const dataDir = Path.join(scratch(), `${label}-${++serial}`)
  // 0711, as the scratch dir: as root, the embedded server's own user must reach the data dir for its cluster to stay
  // in it (docs/decisions/storage.md "As root, staged binaries and a cluster where the server's user can reach it"), where
  // runningDatabaseUrl looks for its socket.
  Fs.mkdirSync(dataDir, { recursive: true, mode: 0o711 })
  const removeDir = () => Fs.rmSync(dataDir, { recursive: true, force: true })
  if (databaseUrl === undefined) {
    return { env: { BELAY_DATA_DIR: dataDir }, dispose: async () => removeDir() }
  }
  const name = `belay_bench_${process.pid}_${serial}`
  const admin = new pg.Client({ connectionString: databaseUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(databaseUrl)
  url.pathname = `/${name}`
  return {
    env: { BELAY_DATA_DIR: dataDir, DATABASE_URL: url.toString() },
    dispose: async () => {
      const client = new pg.Client({ connectionString: databaseUrl })
      await client.connect()
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await client.end()
      removeDir()
    }
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Polls `check` every `everyMs` until it returns a value, or throws after `timeoutMs` naming `what`. */
export const waitUntil = async <A>(
  what: string,
  timeoutMs: number,
  check: () => Promise<A | undefined>,
  everyMs = 50
): Promise<A> => {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(everyMs)
  }
}

/** Busy and total jiffies of one CPU so far, from /proc/stat (Linux); undefined elsewhere. */
const coreJiffies = (core: string): { readonly busy: number; readonly total: number } | undefined => {
  try {
    const line = Fs.readFileSync("/proc/stat", "utf8").split("\n").find((l) => l.startsWith(`cpu${core} `))
    if (line === undefined) return undefined
    const fields = line.trim().split(/\s+/).slice(1).map(Number)
    const total = fields.reduce((a, b) => a + b, 0)
    // idle and iowait are the 4th and 5th fields.
    return { busy: total - fields[3]! - fields[4]!, total }
  } catch {
    return undefined
  }
}

/**
 * Waits until `core` has been at most `maxBusy` busy over a whole `windowMs`, for at most `timeoutMs`; the seconds it
 * waited, or undefined if the core never settled (or /proc/stat is not there). Background work on the server core
 * (autovacuum finishing on a large table, a checkpoint) starves whatever is measured next.
 */
export const waitForQuietCore = async (
  core: string,
  options: { readonly maxBusy: number; readonly windowMs: number; readonly timeoutMs: number }
): Promise<number | undefined> => {
  const started = performance.now()
  while (performance.now() - started < options.timeoutMs) {
    const before = coreJiffies(core)
    await sleep(options.windowMs)
    const after = coreJiffies(core)
    if (before === undefined || after === undefined) return undefined
    const busy = (after.busy - before.busy) / Math.max(1, after.total - before.total)
    if (busy <= options.maxBusy) return (performance.now() - started) / 1000
  }
  return undefined
}
