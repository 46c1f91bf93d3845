/**
 * The README's two commands where a newcomer clones, as root: `git clone` of this repository's HEAD into a 0700
 * directory under /root and into a `mktemp -d` directory (0700 too), then `npm ci && npm start` must serve
 * `/healthz`, and the embedded-PostgreSQL part of `npm test` (its global setup and one test file) must pass from
 * there. The embedded server then runs as `belay-postgres`, which can enter neither directory: it runs from the
 * staged binaries and its cluster is relocated (README "The embedded PostgreSQL"), and neither directory's mode may
 * change.
 *
 * Dependencies are installed with `npm ci --prefer-offline`: the install a newcomer runs (lifecycle scripts and the
 * platform package's symlinks, in a 0700 directory, as root), served from the npm cache that the repository's own
 * `npm ci` has just filled, so it needs no network where that cache is warm (CI) and about 10 s per clone. The
 * clones, the relocated clusters and every process started here are removed at the end.
 */
import * as Child from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort } from "../support/BelayProcess.js"

const REPO = Path.resolve(import.meta.dirname, "../..")
const isRoot = process.getuid?.() === 0

/** This process's environment without what makes a child Belay or vitest use another database or act as a worker. */
const cleanEnv = (): NodeJS.ProcessEnv =>
  Object.fromEntries(
    Object.entries(process.env).filter(([k]) =>
      !["TEST_DATABASE_URL", "DATABASE_URL", "BELAY_DATA_DIR", "NODE_ENV"].includes(k) && !k.startsWith("VITEST")
    )
  )

interface Run {
  readonly code: number | null
  readonly output: string
}

/** Runs a command to its end in `cwd`, killing it (and its process group) after `timeoutMs`. */
const run = (cwd: string, command: string, args: ReadonlyArray<string>, timeoutMs: number, env = cleanEnv()) =>
  Effect.promise(() =>
    new Promise<Run>((resolve) => {
      const child = Child.spawn(command, args, { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] })
      let output = ""
      child.stdout.on("data", (c) => (output += c))
      child.stderr.on("data", (c) => (output += c))
      // Past the time: SIGTERM first, so a vitest run stops the server its global setup started.
      const timer = setTimeout(() => {
        process.kill(-child.pid!, "SIGTERM")
        setTimeout(() => child.exitCode === null && process.kill(-child.pid!, "SIGKILL"), 15_000).unref()
      }, timeoutMs)
      child.on("close", (code) => {
        clearTimeout(timer)
        resolve({ code, output: `$ ${command} ${args.join(" ")}\n${output}` })
      })
    })
  )

/** Processes working in `path` or whose command line mentions it (the postmaster names its cluster with -D). */
const processesMentioning = (path: string) =>
  Fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d)).map(Number).filter((pid) => {
    try {
      return pid !== process.pid && (Fs.readlinkSync(`/proc/${pid}/cwd`).startsWith(path) ||
        Fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").some((arg) => arg.startsWith(path)))
    } catch {
      return false
    }
  })

const signal = (pids: ReadonlyArray<number>, sig: NodeJS.Signals) => {
  for (const pid of pids) {
    try {
      process.kill(pid, sig)
    } catch {
      // gone meanwhile
    }
  }
}

/** Stops every process started from or serving `path`: a fast shutdown first (a postmaster's SIGINT), then SIGKILL. */
const stopAll = (path: string) =>
  Effect.gen(function*() {
    signal(processesMentioning(path), "SIGINT")
    for (let i = 0; i < 50 && processesMentioning(path).length > 0; i++) yield* Effect.sleep("100 millis")
    signal(processesMentioning(path), "SIGKILL")
  })

const healthz = (url: string) => Effect.promise(() => fetch(`${url}/healthz`).then((r) => r.status, () => 0))

/** `npm start` in `clone` until `/healthz` answers 200; returns its exit code after SIGTERM. Its output goes to `log`. */
const startAndStop = (clone: string, log: { output: string }) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const url = `http://127.0.0.1:${port}`
    const child = Child.spawn("npm", ["start"], {
      cwd: clone,
      env: { ...cleanEnv(), PORT: String(port), LOG_FORMAT: "json", LOG_LEVEL: "info" },
      // Its own process group: npm and the belay it runs get the stop signal together, as from a terminal's Ctrl-C.
      detached: true,
      stdio: ["ignore", "pipe", "pipe"]
    })
    child.stdout.on("data", (c) => (log.output += c))
    child.stderr.on("data", (c) => (log.output += c))
    const exited = Effect.promise(() =>
      new Promise<number | null>((resolve) =>
        child.exitCode !== null ? resolve(child.exitCode) : child.once("exit", (code) => resolve(code))
      )
    )
    yield* Effect.addFinalizer(() => Effect.sync(() => child.exitCode === null && process.kill(-child.pid!, "SIGKILL")))
    let status = 0
    // Includes the first build (tsc and the web client), which `npm start` runs on a fresh clone.
    const deadline = Date.now() + 150_000
    while (status !== 200 && child.exitCode === null && Date.now() < deadline) {
      status = yield* healthz(url)
      if (status !== 200) yield* Effect.sleep("200 millis")
    }
    // SIGTERM to belay alone, as a supervisor stops it (npm and the shell between them need not pass it on); npm
    // then exits with belay's status.
    const belay = processesMentioning(clone).filter((pid) => {
      const args = Fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")
      return args.some((a) => a.endsWith("bin/belay")) && args.includes("serve")
    })
    expect(belay, log.output).toHaveLength(1)
    process.kill(belay[0]!, "SIGTERM")
    const code = yield* exited.pipe(Effect.timeout("30 seconds"), Effect.orElseSucceed(() => -1))
    return { status, code }
  })

/** The cluster directory the start-up log announced, from its JSON line. */
const announcedCluster = (output: string): string | undefined => {
  for (const line of output.split("\n")) {
    if (!line.includes("embedded PostgreSQL's cluster for")) continue
    try {
      const dir: unknown = JSON.parse(line).annotations?.dir
      if (typeof dir === "string") return dir
    } catch {
      // not a log line
    }
  }
  return undefined
}

/** Clones into the directory `parentDir` makes, installs, serves, tests; prints one `fresh clone: …` line of durations. */
const fromAFreshClone = (parentDir: Effect.Effect<string>) =>
  Effect.gen(function*() {
    const parent = yield* Effect.acquireRelease(parentDir, (dir) =>
      Effect.zipRight(stopAll(dir), Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))))
    const log = { output: "" }
    // Registered after the clone's, so it runs first: the server serving the relocated cluster stops before the
    // clone it runs for goes.
    yield* Effect.addFinalizer(() => {
      const cluster = announcedCluster(log.output)
      return cluster === undefined ? Effect.void : Effect.zipRight(
        stopAll(cluster),
        Effect.sync(() => Fs.rmSync(cluster, { recursive: true, force: true }))
      )
    })
    expect(Fs.statSync(parent).mode & 0o777).toBe(0o700)
    const clone = Path.join(parent, "belay")
    const head = Child.execFileSync("git", ["-C", REPO, "rev-parse", "HEAD"], { encoding: "utf8" }).trim()
    const steps: Array<Run> = []
    const step = (command: string, args: ReadonlyArray<string>, timeoutMs: number, cwd = clone) =>
      Effect.tap(run(cwd, command, args, timeoutMs), (r) => Effect.sync(() => steps.push(r)))
    const ok = (r: Run) => expect(r.code, steps.map((s) => s.output).join("\n")).toBe(0)

    ok(yield* step("git", ["clone", "--quiet", REPO, clone], 60_000, parent))
    ok(yield* step("git", ["checkout", "--quiet", "--detach", head], 30_000))
    const seconds = (since: number) => ((Date.now() - since) / 1000).toFixed(1)
    let since = Date.now()
    ok(yield* step("npm", ["ci", "--prefer-offline", "--no-audit", "--no-fund"], 180_000))
    const npmCi = seconds(since)

    since = Date.now()
    const served = yield* startAndStop(clone, log)
    const npmStart = seconds(since)
    const cluster = announcedCluster(log.output)
    expect([served.status, served.code], log.output).toEqual([200, 0])
    // belay-postgres cannot enter the parent: the cluster is where the log says, not in the clone's data directory.
    expect(cluster, log.output).toMatch(/^\/var\/lib\/belay\/pg\/[0-9a-f]{16}$/)
    expect(Fs.existsSync(Path.join(cluster!, "PG_VERSION"))).toBe(true)
    expect(Fs.existsSync(Path.join(clone, "data", "pg"))).toBe(false)
    expect(processesMentioning(cluster!)).toEqual([])

    // The embedded-PostgreSQL part of `npm test`: its global setup starts the server from this clone's packages.
    since = Date.now()
    ok(yield* step("npx", ["vitest", "run", "--project", "unit", "test/http/HealthRoutes.test.ts"], 180_000))
    expect(Fs.statSync(parent).mode & 0o777).toBe(0o700)
    // Figures for the CI time this costs; nothing is asserted on them.
    console.log(`fresh clone in ${parent}: npm ci ${npmCi} s, npm start (build included) to /healthz and stop ${npmStart} s, ` +
      `vitest HealthRoutes ${seconds(since)} s`)
  })

describe.skipIf(!isRoot)("npm ci && npm start, and npm test, from a fresh clone as root (skipped unless run as root: the case is root's)", () => {
  it.scopedLive("in a 0700 directory under /root", () =>
    fromAFreshClone(Effect.sync(() => Fs.mkdtempSync(Path.join("/root", "belay-fresh-clone-")))), { timeout: 300_000 })

  it.scopedLive("in a mktemp -d directory", () =>
    fromAFreshClone(Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "tmp.")))), { timeout: 300_000 })
})
