// NetworkActor's connection lifecycle against the scripted fake IRC server on a loopback port, with irc-framework as
// the real transport and in-memory ports for the database (test/support/ActorHarness.ts): registration (PASS, SASL,
// TLS, the registration timeout, locked-down hosts), nicks taken and regained, and staying connected (backoff, connect
// slots, keepalive, permanent refusals, rejoining). Tests run under it.scoped, so TestClock drives the actor's timers
// (backoff, keepalive, nick regain) while the fake's waits expire in real time.
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Option, TestClock } from "effect"
import * as ConnectThrottle from "../../../src/actors/ConnectThrottle.js"
import { Command } from "../../../src/actors/network/NetworkActor.js"
import { CONNECT_BURST, CONNECT_SPACING } from "../../../src/actors/ReconnectPolicy.js"
import {
  live,
  noConnectionWithin,
  registered,
  startActor,
  startWithServer as setup,
  stateOf
} from "../../support/ActorHarness.js"
import * as FakeIrcServer from "../../support/FakeIrcServer.js"

const SERVER = ":irc.fake.test"

const now = Clock.currentTimeMillis

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

  it.scoped("keepalive: with its PONGs the only traffic, a link gets one PING every 90 s and stays up", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup()
      const { conn } = yield* registered(server, h)
      // The PONGs (autoPong) never reach the actor as lines (src/actors/IrcTransport.ts): the deadline after each PING
      // asks the connection whether it was answered, and the answer sends the next PING.
      const pings = Effect.map(conn.lines, (lines) => lines.filter((l) => l === "PING belay-keepalive").length)
      for (const round of [1, 2, 3, 4]) {
        yield* TestClock.adjust("91 seconds")
        yield* live(Effect.gen(function*() {
          while ((yield* pings) < round) yield* Effect.sleep("10 millis")
        }))
        // The answer crosses a real socket: let it arrive before the clock moves on.
        yield* live(Effect.sleep("200 millis"))
      }
      expect(yield* pings).toBe(4)
      expect(yield* stateOf(h)).toBe("connected")
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

