/**
 * Belay owns one `belay serve` child process run the way a user runs it (`node bin/belay serve`, built by
 * scripts/ensure-built.mjs), pinned to the server core, and the ways the bench talks to it: the `belay` CLI, the admin
 * socket the CLI speaks (one JSON line each way, src/schema/Admin.ts) for bulk adds, and GET /metrics.
 *
 * Concurrency rule: one `RunningBelay` per child; its methods may be called from any async flow. `stop` is
 * idempotent and always resolves (SIGTERM, then SIGKILL after a bound).
 */
import * as Child from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Path from "node:path"
import { Effect } from "effect"
import { freePort as freePortEffect } from "../../test/support/BelayProcess.js"
import { BIN, onCore, SERVER_CORE, sleep, waitUntil } from "./Env.js"

/** How much of the child's output is kept for error messages. */
const OUTPUT_TAIL = 64 * 1024

export interface StartOptions {
  /** Extra node flags (e.g. --cpu-prof, --expose-gc, --import). */
  readonly nodeFlags?: ReadonlyArray<string>
  /** How long Belay may take to answer /healthz (default 60 s): a boot with thousands of networks takes longer. */
  readonly readyTimeoutMs?: number
  /** The node binary to run (default: this bench's own, process.execPath). */
  readonly node?: string
  /**
   * Exactly as `npm start` runs it: no MALLOC_ENV (on Node 20, which has no execve, users' servers run without it
   * unless they set it) and no BENCH_BELAY_NODE_FLAGS. Default false.
   */
  readonly asUsersRun?: boolean
}

/**
 * For investigation only: extra node flags for every Belay the bench starts (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`).
 * Figures measured with it are not comparable to a plain run.
 */
const EXTRA_FLAGS = (process.env.BENCH_BELAY_NODE_FLAGS ?? "").split(" ").filter((f) => f !== "")

/** USER_HZ: 100 on every Linux architecture Node supports. */
const CLOCK_TICKS = 100

/** CPU seconds (user + system) the process has used so far, from /proc (Linux); undefined elsewhere. */
export const cpuSeconds = (pid: number): number | undefined => {
  try {
    const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // Fields after the command name (which may contain spaces): utime and stime are the 12th and 13th, in ticks.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
  } catch {
    return undefined
  }
}

export interface RunningBelay {
  readonly url: string
  readonly pid: number
  readonly env: Record<string, string>
  readonly output: () => string
  readonly cli: (args: ReadonlyArray<string>, stdin?: string) => Promise<unknown>
  readonly admin: (request: Record<string, unknown>) => Promise<unknown>
  readonly metrics: () => Promise<Map<string, number>>
  readonly signal: (signal: NodeJS.Signals) => void
  /** How the child ended (exit code or signal), or undefined while it runs: a wait on Belay can fail at once. */
  readonly ended: () => string | undefined
  readonly stop: () => Promise<number | null>
}

// The same free-port probe the tests use, as a Promise for this plain-Node harness.
const freePort = () => Effect.runPromise(freePortEffect)

/** Prometheus text → `name{labels}` → value (labels kept verbatim, as rendered). */
export const parseMetrics = (text: string): Map<string, number> => {
  const out = new Map<string, number>()
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue
    const space = line.lastIndexOf(" ")
    out.set(line.slice(0, space), Number(line.slice(space + 1)))
  }
  return out
}

/**
 * What bin/belay sets for `serve` by process.execve where Node can (22.15 and later): every Belay the bench starts
 * runs with it, so that throughput and memory are measured as a user's server runs, whatever Node runs the bench.
 */
export const MALLOC_ENV: Record<string, string> = typeof (process as { execve?: unknown }).execve === "function"
  ? {}
  : { MALLOC_MMAP_THRESHOLD_: "16384" }

export const startBelay = async (databaseEnv: Record<string, string>, options: StartOptions = {}): Promise<RunningBelay> => {
  const port = await freePort()
  const env: Record<string, string> = {
    LOG_FORMAT: "json",
    LOG_LEVEL: "info",
    ...(options.asUsersRun === true ? {} : MALLOC_ENV),
    ...databaseEnv,
    HOST: "127.0.0.1",
    PORT: String(port)
  }
  const flags = options.asUsersRun === true ? [] : EXTRA_FLAGS
  const [command, args] = onCore(SERVER_CORE, [options.node ?? process.execPath, ...flags, ...(options.nodeFlags ?? []), BIN, "serve"])
  const child = Child.spawn(command, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
  let tail = ""
  const keep = (chunk: Buffer) => {
    tail += chunk.toString("utf8")
    if (tail.length > OUTPUT_TAIL * 2) tail = tail.slice(-OUTPUT_TAIL)
  }
  child.stdout!.on("data", keep)
  child.stderr!.on("data", keep)
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  const url = `http://127.0.0.1:${port}`
  const output = () => tail.slice(-OUTPUT_TAIL)

  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
    const code = await Promise.race([exited, sleep(15_000).then(() => "timeout" as const)])
    if (code !== "timeout") return code
    child.kill("SIGKILL")
    return exited
  }

  const cli = (cliArgs: ReadonlyArray<string>, stdin?: string) =>
    new Promise<unknown>((resolve, reject) => {
      const run = Child.spawn(process.execPath, [BIN, ...cliArgs, "--json"], {
        env: { ...process.env, ...env },
        stdio: ["pipe", "pipe", "pipe"]
      })
      let out = ""
      let err = ""
      run.stdout.on("data", (c) => (out += c))
      run.stderr.on("data", (c) => (err += c))
      run.on("close", (code) => {
        if (code !== 0) return reject(new Error(`belay ${cliArgs.join(" ")} exited ${code}: ${err.trim() || out.trim()}`))
        resolve(out.trim() === "" ? null : JSON.parse(out))
      })
      run.stdin.end(stdin ?? "")
    })

  const adminSocket = env.BELAY_ADMIN_SOCKET ?? Path.join(env.BELAY_DATA_DIR!, "belay.sock")
  const admin = (request: Record<string, unknown>) =>
    new Promise<unknown>((resolve, reject) => {
      const socket = Net.connect(adminSocket)
      let data = ""
      socket.setEncoding("utf8")
      socket.once("connect", () => socket.write(JSON.stringify(request) + "\n"))
      socket.on("data", (c: string) => (data += c))
      socket.once("error", reject)
      socket.once("end", () => {
        try {
          const response = JSON.parse(data) as { ok: boolean; result?: unknown; error?: string }
          if (response.ok) resolve(response.result)
          else reject(new Error(`admin ${String(request._tag)}: ${response.error}`))
        } catch (e) {
          reject(e)
        }
      })
    })

  const metrics = async () => {
    const res = await fetch(`${url}/metrics`)
    if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`)
    return parseMetrics(await res.text())
  }

  try {
    await waitUntil("belay to answer /healthz", options.readyTimeoutMs ?? 60_000, async () => {
      if (child.exitCode !== null) throw new Error(`belay exited with ${child.exitCode}:\n${output()}`)
      try {
        const res = await fetch(`${url}/healthz`)
        return res.status === 200 ? true : undefined
      } catch {
        return undefined
      }
    }, 100)
  } catch (e) {
    await stop()
    throw e
  }
  return {
    url,
    pid: child.pid!,
    env,
    output,
    cli,
    admin,
    metrics,
    signal: (s) => {
      child.kill(s)
    },
    ended: () =>
      child.exitCode !== null
        ? `exited with ${child.exitCode}`
        : child.signalCode !== null
        ? `killed by ${child.signalCode}`
        : undefined,
    stop
  }
}

/** The account, read-write token and networks every section needs, created with the CLI as a user would. */
export interface Fixture {
  readonly account: string
  readonly token: string
}

export const ACCOUNT = "bench"

export const createAccount = async (belay: RunningBelay): Promise<Fixture> => {
  await belay.cli(["account", "add", ACCOUNT], "bench-password-0123456789\n")
  const token = (await belay.cli(["token", "add", ACCOUNT, "--name", "bench", "--scope", "read-write"])) as { token: string }
  return { account: ACCOUNT, token: token.token }
}

export const addNetworkWithCli = async (belay: RunningBelay, name: string, port: number): Promise<number> => {
  const result = (await belay.cli(["network", "add", ACCOUNT, "--name", name, "--host", "127.0.0.1", "--port", String(port)])) as {
    id: number
  }
  return result.id
}

/** What `belay network add` sends, straight to the admin socket (no process per network). */
export const addNetworkWithAdmin = async (belay: RunningBelay, name: string, port: number): Promise<number> => {
  const result = (await belay.admin({
    _tag: "NetworkAdd",
    account: ACCOUNT,
    name,
    host: "127.0.0.1",
    port,
    tls: false,
    tlsInsecure: false,
    join: []
  })) as { id: number }
  return result.id
}

export const connectedCount = (metrics: Map<string, number>) => metrics.get(`belay_connections{state="connected"}`) ?? 0
