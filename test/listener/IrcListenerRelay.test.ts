/**
 * What the listener relays as soju does, end to end (real actor, fake IRC server, real database):
 * - others' PRIVMSGs and NOTICEs keep their client-only tags for a client with message-tags (a tag that would pass the
 *   4094 bytes of message-tags §"Size limit" dropped whole), none for a client without;
 * - the member's multiline message reaches their other clients with draft/multiline as one batch, others as lines;
 * - WHO with WHOX fields is passed through and its 354 replies come back with the client's label; without
 *   multi-prefix, their `f` field narrowed to the highest prefix;
 * - a DM to the member's own nick is stored once; the sender with echo-message sees it twice, as a server sends it
 *   (its labelled echo, then the delivery without the label), every other client once; with or without echo-message
 *   upstream, whether the upstream sends it back once or twice (echo and delivery).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { MessageHistory } from "../../src/services/history/MessageHistory.js"
import { Accounts } from "../../src/services/identity/Accounts.js"
import { DEFAULT_ISUPPORT } from "../support/FakeIrcServer.js"
import { batchEnd, CAPS, PASSWORD, startListenerApp, texts, welcomedClient } from "../support/IrcListenerApp.js"
import type { ClientLine } from "../support/IrcTestClient.js"
import { describeMode } from "../support/TestDatabase.js"

const WAIT = "20 seconds"

const storedOf = (app: Effect.Effect.Success<ReturnType<typeof startListenerApp>>) =>
  Effect.gen(function*() {
    const accountId = (yield* app.get(Accounts).findByName("alice")).pipe((o) => (o._tag === "Some" ? o.value.id : 0))
    return yield* app.get(MessageHistory).after(accountId, 0, 100)
  })

const fence = (l: ClientLine) => l.command === "PRIVMSG" && l.params[1] === "fence"

describe(`what the listener relays on ${describeMode}`, () => {
  it.scopedLive("others' client-only tags reach a client with message-tags, bounded; none reach one without", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp({ upstreamCaps: ["message-tags"] })
      const { port, upstream } = app
      const tagged = yield* welcomedClient(port, "alice/fake@goguma", PASSWORD)
      const plain = yield* welcomedClient(port, "alice/fake@irssi", PASSWORD, "server-time")
      const big = "x".repeat(4080)
      yield* upstream.send(
        "@msgid=up1;+draft/reply=abc;+example.com/mood=calm\\sand\\:sure :bob!b@host PRIVMSG #belay :a reply",
        "@msgid=up2;+draft/channel-context=#belay :carol!c@host NOTICE alice :about #belay",
        `@msgid=up3;+example.com/a=1;+example.com/big=${big};+example.com/z=2 :bob!b@host PRIVMSG #belay :large tags`
      )
      const got = yield* tagged.until((l) => l.params[1] === "large tags", WAIT)
      const messages = got.filter((l) => l.command === "PRIVMSG" || l.command === "NOTICE")
      expect(messages.map((l) => [l.params[1], Object.fromEntries(Object.entries(l.tags).filter(([k]) => k.startsWith("+")))]))
        .toEqual([
          // As on the wire (the test client does not unescape): the value came through as sent.
          ["a reply", { "+draft/reply": "abc", "+example.com/mood": "calm\\sand\\:sure" }],
          ["about #belay", { "+draft/channel-context": "#belay" }],
          // The big tag would pass the 4094 bytes: dropped whole, the others kept.
          ["large tags", { "+example.com/a": "1", "+example.com/z": "2" }]
        ])
      expect(messages.map((l) => l.tags.msgid)).toEqual(["up1", "up2", "up3"])
      const seen = yield* plain.until((l) => l.params[1] === "large tags", WAIT)
      expect(seen.filter((l) => l.command === "PRIVMSG" || l.command === "NOTICE").every((l) =>
        Object.keys(l.tags).every((k) => k === "time")
      )).toBe(true)
    }), 90_000)

  it.scopedLive("the member's multiline message reaches their other clients as one batch, or as lines without the cap", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp({ upstreamCaps: ["message-tags", "batch"] })
      const { port, upstream } = app
      const sender = yield* welcomedClient(port, "alice/fake@sender", PASSWORD, `${CAPS} draft/multiline`)
      const other = yield* welcomedClient(port, "alice/fake@other", PASSWORD, "batch message-tags server-time draft/multiline")
      const plain = yield* welcomedClient(port, "alice/fake@plain", PASSWORD, "server-time")
      yield* sender.send(
        "@+draft/reply=abc BATCH +m1 draft/multiline #belay",
        "@batch=m1 PRIVMSG #belay :line one",
        "@batch=m1;draft/multiline-concat PRIVMSG #belay : continued",
        "@batch=m1 PRIVMSG #belay :line two",
        "BATCH -m1"
      )
      // The upstream has no draft/multiline: the lines go (and are stored) one by one.
      for (const text of ["line one", " continued", "line two"]) {
        yield* upstream.waitFor((l) => l.command === "PRIVMSG" && l.params[1] === text, WAIT)
      }
      yield* upstream.send(":bob!b@host PRIVMSG #belay :fence")
      const batch = yield* other.until(fence, WAIT)
      const open = batch.findIndex((l) => l.command === "BATCH")
      expect(open).not.toBe(-1)
      const id = batch[open]!.params[0]!.slice(1)
      expect(batch[open]!.params.slice(1)).toEqual(["draft/multiline", "#belay"])
      expect(batch[open]!.tags["+draft/reply"]).toBe("abc")
      expect(batch[open]!.tags.msgid).toBeDefined()
      const inside = batch.slice(open + 1, batch.findIndex(batchEnd))
      expect(inside.map((l) => [l.params[1], l.tags.batch, "draft/multiline-concat" in l.tags, l.source?.split("!")[0]]))
        .toEqual([
          ["line one", id, false, "alice"],
          [" continued", id, true, "alice"],
          ["line two", id, false, "alice"]
        ])
      // Nothing of it outside the batch.
      expect(batch.filter((l) => l.command === "PRIVMSG" && l.tags.batch === undefined).map((l) => l.params[1])).toEqual(["fence"])
      expect(texts(yield* plain.until(fence, WAIT))).toEqual(["line one", " continued", "line two", "fence"])
      // The sender (echo-message) gets its echo as a batch, once.
      const echoed = yield* sender.until(fence, WAIT)
      expect(echoed.filter((l) => l.command === "BATCH").length).toBe(2)
      expect(texts(echoed)).toEqual(["line one", " continued", "line two", "fence"])
      expect((yield* storedOf(app)).filter((m) => m.self && m.kind === "privmsg").map((m) => m.text)).toEqual(["line one", " continued", "line two"])
    }), 90_000)

  it.scopedLive("WHO with WHOX fields is passed through; its 354 replies come back labelled, fields as sent", () =>
    Effect.gen(function*() {
      const { port, upstream } = yield* startListenerApp({
        // multi-prefix upstream, so that the client keeps it (a passthrough capability) and gets the flags whole.
        upstreamCaps: ["batch", "message-tags", "labeled-response", "multi-prefix"],
        isupport: [...DEFAULT_ISUPPORT, "WHOX"]
      })
      const c = yield* welcomedClient(port, "alice/fake@weechat", PASSWORD, "batch labeled-response message-tags multi-prefix")
      expect(c.burst.some((l) => l.command === "005" && l.params.includes("WHOX"))).toBe(true)
      yield* c.send("@label=w1 WHO #belay %tcuihsnfdlaor,42")
      // The actor's own WHO of the channel (its member list) comes first; the server answers in order.
      yield* upstream.waitFor((l) => l.command === "WHO" && l.tags.label === undefined, WAIT)
      yield* upstream.send(":irc.fake.test 315 alice #belay :End of /WHO list.")
      const who = yield* upstream.waitFor((l) => l.command === "WHO" && l.tags.label !== undefined, WAIT)
      expect(who.params).toEqual(["#belay", "%tcuihsnfdlaor,42"])
      const ours = who.tags.label!
      expect(ours).toBeDefined()
      yield* upstream.send(
        `@label=${ours} :irc.fake.test BATCH +w labeled-response`,
        "@batch=w :irc.fake.test 354 alice 42 #belay a 192.0.2.1 host irc.fake.test alice H@ 0 0 0 n/a :Alice",
        "@batch=w :irc.fake.test 354 alice 42 #belay b 192.0.2.2 host irc.fake.test bob G*@+ 1 5 bobacct n/a :Bob",
        "@batch=w :irc.fake.test 315 alice #belay :End of /WHO list.",
        ":irc.fake.test BATCH -w"
      )
      const answer = yield* c.until(batchEnd, WAIT)
      expect(answer[0]!.command).toBe("BATCH")
      expect(answer[0]!.tags.label).toBe("w1")
      expect(answer.filter((l) => l.command === "354").map((l) => l.params)).toEqual([
        ["alice", "42", "#belay", "a", "192.0.2.1", "host", "irc.fake.test", "alice", "H@", "0", "0", "0", "n/a", "Alice"],
        ["alice", "42", "#belay", "b", "192.0.2.2", "host", "irc.fake.test", "bob", "G*@+", "1", "5", "bobacct", "n/a", "Bob"]
      ])
      expect(answer.some((l) => l.command === "315")).toBe(true)
    }), 90_000)

  it.scopedLive("a WHOX reply's flags reach a client without multi-prefix narrowed to the highest prefix", () =>
    Effect.gen(function*() {
      const { port, upstream } = yield* startListenerApp({
        upstreamCaps: ["batch", "message-tags", "labeled-response"],
        isupport: [...DEFAULT_ISUPPORT, "WHOX"]
      })
      const c = yield* welcomedClient(port, "alice/fake@irssi", PASSWORD, "batch labeled-response message-tags")
      yield* upstream.waitFor((l) => l.command === "WHO" && l.tags.label === undefined, WAIT)
      yield* upstream.send(":irc.fake.test 315 alice #belay :End of /WHO list.")
      yield* c.send("@label=w2 WHO #belay %tcnf,7")
      const ours = (yield* upstream.waitFor((l) => l.command === "WHO" && l.tags.label !== undefined, WAIT)).tags.label!
      yield* upstream.send(
        `@label=${ours} :irc.fake.test BATCH +w labeled-response`,
        "@batch=w :irc.fake.test 354 alice 7 #belay alice H@",
        "@batch=w :irc.fake.test 354 alice 7 #belay bob G*@+",
        "@batch=w :irc.fake.test 315 alice #belay :End of /WHO list.",
        ":irc.fake.test BATCH -w"
      )
      const answer = yield* c.until(batchEnd, WAIT)
      expect(answer.filter((l) => l.command === "354").map((l) => l.params)).toEqual([
        ["alice", "7", "#belay", "alice", "H@"],
        ["alice", "7", "#belay", "bob", "G*@"]
      ])
    }), 90_000)

  it.scopedLive("a DM to the member's own nick: echo and delivery to its sender, once to another client, stored once", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp({ upstreamCaps: ["message-tags"] })
      const { port, upstream } = app
      const echoing = yield* welcomedClient(port, "alice/fake@echo", PASSWORD, "echo-message message-tags labeled-response batch")
      const other = yield* welcomedClient(port, "alice/fake@other", PASSWORD, "server-time")
      yield* echoing.send("@label=n1 PRIVMSG alice :note to self")
      // The upstream (no echo-message) delivers it to its sender, as RFC 2812 §3.3.1 has it.
      yield* upstream.waitFor((l) => l.command === "PRIVMSG" && l.params[1] === "note to self", WAIT)
      yield* upstream.send(":alice!a@host PRIVMSG alice :note to self", ":bob!b@host PRIVMSG #belay :fence")
      const mine = yield* echoing.until(fence, WAIT)
      const notes = mine.filter((l) => l.params[1] === "note to self")
      expect(notes.map((l) => [l.params[0], l.tags.label])).toEqual([["alice", "n1"], ["alice", undefined]])
      expect(texts(yield* other.until(fence, WAIT))).toEqual(["note to self", "fence"])
      expect((yield* storedOf(app)).filter((m) => m.text === "note to self").length).toBe(1)
    }), 90_000)

  it.scopedLive("a DM to the member's own nick with echo-message upstream: the one copy, echo and delivery to its sender", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp({ upstreamCaps: ["message-tags", "echo-message"] })
      const { port, upstream } = app
      const echoing = yield* welcomedClient(port, "alice/fake@echo", PASSWORD, "echo-message message-tags labeled-response batch")
      const other = yield* welcomedClient(port, "alice/fake@other", PASSWORD, "server-time")
      yield* echoing.send("@label=n2 PRIVMSG alice :echoed note")
      yield* upstream.waitFor((l) => l.command === "PRIVMSG" && l.params[1] === "echoed note", WAIT)
      yield* upstream.send("@msgid=self1 :alice!a@host PRIVMSG alice :echoed note", ":bob!b@host PRIVMSG #belay :fence")
      const mine = yield* echoing.until(fence, WAIT)
      expect(mine.filter((l) => l.params[1] === "echoed note").map((l) => [l.params[0], l.tags.msgid, l.tags.label]))
        .toEqual([["alice", "self1", "n2"], ["alice", "self1", undefined]])
      expect(texts(yield* other.until(fence, WAIT))).toEqual(["echoed note", "fence"])
      expect((yield* storedOf(app)).filter((m) => m.text === "echoed note").length).toBe(1)
    }), 90_000)

  it.scopedLive("a DM to the member's own nick that an echo-message upstream sends back twice is stored once", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp({ upstreamCaps: ["message-tags", "echo-message"] })
      const { port, upstream } = app
      const echoing = yield* welcomedClient(port, "alice/fake@echo", PASSWORD, "echo-message message-tags labeled-response batch")
      const other = yield* welcomedClient(port, "alice/fake@other", PASSWORD, "server-time")
      // As InspIRCd does: the delivery and the echo, one message with one msgid; and a server without msgids.
      for (const [n, text, tags] of [[3, "twice over", "@msgid=self3 "], [4, "twice again", ""]] as const) {
        yield* echoing.send(`@label=n${n} PRIVMSG alice :${text}`)
        yield* upstream.waitFor((l) => l.command === "PRIVMSG" && l.params[1] === text, WAIT)
        yield* upstream.send(
          `${tags}:alice!a@host PRIVMSG alice :${text}`,
          `${tags}:alice!a@host PRIVMSG alice :${text}`,
          ":bob!b@host PRIVMSG #belay :fence"
        )
        const mine = yield* echoing.until(fence, WAIT)
        expect(mine.filter((l) => l.params[1] === text).map((l) => [l.params[0], l.tags.label])).toEqual([["alice", `n${n}`], ["alice", undefined]])
        expect(texts(yield* other.until(fence, WAIT))).toEqual([text, "fence"])
        expect((yield* storedOf(app)).filter((m) => m.text === text).length).toBe(1)
      }
    }), 90_000)
})
