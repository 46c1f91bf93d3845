/**
 * Runs Belay the way a user does: `bin/belay serve` as a child process, and
 * `bin/belay <command>` against it. Scoped: the server gets SIGTERM on scope close.
 */
import * as Child from "node:child_process"
import * as Net from "node:net"
import * as Path from "node:path"
import { Effect } from "effect"

export const BIN = Path.resolve(import.meta.dirname, "../../bin/belay")

export const freePort = Effect.promise(
  () =>
    new Promise<number>((resolve, reject) => {
      const server = Net.createServer()
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address ? address.port : 0
        server.close(() => resolve(port))
      })
      server.once("error", reject)
    })
)

export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

export const runCli = (env: Record<string, string>, args: ReadonlyArray<string>, stdin?: string) =>
  Effect.promise(
    () =>
      new Promise<CliResult>((resolve) => {
        const child = Child.spawn(process.execPath, [BIN, ...args], {
          env: { ...process.env, ...env },
          stdio: ["pipe", "pipe", "pipe"]
        })
        let stdout = ""
        let stderr = ""
        child.stdout.on("data", (c) => (stdout += c))
        child.stderr.on("data", (c) => (stderr += c))
        child.on("close", (code) => resolve({ code, stdout, stderr }))
        child.stdin.end(stdin ?? "")
      })
  )

export interface RunningBelay {
  readonly url: string
  readonly env: Record<string, string>
  readonly process: Child.ChildProcess
  readonly output: () => string
  /** SIGTERM and wait; resolves with the exit code. */
  readonly stop: (signal?: NodeJS.Signals) => Effect.Effect<number | null>
}

const waitHealthy = (url: string, child: Child.ChildProcess, output: () => string) =>
  Effect.promise(async () => {
    const deadline = Date.now() + 60_000
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`belay exited with ${child.exitCode}:\n${output()}`)
      try {
        const res = await fetch(`${url}/healthz`)
        if (res.status === 200) return
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100))
    }
    throw new Error(`belay did not become healthy:\n${output()}`)
  })

export const startBelay = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const port = env.PORT && env.PORT !== "0" ? Number(env.PORT) : yield* freePort
    const fullEnv = { ...env, PORT: String(port), HOST: "127.0.0.1" }
    const child = Child.spawn(process.execPath, [BIN, "serve"], {
      env: { ...process.env, ...fullEnv },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    child.stdout!.on("data", (c) => (out += c))
    child.stderr!.on("data", (c) => (out += c))
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    const stop = (signal: NodeJS.Signals = "SIGTERM") =>
      Effect.promise(() => {
        if (child.exitCode === null) child.kill(signal)
        return exited
      })
    yield* Effect.addFinalizer(() => stop("SIGTERM").pipe(Effect.timeout("10 seconds"), Effect.ignore))
    const url = `http://127.0.0.1:${port}`
    yield* waitHealthy(url, child, () => out)
    return { url, env: fullEnv, process: child, output: () => out, stop } satisfies RunningBelay
  })
