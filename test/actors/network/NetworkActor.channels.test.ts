// NetworkActor's channel operations, against the scripted fake IRC server: channel state (members with
// multi-prefix, away from WHO or away-notify, topic), set_topic and set_channel_modes refusals filed in the channel,
// and get_mode_list — its PING fences, correlation of interleaved replies, refusals, coalescing, the quiet list,
// the TestClock-driven timeout — with nothing of a list exchange stored. Tests run under it.scoped (TestClock); the
// fake's waits run in real time (test/support/ActorHarness.ts).
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Option, TestClock } from "effect"
import { Command } from "../../../src/actors/network/NetworkActor.js"
import { FLOOD_INTERVAL } from "../../../src/actors/ReconnectPolicy.js"
import type { ModeList, ModeListLetter } from "../../../src/schema/ChannelMode.js"
import { live, startActor, type Harness } from "../../support/ActorHarness.js"
import * as FakeIrcServer from "../../support/FakeIrcServer.js"

const SERVER = ":irc.fake.test"
const ME = ":belay!belayuser@127.0.0.1"
const LIST_NUMERICS = new Set(["367", "368", "348", "349", "346", "347", "728", "729", "352", "315"])

const setup = (serverOptions: FakeIrcServer.FakeIrcServerOptions = {}, isupport?: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const server = yield* FakeIrcServer.make(serverOptions)
    const h = yield* startActor(server)
    const conn = yield* server.nextConnection()
    yield* conn.register(undefined, isupport)
    yield* h.waitState("connected")
    return { server, h, conn }
  })

/** Offers a command without waiting: the test decides when (and whether) the answer may come. */
const offer = <A, E>(h: Harness, command: (reply: Deferred.Deferred<A, E>) => Command) =>
  Effect.gen(function*() {
    const reply = yield* Deferred.make<A, E>()
    yield* h.actor.offer(command(reply))
    return reply
  })

const askList = (h: Harness, channel: string, letter: ModeListLetter) => offer(h, Command.modeList(channel, letter))

/** The answer of a list query; its failure, flipped, for the tests that expect one. */
const listOf = (answer: Effect.Effect.Success<ReturnType<typeof askList>>) => live(Deferred.await(answer))
const refusalOf = (answer: Effect.Effect.Success<ReturnType<typeof askList>>) => Effect.flip(listOf(answer))

const members = (h: Harness, channel: string) => h.ask(Command.members(channel))
const topic = (h: Harness, channel: string) => h.ask(Command.topic(channel))

/** The three lines of one list query; returns the fence tokens the server must echo. */
const expectQuery = (conn: FakeIrcServer.FakeIrcConnection, mode: string) =>
  Effect.gen(function*() {
    const open = yield* conn.waitFor((l) => l.command === "PING" && (l.params[0] ?? "").startsWith("belay-ml-"))
    yield* conn.expectNext(mode)
    const close = yield* conn.expectNext((l) => l.command === "PING")
    return { open: open.params[0]!, close: close.params[0]! }
  })

const pong = (token: string) => `${SERVER} PONG irc.fake.test :${token}`

/**
 * Lets `lines` more lines out past the flood-control burst (FLOOD_BURST at once, then one every FLOOD_INTERVAL,
 * Outbound.ts): the TestClock moves one interval at a time, as the actor's "send" timer expects.
 */
const paced = (lines: number) => Effect.repeatN(TestClock.adjust(FLOOD_INTERVAL), lines - 1)

/** Joins channels (JOIN only: no NAMES, so no automatic WHO) and waits until the joins are stored. */
const join = (h: Harness, conn: FakeIrcServer.FakeIrcConnection, ...channels: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    yield* conn.send(...channels.map((c) => `${ME} JOIN ${c}`))
    for (const c of channels) yield* h.waitMessage((m) => m.kind === "join" && m.target === c)
  })

/** Everything stored from now on, once a marker line sent afterwards has been stored (so nothing is in flight). */
const storedSince = (h: Harness, conn: FakeIrcServer.FakeIrcConnection, before: number, marker: string) =>
  Effect.gen(function*() {
    yield* conn.send(`:x!x@h PRIVMSG belay :${marker}`)
    yield* h.waitMessage((m) => m.text === marker)
    return (yield* h.store.all).slice(before)
  })

const storedCount = (h: Harness) => Effect.map(h.store.all, (all) => all.length)

describe("NetworkActor: get_mode_list", () => {
  it.scoped("two lists in flight for different channels and letters: interleaved replies never cross, nothing is stored", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup()
      yield* join(h, conn, "#a", "#b")
      yield* conn.setAutoPong(false)
      const before = yield* storedCount(h)

      const bans = yield* askList(h, "#a", "b")
      const excepts = yield* askList(h, "#B", "e")
      // Six fence lines: the sixth waits one interval behind the burst of five.
      yield* paced(1)
      const q1 = yield* expectQuery(conn, "MODE #a b")
      const q2 = yield* expectQuery(conn, "MODE #B e")
      // Both windows open at once and the entries arrive mixed: each is matched by channel and numeric.
      yield* conn.send(
        pong(q1.open),
        pong(q2.open),
        `${SERVER} 348 belay #b *!*@friend.example op 1700000100`,
        `${SERVER} 367 belay #a *!*@spam.example op!o@h 1700000000`,
        `${SERVER} 348 belay #b *!*@other.example`,
        `${SERVER} 367 belay #a bad!*@*`,
        `${SERVER} 368 belay #a :End of Channel Ban List`,
        `${SERVER} 349 belay #b :End of Channel Exception List`,
        pong(q1.close),
        pong(q2.close)
      )
      expect(yield* listOf(bans)).toEqual({
        channel: "#a",
        letter: "b",
        entries: [
          { mask: "*!*@spam.example", setBy: "op!o@h", setAt: new Date(1700000000 * 1000).toISOString() },
          { mask: "bad!*@*", setBy: null, setAt: null }
        ]
      })
      expect(yield* listOf(excepts)).toEqual({
        channel: "#B",
        letter: "e",
        entries: [
          { mask: "*!*@friend.example", setBy: "op", setAt: new Date(1700000100 * 1000).toISOString() },
          { mask: "*!*@other.example", setBy: null, setAt: null }
        ]
      })
      // Entries, end numerics and PONGs answered the callers only.
      const stored = yield* storedSince(h, conn, before, "marker")
      expect(stored.map((m) => m.text)).toEqual(["marker"])
    }))

  it.scoped("a refusal answers the caller it belongs to; a refusal of an earlier command lands in the channel", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup()
      yield* join(h, conn, "#a", "#b")
      yield* conn.setAutoPong(false)
      const before = yield* storedCount(h)

      yield* h.ask(Command.setTopic("#a", "new"))
      yield* conn.waitFor("TOPIC #a new")
      const refusedList = yield* askList(h, "#a", "b")
      const otherList = yield* askList(h, "#b", "b")
      // TOPIC and six fence lines: two wait behind the burst of five.
      yield* paced(2)
      const q1 = yield* expectQuery(conn, "MODE #a b")
      const q2 = yield* expectQuery(conn, "MODE #b b")
      // ngircd and InspIRCd answer TOPIC and MODE b with the same 482: the fences tell them apart.
      yield* conn.send(
        `${SERVER} 482 belay #a :You're not channel operator`,
        pong(q1.open),
        `${SERVER} 482 belay #a :You're not channel operator`,
        pong(q1.close),
        pong(q2.open),
        `${SERVER} 367 belay #b *!*@x setter 1700000000`,
        `${SERVER} 368 belay #b :End of Channel Ban List`,
        pong(q2.close)
      )
      expect(yield* refusalOf(refusedList)).toMatchObject({
        _tag: "Refused",
        numeric: "482",
        text: "You're not channel operator"
      })
      expect(yield* listOf(otherList)).toMatchObject({ channel: "#b", entries: [{ mask: "*!*@x" }] })
      const stored = yield* storedSince(h, conn, before, "marker")
      // Only the TOPIC's refusal is history: one error line in #a.
      expect(stored.map((m) => [m.target, m.kind, m.numeric, m.text])).toEqual([
        ["#a", "error", "482", "Channel operator privileges needed: You're not channel operator (482)"],
        ["x", "privmsg", null, "marker"]
      ])
    }))

  it.scoped("timeout after 15 s on the TestClock; the late replies are swallowed, not stored", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup()
      yield* join(h, conn, "#slow")
      yield* conn.setAutoPong(false)
      const before = yield* storedCount(h)
      const answer = yield* askList(h, "#slow", "b")
      const q = yield* expectQuery(conn, "MODE #slow b")
      yield* TestClock.adjust("14 seconds")
      yield* live(Effect.sleep("100 millis"))
      expect(yield* Deferred.isDone(answer)).toBe(false)
      yield* TestClock.adjust("1 second")
      // The message states the bound that ran out, MODE_LIST_TIMEOUT.
      expect(yield* refusalOf(answer)).toMatchObject({
        _tag: "Timeout",
        seconds: 15,
        message: "the b list query for #slow got no answer within 15 s; try again"
      })
      // The server answers after all: the orphaned query eats its replies up to the closing PONG.
      yield* conn.send(
        pong(q.open),
        `${SERVER} 367 belay #slow late!*@*`,
        `${SERVER} 368 belay #slow :End of Channel Ban List`,
        pong(q.close)
      )
      const stored = yield* storedSince(h, conn, before, "marker")
      expect(stored.map((m) => m.text)).toEqual(["marker"])
    }))

  it.scoped("the closing PONG with no list and no refusal answers timeout at once", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup()
      yield* conn.setAutoPong(false)
      const answer = yield* askList(h, "#quiet", "I")
      const q = yield* expectQuery(conn, "MODE #quiet I")
      yield* conn.send(pong(q.open), pong(q.close))
      expect(yield* refusalOf(answer)).toMatchObject({
        _tag: "Timeout",
        message: "the I list query for #quiet got no answer; try again"
      })
    }))

  it.scoped("concurrent requests for the same list are coalesced into one query and share its answer", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup()
      yield* conn.setAutoPong(false)
      const first = yield* askList(h, "#c", "b")
      const second = yield* askList(h, "#C", "b")
      const q = yield* expectQuery(conn, "MODE #c b")
      yield* conn.send(pong(q.open), `${SERVER} 367 belay #c m!*@*`, `${SERVER} 368 belay #c :End`, pong(q.close))
      const expected: ModeList = { channel: "#c", letter: "b", entries: [{ mask: "m!*@*", setBy: null, setAt: null }] }
      expect(yield* listOf(first)).toEqual(expected)
      expect(yield* listOf(second)).toEqual(expected)
      // One MODE on the wire.
      expect((yield* conn.lines).filter((l) => l.startsWith("MODE "))).toEqual(["MODE #c b"])
    }))

  it.scoped("quiet list: q on a network whose CHANMODES lists it as type A, answered by 728/729", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup({}, ["CASEMAPPING=rfc1459", "PREFIX=(ov)@+", "CHANMODES=bqeI,k,l,imnpst", "MODES=4"])
      yield* h.waitStatus((s) => s.channelTypes === "#&")
      yield* conn.setAutoPong(false)
      const before = yield* storedCount(h)
      const answer = yield* askList(h, "#q", "q")
      const q = yield* expectQuery(conn, "MODE #q q")
      yield* conn.send(
        pong(q.open),
        `${SERVER} 728 belay #q q *!*@noisy.example op!o@h 1700000000`,
        `${SERVER} 728 belay #q q $a:spammer`,
        `${SERVER} 729 belay #q q :End of Channel Quiet List`,
        pong(q.close)
      )
      expect(yield* listOf(answer)).toEqual({
        channel: "#q",
        letter: "q",
        entries: [
          { mask: "*!*@noisy.example", setBy: "op!o@h", setAt: new Date(1700000000 * 1000).toISOString() },
          { mask: "$a:spammer", setBy: null, setAt: null }
        ]
      })
      const stored = yield* storedSince(h, conn, before, "marker")
      expect(stored.map((m) => m.text)).toEqual(["marker"])
    }))

  it.scoped("q where it is a prefix mode (ngircd, InspIRCd), or a list the network lacks: invalid-arguments, nothing sent", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup({}, ["CASEMAPPING=rfc1459", "PREFIX=(qaohv)~&@%+", "CHANMODES=bI,k,l,imMnOPQRstVz", "MODES=5"])
      yield* h.waitStatus((s) => s.channelTypes === "#&")
      const quiet = yield* refusalOf(yield* askList(h, "#c", "q"))
      expect(quiet).toMatchObject({ _tag: "InvalidArguments", message: expect.stringContaining("no quiet list") })
      const excepts = yield* refusalOf(yield* askList(h, "#c", "e"))
      expect(excepts).toMatchObject({ _tag: "InvalidArguments", message: expect.stringContaining("no e list") })
      const notChannel = yield* refusalOf(yield* askList(h, "nick", "b"))
      expect(notChannel).toMatchObject({ _tag: "InvalidArguments" })
      expect((yield* conn.lines).filter((l) => l.startsWith("MODE ") || l.includes("belay-ml-"))).toEqual([])
    }))

  it.scoped("a disconnect answers the waiting callers not-connected; offline requests are refused at once", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup()
      yield* conn.setAutoPong(false)
      const answer = yield* askList(h, "#c", "b")
      yield* expectQuery(conn, "MODE #c b")
      yield* conn.destroy
      expect(yield* refusalOf(answer)).toMatchObject({ _tag: "NotConnected", networkId: 1 })
      yield* h.waitState("backoff")
      expect(yield* refusalOf(yield* askList(h, "#c", "b"))).toMatchObject({ _tag: "NotConnected" })
    }))
})

describe("NetworkActor: channel state", () => {
  it.scoped("without away-notify: multi-prefix NAMES, then one WHO per channel (serialised) for away; its replies are not stored", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup({ caps: ["multi-prefix"] })
      const before = yield* storedCount(h)
      yield* conn.send(
        `${ME} JOIN #w`,
        `${SERVER} 353 belay = #w :@+alice bob belay`,
        `${SERVER} 366 belay #w :End of /NAMES list.`,
        `${ME} JOIN #x`,
        `${SERVER} 353 belay = #x :belay +carol`,
        `${SERVER} 366 belay #x :End of /NAMES list.`
      )
      yield* conn.waitFor("WHO #w")
      // The second WHO waits for the first one's end.
      yield* live(Effect.sleep("100 millis"))
      expect((yield* conn.lines).filter((l) => l.startsWith("WHO"))).toEqual(["WHO #w"])
      yield* conn.send(
        `${SERVER} 352 belay #w a h irc.fake.test alice G@+ :0 Alice`,
        `${SERVER} 352 belay #w b h irc.fake.test bob H :0 Bob`,
        `${SERVER} 352 belay #w belayuser 127.0.0.1 irc.fake.test belay H :0 Belay`,
        `${SERVER} 315 belay #w :End of WHO list`
      )
      yield* conn.waitFor("WHO #x")
      yield* conn.send(`${SERVER} 352 belay #x c h irc.fake.test carol G+ :0 Carol`, `${SERVER} 315 belay #x :End of WHO list`)
      yield* h.waitMessage((m) => m.kind === "join" && m.target === "#x")
      const stored = yield* storedSince(h, conn, before, "marker")
      expect(stored.filter((m) => m.numeric !== null && LIST_NUMERICS.has(m.numeric))).toEqual([])

      expect(yield* members(h, "#W")).toEqual([
        { nick: "alice", prefix: "@+", modes: ["o", "v"], away: true },
        { nick: "belay", prefix: "", modes: [], away: false },
        { nick: "bob", prefix: "", modes: [], away: false }
      ])
      expect(yield* members(h, "#x")).toMatchObject([{ nick: "belay" }, { nick: "carol", prefix: "+", away: true }])

      // A WHO the user sends (send_raw) is not ours: its replies are history in the server buffer.
      yield* h.ask(Command.raw("WHO #w"))
      yield* conn.send(`${SERVER} 352 belay #w b h irc.fake.test bob G :0 Bob`, `${SERVER} 315 belay #w :End of WHO list`)
      yield* h.waitMessage((m) => m.numeric === "315" && m.target === ":server:1")
      expect(yield* members(h, "#w")).toEqual(expect.arrayContaining([{ nick: "bob", prefix: "", modes: [], away: true }]))
    }))

  it.scoped("with away-notify: no WHO; AWAY, JOIN, PART, KICK, QUIT, NICK and MODE keep the members current", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup({ caps: ["multi-prefix", "away-notify"] })
      yield* conn.send(
        `${ME} JOIN #n`,
        `${SERVER} 353 belay = #n :@belay alice +bob carol dave`,
        `${SERVER} 366 belay #n :End of /NAMES list.`,
        ":alice!a@h AWAY :lunch",
        ":erin!e@h JOIN #n",
        ":bob!b@h PART #n :bye",
        ":belay!belayuser@127.0.0.1 KICK #n carol :out",
        ":dave!d@h QUIT :gone",
        ":alice!a@h NICK :alicia",
        ":belay!belayuser@127.0.0.1 MODE #n +ov erin erin",
        ":x!x@h PRIVMSG #n :marker"
      )
      yield* h.waitMessage((m) => m.text === "marker")
      expect(yield* members(h, "#n")).toEqual([
        { nick: "alicia", prefix: "", modes: [], away: true },
        { nick: "belay", prefix: "@", modes: ["o"], away: false },
        { nick: "erin", prefix: "@+", modes: ["o", "v"], away: false }
      ])
      yield* conn.send(":alicia!a@h AWAY", ":x!x@h PRIVMSG #n :marker 2")
      yield* h.waitMessage((m) => m.text === "marker 2")
      expect(yield* members(h, "#n")).toEqual(expect.arrayContaining([{ nick: "alicia", prefix: "", modes: [], away: false }]))
      expect((yield* conn.lines).filter((l) => l.startsWith("WHO"))).toEqual([])
      // Our own PART: the channel is gone.
      yield* conn.send(`${ME} PART #n`)
      yield* h.waitMessage((m) => m.kind === "part" && m.self)
      expect(yield* Effect.flip(members(h, "#n"))).toMatchObject({ _tag: "NotInChannel", channel: "#n" })
    }))

  it.scoped("topic: 332/333 on join, TOPIC changes it, an empty TOPIC clears it; not-in-channel elsewhere", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup()
      yield* conn.send(
        `${ME} JOIN #t`,
        `${SERVER} 332 belay #t :the old topic`,
        `${SERVER} 333 belay #t carol!c@h 1700000000`
      )
      yield* h.waitMessage((m) => m.numeric === "333")
      expect(yield* topic(h, "#T")).toEqual({
        channel: "#t",
        topic: "the old topic",
        setBy: "carol",
        setAt: new Date(1700000000 * 1000).toISOString()
      })
      yield* conn.send("@time=2024-05-06T07:08:09.000Z :dave!d@h TOPIC #t :a new topic")
      yield* h.waitMessage((m) => m.kind === "topic" && m.text === "a new topic")
      expect(yield* topic(h, "#t")).toEqual({
        channel: "#t",
        topic: "a new topic",
        setBy: "dave",
        setAt: "2024-05-06T07:08:09.000Z"
      })
      yield* conn.send(":dave!d@h TOPIC #t :")
      yield* h.waitMessage((m) => m.kind === "topic" && m.text === "")
      expect(yield* topic(h, "#t")).toEqual({ channel: "#t", topic: "", setBy: null, setAt: null })
      expect(yield* Effect.flip(topic(h, "#elsewhere"))).toMatchObject({ _tag: "NotInChannel", channel: "#elsewhere" })
      expect(yield* Effect.flip(members(h, "#elsewhere"))).toMatchObject({ _tag: "NotInChannel", channel: "#elsewhere" })
    }))

  it.scoped("set_topic always writes (empty clears); the server's refusal is an error line in the channel", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup()
      yield* join(h, conn, "#t")
      yield* h.ask(Command.setTopic("#t", "hello world"))
      yield* conn.expectNext("TOPIC #t :hello world")
      yield* h.ask(Command.setTopic("#t", ""))
      yield* conn.expectNext((l) => l.raw === "TOPIC #t :")
      expect(yield* Effect.flip(h.ask(Command.setTopic("nick", "x")))).toMatchObject({ _tag: "InvalidArguments" })
      yield* conn.send(`${SERVER} 482 belay #t :You're not channel operator`)
      yield* h.waitMessage((m) => m.target === "#t" && m.kind === "error" && m.numeric === "482")
    }))

  it.scoped("set_channel_modes: 482, 467, 478 and 472 (through the channel last sent MODE) land in the channel as errors", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup()
      yield* join(h, conn, "#m", "#other")
      const sent = yield* h.ask(
        Command.setModes("#m", [
          { sign: "+", letter: "b", param: "*!*@spam" },
          { sign: "+", letter: "k", param: "key" },
          { sign: "+", letter: "m" }
        ])
      )
      expect(sent).toEqual(["MODE #m +bkm *!*@spam key"])
      yield* conn.expectNext("MODE #m +bkm *!*@spam key")
      yield* conn.send(
        `${SERVER} 482 belay #m :You're not channel operator`,
        `${SERVER} 467 belay #m :Channel key already set`,
        `${SERVER} 478 belay #m b :Channel ban list is full`,
        `${SERVER} 472 belay X :is unknown mode char to me`
      )
      yield* h.waitMessage((m) => m.numeric === "472")
      const errors = (yield* h.store.all).filter((m) => m.kind === "error").map((m) => [m.target, m.numeric, m.text])
      expect(errors).toEqual([
        ["#m", "482", "Channel operator privileges needed: You're not channel operator (482)"],
        ["#m", "467", "The channel key is already set: Channel key already set (467)"],
        ["#m", "478", "The b list is full: Channel ban list is full (478)"],
        ["#m", "472", "Unknown mode X: is unknown mode char to me (472)"]
      ])
    }))

  it.scoped("a bare -k takes the key we joined with, then the key a MODE set", () =>
    Effect.gen(function*() {
      const { h, conn } = yield* setup()
      yield* h.ask(Command.join("#k", Option.some("joinkey")))
      yield* conn.expectNext("JOIN #k joinkey")
      yield* join(h, conn, "#k")
      const minusK = () => h.ask(Command.setModes("#k", [{ sign: "-", letter: "k" }]))
      expect(yield* minusK()).toEqual(["MODE #k -k joinkey"])
      yield* conn.send(":op!o@h MODE #k +k changed", ":x!x@h PRIVMSG #k :marker")
      yield* h.waitMessage((m) => m.text === "marker")
      expect(yield* minusK()).toEqual(["MODE #k -k changed"])
    }))
})
