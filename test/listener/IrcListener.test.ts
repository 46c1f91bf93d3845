/**
 * The IRC client listener over the whole application (real network actor against the scripted fake IRC server, real
 * database), with scripted IRC clients on a loopback port: sign-in by SASL and PASS and its refusals, the welcome
 * burst from the network's state, two clients at once (every upstream line to both, a line one sends reaching the
 * other and the channel, echo and label rules, QUIT ending one), CHATHISTORY, bouncer-networks, read markers shared
 * with the web's, backlog per client name, and auto-away when the last client leaves.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Option } from "effect"
import { AUTO_AWAY_MESSAGE } from "../../src/listener/SessionHub.js"
import { MessageWriter } from "../../src/services/history/MessageWriter.js"
import { ReadMarkers } from "../../src/services/history/ReadMarkers.js"
import { connectClient } from "../support/IrcTestClient.js"
import { PASSWORD, saslClient, startListenerApp, texts } from "../support/IrcListenerApp.js"
import { describeMode } from "../support/TestDatabase.js"

const start = startListenerApp()

describe(`the IRC client listener on ${describeMode}`, () => {
  it.scopedLive("two clients: welcome, fan-out, echoes and labels, CHATHISTORY, QUIT of one, auto-away", () =>
    Effect.gen(function*() {
      const { upstream, port, context, networkId } = yield* start
      // Client A: SASL with the password, network and client in the user name.
      const a = yield* saslClient(port, "alice/fake@laptop", PASSWORD)
      yield* a.next("903")
      yield* a.send("CAP END")
      const burstA = yield* a.until("366")
      const welcome = burstA.find((l) => l.command === "001")!
      expect(welcome.params[0]).toBe("alice")
      const isupport = burstA.filter((l) => l.command === "005").flatMap((l) => l.params.slice(1, -1))
      expect(isupport).toContain(`BOUNCER_NETID=${networkId}`)
      expect(isupport).toContain("CHATHISTORY=1000")
      expect(isupport).toContain("MSGREFTYPES=msgid,timestamp")
      expect(isupport).toContain("NETWORK=FakeNet")
      expect(burstA.find((l) => l.command === "JOIN")?.params[0]).toBe("#belay")
      expect(burstA.find((l) => l.command === "332")?.params.slice(1)).toEqual(["#belay", "Belay talk"])
      expect(burstA.find((l) => l.command === "353")?.params.at(-1)).toBe("@alice bob +carol")

      // Client B: ZNC-style PASS, no capabilities at all (irssi without CAP).
      const b = yield* connectClient(port)
      yield* b.send(`PASS :alice/fake@irssi:${PASSWORD}`, "NICK whatever", "USER whatever 0 * :B")
      const burstB = yield* b.until("366")
      expect(burstB.find((l) => l.command === "001")?.params[0]).toBe("alice")

      // An upstream message reaches both, with time and msgid for the client that enabled them.
      yield* upstream.send(":bob!b@host PRIVMSG #belay :hello both")
      const gotA = yield* a.next((l) => l.command === "PRIVMSG")
      expect(gotA.params).toEqual(["#belay", "hello both"])
      expect(gotA.source).toBe("bob")
      expect(gotA.tags.msgid).toMatch(/^\d+$/)
      expect(gotA.tags.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      const gotB = yield* b.next("PRIVMSG")
      expect(gotB.params).toEqual(["#belay", "hello both"])
      expect(gotB.tags).toEqual({})

      // A line A sends goes upstream once, comes back to A labelled (echo-message), and reaches B.
      yield* a.send("@label=L1 PRIVMSG #belay :from A")
      yield* upstream.waitFor("PRIVMSG #belay :from A")
      const echo = yield* a.next((l) => l.command === "PRIVMSG")
      expect(echo.params).toEqual(["#belay", "from A"])
      expect(echo.tags.label).toBe("L1")
      expect(echo.source).toBe("alice!a@host")
      const relayed = yield* b.next("PRIVMSG")
      expect(relayed.params).toEqual(["#belay", "from A"])
      // B (no echo-message) does not get its own line back, A gets it.
      yield* b.send("PRIVMSG #belay :from B")
      yield* upstream.waitFor("PRIVMSG #belay :from B")
      expect((yield* a.next((l) => l.command === "PRIVMSG")).params[1]).toBe("from B")

      // Lines that are not stored (a member joining) reach both through the network feed.
      yield* upstream.send(":dave!d@host JOIN #belay")
      expect((yield* a.next("JOIN")).source).toBe("dave!d@host")
      const beforeJoin = yield* b.until("JOIN")
      expect(beforeJoin.at(-1)?.source).toBe("dave!d@host")
      // B never saw its own line (no echo-message).
      expect(texts(beforeJoin)).toEqual([])

      // A channel MODE change goes through setModes; a query goes upstream as written.
      yield* a.send("MODE #belay +o bob", "MODE #belay +b")
      yield* upstream.waitFor("MODE #belay +o bob")
      yield* upstream.waitFor("MODE #belay +b")

      // CHATHISTORY: the newest messages, oldest first, in a chathistory batch, with their msgids.
      yield* Context.get(context, MessageWriter).flush
      yield* a.send("CHATHISTORY LATEST #belay * 10")
      const page = yield* a.until((l) => l.command === "BATCH" && l.params[0]!.startsWith("-"))
      expect(page[0]!.params.slice(1)).toEqual(["chathistory", "#belay"])
      expect(texts(page)).toEqual(["hello both", "from A", "from B"])
      const msgidOfHello = page.find((l) => l.params[1] === "hello both")!.tags.msgid!
      yield* a.send(`CHATHISTORY AFTER #belay msgid=${msgidOfHello} 10`)
      expect(texts(yield* a.until((l) => l.command === "BATCH" && l.params[0]!.startsWith("-")))).toEqual(["from A", "from B"])
      yield* a.send(`CHATHISTORY BEFORE #belay msgid=${msgidOfHello} 10`)
      expect(texts(yield* a.until((l) => l.command === "BATCH" && l.params[0]!.startsWith("-")))).toEqual([])
      yield* a.send("CHATHISTORY LATEST #belay * x")
      expect((yield* a.next("FAIL")).params.slice(0, 2)).toEqual(["CHATHISTORY", "INVALID_PARAMS"])

      // bouncer-networks: the account's networks in a batch.
      yield* a.send("BOUNCER LISTNETWORKS")
      const listed = yield* a.until((l) => l.command === "BATCH" && l.params[0]!.startsWith("-"))
      const network = listed.find((l) => l.command === "BOUNCER")!
      expect(network.params[1]).toBe(String(networkId))
      expect(network.params[2]).toContain("name=fake")
      expect(network.params[2]).toContain("state=connected")

      // QUIT ends B alone; A still hears the channel.
      yield* b.send("QUIT :bye")
      yield* b.closed()
      yield* upstream.send(":bob!b@host PRIVMSG #belay :still here")
      expect((yield* a.next((l) => l.command === "PRIVMSG")).params[1]).toBe("still here")
      const upstreamLines = yield* upstream.lines
      expect(upstreamLines.some((l) => l.startsWith("QUIT"))).toBe(false)

      // The last client leaving marks the member away upstream.
      yield* a.send("QUIT")
      yield* a.closed()
      const away = yield* upstream.waitFor(/^AWAY /)
      expect(away.params[0]).toBe(AUTO_AWAY_MESSAGE)
    }), 60_000)

  it.scopedLive("sign-in refusals, read-only tokens, read markers shared with the web, backlog per client name", () =>
    Effect.gen(function*() {
      const { upstream, port, context, networkId, readToken } = yield* start
      // A wrong SASL password: 904, and the client may try again.
      const bad = yield* saslClient(port, "alice/fake", "wrong password")
      yield* bad.next("904")
      // A wrong PASS: 464 and the connection ends.
      const badPass = yield* connectClient(port)
      yield* badPass.send("PASS alice:nope", "NICK x", "USER alice 0 * :x")
      const refused = yield* badPass.closed()
      expect(refused.map((l) => l.command)).toContain("464")
      // No credentials at all.
      const none = yield* connectClient(port)
      yield* none.send("NICK x", "USER alice/fake 0 * :x")
      expect((yield* none.closed()).map((l) => l.command)).toContain("464")

      // A read token signs in and reads, and its writes get FAIL READ_ONLY.
      const reader = yield* saslClient(port, "alice/fake", readToken)
      yield* reader.next("903")
      yield* reader.send("CAP END")
      yield* reader.until("366")
      yield* reader.send("PRIVMSG #belay :not allowed")
      expect((yield* reader.next("FAIL")).params.slice(0, 2)).toEqual(["PRIVMSG", "READ_ONLY"])

      // A named client without CHATHISTORY, first connection: no backlog, it starts from now.
      const weechat = yield* connectClient(port)
      yield* weechat.send(`PASS :${PASSWORD}`, "CAP LS 302", "NICK alice", "USER alice/fake@weechat 0 * :W",
        "CAP REQ :server-time batch", "CAP END")
      yield* weechat.until("366")
      yield* upstream.send(":bob!b@host PRIVMSG #belay :seen live")
      expect((yield* weechat.next("PRIVMSG")).params[1]).toBe("seen live")
      yield* Context.get(context, MessageWriter).flush
      yield* weechat.send("QUIT")
      yield* weechat.closed()
      // While it is away, two messages arrive; on its return they come in a chathistory batch with their times.
      yield* upstream.send(":bob!b@host PRIVMSG #belay :missed one", ":carol!c@host PRIVMSG alice :missed two")
      yield* reader.next((l) => l.command === "PRIVMSG" && l.params[1] === "missed two")
      yield* Context.get(context, MessageWriter).flush
      const back = yield* connectClient(port)
      yield* back.send(`PASS :${PASSWORD}`, "CAP LS 302", "NICK alice", "USER alice/fake@weechat 0 * :W",
        "CAP REQ :server-time batch", "CAP END")
      const replay = yield* back.until((l) => l.command === "PRIVMSG" && l.params[1] === "missed two")
      expect(texts(replay)).toEqual(["missed one", "missed two"])
      const batches = replay.filter((l) => l.command === "BATCH" && l.params[0]!.startsWith("+"))
      expect(batches.map((l) => l.params.slice(1))).toEqual([["chathistory", "#belay"], ["chathistory", "carol"]])
      expect(replay.find((l) => l.params[1] === "missed one")?.tags.time).toBeDefined()

      // draft/read-marker: a MARKREAD from the IRC client moves the web's read marker, and is told to every client.
      const marking = yield* saslClient(port, "alice/fake", PASSWORD)
      yield* marking.next("903")
      yield* marking.send("CAP END")
      yield* marking.until((l) => l.command === "MARKREAD")
      yield* marking.send("CHATHISTORY LATEST #belay * 1")
      const newest = (yield* marking.until((l) => l.command === "BATCH" && l.params[0]!.startsWith("-"))).find((l) => l.command === "PRIVMSG")!
      yield* marking.send(`MARKREAD #belay timestamp=${newest.tags.time}`)
      const told = yield* marking.next((l) => l.command === "MARKREAD" && l.params[1] !== "*")
      expect(told.params).toEqual(["#belay", `timestamp=${newest.tags.time}`])
      const marker = yield* Context.get(context, ReadMarkers).get(networkId, "#belay")
      expect(Option.map(marker, (m) => m.messageId)).toEqual(Option.some(Number(newest.tags.msgid)))
    }), 60_000)
})
