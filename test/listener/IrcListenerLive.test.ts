/**
 * What IRC clients hear live, end to end (real actor, fake IRC server, real database): stored messages and the other
 * lines in the order the server sent them; the answers to commands passed upstream — with labeled-response upstream,
 * to the asking client alone under its own label (a batch, one line, an ACK; unlabelled when it sent no label), a
 * KICK to every client; without it, an empty ACK at once and the answer to every client; and a reconnect of the
 * upstream: CAP NEW/DEL of what its capabilities gained or lost, the nick it got, its channels again as it sends them,
 * not its welcome burst, and a NOTICE each way for a client without bouncer-networks.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { batchEnd, PASSWORD, startListenerApp, welcomedClient } from "../support/IrcListenerApp.js"
import { describeMode } from "../support/TestDatabase.js"

describe(`IRC clients live on ${describeMode}`, () => {
  it.scopedLive("messages and the lines around them arrive in the server's order", () =>
    Effect.gen(function*() {
      const { upstream, port } = yield* startListenerApp()
      const c = yield* welcomedClient(port, "alice/fake", PASSWORD, "server-time")
      yield* upstream.send(
        ":bob!b@host PRIVMSG #belay :last words",
        ":bob!b@host PART #belay :bye",
        ":carol!c@host NICK carla",
        ":carla!c@host PRIVMSG #belay :as carla",
        ":dave!d@host JOIN #belay",
        ":dave!d@host PRIVMSG #belay :hi from dave",
        ":dave!d@host TOPIC #belay :the new CAP topic"
      )
      const got = yield* c.until("TOPIC")
      expect(got.map((l) => `${l.command} ${l.params.at(-1)}`)).toEqual([
        "PRIVMSG last words",
        "PART bye",
        "NICK carla",
        "PRIVMSG as carla",
        "JOIN #belay",
        "PRIVMSG hi from dave",
        "TOPIC the new CAP topic"
      ])

      // This upstream has no labeled-response: a labelled WHOIS is acknowledged at once, its answer reaches everyone.
      const other = yield* welcomedClient(port, "alice/fake@other", PASSWORD, "batch labeled-response")
      yield* other.send("@label=w0 WHOIS bob")
      const ack = yield* other.next("ACK")
      expect(ack.tags.label).toBe("w0")
      yield* upstream.waitFor("WHOIS bob")
      yield* upstream.send(":irc.fake.test 311 alice bob b host * :Bob", ":irc.fake.test 318 alice bob :End of /WHOIS list.")
      expect((yield* other.next("318")).tags.label).toBeUndefined()
      expect((yield* c.next("318")).params[1]).toBe("bob")
    }), 60_000)

  it.scopedLive("with labeled-response upstream, answers go to the asking client under its own label", () =>
    Effect.gen(function*() {
      const { upstream, port } = yield* startListenerApp({ upstreamCaps: ["batch", "message-tags", "labeled-response"] })
      const asker = yield* welcomedClient(port, "alice/fake@asker", PASSWORD)
      const bystander = yield* welcomedClient(port, "alice/fake@bystander", PASSWORD, "server-time")
      const unlabelled = yield* welcomedClient(port, "alice/fake@quiet", PASSWORD, "batch labeled-response")
      const labelOf = (line: { readonly raw: string }) => /^@label=([^ ;]+)/.exec(line.raw)?.[1] ?? ""

      // A WHOIS answered in a labeled-response batch: the asker gets the batch under its label.
      yield* asker.send("@label=w1 WHOIS bob")
      const whois = yield* upstream.waitFor(/^@label=\S+ WHOIS bob$/)
      const ours = labelOf(whois)
      expect(ours).not.toBe("w1")
      yield* upstream.send(
        `@label=${ours} :irc.fake.test BATCH +b1 labeled-response`,
        "@batch=b1 :irc.fake.test 311 alice bob b host * :Bob",
        "@batch=b1 :irc.fake.test 318 alice bob :End of /WHOIS list.",
        ":irc.fake.test BATCH -b1"
      )
      const answer = yield* asker.until(batchEnd)
      const opened = answer.find((l) => l.command === "BATCH")!
      expect(opened.tags.label).toBe("w1")
      expect(opened.params).toEqual(["+b1", "labeled-response"])
      expect(answer.filter((l) => l.tags.batch === "b1").map((l) => l.command)).toEqual(["311", "318"])
      expect(answer.filter((l) => l.command === "ACK")).toEqual([])

      // One line: labelled directly. An ACK: relabelled.
      yield* asker.send("@label=m1 MODE #belay")
      const mode = labelOf(yield* upstream.waitFor(/^@label=\S+ MODE #belay$/))
      yield* upstream.send(`@label=${mode} :irc.fake.test 324 alice #belay +nt`)
      const modes = yield* asker.next("324")
      expect(modes.tags.label).toBe("m1")
      yield* asker.send("@label=a1 MONITOR + carol")
      const monitor = labelOf(yield* upstream.waitFor(/^@label=\S+ MONITOR \+ carol$/))
      yield* upstream.send(`@label=${monitor} :irc.fake.test ACK`)
      expect((yield* asker.next("ACK")).tags.label).toBe("a1")

      // A client that sent no label still gets the answer alone, without the batch or a label.
      yield* unlabelled.send("WHOIS carol")
      const quiet = labelOf(yield* upstream.waitFor(/^@label=\S+ WHOIS carol$/))
      yield* upstream.send(
        `@label=${quiet} :irc.fake.test BATCH +b2 labeled-response`,
        "@batch=b2 :irc.fake.test 311 alice carol c host * :Carol",
        "@batch=b2 :irc.fake.test 318 alice carol :End of /WHOIS list.",
        ":irc.fake.test BATCH -b2"
      )
      const quietAnswer = yield* unlabelled.until("318")
      expect(quietAnswer.filter((l) => l.command === "BATCH")).toEqual([])
      expect(quietAnswer.find((l) => l.command === "311")?.tags).toEqual({})

      // A KICK the asker sent changes what everyone sees: all get it, only the asker labelled.
      yield* asker.send("@label=k1 KICK #belay carol :out now")
      const kick = labelOf(yield* upstream.waitFor(/^@label=\S+ KICK #belay carol :out now$/))
      yield* upstream.send(`@label=${kick} :alice!a@host KICK #belay carol :out now`)
      expect((yield* asker.next("KICK")).tags.label).toBe("k1")
      // The bystander saw none of the answers, only the KICK (then a fence).
      yield* upstream.send(":bob!b@host PRIVMSG #belay :fence")
      const seen = yield* bystander.until("PRIVMSG")
      expect(seen.map((l) => l.command)).toEqual(["KICK", "PRIVMSG"])
      expect(seen[0]!.tags.label).toBeUndefined()
      expect((yield* unlabelled.until("PRIVMSG")).map((l) => l.command)).toEqual(["KICK", "PRIVMSG"])
    }), 60_000)

  it.scopedLive("a reconnect of the upstream: CAP NEW and DEL, the new nick, the channels again, notices", () =>
    Effect.gen(function*() {
      const { irc, upstream, port } = yield* startListenerApp({ upstreamCaps: ["away-notify", "account-notify"] })
      const c = yield* welcomedClient(port, "alice/fake", PASSWORD, "server-time away-notify account-notify extended-join")
      // Welcomed: what the upstream lacks was withdrawn (CAP 302 implies cap-notify).
      const deleted = c.burst.filter((l) => l.command === "CAP" && l.params[1] === "DEL").flatMap((l) => l.params[2]!.split(" "))
      expect(deleted).toContain("extended-join")
      expect(deleted).not.toContain("away-notify")

      yield* upstream.destroy
      const dropped = yield* c.next("NOTICE", "10 seconds")
      expect(dropped.params[1]).toMatch(/^Disconnected from fake/)
      const again = yield* irc.nextConnection("20 seconds")
      yield* again.register("alice_", undefined, { caps: ["account-notify", "extended-join"] })
      yield* again.waitFor(/^JOIN #belay/)
      yield* again.send(
        ":alice_!a@host JOIN #belay",
        ":irc.fake.test 332 alice_ #belay :Belay talk, again",
        ":irc.fake.test 353 alice_ = #belay :@alice_ bob",
        ":irc.fake.test 366 alice_ #belay :End of /NAMES list."
      )
      let connected = false
      let names = false
      const seen = yield* c.until((l) => {
        if (l.command === "NOTICE" && l.params[1]?.startsWith("Connected to fake") === true) connected = true
        if (l.command === "366") names = true
        return connected && names
      }, "20 seconds")
      const caps = seen.filter((l) => l.command === "CAP").map((l) => l.params.slice(1))
      expect(caps).toEqual([["NEW", "extended-join"], ["DEL", "away-notify"]])
      expect(seen.find((l) => l.command === "NICK")?.params).toEqual(["alice_"])
      expect(seen.find((l) => l.command === "JOIN")?.params[0]).toBe("#belay")
      expect(seen.find((l) => l.command === "332")?.params.at(-1)).toBe("Belay talk, again")
      expect(seen.find((l) => l.command === "353")?.params.at(-1)).toBe("@alice_ bob")
      // Not the upstream's own welcome burst.
      expect(seen.filter((l) => ["001", "002", "005", "375", "372", "376"].includes(l.command))).toEqual([])
    }), 60_000)
})
