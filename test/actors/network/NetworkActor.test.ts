// NetworkActor against the scripted fake IRC server on a loopback port, with irc-framework as the real transport
// and in-memory ports for the database (test/support/ActorHarness.ts), once connected: ISUPPORT and casemapping, the
// history it stores, and the commands it takes (the connection lifecycle is NetworkActor.lifecycle.test.ts). Tests run
// under it.scoped, so TestClock drives the actor's timers while the fake's waits expire in real time.
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Option, TestClock } from "effect"
import { Command } from "../../../src/actors/network/NetworkActor.js"
import { MAX_LINE_BYTES } from "../../../src/irc/IrcLine.js"
import {
  type Harness,
  live,
  noConnectionWithin,
  registered,
  startActor,
  startWithServer as setup,
  stateOf
} from "../../support/ActorHarness.js"
import * as FakeIrcServer from "../../support/FakeIrcServer.js"

const SERVER = ":irc.fake.test"

const members = (h: Harness, channel: string) => h.ask(Command.members(channel))
const topic = (h: Harness, channel: string) => h.ask(Command.topic(channel))

describe("NetworkActor: ISUPPORT and casemapping", () => {
  const joinAndNames = (conn: FakeIrcServer.FakeIrcConnection, channel: string, names: string) =>
    conn.send(
      `:belay!belayuser@127.0.0.1 JOIN ${channel}`,
      `${SERVER} 353 belay = ${channel} :${names}`,
      `${SERVER} 366 belay ${channel} :End of /NAMES list.`
    )

  it.scoped("rfc1459: {}|~ equal []\\^ in channels and nicks; PREFIX and CHANTYPES come from 005", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup()
      const { conn } = yield* registered(server, h, {
        isupport: ["CASEMAPPING=rfc1459", "CHANTYPES=#", "PREFIX=(qov)~@+", "CHANMODES=b,k,l,imnst", "MODES=3", "NICKLEN=16"]
      })
      yield* h.waitStatus((s) => s.channelTypes === "#")
      yield* joinAndNames(conn, "#Chan[1]", "~@Alice[m] +bob belay")
      yield* conn.send(":ALICE{M}!a@h NICK :alice2")
      yield* h.waitMessage((m) => m.kind === "nick")
      const memberList = yield* members(h, "#chan{1}")
      expect(memberList).toEqual([
        { nick: "alice2", prefix: "~@", modes: ["q", "o"], away: false },
        { nick: "belay", prefix: "", modes: [], away: false },
        { nick: "bob", prefix: "+", modes: ["v"], away: false }
      ])
      // `&x` is not a channel here (CHANTYPES=#).
      const notChannel = yield* Effect.flip(h.ask(Command.join("&x", Option.none())))
      expect(notChannel).toMatchObject({ _tag: "InvalidArguments" })
    }))

  it.scoped("ascii: [] and {} are different names", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup()
      const { conn } = yield* registered(server, h, { isupport: ["CASEMAPPING=ascii", "CHANTYPES=#&"] })
      yield* h.waitStatus((s) => s.caseMapping === "ascii")
      yield* joinAndNames(conn, "#Chan[1]", "belay")
      yield* h.waitMessage((m) => m.kind === "join")
      const other = yield* Effect.flip(members(h, "#chan{1}"))
      expect(other).toMatchObject({ _tag: "NotInChannel" })
      const same = yield* members(h, "#CHAN[1]")
      expect(same).toEqual([{ nick: "belay", prefix: "", modes: [], away: false }])
    }))

  it.scoped("topic from 332/333 and TOPIC; MODE +o/-v updates prefixes", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup()
      const { conn } = yield* registered(server, h)
      yield* conn.send(
        ":belay!belayuser@127.0.0.1 JOIN #t",
        `${SERVER} 332 belay #t :old topic`,
        `${SERVER} 333 belay #t carol!c@h 1700000000`,
        `${SERVER} 353 belay = #t :@carol +dave belay`,
        `${SERVER} 366 belay #t :End of /NAMES list.`,
        ":carol!c@h MODE #t +o-v dave dave"
      )
      yield* h.waitMessage((m) => m.kind === "mode")
      const topicInfo = yield* topic(h, "#t")
      expect(topicInfo).toEqual({
        channel: "#t",
        topic: "old topic",
        setBy: "carol",
        setAt: new Date(1700000000 * 1000).toISOString()
      })
      const memberList = yield* members(h, "#t")
      expect(memberList).toEqual(expect.arrayContaining([{ nick: "dave", prefix: "@", modes: ["o"], away: false }]))
      yield* conn.send(":carol!c@h TOPIC #t :new topic")
      yield* h.waitMessage((m) => m.kind === "topic")
      expect(yield* topic(h, "#t")).toMatchObject({ topic: "new topic", setBy: "carol" })
    }))
})

describe("NetworkActor: history", () => {
  it.scoped("every event the account sees lands in its buffer with the right kind", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup()
      const { conn } = yield* registered(server, h)
      yield* conn.send(
        ":belay!belayuser@127.0.0.1 JOIN #c",
        `${SERVER} 353 belay = #c :belay alice bob`,
        `${SERVER} 366 belay #c :End of /NAMES list.`,
        ":alice!a@h PRIVMSG #c :hello all",
        ":alice!a@h PRIVMSG #c :\x01ACTION waves\x01",
        ":alice!a@h NOTICE #c :a notice",
        ":alice!a@h PRIVMSG belay :psst",
        ":NickServ!services@services.fake NOTICE belay :identify please",
        `${SERVER} NOTICE belay :*** server notice`,
        ":bob!b@h PRIVMSG @#c :ops only",
        ":alice!a@h MODE #c +v bob",
        ":alice!a@h TOPIC #c :the topic",
        ":alice!a@h KICK #c bob :bye bob",
        ":alice!a@h NICK :alicia",
        ":alicia!a@h PART #c :gone",
        ":carol!c@h JOIN #c",
        ":carol!c@h QUIT :Quit: off",
        `${SERVER} 482 belay #c :You're not channel operator`,
        `${SERVER} 401 belay nobody :No such nick`,
        "ERROR :something odd"
      )
      yield* h.waitMessage((m) => m.kind === "error" && m.text === "something odd")
      const all = (yield* h.store.all).filter((m) => m.numeric === null || m.numeric === "482" || m.numeric === "401")
      const view = all
        .filter((m) => !(m.kind === "numeric" && ["353", "366"].includes(m.numeric ?? "")))
        .map((m) => [m.target, m.kind, m.nick, m.text, m.self] as const)
      expect(view).toEqual([
        ["#c", "join", "belay", "", true],
        ["#c", "privmsg", "alice", "hello all", false],
        ["#c", "action", "alice", "waves", false],
        ["#c", "notice", "alice", "a notice", false],
        ["alice", "privmsg", "alice", "psst", false],
        ["NickServ", "notice", "NickServ", "identify please", false],
        [":server:1", "notice", "irc.fake.test", "*** server notice", false],
        ["#c", "privmsg", "bob", "ops only", false],
        ["#c", "mode", "alice", "+v bob", false],
        ["#c", "topic", "alice", "the topic", false],
        ["#c", "kick", "alice", "bob (bye bob)", false],
        ["#c", "nick", "alice", "alicia", false],
        ["#c", "part", "alicia", "gone", false],
        ["#c", "join", "carol", "", false],
        ["#c", "quit", "carol", "Quit: off", false],
        ["#c", "error", "irc.fake.test", "Channel operator privileges needed: You're not channel operator (482)", false],
        [":server:1", "numeric", "irc.fake.test", "nobody No such nick", false],
        [":server:1", "error", null, "something odd", false]
      ])
    }))

  it.scoped("own sends are stored with self: true — locally without echo-message, from the echo with it", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup({ caps: ["echo-message"] })
      const plain = yield* startActor(server, { config: { id: 2, nick: "plain" } })
      // Two actors on one server: register each on its own connection, identifying them by the NICK they send.
      const conns = new Map<string, FakeIrcServer.FakeIrcConnection>()
      for (let i = 0; i < 2; i++) {
        const conn = yield* server.nextConnection()
        const reg = yield* conn.register(undefined, undefined, { caps: ["echo-message"] })
        conns.set(reg.nick, conn)
      }
      // The second actor is told the server lacks echo-message by a CAP DEL.
      yield* conns.get("plain")!.send(`${SERVER} CAP plain DEL :echo-message`)
      yield* h.waitState("connected")
      yield* plain.waitState("connected")

      yield* plain.ask(Command.say("action", "#c", "dances"))
      yield* conns.get("plain")!.waitFor("PRIVMSG #c :\x01ACTION dances\x01")
      yield* plain.waitMessage((m) => m.kind === "action" && m.self && m.text === "dances" && m.nick === "plain")

      yield* h.ask(Command.say("privmsg", "friend", "hi there"))
      const conn = conns.get("belay")!
      yield* conn.waitFor("PRIVMSG friend :hi there")
      yield* live(Effect.sleep("100 millis"))
      expect((yield* h.store.all).filter((m) => m.self && m.kind === "privmsg")).toEqual([])
      yield* conn.send(":belay!belayuser@127.0.0.1 PRIVMSG friend :hi there")
      yield* h.waitMessage((m) => m.self && m.target === "friend" && m.text === "hi there")
    }))

  it.scoped("batching order: a flood of lines is stored in arrival order per buffer", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup()
      const { conn } = yield* registered(server, h)
      yield* conn.send(":belay!belayuser@127.0.0.1 JOIN #a", ":belay!belayuser@127.0.0.1 JOIN #b")
      yield* conn.flood(2000, (i) => `:x!x@h PRIVMSG ${i % 2 === 0 ? "#a" : "#b"} :${i}`)
      yield* h.waitMessage((m) => m.text === "1999", "10 seconds")
      const all = yield* h.store.all
      const a = all.filter((m) => m.target === "#a" && m.kind === "privmsg").map((m) => Number(m.text))
      const b = all.filter((m) => m.target === "#b" && m.kind === "privmsg").map((m) => Number(m.text))
      expect(a).toEqual(Array.from({ length: 1000 }, (_, i) => 2 * i))
      expect(b).toEqual(Array.from({ length: 1000 }, (_, i) => 2 * i + 1))
    }))

  it.scoped("database outage: the connection and commands carry on, and nothing is lost", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup({}, { channels: [{ name: "#kept", key: null }] })
      const first = yield* registered(server, h)
      yield* first.conn.waitFor("JOIN #kept")
      yield* h.store.setOutage(true)
      yield* h.repo.setOutage(true)
      yield* first.conn.send(":belay!belayuser@127.0.0.1 JOIN #kept", ":a!a@h PRIVMSG #kept :during 1")
      yield* live(Effect.gen(function*() {
        while ((yield* h.store.pending) < 2) yield* Effect.sleep("10 millis")
      }))
      yield* h.ask(Command.say("privmsg", "#kept", "during 2"))
      yield* first.conn.waitFor("PRIVMSG #kept :during 2")
      // Joining (a write to the channels table) does not block anything either.
      yield* h.ask(Command.join("#more", Option.none()))
      yield* first.conn.send(":belay!belayuser@127.0.0.1 JOIN #more")
      // Keepalive still runs.
      yield* TestClock.adjust("100 seconds")
      yield* live(Effect.sleep("100 millis"))
      expect(yield* stateOf(h)).toBe("connected")
      // A reconnect while the database is down: the rejoin waits for the stored channels.
      yield* first.conn.destroy
      yield* h.waitState("backoff")
      yield* TestClock.adjust("2 seconds")
      const second = yield* registered(server, h)
      yield* second.conn.send(":a!a@h PRIVMSG belay :during 3")
      expect(yield* h.store.pending).toBeGreaterThan(0)
      yield* h.store.setOutage(false)
      yield* h.repo.setOutage(false)
      yield* TestClock.adjust("5 seconds")
      yield* second.conn.waitFor("JOIN #kept")
      yield* h.store.flush
      const texts = (yield* h.store.all).filter((m) => m.kind === "privmsg").map((m) => m.text)
      expect(texts).toEqual(["during 1", "during 2", "during 3"])
    }))
})

describe("NetworkActor: commands", () => {
  it.scoped("the write gate: not-connected in backoff and offline, and nothing is sent or remembered", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup({ refuse: true })
      yield* h.waitState("backoff")
      const commands = [
        h.ask(Command.say("privmsg", "#c", "x")),
        h.ask(Command.raw("PRIVMSG #c :x")),
        h.ask(Command.join("#c", Option.none())),
        h.ask(Command.whois("x")),
        h.ask(Command.nick("x")),
        h.ask(Command.away(Option.some("lunch")))
      ]
      for (const command of commands) expect(yield* Effect.flip(command)).toMatchObject({ _tag: "NotConnected", networkId: 1 })
      expect((yield* server.stats).accepted).toBe(0)
      // set_away went through the gate too: the away state is not kept for the next registration.
      expect(yield* h.repo.awayMessage).toBeNull()
    }))

  it.scoped("CR, LF and NUL are refused by the actor itself, before anything is written", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup()
      const { conn } = yield* registered(server, h)
      const before = (yield* conn.lines).length
      const attempts = [
        h.ask(Command.say("privmsg", "#c", "a\r\nQUIT")),
        h.ask(Command.raw("PRIVMSG #c :x\nQUIT")),
        h.ask(Command.join("#c", Option.some("k\u0000"))),
        h.ask(Command.setTopic("#c", "t\r")),
        h.ask(Command.setModes("#c", [{ sign: "+", letter: "k", param: "a\nb" }]))
      ]
      for (const attempt of attempts) expect(yield* Effect.flip(attempt)).toMatchObject({ _tag: "InvalidArguments" })
      // The actor is still alive and answering.
      yield* h.ask(Command.say("privmsg", "#c", "fine"))
      yield* conn.waitFor("PRIVMSG #c fine")
      expect((yield* conn.lines).length).toBe(before + 1)
    }))

  it.scoped("set_channel_modes: validated against CHANMODES, packed by MODES, -k uses the stored key", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup({}, { channels: [{ name: "#m", key: "sekrit" }] })
      const { conn } = yield* registered(server, h, { isupport: ["CHANMODES=beI,k,l,imnpst", "PREFIX=(ov)@+", "MODES=2"] })
      yield* conn.waitFor("JOIN #m sekrit")
      const sent = yield* h.ask(Command.setModes("#m", [{ sign: "+", letter: "o", param: "a" }, { sign: "+", letter: "v", param: "b" }, { sign: "-", letter: "k" }, { sign: "+", letter: "n" }]))
      expect(sent).toEqual(["MODE #m +ov a b", "MODE #m -k+n sekrit"])
      yield* conn.waitFor("MODE #m +ov a b")
      yield* conn.waitFor("MODE #m -k+n sekrit")
      const bad = yield* Effect.flip(h.ask(Command.setModes("#m", [{ sign: "+", letter: "Z" }])))
      expect(bad).toMatchObject({ _tag: "InvalidArguments" })
    }))

  it.scoped("long text is split at the byte limit on UTF-8 boundaries", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup()
      const { conn } = yield* registered(server, h)
      const text = "é🙂".repeat(300) + " end"
      yield* h.ask(Command.say("privmsg", "#c", text))
      yield* conn.waitFor((l) => l.command === "PRIVMSG" && l.params[1]?.endsWith("end") === true)
      const lines = (yield* conn.lines).filter((l) => l.startsWith("PRIVMSG #c"))
      expect(lines.length).toBeGreaterThan(1)
      for (const line of lines) {
        expect(Buffer.byteLength(line) + 2 + 111).toBeLessThanOrEqual(MAX_LINE_BYTES + 111)
        expect(line).not.toContain("\uFFFD")
      }
      expect(lines.map((l) => FakeIrcServer.parseLine(l).params[1]).join("")).toBe(text)
    }))

  it.scoped("join uses the stored key, part forgets the channel, away is kept across reconnects", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup({}, { channels: [{ name: "#k", key: "stored" }] })
      const { conn } = yield* registered(server, h)
      yield* conn.waitFor("JOIN #k stored")
      yield* h.ask(Command.join("#K", Option.none()))
      yield* conn.waitFor("JOIN #K stored")
      yield* conn.send(":belay!belayuser@127.0.0.1 JOIN #k")
      yield* h.waitMessage((m) => m.kind === "join" && m.target === "#k")
      yield* h.ask(Command.part("#k", Option.some("later")))
      yield* conn.waitFor("PART #k later")
      expect(yield* h.repo.channels).toEqual([])
      expect(yield* Effect.flip(h.ask(Command.part("#nowhere", Option.none())))).toMatchObject({
        _tag: "NotInChannel",
        channel: "#nowhere"
      })
      yield* h.ask(Command.away(Option.some("lunch")))
      yield* conn.waitFor("AWAY lunch")
      expect(yield* h.repo.awayMessage).toBe("lunch")
      yield* conn.destroy
      yield* h.waitState("backoff")
      yield* TestClock.adjust("2 seconds")
      const again = yield* registered(server, h)
      yield* again.conn.waitFor("AWAY lunch")
    }))

  it.scoped("disconnect → offline (remembered), connect → back; connect with reconnect forces a fresh connection", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup()
      const { conn } = yield* registered(server, h)
      yield* h.ask(Command.disconnect())
      yield* conn.waitFor("QUIT")
      yield* h.waitState("offline")
      expect(yield* h.repo.enabled).toBe(false)
      yield* TestClock.adjust("1 hour")
      yield* noConnectionWithin(server, 200)

      yield* h.ask(Command.connect(false))
      const second = yield* registered(server, h)
      expect(yield* h.repo.enabled).toBe(true)
      yield* h.ask(Command.connect(false))
      yield* noConnectionWithin(server, 200)
      yield* h.ask(Command.connect(true))
      yield* second.conn.waitFor("QUIT")
      yield* registered(server, h)
    }))

  it.scoped("shutdown sends QUIT, waits for the close (bounded by the grace period), and ends offline", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup()
      const { conn } = yield* registered(server, h)
      const done = yield* Deferred.make<void>()
      yield* h.actor.offer({ _tag: "Shutdown", reply: done })
      yield* conn.waitFor("QUIT :Belay: shutting down")
      // This server never closes: after QUIT_GRACE the actor closes the socket itself.
      yield* TestClock.adjust("2 seconds")
      yield* live(Deferred.await(done))
      yield* conn.waitClosed()
      expect(yield* h.actor.status.get).toMatchObject({ state: "offline", lastError: null })
      yield* TestClock.adjust("1 hour")
      yield* noConnectionWithin(server, 200)
    }))
})
