// Outbound flood control in the network actor (Outbound.ts), against the scripted fake IRC server under TestClock:
// lines go out FLOOD_BURST at once and then one every FLOOD_INTERVAL, in order; the server's PING is answered and
// the keepalive PING sent however long the queue; a command that does not fit the queue fails whole with
// SendQueueFull (wire `timeout`) and sends nothing; what waits when the connection ends is neither sent nor stored;
// and a plaintext line whose target gets a key while it waits is not sent. The fake's waits run in real time
// (ActorHarness.ts), the actor's pacing only on TestClock.adjust.
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, TestClock } from "effect"
import { Command } from "../../../src/actors/network/NetworkActor.js"
import {
  FLOOD_BURST,
  FLOOD_INTERVAL,
  KEEPALIVE_IDLE,
  SEND_QUEUE_LINES
} from "../../../src/actors/ReconnectPolicy.js"
import { InvalidArguments, SendQueueFull, toToolFailurePayload } from "../../../src/schema/ToolErrors.js"
import { type FishKey, parseFishKey } from "../../../src/services/crypto/Fish.js"
import { type Harness, live, startActor } from "../../support/ActorHarness.js"
import * as FakeIrcServer from "../../support/FakeIrcServer.js"

const ME = ":belay!belayuser@127.0.0.1"

const setup = () =>
  Effect.gen(function*() {
    const server = yield* FakeIrcServer.make()
    const h = yield* startActor(server)
    const conn = yield* server.nextConnection()
    yield* conn.register()
    yield* h.waitState("connected")
    // No NAMES follows this JOIN, so no automatic WHO: the only lines after it are the test's.
    yield* conn.send(`${ME} JOIN #flood`)
    yield* h.waitMessage((m) => m.kind === "join" && m.self)
    return { server, h, conn }
  })

const say = (h: Harness, text: string, target = "#flood") => h.ask(Command.say("privmsg", target, text))

/** The texts of the PRIVMSGs to `target` the fake has received so far, in order. */
const received = (conn: FakeIrcServer.FakeIrcConnection, target = "#flood") =>
  Effect.map(conn.lines, (lines) =>
    lines.map(FakeIrcServer.parseLine).filter((l) => l.command === "PRIVMSG" && l.params[0] === target).map((l) =>
      l.params[1] ?? ""
    ))

/** Waits (real time) until the fake has received `count` PRIVMSGs to #flood; returns them. */
const receivedCount = (conn: FakeIrcServer.FakeIrcConnection, count: number) =>
  live(
    Effect.gen(function*() {
      for (;;) {
        const texts = yield* received(conn)
        if (texts.length >= count) return texts
        yield* Effect.sleep("5 millis")
      }
    })
  )

/** Nothing more arrives within a moment of real time: the count stays at `count`. */
const staysAt = (conn: FakeIrcServer.FakeIrcConnection, count: number) =>
  Effect.gen(function*() {
    yield* live(Effect.sleep("150 millis"))
    expect(yield* received(conn)).toHaveLength(count)
  })

const numbered = (n: number, prefix = "m") => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`)

/** Moves the TestClock one interval at a time, `steps` times (the "send" timer re-arms after each line). */
const paced = (steps: number) => Effect.repeatN(TestClock.adjust(FLOOD_INTERVAL), steps - 1)

const fishKey = (raw: string): FishKey => Either.getOrThrow(parseFishKey(raw))

describe("NetworkActor: outbound flood control", () => {
  it.scoped("a burst goes at once, then one line per interval, in order; every caller is answered at once", () =>
    Effect.gen(function*() {
      const { conn, h } = yield* setup()
      const texts = numbered(12)
      // Every call is answered when its line is queued, without the TestClock moving.
      for (const text of texts) yield* say(h, text)
      expect(yield* receivedCount(conn, FLOOD_BURST)).toEqual(texts.slice(0, FLOOD_BURST))
      yield* staysAt(conn, FLOOD_BURST)

      const interval = Duration.toMillis(FLOOD_INTERVAL)
      yield* TestClock.adjust(Duration.millis(interval - 1))
      yield* staysAt(conn, FLOOD_BURST)
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* receivedCount(conn, FLOOD_BURST + 1)).toEqual(texts.slice(0, FLOOD_BURST + 1))
      yield* staysAt(conn, FLOOD_BURST + 1)
      for (let sent = FLOOD_BURST + 2; sent <= texts.length; sent++) {
        yield* TestClock.adjust(FLOOD_INTERVAL)
        expect(yield* receivedCount(conn, sent)).toEqual(texts.slice(0, sent))
      }
      yield* staysAt(conn, texts.length)

      // A quiet moment refills the bucket: the next burst goes at once again.
      yield* TestClock.adjust(Duration.times(FLOOD_INTERVAL, FLOOD_BURST))
      for (const text of numbered(FLOOD_BURST, "n")) yield* say(h, text)
      expect((yield* receivedCount(conn, texts.length + FLOOD_BURST)).slice(texts.length)).toEqual(numbered(FLOOD_BURST, "n"))
    }))

  it.scoped("own messages are stored as they go out, so history shows what was sent and when", () =>
    Effect.gen(function*() {
      const { conn, h } = yield* setup()
      const start = yield* TestClock.currentTimeMillis
      for (const text of numbered(FLOOD_BURST + 2)) yield* say(h, text)
      yield* receivedCount(conn, FLOOD_BURST)
      const ownStored = Effect.map(h.store.all, (all) => all.filter((m) => m.self && m.kind === "privmsg"))
      yield* h.waitMessage((m) => m.self && m.text === `m${FLOOD_BURST}`)
      expect((yield* ownStored).map((m) => m.text)).toEqual(numbered(FLOOD_BURST))

      yield* paced(2)
      yield* h.waitMessage((m) => m.self && m.text === `m${FLOOD_BURST + 2}`)
      const stored = yield* ownStored
      expect(stored.map((m) => m.text)).toEqual(numbered(FLOOD_BURST + 2))
      const interval = Duration.toMillis(FLOOD_INTERVAL)
      expect(stored.map((m) => m.time.getTime() - start)).toEqual([0, 0, 0, 0, 0, interval, 2 * interval])
    }))

  it.scoped("the server's PING is answered at once while a long send waits, and the keepalive PING jumps the queue", () =>
    Effect.gen(function*() {
      const { conn, h } = yield* setup()
      // More than KEEPALIVE_IDLE drains: 60 lines take 5 + 55 × 2 s = 110 s.
      const texts = numbered(60)
      for (const text of texts) yield* say(h, text)
      yield* receivedCount(conn, FLOOD_BURST)

      // irc-framework writes the PONG itself, outside the queue: the 55 lines waiting do not delay it.
      yield* conn.send("PING :still-there")
      yield* conn.waitFor("PONG still-there")
      expect(yield* received(conn)).toHaveLength(FLOOD_BURST)

      // The server falls silent while the queue drains: the keepalive PING goes out ahead of the lines still waiting.
      yield* conn.setAutoPong(false)
      yield* TestClock.adjust(KEEPALIVE_IDLE)
      yield* conn.waitFor((l) => l.command === "PING" && l.params[0] === "belay-keepalive")
      yield* conn.send(":irc.fake.test PONG irc.fake.test :belay-keepalive")
      yield* paced(texts.length)
      expect(yield* receivedCount(conn, texts.length)).toEqual(texts)
      const log = (yield* conn.lines).map(FakeIrcServer.parseLine)
      const ping = log.findIndex((l) => l.command === "PING" && l.params[0] === "belay-keepalive")
      const after = log.slice(ping + 1).filter((l) => l.command === "PRIVMSG")
      expect(after.length).toBeGreaterThan(0)
      expect((yield* h.actor.status.get).state).toBe("connected")
    }))

  it.scoped("a full queue refuses a command whole with SendQueueFull (wire `timeout`); what fits still goes, in order", () =>
    Effect.gen(function*() {
      const { conn, h } = yield* setup()
      // The burst goes at once and SEND_QUEUE_LINES wait behind it: every one of those calls is accepted.
      const accepted = numbered(FLOOD_BURST + SEND_QUEUE_LINES)
      for (const text of accepted) yield* say(h, text)
      yield* receivedCount(conn, FLOOD_BURST)

      const refused = yield* Effect.flip(say(h, "one too many"))
      if (!(refused instanceof SendQueueFull)) return expect.unreachable(`SendQueueFull, got ${String(refused)}`)
      expect(refused).toMatchObject({
        _tag: "SendQueueFull",
        networkId: 1,
        lines: 1,
        waiting: SEND_QUEUE_LINES,
        capacity: SEND_QUEUE_LINES
      })
      const payload = toToolFailurePayload(refused)
      expect(payload.error).toBe("timeout")
      expect(payload.message).toContain(`${SEND_QUEUE_LINES} of ${SEND_QUEUE_LINES} lines waiting`)
      expect(payload.message).toContain("nothing was sent")

      // Two lines drain; a two-line command then fits, a three-line one is refused whole (one long message).
      yield* paced(2)
      yield* receivedCount(conn, FLOOD_BURST + 2)
      const long = (words: number) => Array.from({ length: words }, (_, i) => `w${i}`.padEnd(40, "x")).join(" ")
      expect(yield* Effect.flip(say(h, long(30)))).toMatchObject({ _tag: "SendQueueFull", lines: 3 })
      yield* say(h, long(20))

      yield* paced(SEND_QUEUE_LINES + 2)
      const all = yield* receivedCount(conn, accepted.length + 2)
      expect(all.slice(0, accepted.length)).toEqual(accepted)
      expect(all.slice(accepted.length).join(" ")).toBe(long(20))
      yield* staysAt(conn, accepted.length + 2)
      expect(all).not.toContain("one too many")
    }))

  it.scoped("a command that could never fit the queue is invalid-arguments, and nothing is sent", () =>
    Effect.gen(function*() {
      const { conn, h } = yield* setup()
      const huge = Array.from({ length: (SEND_QUEUE_LINES + 1) * 12 }, (_, i) => `word${i}`.padEnd(40, "y")).join(" ")
      const refused = yield* Effect.flip(say(h, huge))
      if (!(refused instanceof InvalidArguments)) return expect.unreachable(`InvalidArguments, got ${String(refused)}`)
      expect(refused.message).toContain(`at most ${SEND_QUEUE_LINES} can wait`)
      yield* say(h, "after")
      expect(yield* receivedCount(conn, 1)).toEqual(["after"])
    }))

  it.scoped("lines still waiting when the connection ends are neither sent nor stored", () =>
    Effect.gen(function*() {
      const { conn, h } = yield* setup()
      for (const text of numbered(FLOOD_BURST + 3)) yield* say(h, text)
      yield* receivedCount(conn, FLOOD_BURST)
      yield* h.waitMessage((m) => m.self && m.text === `m${FLOOD_BURST}`)
      yield* conn.close("going away")
      yield* h.waitState("backoff")
      yield* paced(4)
      const own = (yield* h.store.all).filter((m) => m.self && m.kind === "privmsg").map((m) => m.text)
      expect(own).toEqual(numbered(FLOOD_BURST))
      expect(yield* received(conn)).toEqual(numbered(FLOOD_BURST))
    }))

  it.scoped("a plaintext line whose target gets an end-to-end key while it waits is not sent", () =>
    Effect.gen(function*() {
      const { conn, h } = yield* setup()
      for (const text of numbered(FLOOD_BURST + 2)) yield* say(h, text)
      yield* receivedCount(conn, FLOOD_BURST)
      yield* h.setE2eKey("#FLOOD", fishKey("cbc:late key"))
      yield* say(h, "marker", "#other")
      yield* paced(3)
      yield* live(
        Effect.gen(function*() {
          while ((yield* received(conn, "#other")).length === 0) yield* Effect.sleep("5 millis")
        })
      )
      expect(yield* received(conn)).toEqual(numbered(FLOOD_BURST))
      const own = (yield* h.store.all).filter((m) => m.self && m.kind === "privmsg").map((m) => m.text)
      expect(own).toEqual([...numbered(FLOOD_BURST), "marker"])
    }))
})
