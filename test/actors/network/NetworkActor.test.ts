// NetworkActor against the scripted fake IRC server on a loopback port, with irc-framework as the real transport
// and in-memory ports for the database (test/support/ActorHarness.ts). Tests run under it.scoped, so TestClock drives
// the actor's timers (backoff, keepalive, nick regain) while the fake's waits expire in real time.
import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Duration, Effect, Option, TestClock } from "effect"
import * as ConnectThrottle from "../../../src/actors/ConnectThrottle.js"
import { Command } from "../../../src/actors/network/NetworkActor.js"
import { CONNECT_BURST, CONNECT_SPACING } from "../../../src/actors/ReconnectPolicy.js"
import { MAX_LINE_BYTES } from "../../../src/irc/IrcLine.js"
import { live, startActor, type Harness, type HarnessOptions } from "../../support/ActorHarness.js"
import * as FakeIrcServer from "../../support/FakeIrcServer.js"

const SERVER = ":irc.fake.test"

/** Next connection, registered as `nick` (default: what the client asked for), and the actor connected. */
const registered = (
  server: FakeIrcServer.FakeIrcServer,
  h: Harness,
  options: { readonly nick?: string; readonly isupport?: ReadonlyArray<string>; readonly register?: FakeIrcServer.RegisterOptions } = {}
) =>
  Effect.gen(function*() {
    const conn = yield* server.nextConnection()
    const registration = yield* conn.register(options.nick, options.isupport, options.register)
    yield* h.waitState("connected")
    return { conn, registration }
  })

const now = Clock.currentTimeMillis

/** No new connection arrives within `ms` of real time. */
const noConnectionWithin = (server: FakeIrcServer.FakeIrcServer, ms: number) =>
  server.nextConnection(Duration.millis(ms)).pipe(
    Effect.flatMap((c) => Effect.fail(new Error(`unexpected connection #${c.id}`))),
    Effect.catchTag("FakeIrcError", () => Effect.void)
  )

const members = (h: Harness, channel: string) => h.ask(Command.members(channel))
const topic = (h: Harness, channel: string) => h.ask(Command.topic(channel))

const stateOf = (h: Harness) => Effect.map(h.actor.status.get, (s) => s.state)

const setup = (serverOptions: FakeIrcServer.FakeIrcServerOptions = {}, harness: HarnessOptions = {}) =>
  Effect.gen(function*() {
    const server = yield* FakeIrcServer.make(serverOptions)
    const h = yield* startActor(server, harness)
    return { server, h }
  })

describe("NetworkActor: connecting and registration", () => {
  it.scoped("registers with PASS and SASL PLAIN and publishes connecting → connected with the nick", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup(
        { caps: ["sasl", "multi-prefix"] },
        { config: { serverPassword: "serverpass", sasl: { username: "acct", password: "hunter2" } } }
      )
      yield* h.waitState("connecting")
      const { registration } = yield* registered(server, h)
      expect(registration.pass).toBe("serverpass")
      expect(registration.sasl).toMatchObject({ authcid: "acct", password: "hunter2" })
      expect(registration.saslSucceeded).toBe(true)
      expect(registration).toMatchObject({ username: "belayuser", realname: "Belay Test" })
      const status = yield* h.actor.status.get
      expect(status).toMatchObject({ state: "connected", nick: "belay", lastError: null, nextRetryAt: null })
      // The welcome burst is history: numerics in the server buffer.
      yield* h.waitMessage((m) => m.target === ":server:1" && m.kind === "numeric" && m.numeric === "001")
    }))

  it.scoped("TLS: refuses an unverifiable certificate, connects with tls-insecure", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make({ tls: true })
      const strict = yield* startActor(server)
      const failed = yield* strict.waitState("backoff")
      expect(failed.lastError).toMatch(/certificate/i)

      const insecure = yield* startActor(server, { config: { id: 2, tlsInsecure: true } })
      // The strict actor's socket was accepted (then failed its handshake); take connections until one registers.
      for (;;) {
        const conn = yield* server.nextConnection()
        const ok = yield* conn.register().pipe(Effect.as(true), Effect.catchAll(() => Effect.succeed(false)))
        if (ok) break
      }
      yield* insecure.waitState("connected")
    }))

  it.scoped("registration timeout: a server that never welcomes is dropped after a minute and retried", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup()
      const conn = yield* server.nextConnection()
      yield* conn.waitFor("USER")
      yield* TestClock.adjust("59 seconds")
      expect(yield* stateOf(h)).toBe("connecting")
      yield* TestClock.adjust("2 seconds")
      yield* conn.waitClosed()
      const status = yield* h.waitState("backoff")
      expect(status.lastError).toMatch(/registration did not complete/)
    }))

  it.scoped("locked-down: a host outside BELAY_ALLOWED_HOSTS is never contacted", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup({}, { allowedHosts: new Set(["irc.example.org"]) })
      const status = yield* h.waitStatus((s) => s.lastError !== null)
      expect(status).toMatchObject({ state: "offline" })
      expect(status.lastError).toMatch(/locked-down/)
      const answer = yield* Effect.flip(h.ask(Command.connect(false)))
      expect(answer).toMatchObject({ _tag: "LockedDown", host: "127.0.0.1" })
      yield* noConnectionWithin(server, 300)
      expect((yield* server.stats).accepted).toBe(0)
    }))
})

describe("NetworkActor: nicks", () => {
  it.scoped("nick in use at registration → nick_, then regained through MONITOR", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup()
      const { conn, registration } = yield* registered(server, h, {
        isupport: [...FakeIrcServer.DEFAULT_ISUPPORT, "MONITOR=100"],
        register: { rejectNicks: ["belay"] }
      })
      expect(registration.nicksTried).toEqual(["belay", "belay_"])
      expect((yield* h.actor.status.get).nick).toBe("belay_")
      yield* conn.waitFor("MONITOR + belay")
      yield* conn.send(`${SERVER} 731 belay_ :belay`)
      yield* conn.waitFor("NICK belay")
      yield* conn.send(":belay_!belayuser@127.0.0.1 NICK :belay")
      yield* h.waitStatus((s) => s.nick === "belay")
      yield* conn.waitFor("MONITOR - belay")
    }))

  it.scoped("without MONITOR the wanted nick is retried on a backing-off timer (TestClock)", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup()
      const { conn } = yield* registered(server, h, { register: { rejectNicks: ["belay"] } })
      const start = yield* now
      const attempts = Effect.map(conn.lines, (lines) => lines.slice(lines.indexOf("NICK belay_")).filter((l) => l === "NICK belay").length)
      // Walk the clock a second at a time and note when each attempt shows up.
      const seenAt: Array<number> = []
      while (seenAt.length < 3) {
        yield* TestClock.adjust("1 second")
        yield* live(Effect.sleep("25 millis"))
        const n = yield* attempts
        while (seenAt.length < n) {
          seenAt.push(((yield* now) - start) / 1000)
          // Still in use: the server says so, and the actor backs off further.
          yield* conn.send(`${SERVER} 433 belay_ belay :Nickname is already in use`)
        }
        if ((yield* now) - start > 300_000) break
      }
      // soju: 15 s, then doubling, each plus up to 10 s. A line is noticed up to a step late, never early, so the
      // lower bounds are exact (one step for the walk's granularity) and the upper ones carry some slack.
      expect(seenAt[0]).toBeGreaterThanOrEqual(15)
      expect(seenAt[0]).toBeLessThanOrEqual(28)
      expect(seenAt[1]! - seenAt[0]!).toBeGreaterThanOrEqual(29)
      expect(seenAt[1]! - seenAt[0]!).toBeLessThanOrEqual(43)
      expect(seenAt[2]! - seenAt[1]!).toBeGreaterThanOrEqual(59)
      expect(seenAt[2]! - seenAt[1]!).toBeLessThanOrEqual(73)
      yield* conn.send(":belay_!belayuser@127.0.0.1 NICK :belay")
      yield* h.waitStatus((s) => s.nick === "belay")
      // Regained: no further attempts.
      yield* TestClock.adjust("15 minutes")
      yield* live(Effect.sleep("100 millis"))
      expect(yield* attempts).toBe(3)
    }))

  it.scoped("set_nick while regaining: the new nick is kept and the old one unmonitored", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup()
      const { conn } = yield* registered(server, h, {
        isupport: [...FakeIrcServer.DEFAULT_ISUPPORT, "MONITOR=100"],
        register: { rejectNicks: ["belay"] }
      })
      yield* conn.waitFor("MONITOR + belay")
      yield* h.ask(Command.nick("other"))
      yield* conn.waitFor("NICK other")
      yield* conn.send(":belay_!belayuser@127.0.0.1 NICK :other")
      yield* conn.waitFor("MONITOR - belay")
      yield* h.waitStatus((s) => s.nick === "other")
      // belay going offline no longer matters.
      yield* conn.send(`${SERVER} 731 other :belay`)
      yield* live(Effect.sleep("100 millis"))
      const lines = yield* conn.lines
      expect(lines.slice(lines.indexOf("NICK other")).filter((l) => l === "NICK belay")).toEqual([])
    }))

  it.scoped("set_nick: the granted nick becomes the one kept", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup()
      const { conn } = yield* registered(server, h)
      yield* h.ask(Command.nick("other"))
      yield* conn.waitFor("NICK other")
      yield* conn.send(":belay!belayuser@127.0.0.1 NICK :other")
      yield* h.waitStatus((s) => s.nick === "other")
      // Not "regained" back to the configured nick later.
      yield* TestClock.adjust("30 minutes")
      yield* live(Effect.sleep("100 millis"))
      const lines = yield* conn.lines
      expect(lines.slice(lines.indexOf("NICK other")).filter((l) => l === "NICK belay")).toEqual([])
    }))
})

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

describe("NetworkActor: staying connected", () => {
  it.scoped("backoff under TestClock: jittered exponential from 2 s, capped at 10 minutes, never early", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup({ refuse: true })
      let lastRetryAt = -1
      for (let attempt = 0; attempt < 12; attempt++) {
        const status = yield* h.waitStatus((s) => s.state === "backoff" && s.nextRetryAt !== null && Date.parse(s.nextRetryAt) !== lastRetryAt)
        const retryAt = Date.parse(status.nextRetryAt!)
        lastRetryAt = retryAt
        const delay = retryAt - (yield* now)
        const nominal = Math.min(2000 * 2 ** attempt, 600_000)
        expect(delay).toBeGreaterThanOrEqual(nominal * 0.8 - 1)
        expect(delay).toBeLessThanOrEqual(nominal)
        expect(status.lastError).not.toBeNull()
        const refusedBefore = (yield* server.stats).refused
        // Just short of the delay: nothing happens.
        yield* TestClock.adjust(Duration.millis(delay - 1))
        yield* live(Effect.sleep("50 millis"))
        expect((yield* server.stats).refused).toBe(refusedBefore)
        expect(yield* stateOf(h)).toBe("backoff")
        yield* TestClock.adjust(Duration.millis(1))
        yield* h.waitStatus((s) => s.state !== "backoff" || (s.nextRetryAt === null || Date.parse(s.nextRetryAt) !== retryAt))
      }
    }))

  it.scoped("connect slots: past the shared burst, the first connection waits in backoff for its slot, then connects", () =>
    Effect.gen(function*() {
      const throttle = yield* ConnectThrottle.make()
      // Other networks of the process took the whole burst just now.
      for (let i = 0; i < CONNECT_BURST; i++) yield* throttle.reserve
      const { server, h } = yield* setup({}, { throttle })
      const status = yield* h.waitState("backoff")
      expect(Date.parse(status.nextRetryAt!) - (yield* now)).toBe(Duration.toMillis(CONNECT_SPACING))
      expect(status.lastError).toBeNull()
      yield* TestClock.adjust(Duration.toMillis(CONNECT_SPACING) - 1)
      yield* noConnectionWithin(server, 100)
      yield* TestClock.adjust(1)
      yield* registered(server, h)
    }))

  it.scoped("a retry takes a slot too: after the backoff delay, the throttle's wait, published as nextRetryAt", () =>
    Effect.gen(function*() {
      const throttle = yield* ConnectThrottle.make()
      const { server, h } = yield* setup({}, { throttle })
      const { conn } = yield* registered(server, h)
      yield* conn.destroy
      const retryAt = Date.parse((yield* h.waitState("backoff")).nextRetryAt!)
      // Just before the retry, other networks take the whole burst: the retry's slot is one spacing after them.
      yield* TestClock.adjust(Duration.millis(retryAt - (yield* now) - 1))
      for (let i = 0; i < CONNECT_BURST; i++) yield* throttle.reserve
      yield* TestClock.adjust(1)
      const waiting = yield* h.waitStatus((s) => s.state === "backoff" && (s.nextRetryAt === null || Date.parse(s.nextRetryAt) !== retryAt))
      const slot = retryAt - 1 + Duration.toMillis(CONNECT_SPACING)
      expect(Date.parse(waiting.nextRetryAt!)).toBe(slot)
      yield* TestClock.adjust(Duration.millis(slot - retryAt - 1))
      yield* noConnectionWithin(server, 100)
      yield* TestClock.adjust(1)
      yield* registered(server, h)
    }))

  it.scoped("reconnects after the server drops, and the backoff restarts after a stable connection", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup()
      const { conn } = yield* registered(server, h)
      yield* TestClock.adjust("5 minutes")
      yield* conn.destroy
      const status = yield* h.waitState("backoff")
      expect(Date.parse(status.nextRetryAt!) - (yield* now)).toBeLessThanOrEqual(2000)
      yield* TestClock.adjust("2 seconds")
      yield* registered(server, h)
    }))

  it.scoped("keepalive: PING after 90 s of silence, drop after 180 s; a PONG keeps it up", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup()
      const { conn } = yield* registered(server, h)
      // Answered (autoPong): the PONG is traffic, so it stays connected. A marker line sent after the PONG and seen
      // in the history proves the actor has read the PONG before the clock moves on.
      const pings = Effect.map(conn.lines, (lines) => lines.filter((l) => l.startsWith("PING")).length)
      for (const round of [1, 2]) {
        yield* TestClock.adjust("100 seconds")
        yield* live(Effect.gen(function*() {
          while ((yield* pings) < round) yield* Effect.sleep("10 millis")
        }))
        yield* conn.send(`:x!x@h PRIVMSG belay :marker ${round}`)
        yield* h.waitMessage((m) => m.text === `marker ${round}`)
      }
      expect(yield* stateOf(h)).toBe("connected")

      yield* conn.setAutoPong(false)
      yield* TestClock.adjust("80 seconds")
      yield* live(Effect.sleep("100 millis"))
      expect(yield* stateOf(h)).toBe("connected")
      yield* TestClock.adjust("20 seconds")
      yield* conn.waitFor("PING belay-keepalive")
      yield* TestClock.adjust("90 seconds")
      yield* conn.waitClosed()
      // Dropped and retrying (the retry may already be under way: the clock went past its 2 s delay).
      const status = yield* h.waitStatus((s) => s.state !== "connected")
      expect(status.lastError).toMatch(/ping timeout/)
      yield* h.waitMessage((m) => m.kind === "error" && m.text.includes("ping timeout"))
    }))

  const refusals: ReadonlyArray<readonly [string, ReadonlyArray<string>, RegExp]> = [
    ["464 bad password", [`${SERVER} 464 belay :Password incorrect`, "ERROR :Closing Link: bad password"], /464/],
    ["465 banned", [`${SERVER} 465 belay :You are banned from this server`, "ERROR :Closing Link: K-lined"], /465/]
  ]
  it.scoped.each(refusals)("permanent refusal (%s): offline with the reason, never retried", ([_name, lines, reason]) =>
    Effect.gen(function*() {
      const { server, h } = yield* setup()
      const conn = yield* server.nextConnection()
      yield* conn.waitFor("USER")
      yield* conn.send(...lines)
      yield* conn.close()
      const status = yield* h.waitStatus((s) => s.state === "offline" && s.lastError !== null)
      expect(status.lastError).toMatch(reason)
      yield* TestClock.adjust("1 hour")
      yield* noConnectionWithin(server, 300)
      expect(yield* h.actor.status.get).toMatchObject({ state: "offline", nextRetryAt: null })
    }))

  it.scoped("permanent refusal: SASL failure (904) stops retrying", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup({ caps: ["sasl"], sasl: "fail" }, { config: { sasl: { username: "a", password: "wrong" } } })
      const conn = yield* server.nextConnection()
      yield* conn.register().pipe(Effect.ignore)
      const status = yield* h.waitStatus((s) => s.state === "offline" && s.lastError !== null)
      expect(status.lastError).toMatch(/SASL/)
      yield* TestClock.adjust("1 hour")
      yield* noConnectionWithin(server, 300)
    }))

  it.scoped("permanent refusal: SASL configured but not offered by the server", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup({ caps: [] }, { config: { sasl: { username: "a", password: "p" } } })
      const conn = yield* server.nextConnection()
      yield* conn.register().pipe(Effect.ignore)
      const status = yield* h.waitStatus((s) => s.state === "offline" && s.lastError !== null)
      expect(status.lastError).toMatch(/SASL/)
    }))

  it.scoped("after a reconnect, stored channels are rejoined in packed JOIN lines with their keys; keys follow MODE", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup({}, { channels: [{ name: "#open", key: null }, { name: "#secret", key: "k1" }] })
      const first = yield* registered(server, h)
      yield* first.conn.waitFor("JOIN #secret,#open k1")
      yield* first.conn.send(":belay!belayuser@127.0.0.1 JOIN #secret", ":belay!belayuser@127.0.0.1 JOIN #open")
      // Keys follow MODE +k / -k, whoever sets them.
      yield* first.conn.send(":op!o@h MODE #open +k newkey", ":op!o@h MODE #secret -k k1")
      yield* h.waitMessage((m) => m.kind === "mode" && m.text === "-k k1")
      yield* live(Effect.sleep("50 millis"))
      expect(yield* h.repo.channels).toEqual(
        expect.arrayContaining([{ name: "#open", key: "newkey" }, { name: "#secret", key: null }])
      )
      // join_channel with an explicit key: stored once the server confirms the JOIN.
      yield* h.ask(Command.join("#new", Option.some("nk")))
      yield* first.conn.waitFor("JOIN #new nk")
      yield* first.conn.send(":belay!belayuser@127.0.0.1 JOIN #new")
      yield* h.waitMessage((m) => m.kind === "join" && m.target === "#new")
      yield* first.conn.destroy
      yield* h.waitState("backoff")
      yield* TestClock.adjust("2 seconds")
      const second = yield* registered(server, h)
      const join = yield* second.conn.waitFor("JOIN")
      expect(join.raw).toBe("JOIN #open,#new,#secret newkey,nk")
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
