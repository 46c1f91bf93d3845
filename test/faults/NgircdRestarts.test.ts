/**
 * Fault: ngircd killed (SIGTERM) and restarted 10 times under traffic. A real `belay serve` (BelayProcess.ts) is in
 * #faults on ngircd (Ngircd.ts), reached through ConnectionRelay.ts, which records when each of Belay's connections
 * ended and when the next one arrived. In every period between restarts a raw client sends numbered lines into the
 * channel while a second raw client (the observer) records what ngircd relayed; ngircd is killed while the lines
 * flow. ngircd's shutdown flushes what it has relayed to every member before it closes them, so the observer's lines
 * are exactly the lines delivered to Belay; lines ngircd had read but not yet relayed die with it ("in flight").
 *
 * Each period lasts STABLE_CONNECTION after Belay rejoined, so every drop meets a reset backoff, as a server
 * restarted now and then does in production: no test-only setting shortens Belay's timings (the first retry is
 * RECONNECT_BASE, 2 s, already short).
 *
 * Proves: every reconnect within the product's bound (ReconnectPolicy `reconnectBound(1)`: the first backoff delay
 * plus one connect slot) plus the time to notice the drop and accept, which bench/sections/Networks.ts allows the
 * same 1 s; #faults rejoined after every restart; the stored history is exactly the relayed lines, in order, none
 * twice.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber } from "effect"
import { reconnectBound, STABLE_CONNECTION } from "../../src/actors/ReconnectPolicy.js"
import { runCli, startBelay } from "../support/BelayProcess.js"
import { connectionRelay } from "../support/ConnectionRelay.js"
import { eventually } from "../support/Eventually.js"
import { audit, faultSummary, seconds, storedCount, storedTexts } from "../support/HistoryAudit.js"
import { NGIRCD, ngircd, peer, type Peer } from "../support/Ngircd.js"
import { testEnvironment } from "../support/TestDatabase.js"

const RESTARTS = 10
const CHANNEL = "#faults"
const NICK = "belaybot"
/** The peer's pace: one line every 250 ms, which ngircd relays as it comes (its penalty allows bursts of a few). */
const LINE_EVERY = "250 millis"
/** Lines sent in the last period, after the last restart. */
const LAST_LINES = 20
/** Noticing the drop and accepting the new connection on a loaded machine (bench/sections/Networks.ts: 1 s). */
const NOTICE_SLACK_MS = 1_000
const BOUND_MS = Duration.toMillis(reconnectBound(1)) + NOTICE_SLACK_MS

/** Joins CHANNEL and returns once Belay's nick is in it too (from NAMES, or its JOIN after ours). */
const joinWithBelay = (client: Peer) =>
  Effect.gen(function*() {
    yield* client.send(`JOIN ${CHANNEL}`)
    yield* client.waitFor((l) => / 366 /.test(l))
    const names = (yield* client.received).filter((l) => / 353 /.test(l))
    if (!names.some((l) => new RegExp(`[ :@+]${NICK}( |$)`).test(l))) {
      yield* client.waitFor((l) => l.startsWith(`:${NICK}!`) && new RegExp(` JOIN :?${CHANNEL}$`).test(l))
    }
  })

/** The texts of the channel PRIVMSGs `client` received from `from`, in order. */
const relayedFrom = (client: Peer, from: string) =>
  Effect.map(client.received, (lines) =>
    lines.filter((l) => l.startsWith(`:${from}!`) && l.includes(` PRIVMSG ${CHANNEL} :`))
      .map((l) => l.slice(l.indexOf(` PRIVMSG ${CHANNEL} :`) + ` PRIVMSG ${CHANNEL} :`.length)))

describe("fault: ngircd restarted under traffic", () => {
  it.scopedLive.skipIf(NGIRCD.skip)(`${RESTARTS} restarts: reconnect within the bound, rejoined, history continuous`, () =>
    Effect.gen(function*() {
      const server = yield* ngircd
      const relay = yield* connectionRelay(server.port)
      const env = yield* testEnvironment({ LOG_LEVEL: "info" })
      const belay = yield* startBelay(env)
      const cli = (args: ReadonlyArray<string>, stdin?: string) => runCli(belay.env, args, stdin)
      expect((yield* cli(["account", "add", "alice"], "correct horse battery\n")).code).toBe(0)
      expect((yield* cli(["network", "add", "alice", "--name", "ngircd", "--host", "127.0.0.1", "--port",
        String(relay.port), "--nick", NICK, "--join", CHANNEL])).code).toBe(0)

      const sent: Array<string> = []
      const relayed: Array<string> = []
      const reconnects: Array<number> = []
      const rejoins: Array<number> = []
      let restarts = 0
      /** How many connections the relay had seen when ngircd was last killed. */
      let atKill = 0
      // A period that fails says where Belay stood: its network's state and its last log lines.
      const diagnosed = (period: number) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
        Effect.catchAll(self, (error) =>
          Effect.gen(function*() {
            const list = yield* cli(["network", "list", "alice", "--json"])
            const tail = belay.output().trim().split("\n").slice(-15).join("\n")
            const relayed = relay.connections().map((c) => `${Math.round(c.acceptedAt)}-${Math.round(c.closedAt ?? -1)}`)
            return yield* Effect.fail(new Error(`period ${period}: ${error instanceof Error ? error.message : String(error)}\n` +
              `network list: ${list.stdout.trim()}\nrelay connections: ${relayed.join(" ")}\nbelay log:\n${tail}`))
          }))
      for (let period = 0; period <= RESTARTS; period++) {
        // Nicks of at most 9 characters: ngircd's default MaxNickLength refuses longer ones (432).
        const { observer, talker } = yield* Effect.gen(function*() {
          const talker = yield* peer(server.port, `talk${period}`)
          const observer = yield* peer(server.port, `obs${period}`)
          yield* joinWithBelay(talker)
          yield* joinWithBelay(observer)
          return { observer, talker }
        }).pipe(diagnosed(period))
        const rejoinedAt = performance.now()
        if (period > 0) {
          // The connection ngircd's shutdown ended and the next one Belay opened.
          const all = relay.connections()
          const dropped = all[atKill - 1]!
          const next = all[atKill]!
          reconnects.push(next.acceptedAt - dropped.closedAt!)
          rejoins.push(rejoinedAt - dropped.closedAt!)
        }
        const mine: Array<string> = []
        const talking = yield* Effect.fork(Effect.gen(function*() {
          for (let i = 0; period < RESTARTS || i < LAST_LINES; i++) {
            const text = `period ${period} line ${i}`
            mine.push(text)
            yield* talker.send(`PRIVMSG ${CHANNEL} :${text}`)
            yield* Effect.sleep(LINE_EVERY)
          }
        }))
        if (period < RESTARTS) {
          // Stay up long enough for Belay's backoff to reset, then kill ngircd mid-traffic and start it again.
          yield* Effect.sleep(Duration.sum(STABLE_CONNECTION, Duration.seconds(1)))
          atKill = relay.connections().length
          yield* server.stop
          yield* Fiber.interrupt(talking)
          yield* server.start
          restarts++
        } else {
          yield* Fiber.join(talking)
          yield* eventually("the observer to receive the last lines", relayedFrom(observer, `talk${period}`), (ls) =>
            ls.length === LAST_LINES, "60 seconds")
        }
        const seen = yield* relayedFrom(observer, `talk${period}`)
        // ngircd relays one client's lines in order: what the observer got is the start of what was sent.
        expect(seen).toEqual(mine.slice(0, seen.length))
        sent.push(...mine)
        relayed.push(...seen)
      }

      yield* eventually("the relayed lines stored", storedCount(env.DATABASE_URL!, CHANNEL), (n) => n >= relayed.length,
        "30 seconds").pipe(Effect.ignore)
      const stored = yield* storedTexts(env.DATABASE_URL!, CHANNEL)
      const result = audit(relayed, stored)
      const inFlight = sent.length - relayed.length
      yield* faultSummary(
        `ngircd restarts ${restarts}/${RESTARTS}, rejoined ${rejoins.length}/${RESTARTS}, reconnect max ` +
          `${seconds(Math.max(...reconnects))} (bound ${seconds(BOUND_MS)}; all: ${reconnects.map((r) => (r / 1000).toFixed(2)).join(" ")}), ` +
          `rejoined max ${seconds(Math.max(...rejoins))}; lines sent ${sent.length}, relayed ${relayed.length} ` +
          `(${inFlight} in flight at the kills), stored ${result.stored}, lost ${result.missing.length}, ` +
          `twice ${result.duplicates}, out of order ${result.outOfOrder}`
      )
      expect(restarts).toBe(RESTARTS)
      expect(rejoins).toHaveLength(RESTARTS)
      for (const r of reconnects) expect(r).toBeLessThanOrEqual(BOUND_MS)
      expect(result).toEqual({ stored: relayed.length, duplicates: 0, foreign: 0, outOfOrder: 0, missing: [] })
    }), { timeout: 480_000 })
})
