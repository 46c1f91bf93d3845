/**
 * Labels and client tags between the member's IRC clients and the upstream, end to end (real actor, fake IRC server,
 * real database), as irctest's labeled_responses, multiline and message_tags files check them:
 * - a labelled draft/multiline batch from a client with echo-message is answered by its echo: the whole batch back,
 *   the label, msgid and time on its opening BATCH, no ACK; a refused one by its labelled FAIL; without echo-message
 *   by an ACK at its end;
 * - a labelled JOIN, with labeled-response upstream, goes under Belay's label and the upstream's answer (JOIN, topic,
 *   NAMES) comes back in the client's labeled-response batch, while the member's other clients get it unbatched; a
 *   JOIN with a key, or without labeled-response upstream, still gets an ACK;
 * - any client-only tag (`+baz`) of a PRIVMSG reaches the member's other clients with message-tags and the sender's
 *   echo, not a client without message-tags; a TAGMSG reaches the other clients and the echo; more than 4094 bytes of
 *   tag data is 417 and nothing is sent.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { batchEnd, CAPS, PASSWORD, startListenerApp, welcomedClient } from "../support/IrcListenerApp.js"
import { describeMode } from "../support/TestDatabase.js"

const WAIT = "20 seconds"
const MULTILINE_UPSTREAM = ["message-tags", "batch", "draft/multiline=max-bytes=4096,max-lines=100"]

describe(`labels and client tags on ${describeMode}`, () => {
  it.scopedLive("a labelled multiline batch is answered by its echo, a FAIL, or an ACK at its end", () =>
    Effect.gen(function*() {
      const { port, upstream } = yield* startListenerApp({ upstreamCaps: MULTILINE_UPSTREAM })
      const c = yield* welcomedClient(port, "alice/fake@goguma", PASSWORD, `${CAPS} draft/multiline`)
      yield* c.send(
        "@label=xyz;+client-only-tag BATCH +123 draft/multiline #belay",
        "@batch=123 PRIVMSG #belay hello",
        "@batch=123 PRIVMSG #belay :",
        "@batch=123 PRIVMSG #belay :#how is ",
        "@batch=123;draft/multiline-concat PRIVMSG #belay :everyone?",
        "BATCH -123"
      )
      const echo = yield* c.until(batchEnd, WAIT)
      const [start, end] = [echo[0]!, echo.at(-1)!]
      expect(start.command).toBe("BATCH")
      expect(start.params.slice(1)).toEqual(["draft/multiline", "#belay"])
      expect(start.tags.label).toBe("xyz")
      expect(start.tags["+client-only-tag"]).toBe("")
      expect(start.tags.msgid).toMatch(/.+/)
      expect(start.tags.time).toMatch(/^\d{4}-/)
      expect(end.params).toEqual([`-${start.params[0]!.slice(1)}`])
      const lines = echo.slice(1, -1)
      expect(lines.map((l) => [l.command, l.params[1], l.tags.batch, "draft/multiline-concat" in l.tags])).toEqual([
        ["PRIVMSG", "hello", start.params[0]!.slice(1), false],
        ["PRIVMSG", "", start.params[0]!.slice(1), false],
        ["PRIVMSG", "#how is ", start.params[0]!.slice(1), false],
        ["PRIVMSG", "everyone?", start.params[0]!.slice(1), true]
      ])
      expect(lines.every((l) => l.tags.msgid === undefined && l.source?.startsWith("alice") === true)).toBe(true)
      const sent = yield* upstream.lines
      expect(sent.filter((l) => l.startsWith("@batch=") && l.includes("PRIVMSG #belay")).length).toBe(4)

      // Refused on its second line: the FAIL carries the label, and nothing else answers it.
      yield* c.send("@label=bad BATCH +m2 draft/multiline #belay", "@batch=m2 PRIVMSG #other :x", "BATCH -m2", "@label=fence PING x")
      const refused = yield* c.until((l) => l.command === "PONG", WAIT)
      expect(refused.map((l) => [l.command, l.tags.label, l.params[1]])).toEqual([
        ["FAIL", "bad", "MULTILINE_INVALID_TARGET"],
        ["PONG", "fence", "x"]
      ])

      // Without echo-message the batch is answered by an ACK once it ends.
      const quiet = yield* welcomedClient(
        port,
        "alice/fake@quiet",
        PASSWORD,
        "batch labeled-response message-tags server-time draft/multiline"
      )
      yield* quiet.send("@label=q BATCH +m3 draft/multiline #belay", "@batch=m3 PRIVMSG #belay :quiet one")
      yield* quiet.send("BATCH -m3", "PING after")
      const acked = yield* quiet.until((l) => l.command === "PONG", WAIT)
      expect(acked.filter((l) => l.command === "ACK" || l.command === "PONG").map((l) => [l.command, l.tags.label])).toEqual([
        ["ACK", "q"],
        ["PONG", undefined]
      ])
    }), 90_000)

  it.scopedLive("a labelled JOIN is answered by the upstream's labelled batch; other clients get its lines", () =>
    Effect.gen(function*() {
      const { port, upstream } = yield* startListenerApp({ upstreamCaps: ["batch", "message-tags", "labeled-response"] })
      const asker = yield* welcomedClient(port, "alice/fake@asker", PASSWORD, "batch labeled-response message-tags server-time")
      const other = yield* welcomedClient(port, "alice/fake@other", PASSWORD, "batch labeled-response")
      yield* asker.send("@label=12345 JOIN #xyz")
      const join = yield* upstream.waitFor(/^@label=\S+ JOIN #xyz$/, WAIT)
      const ours = join.tags.label!
      yield* upstream.send(
        `@label=${ours} :irc.fake.test BATCH +j1 labeled-response`,
        "@batch=j1 :alice!a@host JOIN #xyz",
        "@batch=j1 :irc.fake.test 332 alice #xyz :Topic of xyz",
        "@batch=j1 :irc.fake.test 353 alice = #xyz :@alice",
        "@batch=j1 :irc.fake.test 366 alice #xyz :End of /NAMES list.",
        ":irc.fake.test BATCH -j1"
      )
      const answer = yield* asker.until(batchEnd, WAIT)
      expect(answer[0]!.command).toBe("BATCH")
      expect(answer[0]!.params.slice(1)).toEqual(["labeled-response"])
      expect(answer[0]!.tags.label).toBe("12345")
      const id = answer[0]!.params[0]!.slice(1)
      expect(answer.slice(1, -1).map((l) => [l.command, l.tags.batch])).toEqual([
        ["JOIN", id],
        ["332", id],
        ["353", id],
        ["366", id]
      ])
      expect(answer.some((l) => l.command === "ACK")).toBe(false)
      const seen = yield* other.until("366", WAIT)
      expect(seen.map((l) => l.command)).toEqual(["JOIN", "332", "353", "366"])
      expect(seen.every((l) => l.tags.batch === undefined && l.tags.label === undefined)).toBe(true)

      // A JOIN with a key goes through the port (which remembers the key): ACK at once.
      yield* asker.send("@label=k1 JOIN #keyed sesame")
      expect((yield* asker.next("ACK", WAIT)).tags.label).toBe("k1")
      yield* upstream.waitFor(/^JOIN #keyed sesame$/, WAIT)
    }), 90_000)

  it.scopedLive("a labelled JOIN without labeled-response upstream gets an ACK", () =>
    Effect.gen(function*() {
      const { port, upstream } = yield* startListenerApp()
      const c = yield* welcomedClient(port, "alice/fake@asker", PASSWORD, "batch labeled-response")
      yield* c.send("@label=j0 JOIN #plain")
      expect((yield* c.next("ACK", WAIT)).tags.label).toBe("j0")
      yield* upstream.waitFor(/^JOIN #plain$/, WAIT)
    }), 60_000)

  it.scopedLive("client-only tags reach the member's other clients and the echo; too many bytes of them are 417", () =>
    Effect.gen(function*() {
      const { port, upstream } = yield* startListenerApp({ upstreamCaps: ["message-tags"] })
      const sender = yield* welcomedClient(port, "alice/fake@sender", PASSWORD, "message-tags echo-message server-time")
      const tagged = yield* welcomedClient(port, "alice/fake@tagged", PASSWORD, "message-tags")
      const plain = yield* welcomedClient(port, "alice/fake@plain", PASSWORD, "server-time")

      yield* sender.send("@+baz=bat;fizz=buzz PRIVMSG #belay hi")
      const up = yield* upstream.waitFor((l) => l.command === "PRIVMSG" && l.params[1] === "hi", WAIT)
      expect(up.tags).toEqual({ "+baz": "bat" })
      const echo = yield* sender.next("PRIVMSG", WAIT)
      expect(echo.tags["+baz"]).toBe("bat")
      expect(echo.tags.fizz).toBeUndefined()
      const relayed = yield* tagged.next("PRIVMSG", WAIT)
      expect(relayed.tags["+baz"]).toBe("bat")
      expect(relayed.tags.msgid).toBe(echo.tags.msgid)
      const bare = yield* plain.next("PRIVMSG", WAIT)
      expect(Object.keys(bare.tags)).toEqual(["time"])

      // A TAGMSG: to the upstream, the other client with message-tags and the echo; never the client without.
      yield* sender.send("@+steel=wootz;cat=dog TAGMSG #belay")
      expect((yield* upstream.waitFor((l) => l.command === "TAGMSG", WAIT)).tags).toEqual({ "+steel": "wootz" })
      expect((yield* sender.next("TAGMSG", WAIT)).tags["+steel"]).toBe("wootz")
      const tagmsg = yield* tagged.next("TAGMSG", WAIT)
      expect(tagmsg.tags).toEqual({ "+steel": "wootz" })
      expect(tagmsg.source?.startsWith("alice")).toBe(true)

      // message-tags §"Size limit": 4094 bytes of tag data pass, one more is 417 and nothing goes out.
      yield* sender.send(`@foo=bar;+baz=${"a".repeat(4081)} TAGMSG #belay`)
      expect((yield* upstream.waitFor((l) => l.command === "TAGMSG" && l.tags["+baz"]?.length === 4081, WAIT)).params).toEqual(["#belay"])
      yield* sender.send(`@foo=bar;+baz=${"a".repeat(4082)} PRIVMSG #belay :${"b".repeat(495)}`)
      expect((yield* sender.next((l) => l.command === "417" || l.command === "PRIVMSG", WAIT)).command).toBe("417")
      yield* sender.send("PRIVMSG #belay :fence")
      yield* upstream.waitFor((l) => l.command === "PRIVMSG" && l.params[1] === "fence", WAIT)
      const sent = yield* upstream.lines
      expect(sent.filter((l) => l.includes("b".repeat(495)))).toEqual([])
      // The plain client heard the fence, never a TAGMSG.
      const heard = yield* plain.until((l) => l.command === "PRIVMSG" && l.params[1] === "fence", WAIT)
      expect(heard.some((l) => l.command === "TAGMSG")).toBe(false)
    }), 90_000)
})
