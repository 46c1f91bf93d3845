/**
 * The embedded default end to end: `bin/belay serve` (what `npm start` runs) without DATABASE_URL starts its own
 * PostgreSQL under the data directory, and the operating system is asked what it runs and where it listens
 * (/proc). Crash, stale lock, a PGlite data directory of earlier versions, a socket path too long for a Unix
 * socket and (as root) a data directory behind one the server's user cannot enter are each played out for real.
 */
import * as Child from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import pg from "pg"
import * as EmbeddedPostgres from "../../../src/services/storage/EmbeddedPostgres.js"
import { runCli, startBelay } from "../../support/BelayProcess.js"
import { serverDataDir, tempDir } from "../../support/TestDatabase.js"

/** Belay on the embedded default: no DATABASE_URL (an empty one counts as unset, whatever the caller's shell has). */
const embeddedEnvironment = Effect.gen(function*() {
  const dataDir = yield* serverDataDir("belay-embedded-")
  return { BELAY_DATA_DIR: dataDir, DATABASE_URL: "", LOG_LEVEL: "debug", LOG_FORMAT: "json", PORT: "0" }
})

const readProc = (pid: number | string, file: string) => {
  try {
    return Fs.readFileSync(`/proc/${pid}/${file}`, "utf8")
  } catch {
    return undefined
  }
}

const postmasterPid = (dataDir: string) => Number(Fs.readFileSync(Path.join(dataDir, "pg", "postmaster.pid"), "utf8").split("\n")[0])

const parentOf = (pid: number | string) => {
  const stat = readProc(pid, "stat")
  return stat === undefined ? undefined : Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
}

/** The postmaster and the processes it forked (background workers, backends). */
const serverProcesses = (postmaster: number) => [
  postmaster,
  ...Fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d) && parentOf(d) === postmaster).map(Number)
]

/** Inodes of the sockets a process holds open. */
const socketInodes = (pid: number) => {
  const inodes = new Set<string>()
  for (const fd of Fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(Fs.readlinkSync(`/proc/${pid}/fd/${fd}`))
      if (m) inodes.add(m[1]!)
    } catch {
      // closed meanwhile
    }
  }
  return inodes
}

/** Inodes of listening TCP sockets (IPv4 and IPv6), from the kernel's tables: state 0A is LISTEN. */
const tcpListenerInodes = () => {
  const inodes = new Set<string>()
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of (Fs.existsSync(table) ? Fs.readFileSync(table, "utf8") : "").split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/)
      if (cols[3] === "0A") inodes.add(cols[9]!)
    }
  }
  return inodes
}

/** Inodes of listening Unix sockets bound to `path` (/proc/net/unix: flags 00010000 is __SO_ACCEPTCON). */
const unixListenerInodes = (path: string) =>
  new Set(
    Fs.readFileSync("/proc/net/unix", "utf8").split("\n").slice(1).map((l) => l.trim().split(/\s+/)).filter((c) =>
      c[7] === path && c[3] === "00010000"
    ).map((c) => c[6]!)
  )

const uidOf = (pid: number) => Number(/^Uid:\s+(\d+)/m.exec(readProc(pid, "status") ?? "")?.[1])

const exitOf = (child: Child.ChildProcess) =>
  Effect.promise(() =>
    new Promise<number | null>((resolve) =>
      child.exitCode !== null || child.signalCode !== null ? resolve(child.exitCode) : child.once("exit", (code) => resolve(code))
    )
  )

describe("the embedded PostgreSQL of belay serve", () => {
  it.scoped("runs from BELAY_DATA_DIR/pg on a Unix socket and no TCP port, as its own OS user under root, and stops with Belay", () =>
    Effect.gen(function*() {
      const env = yield* embeddedEnvironment
      const belay = yield* startBelay(env)
      const postmaster = postmasterPid(env.BELAY_DATA_DIR)
      expect(parentOf(postmaster)).toBe(belay.process.pid)
      const processes = serverProcesses(postmaster)
      expect(processes.length).toBeGreaterThan(1)

      const socketPath = Path.join(env.BELAY_DATA_DIR, "pg", ".s.PGSQL.5432")
      expect(Fs.statSync(socketPath).isSocket()).toBe(true)
      const held = new Set(processes.flatMap((pid) => [...socketInodes(pid)]))
      // The socket file is the one the postmaster listens on (this also proves the fd scan sees its sockets) …
      expect([...unixListenerInodes(socketPath)].some((inode) => held.has(inode))).toBe(true)
      // … and none of the server's sockets is a TCP listener.
      const tcp = tcpListenerInodes()
      expect([...held].filter((inode) => tcp.has(inode))).toEqual([])

      if (process.getuid?.() === 0) {
        const uid = Number(Child.execFileSync("id", ["-u", EmbeddedPostgres.SERVER_OS_USER], { encoding: "utf8" }))
        expect(uid).not.toBe(0)
        expect(processes.map(uidOf).every((u) => u === uid)).toBe(true)
        expect(Fs.statSync(Path.join(env.BELAY_DATA_DIR, "pg")).uid).toBe(uid)
        // … from the root-owned staged copy of the binaries, which that user cannot change (PostgresBinaries.ts).
        const exe = Fs.readlinkSync(`/proc/${postmaster}/exe`)
        expect(exe).toMatch(/^\/var\/cache\/belay\/postgres\/[^/]+\/bin\/postgres$/)
        expect(Fs.statSync(exe).uid).toBe(0)
        expect(Fs.statSync(exe).mode & 0o022).toBe(0)
      }

      expect((yield* runCli(belay.env, ["account", "add", "alice"], "correct horse battery\n")).code).toBe(0)
      expect(yield* belay.stop("SIGTERM")).toBe(0)
      expect(belay.output()).toContain("database system is shut down")
      expect(Fs.existsSync(Path.join(env.BELAY_DATA_DIR, "pg", "postmaster.pid"))).toBe(false)
      expect(processes.filter((pid) => Fs.existsSync(`/proc/${pid}`))).toEqual([])
    }), { timeout: 120_000 })

  it.scoped("a server killed under Belay stops Belay non-zero; the next start recovers its data past a stale postmaster.pid", () =>
    Effect.gen(function*() {
      const env = yield* embeddedEnvironment
      const first = yield* startBelay(env)
      expect((yield* runCli(first.env, ["account", "add", "alice"], "correct horse battery\n")).code).toBe(0)
      const postmaster = postmasterPid(env.BELAY_DATA_DIR)
      process.kill(postmaster, "SIGKILL")
      const code = yield* exitOf(first.process)
      expect(code).not.toBe(0)
      expect(code).not.toBe(null)
      expect(first.output()).toContain("exited unexpectedly")

      // The crash left postmaster.pid behind; let its pid now name a live process of the server's OS user that is
      // not PostgreSQL (pids are reused after a reboot or in a new container), which PostgreSQL alone would take
      // for a running server.
      const pidFile = Path.join(env.BELAY_DATA_DIR, "pg", "postmaster.pid")
      expect(Fs.existsSync(pidFile)).toBe(true)
      const serverUser = Fs.statSync(pidFile)
      const impostor = yield* Effect.acquireRelease(
        Effect.sync(() => Child.spawn("sleep", ["600"], { uid: serverUser.uid, gid: serverUser.gid, stdio: "ignore" })),
        (child) => Effect.sync(() => child.kill("SIGKILL"))
      )
      const lines = Fs.readFileSync(pidFile, "utf8").split("\n")
      Fs.writeFileSync(pidFile, [String(impostor.pid), ...lines.slice(1)].join("\n"))

      const second = yield* startBelay(env)
      const accounts = JSON.parse((yield* runCli(second.env, ["account", "list", "--json"])).stdout)
      expect(accounts).toEqual([expect.objectContaining({ name: "alice" })])
      expect(yield* second.stop("SIGTERM")).toBe(0)
    }), { timeout: 180_000 })

  it.scoped("a server left running by a Belay killed with SIGKILL is shut down at the next start, which then serves", () =>
    Effect.gen(function*() {
      const env = yield* embeddedEnvironment
      const first = yield* startBelay(env)
      const orphan = postmasterPid(env.BELAY_DATA_DIR)
      first.process.kill("SIGKILL")
      yield* exitOf(first.process)
      expect(Fs.existsSync(`/proc/${orphan}`)).toBe(true)

      const second = yield* startBelay(env)
      expect(second.output()).toContain("stopping an orphaned embedded PostgreSQL")
      expect(Fs.existsSync(`/proc/${orphan}`)).toBe(false)
      expect(parentOf(postmasterPid(env.BELAY_DATA_DIR))).toBe(second.process.pid)
      expect(yield* second.stop("SIGTERM")).toBe(0)
    }), { timeout: 180_000 })

  it.scoped("a data directory of the former PGlite default is refused with one line and left untouched", () =>
    Effect.gen(function*() {
      const env = yield* embeddedEnvironment
      const legacy = Path.join(env.BELAY_DATA_DIR, "pgdata")
      Fs.mkdirSync(Path.join(legacy, "base", "5"), { recursive: true })
      Fs.writeFileSync(Path.join(legacy, "PG_VERSION"), "18\n")
      Fs.writeFileSync(Path.join(legacy, "base", "5", "16384"), "rows")

      const result = yield* runCli(env, ["serve"])
      expect(result.code).not.toBe(0)
      const lines = result.stderr.trim().split("\n")
      expect(lines).toHaveLength(1)
      expect(lines[0]).toContain(legacy)
      expect(lines[0]).toContain("PGlite")
      expect(lines[0]).toContain("pg_dump")
      expect(lines[0]).toContain("psql")
      expect(Fs.readFileSync(Path.join(legacy, "base", "5", "16384"), "utf8")).toBe("rows")
      expect(Fs.readdirSync(legacy).sort()).toEqual(["PG_VERSION", "base"])
      expect(Fs.existsSync(Path.join(env.BELAY_DATA_DIR, "pg"))).toBe(false)
    }), { timeout: 60_000 })

  it.scoped("a data directory too deep for a socket path gets a private socket directory, removed on stop", () =>
    Effect.gen(function*() {
      const base = yield* tempDir("belay-deep-")
      // mkdtemp makes it 0700; as root, the server's own user must be able to pass through it.
      Fs.chmodSync(base, 0o711)
      const dataDir = Path.join(base, "a-data-directory-whose-path-is-too-long-for-a-unix-socket".repeat(2))
      const { socketDir, pid } = yield* Effect.scoped(
        Effect.gen(function*() {
          const server = yield* EmbeddedPostgres.start({ dataDir })
          expect(server.socketDir.startsWith(Os.tmpdir())).toBe(true)
          expect(server.socketDir.startsWith(dataDir)).toBe(false)
          expect(Fs.statSync(Path.join(server.socketDir, ".s.PGSQL.5432")).isSocket()).toBe(true)
          const answer = yield* Effect.promise(async () => {
            const client = new pg.Client({ connectionString: server.url(server.database) })
            await client.connect()
            const { rows } = await client.query<{ db: string }>("SELECT current_database() AS db")
            await client.end()
            return rows[0]!.db
          })
          expect(answer).toBe("belay")
          return { socketDir: server.socketDir, pid: server.pid }
        })
      )
      expect(Fs.existsSync(socketDir)).toBe(false)
      expect(Fs.existsSync(`/proc/${pid}`)).toBe(false)
      expect(Fs.existsSync(Path.join(dataDir, "pg", "postmaster.pid"))).toBe(false)
    }), { timeout: 120_000 })

  it.scoped.skipIf(process.getuid?.() !== 0)(
    "as root, behind a directory the server's user cannot enter: the cluster lives in /var/lib/belay/pg, announced, found again on restart, and no mode is changed",
    () =>
      Effect.gen(function*() {
        // What `git clone` into a 0700 home and `npm start` give: a data directory Belay creates behind a closed one.
        const closed = yield* tempDir("belay-closed-")
        Fs.chmodSync(closed, 0o700)
        const dataDir = Path.join(closed, "data")
        // The first 16 hex digits of the SHA-256 of the data directory's real path (README).
        const expected = Path.join(
          "/var/lib/belay/pg",
          Crypto.createHash("sha256").update(Path.join(Fs.realpathSync(closed), "data")).digest("hex").slice(0, 16)
        )
        yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(expected, { recursive: true, force: true })))
        const env = { BELAY_DATA_DIR: dataDir, DATABASE_URL: "", LOG_LEVEL: "info", LOG_FORMAT: "json", PORT: "0" }

        const first = yield* startBelay(env)
        const announced = (output: string) =>
          output.split("\n").some((l) => l.includes(`"dir":"${expected}"`) && l.includes("cannot enter") && l.includes(dataDir))
        expect(announced(first.output())).toBe(true)
        const serverUid = Number(Child.execFileSync("id", ["-u", EmbeddedPostgres.SERVER_OS_USER], { encoding: "utf8" }))
        const cluster = Fs.statSync(expected)
        expect([cluster.uid, cluster.mode & 0o777]).toEqual([serverUid, 0o700])
        expect(Fs.existsSync(Path.join(expected, "PG_VERSION"))).toBe(true)
        expect(Fs.readFileSync(Path.join(expected, "postmaster.pid"), "utf8").split("\n")[1]).toBe(expected)
        expect(Fs.existsSync(Path.join(dataDir, "pg"))).toBe(false)
        expect((yield* runCli(first.env, ["account", "add", "alice"], "correct horse battery\n")).code).toBe(0)
        expect(yield* first.stop("SIGTERM")).toBe(0)

        const second = yield* startBelay(env)
        expect(announced(second.output())).toBe(true)
        const accounts = JSON.parse((yield* runCli(second.env, ["account", "list", "--json"])).stdout)
        expect(accounts).toEqual([expect.objectContaining({ name: "alice" })])
        expect(yield* second.stop("SIGTERM")).toBe(0)
        expect(Fs.statSync(closed).mode & 0o777).toBe(0o700)
        expect(Fs.statSync(dataDir).mode & 0o777).toBe(0o700)
      }),
    { timeout: 120_000 }
  )
})
