/**
 * Load owns HTTP load generation: autocannon 9 (the devDependency) run as its CLI on the load core with `--json`, or
 * LeanLoad (bench/lib/LeanLoad.ts, a generator light enough to keep a bare `node:http` server busy from one core),
 * steady or taking turns between variants of a request in short slices (`alternatingLoad`); a
 * sequential client for latency percentiles (one keep-alive connection, one request at a time); and the bare
 * `node:http` baseline server (bench/bare-server.ts) run on the server core. Every autocannon run is bounded by its
 * duration (autocannon stops itself) plus a hard kill deadline.
 *
 * Concurrency rule: one load generator at a time (the load core is one core); callers await each run.
 */
import * as Child from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import { cpuSeconds } from "./Belay.js"
import { LOAD_CORE, onCore, ROOT, SERVER_CORE, scratch, sleep } from "./Env.js"

const AUTOCANNON = Path.join(ROOT, "node_modules/autocannon/autocannon.js")

export interface LoadRequest {
  readonly url: string
  readonly body: string
  readonly headers: Readonly<Record<string, string>>
  readonly connections: number
  readonly seconds: number
}

export interface LoadResult {
  /** Mean of autocannon's per-second samples. */
  readonly requestsPerSecond: number
  readonly total: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly non2xx: number
  readonly errors: number
  readonly timeouts: number
}

interface AutocannonJson {
  readonly requests: { readonly average: number; readonly total: number }
  readonly latency: { readonly p50: number; readonly p99: number }
  readonly non2xx: number
  readonly errors: number
  readonly timeouts: number
}

export const autocannon = (request: LoadRequest): Promise<LoadResult> =>
  new Promise((resolve, reject) => {
    const args = [
      process.execPath,
      AUTOCANNON,
      "-c",
      String(request.connections),
      "-d",
      String(request.seconds),
      "-m",
      "POST",
      ...Object.entries(request.headers).flatMap(([k, v]) => ["-H", `${k}=${v}`]),
      "-b",
      request.body,
      "--json",
      request.url
    ]
    const [command, argv] = onCore(LOAD_CORE, args)
    const child = Child.spawn(command, argv, { stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let err = ""
    child.stdout.on("data", (c) => (out += c))
    child.stderr.on("data", (c) => (err += c))
    const kill = setTimeout(() => child.kill("SIGKILL"), (request.seconds + 30) * 1000)
    child.on("close", (code) => {
      clearTimeout(kill)
      if (code !== 0) return reject(new Error(`autocannon exited ${code}: ${err.slice(-2000)}`))
      try {
        const r = JSON.parse(out) as AutocannonJson
        resolve({
          requestsPerSecond: r.requests.average,
          total: r.requests.total,
          p50Ms: r.latency.p50,
          p99Ms: r.latency.p99,
          non2xx: r.non2xx,
          errors: r.errors,
          timeouts: r.timeouts
        })
      } catch (e) {
        reject(new Error(`autocannon output is not JSON: ${String(e)}\n${out.slice(0, 500)}`))
      }
    })
  })

/** LeanLoad (bench/lib/LeanLoad.ts) on the load core: the same request and the same result as `autocannon`. */
export const leanLoad = (request: LoadRequest): Promise<LoadResult> => runLeanLoad<LoadResult>(JSON.stringify(request), request.seconds)

const runLeanLoad = <A>(json: string, seconds: number): Promise<A> =>
  new Promise((resolve, reject) => {
    const script = Path.join(ROOT, "dist-bench/bench/lib/LeanLoad.js")
    const [command, argv] = onCore(LOAD_CORE, [process.execPath, script, json])
    const child = Child.spawn(command, argv, { stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let err = ""
    child.stdout.on("data", (c) => (out += c))
    child.stderr.on("data", (c) => (err += c))
    const kill = setTimeout(() => child.kill("SIGKILL"), (seconds + 30) * 1000)
    child.on("close", (code) => {
      clearTimeout(kill)
      if (code !== 0) return reject(new Error(`LeanLoad exited ${code}: ${err.slice(-2000)}`))
      try {
        resolve(JSON.parse(out) as A)
      } catch (e) {
        reject(new Error(`LeanLoad output is not JSON: ${String(e)}\n${out.slice(0, 500)}`))
      }
    })
  })

/** One of the requests an alternating load takes turns with: its body and headers (the URL is the load's). */
export interface Variant {
  readonly body: string
  readonly headers: Readonly<Record<string, string>>
}

/** Processes and a core whose CPU an alternating load reads from /proc at every slice's start and end. */
export interface Watch {
  /** The server answering the load. */
  readonly server?: number
  /** A PostgreSQL postmaster: its CPU with its children's, live and reaped. */
  readonly database?: number
  /** The core the server is pinned to. */
  readonly core?: string
}

/**
 * Variants of one request on the same `connections`, in turns of `sliceMs` (bench/lib/LeanLoad.ts): `warmupSlices` of
 * each (at least one: the connections open during them), then `slices` of each, measured.
 */
export interface AlternatingRequest {
  readonly url: string
  readonly variants: ReadonlyArray<Variant>
  readonly connections: number
  readonly sliceMs: number
  readonly warmupSlices: number
  readonly slices: number
  readonly watch: Watch
}

/** One measured slice: the variant, the answers that arrived in it, its length, and CPU seconds over it. */
export interface Slice {
  readonly variant: number
  readonly requests: number
  readonly seconds: number
  readonly serverCpu?: number
  readonly databaseCpu?: number
  /** Seconds of the watched core: busy (neither idle, iowait nor steal), stolen by the hypervisor, and in all. */
  readonly coreBusy?: number
  readonly coreSteal?: number
  readonly coreTotal?: number
}

/** Per variant, its slices together (requests/s = its answers ÷ its slices' seconds), and every measured slice. */
export interface AlternatingResult {
  readonly variants: ReadonlyArray<LoadResult & { readonly serverCores?: number }>
  readonly slices: ReadonlyArray<Slice>
}

/** LeanLoad taking turns with `request.variants` on the load core (bench/lib/LeanLoad.ts). */
export const alternatingLoad = (request: AlternatingRequest): Promise<AlternatingResult> => {
  if (request.warmupSlices < 1 || request.slices < 1 || request.variants.length < 2) {
    return Promise.reject(new Error("an alternating load needs two variants or more and a warm-up and measured slice of each"))
  }
  const seconds = ((request.warmupSlices + request.slices) * request.variants.length * request.sliceMs) / 1000
  return runLeanLoad<AlternatingResult>(JSON.stringify(request), seconds)
}

/** Which load generator a measurement runs. */
export type LoadGenerator = (request: LoadRequest) => Promise<LoadResult>

/**
 * A warm-up run (results discarded), then the measured run, by `generator` (autocannon unless told). With `serverPid`,
 * also the server's CPU use during the measured run, in cores (1 = one core busy all the time), from /proc.
 */
export const measure = async (
  request: LoadRequest,
  warmupSeconds: number,
  serverPid?: number,
  generator: LoadGenerator = autocannon
): Promise<LoadResult & { readonly serverCores?: number }> => {
  if (warmupSeconds > 0) await generator({ ...request, seconds: warmupSeconds })
  const cpu0 = serverPid === undefined ? undefined : cpuSeconds(serverPid)
  const t0 = performance.now()
  const result = await generator(request)
  const cpu1 = serverPid === undefined ? undefined : cpuSeconds(serverPid)
  if (cpu0 === undefined || cpu1 === undefined) return result
  return { ...result, serverCores: (cpu1 - cpu0) / ((performance.now() - t0) / 1000) }
}

export interface BareServer {
  readonly url: string
  readonly pid: number
  readonly stop: () => Promise<void>
}

/** Starts bench/bare-server.js answering exactly `body`, or `modernBody` to a 2026-07-28 request when given. */
export const startBareServer = async (body: string, modernBody?: string): Promise<BareServer> => {
  const file = Path.join(scratch(), `bare-body-${Date.now()}.json`)
  Fs.writeFileSync(file, body)
  const files = [file]
  if (modernBody !== undefined) {
    files.push(Path.join(scratch(), `bare-body-${Date.now()}-2026.json`))
    Fs.writeFileSync(files[1]!, modernBody)
  }
  const script = Path.join(ROOT, "dist-bench/bench/bare-server.js")
  const [command, argv] = onCore(SERVER_CORE, [process.execPath, script, ...files])
  const child = Child.spawn(command, argv, { stdio: ["ignore", "pipe", "inherit"] })
  const pid = child.pid!
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const port = await new Promise<number>((resolve, reject) => {
    let out = ""
    const timer = setTimeout(() => reject(new Error("bare server did not start")), 10_000)
    child.stdout!.on("data", (c) => {
      out += c
      const match = /listening (\d+)/.exec(out)
      if (match) {
        clearTimeout(timer)
        resolve(Number(match[1]))
      }
    })
    child.once("exit", (code) => reject(new Error(`bare server exited ${code}`)))
  })
  return {
    url: `http://127.0.0.1:${port}/bench`,
    pid,
    stop: async () => {
      child.kill("SIGTERM")
      await Promise.race([exited, sleep(5_000).then(() => child.kill("SIGKILL"))])
    }
  }
}

export interface SequentialClient {
  /** POSTs `body` and resolves with the milliseconds from writing the request to the last byte of the answer. */
  readonly post: (body: string) => Promise<number>
  readonly close: () => void
}

/**
 * A client for latency percentiles: one keep-alive connection, one request at a time. `check` sees every answer and
 * throws to fail the run.
 */
export const sequentialClient = (
  url: string,
  headers: Readonly<Record<string, string>>,
  check: (status: number, body: string) => void
): SequentialClient => {
  const agent = new Http.Agent({ keepAlive: true, maxSockets: 1 })
  const target = new URL(url)
  const post = (body: string) =>
    new Promise<number>((resolve, reject) => {
      const started = performance.now()
      const req = Http.request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: "POST",
          headers: { ...headers, "content-length": Buffer.byteLength(body) }
        },
        (res) => {
          const chunks: Array<Buffer> = []
          res.on("data", (c: Buffer) => chunks.push(c))
          res.on("end", () => {
            const elapsed = performance.now() - started
            try {
              check(res.statusCode ?? 0, Buffer.concat(chunks).toString("utf8"))
              resolve(elapsed)
            } catch (e) {
              reject(e)
            }
          })
          res.on("error", reject)
        }
      )
      req.on("error", reject)
      req.end(body)
    })
  return { post, close: () => agent.destroy() }
}
