/**
 * Client tags, TAGMSG, REDACT and draft/multiline from the member's IRC clients to the upstream, end to end (real
 * actor, fake IRC server, real database): with an upstream that has message-tags, draft/message-redaction and
 * draft/multiline they go as sent (a multiline batch as one batch); with an upstream that has none, the tags are
 * dropped, REDACT is refused with FAIL, TAGMSG sends nothing, and a batch goes as separate lines in order. Bad batches
 * get the extension's FAIL codes and send nothing. An upstream `+typing` TAGMSG reaches a client with message-tags
 * (not one without) and a browser tab as the `typing` frame, and is never stored.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { MessageHistory } from "../../src/services/history/MessageHistory.js"
import { Accounts } from "../../src/services/identity/Accounts.js"
import { CAPS, PASSWORD, startListenerApp, welcomedClient } from "../support/IrcListenerApp.js"
import { connect } from "../http/ws/SocketClient.js"
import { postJson } from "../http/oauth/OAuthHarness.js"
import { describeMode } from "../support/TestDatabase.js"

const FULL_UPSTREAM = ["message-tags", "batch", "draft/message-redaction", "draft/multiline=max-bytes=4096,max-lines=100"]
const WAIT = "20 seconds"

const multiline = (ref: string, target = "#belay") => [
  `BATCH +${ref} draft/multiline ${target}`,
  `@batch=${ref} PRIVMSG ${target} :line one`,
  `@batch=${ref};draft/multiline-concat PRIVMSG ${target} : continued`,
  `@batch=${ref} PRIVMSG ${target} :line two`,
  `BATCH -${ref}`
]

describe(`client tags, REDACT and multiline upstream on ${describeMode}`, () => {
  it.scopedLive("an upstream with the capabilities gets the tags, REDACT and one multiline batch", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp({ upstreamCaps: FULL_UPSTREAM })
      const { port, upstream } = app
      const c = yield* welcomedClient(port, "alice/fake@goguma", PASSWORD, `${CAPS} draft/multiline`)
      yield* c.send("@+draft/reply=abc;+custom=x\\sy;server=no PRIVMSG #belay :a reply")
      const reply = yield* upstream.waitFor((l) => l.command === "PRIVMSG" && l.params[1] === "a reply", WAIT)
      expect(reply.tags).toEqual({ "+draft/reply": "abc", "+custom": "x y" })

      yield* c.send("@+draft/react=👍;+draft/reply=abc TAGMSG #belay")
      const react = yield* upstream.waitFor((l) => l.command === "TAGMSG", WAIT)
      expect(react.tags).toEqual({ "+draft/react": "👍", "+draft/reply": "abc" })
      expect(react.params).toEqual(["#belay"])

      yield* c.send("REDACT #belay abc :wrong channel")
      const redact = yield* upstream.waitFor((l) => l.command === "REDACT", WAIT)
      expect(redact.params).toEqual(["#belay", "abc", "wrong channel"])

      yield* c.send(...multiline("m1"))
      const open = yield* upstream.waitFor((l) => l.command === "BATCH", WAIT)
      expect(open.params.slice(1)).toEqual(["draft/multiline", "#belay"])
      const ref = open.params[0]!.slice(1)
      const got: Array<{ text: string | undefined; concat: boolean; batch: string | undefined }> = []
      for (let i = 0; i < 3; i++) {
        const l = yield* upstream.waitFor((l) => l.command === "PRIVMSG", WAIT)
        got.push({ text: l.params[1], concat: "draft/multiline-concat" in l.tags, batch: l.tags.batch })
      }
      expect(got).toEqual([
        { text: "line one", concat: false, batch: ref },
        { text: " continued", concat: true, batch: ref },
        { text: "line two", concat: false, batch: ref }
      ])
      expect((yield* upstream.waitFor((l) => l.command === "BATCH", WAIT)).params).toEqual([`-${ref}`])

      // Without echo-message the lines are stored as sent: the member's own, in order.
      const accountId = (yield* app.get(Accounts).findByName("alice")).pipe((o) => (o._tag === "Some" ? o.value.id : 0))
      const stored = yield* app.get(MessageHistory).after(accountId, 0, 100)
      expect(stored.filter((m) => m.self && m.kind === "privmsg").map((m) => m.text)).toEqual(
        ["a reply", "line one", " continued", "line two"]
      )
    }), 90_000)

  it.scopedLive("bad batches get FAIL BATCH and send nothing", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp({ upstreamCaps: FULL_UPSTREAM })
      const { port, upstream } = app
      const c = yield* welcomedClient(port, "alice/fake@goguma", PASSWORD, `${CAPS} draft/multiline`)
      const failOf = (ref: string) => c.next((l) => l.command === "FAIL" && l.params[0] === "BATCH", "10 seconds").pipe(
        Effect.map((l) => ({ ref, code: l.params[1] }))
      )
      // Too many lines.
      yield* c.send("BATCH +a draft/multiline #belay", ...Array.from({ length: 40 }, (_, i) => `@batch=a PRIVMSG #belay :${i}`), "BATCH -a")
      expect(yield* failOf("a")).toEqual({ ref: "a", code: "MULTILINE_MAX_LINES" })
      // Too many bytes.
      const long = "x".repeat(400)
      yield* c.send("BATCH +b draft/multiline #belay", ...Array.from({ length: 11 }, () => `@batch=b PRIVMSG #belay :${long}`), "BATCH -b")
      expect(yield* failOf("b")).toEqual({ ref: "b", code: "MULTILINE_MAX_BYTES" })
      // A line to another target.
      yield* c.send("BATCH +c draft/multiline #belay", "@batch=c PRIVMSG #other :hi", "BATCH -c")
      expect(yield* failOf("c")).toEqual({ ref: "c", code: "MULTILINE_INVALID_TARGET" })
      // A batch inside a batch: both dropped.
      yield* c.send("BATCH +d draft/multiline #belay", "@batch=d PRIVMSG #belay :one", "BATCH +e draft/multiline #belay")
      expect(yield* failOf("d")).toEqual({ ref: "d", code: "MULTILINE_INVALID" })
      yield* c.send("BATCH -d")
      expect(yield* failOf("d")).toEqual({ ref: "d", code: "MULTILINE_INVALID" })
      // Another batch type, and a line naming a batch that is not open.
      yield* c.send("BATCH +f chathistory #belay", "@batch=zz PRIVMSG #belay :stray")
      expect(yield* failOf("f")).toEqual({ ref: "f", code: "MULTILINE_INVALID" })
      expect(yield* failOf("zz")).toEqual({ ref: "zz", code: "MULTILINE_INVALID" })
      // Blank lines only.
      yield* c.send("BATCH +g draft/multiline #belay", "@batch=g PRIVMSG #belay :", "BATCH -g")
      expect(yield* failOf("g")).toEqual({ ref: "g", code: "MULTILINE_INVALID" })
      // Nothing of them went upstream; a fence line does.
      yield* c.send("PRIVMSG #belay :fence")
      yield* upstream.waitFor((l) => l.command === "PRIVMSG" && l.params[1] === "fence", WAIT)
      const sent = yield* upstream.lines
      expect(sent.filter((l) => l.includes("BATCH") || l.includes("stray") || l.includes("#other") || l.includes(long))).toEqual([])
    }), 90_000)

  it.scopedLive("an upstream without them: tags dropped, TAGMSG not sent, REDACT refused, a batch as separate lines", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp()
      const { port, upstream } = app
      const c = yield* welcomedClient(port, "alice/fake@goguma", PASSWORD, `${CAPS} draft/multiline`)
      yield* c.send("@+draft/reply=abc PRIVMSG #belay :plain reply", "@+typing=active TAGMSG #belay")
      const plain = yield* upstream.waitFor((l) => l.command === "PRIVMSG", WAIT)
      expect(plain.raw).toBe("PRIVMSG #belay :plain reply")
      yield* c.send("REDACT #belay abc")
      const refused = yield* c.next("FAIL")
      expect(refused.params.slice(0, 3)).toEqual(["REDACT", "INVALID_TARGET", "#belay"])

      yield* c.send(...multiline("m2"))
      const lines: Array<string> = []
      for (let i = 0; i < 3; i++) lines.push((yield* upstream.waitFor((l) => l.command === "PRIVMSG", WAIT)).raw)
      expect(lines).toEqual(["PRIVMSG #belay :line one", "PRIVMSG #belay : continued", "PRIVMSG #belay :line two"])
      const sent = yield* upstream.lines
      expect(sent.filter((l) => /TAGMSG|REDACT|BATCH|draft\/reply/.test(l))).toEqual([])
    }), 90_000)

  it.scopedLive("an upstream +typing reaches a client with message-tags and a browser tab, and is not stored", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp({ upstreamCaps: ["message-tags"] })
      const { port, upstream, networkId } = app
      const tagged = yield* welcomedClient(port, "alice/fake@goguma", PASSWORD)
      const plain = yield* welcomedClient(port, "alice/fake@irssi", PASSWORD, "server-time")
      const res = yield* postJson(`${app.httpUrl}/api/auth/login/token`, { username: "alice", password: PASSWORD })
      const token = ((yield* Effect.promise(() => res.json())) as { access_token: string }).access_token
      const tab = yield* connect(app.httpUrl, { headers: { authorization: `Bearer ${token}` } })
      const drawn = yield* tab.until((f) => f.type === "network" && (f.network as { state: string }).state === "connected")
      expect((drawn.at(-1)!.network as { features: unknown }).features).toEqual({ tags: true, redaction: false, multiline: false })

      yield* upstream.send("@+typing=active :bob!b@host TAGMSG #belay", "@+typing=paused :carol!c@host TAGMSG alice")
      const relayed = yield* tagged.next("TAGMSG")
      expect(relayed.tags["+typing"]).toBe("active")
      expect(relayed.source?.startsWith("bob!")).toBe(true)
      const frames = yield* tab.until((f) => f.type === "typing" && f.nick === "carol")
      expect(frames.filter((f) => f.type === "typing")).toEqual([
        { type: "typing", networkId, target: "#belay", nick: "bob", state: "active" },
        { type: "typing", networkId, target: "carol", nick: "carol", state: "paused" }
      ])
      // The client without message-tags hears the next message, never the TAGMSGs.
      yield* upstream.send(":bob!b@host PRIVMSG #belay :after typing")
      const seen = yield* plain.until((l) => l.command === "PRIVMSG")
      expect(seen.some((l) => l.command === "TAGMSG")).toBe(false)
      const accountId = (yield* app.get(Accounts).findByName("alice")).pipe((o) => (o._tag === "Some" ? o.value.id : 0))
      const stored = yield* app.get(MessageHistory).after(accountId, 0, 100)
      expect(stored.filter((m) => m.nick === "bob" || m.nick === "carol").map((m) => [m.kind, m.text])).toEqual([
        ["privmsg", "after typing"]
      ])
    }), 90_000)
})
