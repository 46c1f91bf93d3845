/**
 * The browser's tag frames over real actors and the fake IRC server: `react`, `reply`, `typing` and `redact` reach the
 * upstream as the IRCv3 lines the contract names, answered `{ok: true}`; a second `typing` `active` within 3 s is
 * answered and not sent; an upstream without the capability, a network not the member's and a malformed frame are
 * refused with an `error` frame naming why, and send nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { PASSWORD, startListenerApp } from "../../support/IrcListenerApp.js"
import { describeMode } from "../../support/TestDatabase.js"
import { postJson } from "../oauth/OAuthHarness.js"
import { connect, type Frame } from "./SocketClient.js"

const WAIT = "20 seconds"

const openTab = (httpUrl: string) =>
  Effect.gen(function*() {
    const res = yield* postJson(`${httpUrl}/api/auth/login/token`, { username: "alice", password: PASSWORD })
    const token = ((yield* Effect.promise(() => res.json())) as { access_token: string }).access_token
    const tab = yield* connect(httpUrl, { headers: { authorization: `Bearer ${token}` } })
    yield* tab.until((f) => f.type === "network" && (f.network as { state: string }).state === "connected")
    /** Sends a frame with `id` and returns its answer (result or error with that id). */
    const ask = (frame: Record<string, unknown>) =>
      Effect.gen(function*() {
        yield* tab.send(frame)
        const seen = yield* tab.until((f: Frame) => (f.type === "result" || f.type === "error") && f.id === frame.id)
        return seen.at(-1)!
      })
    return { tab, ask }
  })

const OK = (id: string) => ({ type: "result", id, isError: false, payload: { ok: true } })

describe(`the browser's tag frames on ${describeMode}`, () => {
  it.scopedLive("react, reply, typing and redact reach the upstream; typing active at most once per 3 s", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp({ upstreamCaps: ["message-tags", "draft/message-redaction"] })
      const { networkId, upstream } = app
      const { ask } = yield* openTab(app.httpUrl)

      expect(yield* ask({ type: "react", id: "r1", networkId, target: "#belay", msgid: "m-1", reaction: "🎉" })).toEqual(OK("r1"))
      const react = yield* upstream.waitFor((l) => l.command === "TAGMSG", WAIT)
      expect([react.tags, react.params]).toEqual([{ "+draft/react": "🎉", "+draft/reply": "m-1" }, ["#belay"]])

      expect(yield* ask({ type: "reply", id: "r2", networkId, target: "#belay", msgid: "m-1", text: "agreed, fully" }))
        .toEqual(OK("r2"))
      const reply = yield* upstream.waitFor((l) => l.command === "PRIVMSG", WAIT)
      expect([reply.tags, reply.params]).toEqual([{ "+draft/reply": "m-1" }, ["#belay", "agreed, fully"]])

      expect(yield* ask({ type: "typing", id: "t1", networkId, target: "#belay", state: "active" })).toEqual(OK("t1"))
      expect(yield* ask({ type: "typing", id: "t2", networkId, target: "#BELAY", state: "active" })).toEqual(OK("t2"))
      expect(yield* ask({ type: "typing", id: "t3", networkId, target: "#belay", state: "done" })).toEqual(OK("t3"))
      expect(yield* ask({ type: "redact", id: "d1", networkId, target: "#belay", msgid: "m-1" })).toEqual(OK("d1"))
      yield* upstream.waitFor((l) => l.command === "REDACT", WAIT)
      const typing = (yield* upstream.lines).filter((l) => l.includes("+typing"))
      expect(typing).toEqual(["@+typing=active TAGMSG #belay", "@+typing=done TAGMSG #belay"])
      expect((yield* upstream.lines).filter((l) => l.startsWith("REDACT"))).toEqual(["REDACT #belay m-1"])
    }), 90_000)

  it.scopedLive("refused without the capability, for another's network, and when malformed; nothing sent", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp()
      const { networkId, upstream } = app
      const { ask, tab } = yield* openTab(app.httpUrl)
      const redact = yield* ask({ type: "redact", id: "d1", networkId, target: "#belay", msgid: "m-1" })
      expect(redact).toMatchObject({ type: "error", id: "d1" })
      expect(redact.message).toContain("draft/message-redaction")
      const react = yield* ask({ type: "react", id: "r1", networkId, target: "#belay", msgid: "m-1", reaction: "x" })
      expect(react.message).toContain("message-tags")
      const other = yield* ask({ type: "typing", id: "t1", networkId: networkId + 1000, target: "#belay", state: "active" })
      expect(other).toEqual({ type: "error", id: "t1", message: `unknown network ${networkId + 1000}` })
      const long = yield* ask({ type: "react", id: "r2", networkId, target: "#belay", msgid: "m-1", reaction: "x".repeat(65) })
      expect(long).toMatchObject({ type: "error", id: "r2" })
      expect(long.message).toContain("reaction")
      const broken = yield* ask({ type: "reply", id: "r3", networkId, target: "#belay", msgid: "a b", text: "hi" })
      expect(broken.message).toContain("msgid")
      // No id: refused all the same, with id null.
      yield* tab.send({ type: "typing", networkId, target: "#belay", state: "sleeping" })
      const anonymous = yield* tab.until((f) => f.type === "error")
      expect(anonymous.at(-1)).toMatchObject({ type: "error", id: null })
      const sent = yield* upstream.lines
      expect(sent.filter((l) => /TAGMSG|REDACT|draft/.test(l))).toEqual([])
    }), 90_000)
})
