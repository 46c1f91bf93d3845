/**
 * Hostile input against a real `belay serve` (a child process, as operators run it): at least 10,000 generated bodies
 * each for `POST /mcp` (every one of the 23 tools, the other methods, broken envelopes, raw byte mutations) and for
 * the OAuth register, token and revoke endpoints; a quarter as many for the JSON bodies of the member's routes
 * (`/api/auth/login/token`, `/api/networks`, `/api/push/subscriptions`, the passkey routes), and a tenth as many
 * frames on the browser WebSocket, and a fifth as many polls sent again under other id literals (`POST /mcp` does not
 * parse those again: src/http/mcp/RequestTemplates.ts). Every one of them also carries JSON nested at every depth up to its limit in each
 * member (test/fuzz/support/*Cases.ts say what is generated and what each answer is held to). Requests go a few at a
 * time over keep-alive connections, frames one at a time. Then: no 5xx and no malformed answer;
 * the process alive; nothing changed by any of it (client, code and token rows; the kept code still redeems, the live
 * token still works); the heap after full collections back within a bound of its baseline; and every kind of valid
 * request still answered correctly.
 *
 * Reproducible: the bodies come from fast-check with a fixed seed, printed at the start; FUZZ_SEED overrides it and
 * FUZZ_RUNS the number of bodies per endpoint. A failure prints the seed, the body's label and its first bytes.
 */
import * as Net from "node:net"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import fc from "fast-check"
import pg from "pg"
import { freePort, runCli, startBelay } from "../support/BelayProcess.js"
import { testEnvironment } from "../support/TestDatabase.js"
import {
  approveOverHttp,
  authorizeUrl,
  CookieJar,
  jsonOf,
  mcpStatus,
  obtainCode,
  PASSWORD,
  pkcePair,
  postJson,
  redeem,
  tokenRequest
} from "../http/oauth/OAuthHarness.js"
import { connect } from "../http/ws/SocketClient.js"
import { passwordToken, signedIn } from "../http/auth/MemberHarness.js"
import { type MemoryFigures, inspectorUrl, measureAfterGc, mib } from "./support/ChildMemory.js"
import { destinationCase, judgeDestination } from "./support/DestinationCases.js"
import { badLimitRequest, judgeLimit, limitCase, type LimitedMember } from "./support/LimitCases.js"
import { jsonBodyCase, type JsonBodyTarget, judgeJsonBody } from "./support/JsonBodyCases.js"
import { judgeMcp, type McpCase, mcpCase, sentAgainCase } from "./support/McpCases.js"
import { judgeSocket, socketCase } from "./support/SocketCases.js"
import { judgeOAuth, type OAuthCase, type OAuthTarget, registerCase, revokeCase, tokenCase } from "./support/OAuthCases.js"
import { type RawOutcome, type RawRequest, storm } from "./support/RawHttp.js"

const SEED = process.env.FUZZ_SEED !== undefined && process.env.FUZZ_SEED !== "" ? Number(process.env.FUZZ_SEED) : 424242
const RUNS = process.env.FUZZ_RUNS !== undefined && process.env.FUZZ_RUNS !== "" ? Number(process.env.FUZZ_RUNS) : 10_000
/** The member's JSON routes: seven routes of a few members each, all refused early (RUNS would add a minute). */
const MEMBER_RUNS = Math.ceil(RUNS / 4)
/** Refused network destinations: each is judged without a lookup, so a tenth of RUNS takes seconds. */
const DESTINATION_RUNS = Math.ceil(RUNS / 10)
/** WebSocket frames, sent one at a time on one socket. */
const SOCKET_RUNS = Math.ceil(RUNS / 10)
/** Bodies generated and sent per round: bounds what the test holds in memory at once. */
const BATCH = 500
/** Requests in flight at once: enough to interleave handlers on a 2-core machine without queueing most of the time. */
const CONCURRENCY = 6
/** Polls sent again under other ids (McpCases `sentAgainCase`): a fifth of the other storms'. */
const AGAIN_RUNS = Math.max(100, Math.floor(RUNS / 5))
/**
 * Growth of the child's heap (after full collections) allowed from the warmed-up baseline to after the storm.
 * The in-memory state the storm may legitimately leave is bounded and small (metrics series are per route and tool,
 * caches expire); the slack covers V8's own bookkeeping (code and feedback for paths first taken in the storm).
 * Measured: +1.1 MiB after 4,000 requests, +2.8 MiB after 40,000 (not proportional: no per-request residue). A leak
 * of 200 bytes per request over the 40,000 would exceed the bound. RSS is printed but not bounded: the allocator keeps
 * pages it has freed, so RSS after a storm says how high the storm went, not what it left behind.
 */
const HEAP_GROWTH_BOUND = 8 * 1024 * 1024

interface FuzzTarget {
  readonly url: string
  readonly alive: () => boolean
  readonly output: () => string
  readonly apiToken: string
  readonly networkId: number
  readonly member: JsonBodyTarget
  readonly oauth: OAuthTarget & { readonly verifier: string; readonly jar: CookieJar }
  readonly stateCounts: () => Promise<Record<string, number | string>>
  readonly memory: () => Promise<MemoryFigures>
  /** A second member, bob, holding exactly what his limits allow (test/fuzz/support/LimitCases.ts). */
  readonly limited: LimitedMember
  /** One admin request line to the server's admin socket, answered as parsed JSON. */
  readonly admin: (line: string) => Promise<Record<string, unknown>>
}

class Target extends Context.Tag("test/FuzzTarget")<Target, FuzzTarget>() {}

const TargetLive = Layer.scoped(
  Target,
  Effect.gen(function*() {
    // A port nothing listens on: the network stays in backoff, so write tools answer not-connected after validation.
    const closedPort = yield* freePort
    // Hosted rules for destinations (docs/decisions/hosting.md "One destination guard"), the fuzz network opened.
    const env = yield* testEnvironment({
      LOG_LEVEL: "error",
      NODE_OPTIONS: "--inspect=127.0.0.1:0",
      BELAY_PRIVATE_DESTINATIONS: "deny",
      BELAY_DESTINATION_EXCEPTIONS: `127.0.0.1:${closedPort}`
    })
    const belay = yield* startBelay(env)
    // The admin commands are other processes: no inspector for them.
    const cli = (args: ReadonlyArray<string>, stdin?: string) => runCli({ ...belay.env, NODE_OPTIONS: "" }, args, stdin)
    expect((yield* cli(["account", "add", "alice"], `${PASSWORD}\n`)).code).toBe(0)
    const apiToken = (yield* cli(["token", "add", "alice", "--name", "fuzz", "--scope", "read-write"])).stdout.trim()
    const networkId = Number(
      (yield* cli(["network", "add", "alice", "--name", "fuzznet", "--host", "127.0.0.1", "--port", String(closedPort)])).stdout
    )
    expect(networkId).toBeGreaterThan(0)

    // One app: a live access token, and a second code approved and kept unspent.
    const first = yield* obtainCode({ url: belay.url })
    const redeemed = yield* redeem(belay.url, first)
    expect(redeemed.status).toBe(200)
    const liveToken = String((yield* jsonOf(redeemed))["access_token"])
    const { verifier, challenge } = pkcePair()
    const approved = yield* approveOverHttp(
      belay.url,
      authorizeUrl(belay.url, { client_id: first.clientId, redirect_uri: first.redirectUri, code_challenge: challenge }),
      first.jar
    )
    const code = new URL(approved.headers.get("location") ?? "http://x/").searchParams.get("code")
    expect(code).toBeTruthy()

    // The member's credentials: a password-sign-in token and a browser session.
    const bearer = yield* passwordToken(belay.url)
    const cookie = (yield* signedIn(belay.url)).header()["cookie"] ?? ""
    expect(cookie).toMatch(/belay_session=/)

    // Bob: one network with two channels, at his overrides (docs/contract.md "Account limits").
    expect((yield* cli(["account", "add", "bob"], `${PASSWORD}\n`)).code).toBe(0)
    const bobNetwork = Number((yield* cli(
      ["network", "add", "bob", "--name", "bobnet", "--host", "127.0.0.1", "--port", String(closedPort), "--join", "#one,#two"]
    )).stdout)
    const limits = ["account", "limits", "bob", "--networks", "1", "--channels", "2", "--push-subscriptions", "0"]
    expect((yield* cli(limits)).code).toBe(0)
    const bobLogin = yield* postJson(`${belay.url}/api/auth/login/token`, { username: "bob", password: PASSWORD })
    const limited = { bearer: String((yield* jsonOf(bobLogin))["access_token"]), networkId: bobNetwork }
    const adminSocket = `${env["BELAY_DATA_DIR"]}/belay.sock`
    const admin = (line: string) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const socket = Net.connect(adminSocket)
        let data = ""
        socket.setEncoding("utf8")
        socket.once("connect", () => socket.write(line + "\n"))
        socket.on("data", (c: string) => (data += c))
        socket.once("end", () => resolve(JSON.parse(data) as Record<string, unknown>))
        socket.once("error", reject)
      })

    const inspector = inspectorUrl(belay.output())
    if (inspector === undefined) return yield* Effect.dieMessage(`no inspector URL in the output:\n${belay.output()}`)
    const db = new pg.Client({ connectionString: env["DATABASE_URL"] })
    yield* Effect.acquireRelease(Effect.promise(() => db.connect()), () => Effect.promise(() => db.end()))

    return {
      url: belay.url,
      alive: () => belay.process.exitCode === null && belay.process.signalCode === null,
      output: belay.output,
      apiToken,
      networkId,
      member: { url: belay.url, networkId, bearer, cookie },
      oauth: { clientId: first.clientId, redirectUri: first.redirectUri, liveToken, code: code!, verifier, jar: first.jar },
      stateCounts: async () => {
        const { rows } = await db.query(`SELECT
          (SELECT count(*) FROM oauth_clients)::int AS clients,
          (SELECT count(*) FROM oauth_codes)::int AS codes,
          (SELECT count(*) FROM oauth_codes WHERE spent_at IS NULL)::int AS unspent_codes,
          (SELECT count(*) FROM oauth_tokens)::int AS tokens,
          (SELECT count(*) FROM oauth_tokens WHERE revoked_at IS NULL)::int AS live_tokens,
          (SELECT count(*) FROM api_tokens WHERE revoked_at IS NULL)::int AS api_tokens,
          (SELECT count(*) FROM accounts)::int AS accounts,
          (SELECT count(*) FROM networks)::int AS networks,
          (SELECT md5(string_agg(concat_ws('|', name, host, port, tls, nick, username, realname, encode(server_password_enc, 'hex')), ','
            ORDER BY id)) FROM networks) AS network_settings,
          (SELECT count(*) FROM push_subscriptions)::int AS push_subscriptions,
          (SELECT count(*) FROM passkeys)::int AS passkeys`)
        return rows[0] as Record<string, number | string>
      },
      memory: () => measureAfterGc(inspector),
      limited,
      admin
    } satisfies FuzzTarget
  })
)

interface Tally {
  readonly endpoint: string
  sent: number
  fiveXx: number
  readonly statuses: Map<number, number>
  readonly failures: Array<string>
  readonly answered: Map<string, number>
  /** Answers by status and error code, to show what the storm reached. */
  readonly kinds: Map<string, number>
  ms: number
}

const kindOf = (outcome: RawOutcome): string => {
  if (outcome._tag === "Transport") return "transport"
  const text = outcome.body.toString("utf8")
  const code = /"code":(-?\d+)/.exec(text)?.[1] ?? /"error":"([a-z_]+)"/.exec(text)?.[1] ?? (/"isError":true/.test(text) ? "isError" : "")
  return `${outcome.status}${code === "" ? "" : ` ${code}`}`
}

const show = (body: Buffer) => JSON.stringify(body.subarray(0, 160).toString("latin1"))

/** Generates `runs` cases in rounds of BATCH (seed + round), sends them, and tallies what the judge says. */
const runStorm = <C extends RawRequest & { readonly label: string }>(
  url: string,
  endpoint: string,
  arbitrary: fc.Arbitrary<C>,
  runs: number,
  seed: number,
  judge: (request: C, outcome: RawOutcome) => string | undefined,
  answeredKey: (request: C, outcome: RawOutcome) => string | undefined = () => undefined
) =>
  Effect.promise(async (): Promise<Tally> => {
    const tally: Tally = { endpoint, sent: 0, fiveXx: 0, statuses: new Map(), failures: [], answered: new Map(), kinds: new Map(), ms: 0 }
    const started = performance.now()
    for (let round = 0; round * BATCH < runs; round++) {
      const cases = fc.sample(arbitrary, { seed: seed + round, numRuns: Math.min(BATCH, runs - round * BATCH) })
      await storm(url, cases, CONCURRENCY, (request, outcome) => {
        tally.sent++
        const kind = kindOf(outcome)
        tally.kinds.set(kind, (tally.kinds.get(kind) ?? 0) + 1)
        if (outcome._tag === "Answer") {
          tally.statuses.set(outcome.status, (tally.statuses.get(outcome.status) ?? 0) + 1)
          if (outcome.status >= 500) tally.fiveXx++
        }
        const problem = judge(request, outcome)
        if (problem !== undefined) {
          if (tally.failures.length < 20) tally.failures.push(`[seed ${seed + round}] ${request.label}: ${problem}; body ${show(request.body)}`)
          else tally.failures.length === 20 && tally.failures.push("…")
          return
        }
        const key = answeredKey(request, outcome)
        if (key !== undefined) tally.answered.set(key, (tally.answered.get(key) ?? 0) + 1)
      })
    }
    tally.ms = performance.now() - started
    const statuses = [...tally.kinds].sort(([a], [b]) => a.localeCompare(b)).map(([s, n]) => `${s}×${n}`).join(", ")
    if (tally.answered.size > 0) console.log(`fuzz ${endpoint}: answered per tool ${JSON.stringify(Object.fromEntries(tally.answered))}`)
    console.log(`fuzz ${endpoint}: ${tally.sent} inputs in ${(tally.ms / 1000).toFixed(1)} s; 5xx: ${tally.fiveXx}; answers ${statuses}; failures ${tally.failures.length}`)
    return tally
  })

/**
 * Sends `runs` generated frames on one socket of the member's, one at a time, each judged by the `result` or `error`
 * frame that answers it (other frames, the network's events, are passed over); then the socket must still be open.
 */
const runSocketStorm = (target: FuzzTarget, endpoint: string, runs: number, seed: number) =>
  Effect.scoped(Effect.gen(function*() {
    const tally: Tally = { endpoint, sent: 0, fiveXx: 0, statuses: new Map(), failures: [], answered: new Map(), kinds: new Map(), ms: 0 }
    const tab = yield* connect(target.url, { headers: { authorization: `Bearer ${target.member.bearer}` } })
    expect((yield* tab.next()).type).toBe("hello")
    const started = performance.now()
    const arbitrary = socketCase({ token: target.apiToken, networkId: target.networkId })
    let closed = false
    for (let round = 0; round * BATCH < runs && !closed; round++) {
      for (const request of fc.sample(arbitrary, { seed: seed + round, numRuns: Math.min(BATCH, runs - round * BATCH) })) {
        tally.sent++
        yield* tab.send(request.frame)
        const frames = yield* Effect.catchAllDefect(tab.until((f) => f.type === "result" || f.type === "error"), () =>
          Effect.succeed(undefined))
        if (frames === undefined && (yield* tab.isClosed)) {
          const { code, reason } = yield* tab.closed
          tally.failures.push(`[seed ${seed + round}] ${request.label}: the socket closed (${code} ${reason})`)
          closed = true
          break
        }
        const answer = frames?.at(-1)
        const kind = answer === undefined ? "none" : answer.type === "error" ? `error ${String(answer["message"]).slice(0, 40)}` : `result${answer["isError"] === true ? " isError" : ""}`
        tally.kinds.set(kind, (tally.kinds.get(kind) ?? 0) + 1)
        const problem = judgeSocket(answer)
        if (problem !== undefined && tally.failures.length < 20) {
          tally.failures.push(`[seed ${seed + round}] ${request.label}: ${problem}; frame ${JSON.stringify(request.frame.slice(0, 160))}`)
        }
      }
    }
    tally.ms = performance.now() - started
    expect(yield* tab.isClosed).toBe(false)
    expect(yield* tab.call("list_networks")).toMatchObject({ type: "result", isError: false })
    const kinds = [...tally.kinds].sort(([a], [b]) => a.localeCompare(b)).map(([s, n]) => `${s}×${n}`).join(", ")
    console.log(`fuzz ${endpoint}: ${tally.sent} frames in ${(tally.ms / 1000).toFixed(1)} s; answers ${kinds}; failures ${tally.failures.length}`)
    return tally
  }))

const expectClean = (tally: Tally, runs: number) => {
  expect(tally.failures).toEqual([])
  expect(tally.fiveXx).toBe(0)
  expect(tally.sent).toBe(runs)
}

/** Answered with a result (not refused before the tool ran or its arguments were judged), per tool. */
const toolAnswered = (request: McpCase, outcome: RawOutcome) =>
  request.tool !== undefined && outcome._tag === "Answer" && outcome.status === 200 && /"result":/.test(outcome.body.toString("utf8"))
    ? request.tool
    : undefined

const summary: Array<string> = []
let baseline: MemoryFigures | undefined
let countsBefore: Record<string, number | string> | undefined
const startedAt = performance.now()

layer(TargetLive, { timeout: "3 minutes", excludeTestServices: true })("hostile input against belay serve", (it) => {
  it.effect("warm-up: a few hundred of each kind, then the baseline heap and state", () =>
    Effect.gen(function*() {
      const target = yield* Target
      console.log(`fuzz seed ${SEED} (FUZZ_SEED=${SEED} reproduces this run), ${RUNS} inputs per endpoint`)
      // A different seed: the warm-up takes the same paths, not the same bodies.
      const warm = SEED ^ 0x5a5a5a
      yield* runStorm(target.url, "warm-up /mcp", mcpCase({ token: target.apiToken, networkId: target.networkId }), 400, warm, judgeMcp)
      yield* runStorm(target.url, "warm-up register", registerCase, 200, warm, judgeOAuth)
      yield* runStorm(target.url, "warm-up token", tokenCase(target.oauth), 200, warm, judgeOAuth)
      yield* runStorm(target.url, "warm-up revoke", revokeCase(target.oauth), 200, warm, judgeOAuth)
      yield* runStorm(target.url, "warm-up member JSON", jsonBodyCase(target.member), 200, warm, judgeJsonBody)
      yield* runSocketStorm(target, "warm-up socket", 50, warm)
      countsBefore = yield* Effect.promise(target.stateCounts)
      baseline = yield* Effect.promise(target.memory)
      summary.push(`baseline: heapUsed ${mib(baseline.heapUsed)}, rss ${mib(baseline.rss)}`)
      expect(target.alive()).toBe(true)
    }))

  it.effect(`POST /mcp: ${RUNS} bodies over the 23 tools, the other methods and broken envelopes`, () =>
    Effect.gen(function*() {
      const target = yield* Target
      const tally = yield* runStorm(target.url, "/mcp", mcpCase({ token: target.apiToken, networkId: target.networkId }), RUNS, SEED, judgeMcp, toolAnswered)
      summary.push(`/mcp: ${tally.sent} inputs, 5xx ${tally.fiveXx}, ${(tally.ms / 1000).toFixed(1)} s`)
      expectClean(tally, RUNS)
      expect(target.alive()).toBe(true)
      // Every tool was reached often enough to mean something: about 1 in 60 bodies each reaches a result.
      expect(tally.answered.size).toBe(23)
      for (const [, n] of tally.answered) expect(n).toBeGreaterThanOrEqual(RUNS / 200)
    }))

  it.effect(`POST /mcp: ${AGAIN_RUNS} polls sent again under other id literals`, () =>
    Effect.gen(function*() {
      const target = yield* Target
      const cases = sentAgainCase({ token: target.apiToken, networkId: target.networkId })
      const tally = yield* runStorm(target.url, "/mcp sent again", cases, AGAIN_RUNS, SEED + 500_000, judgeMcp, toolAnswered)
      summary.push(`/mcp sent again: ${tally.sent} inputs, 5xx ${tally.fiveXx}, ${(tally.ms / 1000).toFixed(1)} s`)
      expectClean(tally, AGAIN_RUNS)
      expect(target.alive()).toBe(true)
      // Both tools were answered, each under many ids.
      for (const tool of ["recent_messages", "list_networks"]) expect(tally.answered.get(tool) ?? 0).toBeGreaterThanOrEqual(AGAIN_RUNS / 20)
    }))

  it.effect(`POST /api/oauth/register: ${RUNS} refused bodies`, () =>
    Effect.gen(function*() {
      const target = yield* Target
      const tally = yield* runStorm(target.url, "register", registerCase, RUNS, SEED + 1_000_000, judgeOAuth)
      summary.push(`register: ${tally.sent} inputs, 5xx ${tally.fiveXx}, ${(tally.ms / 1000).toFixed(1)} s`)
      expectClean(tally, RUNS)
      expect(target.alive()).toBe(true)
    }))

  it.effect(`POST /api/oauth/token: ${RUNS} bodies that never hold the real code`, () =>
    Effect.gen(function*() {
      const target = yield* Target
      const tally = yield* runStorm(target.url, "token", tokenCase(target.oauth), RUNS, SEED + 2_000_000, judgeOAuth)
      summary.push(`token: ${tally.sent} inputs, 5xx ${tally.fiveXx}, ${(tally.ms / 1000).toFixed(1)} s`)
      expectClean(tally, RUNS)
      expect(target.alive()).toBe(true)
    }))

  it.effect(`POST /api/oauth/revoke: ${RUNS} bodies that never hold the live token`, () =>
    Effect.gen(function*() {
      const target = yield* Target
      const tally = yield* runStorm(target.url, "revoke", revokeCase(target.oauth), RUNS, SEED + 3_000_000, judgeOAuth)
      summary.push(`revoke: ${tally.sent} inputs, 5xx ${tally.fiveXx}, ${(tally.ms / 1000).toFixed(1)} s`)
      expectClean(tally, RUNS)
      expect(target.alive()).toBe(true)
    }))

  it.effect(`the member's JSON routes: ${MEMBER_RUNS} bodies with deep nesting in each member`, () =>
    Effect.gen(function*() {
      const target = yield* Target
      const tally = yield* runStorm(target.url, "member JSON", jsonBodyCase(target.member), MEMBER_RUNS, SEED + 4_000_000, judgeJsonBody)
      summary.push(`member JSON: ${tally.sent} inputs, 5xx ${tally.fiveXx}, ${(tally.ms / 1000).toFixed(1)} s`)
      expectClean(tally, MEMBER_RUNS)
      expect(target.alive()).toBe(true)
    }))

  it.effect(`network destinations: ${DESTINATION_RUNS} refused addresses in every form a resolver reads`, () =>
    Effect.gen(function*() {
      const target = yield* Target
      const tally = yield* runStorm(
        target.url,
        "destinations",
        destinationCase(target.member.bearer),
        DESTINATION_RUNS,
        SEED + 6_000_000,
        judgeDestination
      )
      summary.push(`destinations: ${tally.sent} inputs, 5xx ${tally.fiveXx}, ${(tally.ms / 1000).toFixed(1)} s`)
      expectClean(tally, DESTINATION_RUNS)
      expect(target.alive()).toBe(true)
    }))

  it.effect(`limit edges: ${DESTINATION_RUNS} creations one past a limit, and bad overrides on the admin socket`, () =>
    Effect.gen(function*() {
      const target = yield* Target
      const tally = yield* runStorm(target.url, "limits", limitCase(target.limited), DESTINATION_RUNS, SEED + 7_000_000, judgeLimit)
      summary.push(`limits: ${tally.sent} inputs, 5xx ${tally.fiveXx}, ${(tally.ms / 1000).toFixed(1)} s`)
      expectClean(tally, DESTINATION_RUNS)
      const shown = () => target.admin(JSON.stringify({ _tag: "AccountShow", name: "bob" })).then((r) => JSON.stringify(r))
      const before = yield* Effect.promise(shown)
      const accepted: Array<string> = []
      for (const bad of fc.sample(badLimitRequest("bob"), { seed: SEED + 8_000_000, numRuns: Math.ceil(DESTINATION_RUNS / 4) })) {
        const answer = yield* Effect.promise(() => target.admin(bad.line))
        if (answer["ok"] !== false && accepted.length < 10) accepted.push(bad.label)
      }
      expect(accepted).toEqual([])
      expect(yield* Effect.promise(shown)).toBe(before)
      expect(target.alive()).toBe(true)
    }))

  it.effect(`the browser WebSocket: ${SOCKET_RUNS} frames with deep nesting in each tool argument and frame member`, () =>
    Effect.gen(function*() {
      const target = yield* Target
      const tally = yield* runSocketStorm(target, "socket", SOCKET_RUNS, SEED + 5_000_000)
      summary.push(`socket: ${tally.sent} frames, ${(tally.ms / 1000).toFixed(1)} s`)
      expect(tally.failures).toEqual([])
      expect(tally.sent).toBe(SOCKET_RUNS)
      expect(target.alive()).toBe(true)
    }))

  it.effect("after the storm: nothing changed, the heap is back near its baseline, and valid requests are answered", () =>
    Effect.gen(function*() {
      const target = yield* Target
      expect(target.alive()).toBe(true)
      // Nothing the bad input did changed state: no client registered, no code spent, no token issued or revoked.
      const countsAfter = yield* Effect.promise(target.stateCounts)
      expect(countsAfter).toEqual(countsBefore)

      const after = yield* Effect.promise(target.memory)
      const growth = after.heapUsed - baseline!.heapUsed
      summary.push(`after: heapUsed ${mib(after.heapUsed)} (${growth >= 0 ? "+" : ""}${mib(growth)}), rss ${mib(after.rss)}`)
      expect(growth).toBeLessThan(HEAP_GROWTH_BOUND)

      // The valid requests: tools/list, a real tool call, a registration, the kept code's exchange, the live token
      // (still working), a revocation that takes.
      const mcp = (token: string, body: unknown) =>
        Effect.flatMap(postJson(`${target.url}/mcp`, body, { authorization: `Bearer ${token}`, "mcp-protocol-version": "2025-06-18" }), (res) =>
          Effect.map(jsonOf(res), (json) => ({ status: res.status, json })))
      const listed = yield* mcp(target.apiToken, { jsonrpc: "2.0", id: 1, method: "tools/list" })
      expect(listed.status).toBe(200)
      expect((listed.json["result"] as { tools: Array<unknown> }).tools).toHaveLength(23)
      const note = { networkId: target.networkId, nick: "fuzz-check", note: "still here" }
      const set = yield* mcp(target.apiToken, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "set_nick_note", arguments: note } })
      expect((set.json["result"] as { structuredContent: unknown }).structuredContent).toEqual({ ok: true, ...note })
      const got = yield* mcp(target.apiToken, {
        jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "get_nick_note", arguments: { networkId: target.networkId, nick: "FUZZ-check" } }
      })
      expect((got.json["result"] as { structuredContent: { note: string } }).structuredContent.note).toBe("still here")

      const registered = yield* postJson(`${target.url}/api/oauth/register`, { client_name: "After the storm", redirect_uris: ["http://127.0.0.1/cb"] })
      expect(registered.status).toBe(201)

      const exchanged = yield* tokenRequest(target.url, {
        grant_type: "authorization_code",
        client_id: target.oauth.clientId,
        code: target.oauth.code,
        redirect_uri: target.oauth.redirectUri,
        code_verifier: target.oauth.verifier
      })
      expect(exchanged.status).toBe(200)
      const fresh = String((yield* jsonOf(exchanged))["access_token"])
      expect(yield* mcpStatus(target.url, fresh)).toBe(200)
      expect(yield* mcpStatus(target.url, target.oauth.liveToken)).toBe(200)

      const revoke = yield* Effect.promise(() =>
        fetch(`${target.url}/api/oauth/revoke`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ client_id: target.oauth.clientId, token: target.oauth.liveToken }).toString()
        })
      )
      expect(revoke.status).toBe(200)
      expect(yield* mcpStatus(target.url, target.oauth.liveToken)).toBe(401)
      expect(yield* mcpStatus(target.url, fresh)).toBe(200)
      expect(target.alive()).toBe(true)

      summary.push(`total ${((performance.now() - startedAt) / 1000).toFixed(1)} s`)
      console.log(`fuzz summary (seed ${SEED}):\n  ${summary.join("\n  ")}`)
    }))
})
