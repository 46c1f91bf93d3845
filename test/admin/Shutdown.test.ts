/**
 * Graceful shutdown, as an operator meets it: `bin/belay serve` in a child process connected to the scripted fake
 * IRC server in this one, with an MCP call in flight when SIGTERM arrives. The call still gets its answer (the HTTP
 * server drains instead of interrupting), the network says QUIT, and the process exits 0 within 5 s; a second
 * SIGTERM during the drain exits at once, non-zero, without the QUIT the graceful path would have sent.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type RunningBelay, runCli, startBelay } from "../support/BelayProcess.js"
import { eventually } from "../support/Eventually.js"
import * as FakeIrcServer from "../support/FakeIrcServer.js"
import { testEnvironment } from "../support/TestDatabase.js"

const SERVER = ":irc.fake.test"
/** The log line the HTTP server writes when it starts draining (HttpServer.ts). */
const DRAINING = "letting the requests in flight finish"

/** A Belay with one read-write token and one network registered on `irc`; returns the token and network id. */
const belayOn = (irc: FakeIrcServer.FakeIrcServer) =>
  Effect.gen(function*() {
    // Info level: the drain's log line is what tells the test the shutdown has begun.
    const belay = yield* startBelay(yield* testEnvironment({ LOG_LEVEL: "info" }))
    const cli = (args: ReadonlyArray<string>, stdin?: string) => runCli(belay.env, args, stdin)
    expect((yield* cli(["account", "add", "alice"], "correct horse battery\n")).code).toBe(0)
    const token = (yield* cli(["token", "add", "alice", "--name", "agent", "--scope", "read-write"])).stdout.trim()
    const id = Number((yield* cli(["network", "add", "alice", "--name", "n", "--host", "127.0.0.1", "--port",
      String(irc.port)])).stdout)
    const conn = yield* irc.nextConnection()
    yield* conn.register()
    yield* eventually(
      "the network connected",
      Effect.map(cli(["network", "list", "alice", "--json"]), (r) => JSON.parse(r.stdout)[0]?.state),
      (state) => state === "connected"
    )
    return { belay, token, id, conn }
  })

/**
 * Starts a get_mode_list call over MCP; the promise settles with the HTTP status and JSON body, or status 0 when the
 * connection broke (it never rejects).
 */
const modeListCall = (belay: RunningBelay, token: string, networkId: number) =>
  Effect.sync(() =>
    fetch(`${belay.url}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "get_mode_list", arguments: { networkId, channel: "#slow", letter: "b" } }
      })
    }).then(
      async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> }),
      (error: unknown) => ({ status: 0, body: { error: String(error) } as Record<string, unknown> })
    )
  )

/** The get_mode_list fences the fake receives (with autoPong off): the tokens it must echo. */
const fences = (conn: FakeIrcServer.FakeIrcConnection) =>
  Effect.gen(function*() {
    const open = yield* conn.waitFor((l) => l.command === "PING" && (l.params[0] ?? "").startsWith("belay-ml-"))
    yield* conn.expectNext("MODE #slow b")
    const close = yield* conn.expectNext((l) => l.command === "PING")
    return { open: open.params[0]!, close: close.params[0]! }
  })

const exited = (belay: RunningBelay) =>
  Effect.promise(
    () =>
      new Promise<number | null>((resolve) => {
        if (belay.process.exitCode !== null) return resolve(belay.process.exitCode)
        belay.process.once("exit", (code) => resolve(code))
      })
  )

describe("belay serve on SIGTERM", () => {
  it.scoped("an MCP call in flight finishes, every network says QUIT, and the process exits 0 within 5 s", () =>
    Effect.gen(function*() {
      const irc = yield* FakeIrcServer.make()
      const { belay, token, id, conn } = yield* belayOn(irc)
      yield* conn.setAutoPong(false)
      const call = yield* modeListCall(belay, token, id)
      const q = yield* fences(conn)

      const signalled = performance.now()
      belay.process.kill("SIGTERM")
      yield* eventually("the HTTP server draining", Effect.sync(belay.output), (out) => out.includes(DRAINING))
      // The server answers only now, with the shutdown under way: the call must still get the list.
      yield* conn.send(
        `${SERVER} PONG irc.fake.test :${q.open}`,
        `${SERVER} 367 belay #slow *!*@spam.example op 1700000000`,
        `${SERVER} 368 belay #slow :End of Channel Ban List`,
        `${SERVER} PONG irc.fake.test :${q.close}`
      )
      const answer = yield* Effect.promise(() => call)
      expect(answer.status).toBe(200)
      expect(answer.body).toMatchObject({
        result: { structuredContent: { ok: true, channel: "#slow", entries: [{ mask: "*!*@spam.example" }] } }
      })
      expect(answer.body.result).not.toHaveProperty("isError", true)
      yield* conn.waitFor((l) => l.command === "QUIT")
      expect(yield* exited(belay)).toBe(0)
      const seconds = (performance.now() - signalled) / 1000
      console.log(`graceful shutdown: exited 0 ${seconds.toFixed(2)} s after SIGTERM, the in-flight call answered`)
      expect(seconds).toBeLessThan(5)
    }), { timeout: 120_000 })

  it.scoped("a second SIGTERM exits at once, non-zero, cutting the drain short", () =>
    Effect.gen(function*() {
      const irc = yield* FakeIrcServer.make()
      const { belay, token, id, conn } = yield* belayOn(irc)
      yield* conn.setAutoPong(false)
      // The fake never answers: the call keeps the HTTP drain waiting for its whole bound.
      const call = yield* modeListCall(belay, token, id)
      yield* fences(conn)

      belay.process.kill("SIGTERM")
      yield* eventually("the HTTP server draining", Effect.sync(belay.output), (out) => out.includes(DRAINING))
      const again = performance.now()
      belay.process.kill("SIGTERM")
      expect(yield* exited(belay)).toBe(128 + 15)
      const ms = performance.now() - again
      console.log(`second SIGTERM: exited 143 ${Math.round(ms)} ms after it`)
      expect(belay.output()).toContain("SIGTERM again; exiting without finishing the shutdown")
      // The graceful path would have QUIT after the drain; this one never got there.
      expect((yield* conn.lines).some((l) => l.startsWith("QUIT"))).toBe(false)
      // The call's connection died with the process: no answer, rather than a wrong one.
      expect((yield* Effect.promise(() => call)).status).toBe(0)
    }), { timeout: 120_000 })
})
