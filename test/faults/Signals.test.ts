/**
 * Fault: `belay serve` (BelayProcess.ts) stopped by a signal while a fake IRC server (FakeIrcServer.ts) floods a
 * channel at 1,000 lines a second. A fence marks what Belay has received: after line F the server sends
 * `PING :fence`, and Belay's PONG (written after it has read every earlier line) is the moment the signal goes.
 *
 * Proves:
 * - SIGTERM: exit 0, every line up to the fence stored, and what is stored is the start of the flood in order,
 *   none twice (docs/decisions/several-nodes.md "Shutdown": the actors stop, then the history is flushed).
 * - SIGKILL: nothing can be flushed; the lines up to the fence that are lost are at most one batch (the
 *   MessageWriter's `batchRows`, 500 rows: a batch goes out at 500 rows or 100 ms after its first, and at this rate
 *   100 ms is about 100 lines). What is stored is still the start of the flood, in order, none twice; a restart on
 *   the same database connects again and stores new lines after the old ones.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { defaultOptions } from "../../src/services/history/MessageWriter.js"
import { type RunningBelay, runCli, startBelay } from "../support/BelayProcess.js"
import { eventually } from "../support/Eventually.js"
import * as FakeIrcServer from "../support/FakeIrcServer.js"
import { audit, faultSummary, storedTexts } from "../support/HistoryAudit.js"
import { testEnvironment } from "../support/TestDatabase.js"

const CHANNEL = "#ingest"
const LINES = 10_000
const CHUNK = 50
/** 50 lines every 50 ms: 1,000 a second, so the writer's 100 ms window holds about 100 lines. */
const CHUNK_EVERY = "50 millis"
/** The fence follows this line (2 s into the flood). */
const FENCE_AFTER = 2_000

const text = (i: number) => `ingest ${String(i).padStart(5, "0")}`
const SENT = Array.from({ length: LINES }, (_, i) => text(i))

/** Belay with one account and a network on `irc`, joined to CHANNEL; returns the connection and Belay's nick. */
const connected = (irc: FakeIrcServer.FakeIrcServer, belay: RunningBelay, add: boolean) =>
  Effect.gen(function*() {
    const cli = (args: ReadonlyArray<string>, stdin?: string) => runCli(belay.env, args, stdin)
    if (add) {
      expect((yield* cli(["account", "add", "alice"], "correct horse battery\n")).code).toBe(0)
      expect((yield* cli(["network", "add", "alice", "--name", "fake", "--host", "127.0.0.1", "--port",
        String(irc.port), "--join", CHANNEL])).code).toBe(0)
    }
    const conn = yield* irc.nextConnection("30 seconds")
    const { nick } = yield* conn.register()
    yield* conn.waitFor(`JOIN ${CHANNEL}`, "30 seconds")
    yield* conn.send(`:${nick}!belay@127.0.0.1 JOIN ${CHANNEL}`)
    return conn
  })

/** Floods SENT[from…] at CHUNK_EVERY, with `PING :fence` after line FENCE_AFTER; ends at the first failed write. */
const flood = (conn: FakeIrcServer.FakeIrcConnection) =>
  Effect.gen(function*() {
    for (let i = 0; i < LINES; i += CHUNK) {
      const lines = SENT.slice(i, i + CHUNK).map((t) => `:flooder!f@flood.example PRIVMSG ${CHANNEL} :${t}`)
      if (i < FENCE_AFTER && i + CHUNK >= FENCE_AFTER) lines.splice(FENCE_AFTER - i, 0, "PING :fence")
      yield* conn.send(...lines)
      yield* Effect.sleep(CHUNK_EVERY)
    }
  }).pipe(Effect.ignore)

const isFencePong = (l: FakeIrcServer.FakeLine) => l.command === "PONG" && l.params.includes("fence")

const exited = (belay: RunningBelay) =>
  Effect.promise(() =>
    new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      if (belay.process.exitCode !== null || belay.process.signalCode !== null) {
        return resolve({ code: belay.process.exitCode, signal: belay.process.signalCode })
      }
      belay.process.once("exit", (code, signal) => resolve({ code, signal }))
    })
  )

describe("fault: belay serve stopped while ingesting", () => {
  it.scopedLive("SIGTERM: exit 0 and every line received before the signal stored", () =>
    Effect.gen(function*() {
      const irc = yield* FakeIrcServer.make()
      const env = yield* testEnvironment()
      const belay = yield* startBelay(env)
      const conn = yield* connected(irc, belay, true)
      const flooding = yield* Effect.fork(flood(conn))
      yield* conn.waitFor(isFencePong, "30 seconds")
      const signalled = performance.now()
      belay.process.kill("SIGTERM")
      const exit = yield* exited(belay)
      const stoppedIn = performance.now() - signalled
      yield* Fiber.interrupt(flooding)

      const stored = yield* storedTexts(env.DATABASE_URL!, CHANNEL)
      const result = audit(SENT.slice(0, stored.length), stored)
      yield* faultSummary(
        `SIGTERM while ingesting: exit ${exit.code} after ${(stoppedIn / 1000).toFixed(2)} s; ${FENCE_AFTER} lines ` +
          `received before the signal, ${stored.length} stored (${Math.max(0, FENCE_AFTER - stored.length)} lost), ` +
          `${result.duplicates} twice, ${result.outOfOrder} out of order`
      )
      expect(exit).toEqual({ code: 0, signal: null })
      expect(stored.length).toBeGreaterThanOrEqual(FENCE_AFTER)
      // The start of the flood, in order, none twice, nothing else.
      expect(result).toEqual({ stored: stored.length, duplicates: 0, foreign: 0, outOfOrder: 0, missing: [] })
    }), { timeout: 120_000 })

  it.scopedLive("SIGKILL: at most one batch lost, and a restart resumes", () =>
    Effect.gen(function*() {
      const irc = yield* FakeIrcServer.make()
      const env = yield* testEnvironment()
      const belay = yield* startBelay(env)
      const conn = yield* connected(irc, belay, true)
      const flooding = yield* Effect.fork(flood(conn))
      yield* conn.waitFor(isFencePong, "30 seconds")
      belay.process.kill("SIGKILL")
      const exit = yield* exited(belay)
      yield* Fiber.interrupt(flooding)
      const stored = yield* storedTexts(env.DATABASE_URL!, CHANNEL)
      const before = audit(SENT.slice(0, stored.length), stored)
      const lost = Math.max(0, FENCE_AFTER - stored.length)

      // The same database and data directory: Belay connects again and stores new lines after the old ones.
      const again = yield* startBelay(belay.env)
      const resumed = yield* connected(irc, again, false)
      const after = Array.from({ length: 100 }, (_, i) => `after restart ${i}`)
      yield* resumed.send(...after.map((t) => `:flooder!f@flood.example PRIVMSG ${CHANNEL} :${t}`))
      const all = yield* eventually("the new lines stored", storedTexts(env.DATABASE_URL!, CHANNEL), (ts) =>
        ts.length >= stored.length + after.length, "30 seconds")
      const whole = audit([...SENT.slice(0, stored.length), ...after], all)

      yield* faultSummary(
        `SIGKILL while ingesting: ${FENCE_AFTER} lines received before the signal, ${stored.length} stored, ` +
          `${lost} lost (bound: one batch, ${defaultOptions.batchRows} rows), ${before.duplicates} twice; ` +
          `restart reconnected and stored ${all.length - stored.length}/${after.length} new lines`
      )
      expect(exit.signal).toBe("SIGKILL")
      expect(lost).toBeLessThanOrEqual(defaultOptions.batchRows)
      expect(before).toEqual({ stored: stored.length, duplicates: 0, foreign: 0, outOfOrder: 0, missing: [] })
      expect(whole).toEqual({ stored: stored.length + after.length, duplicates: 0, foreign: 0, outOfOrder: 0, missing: [] })
    }), { timeout: 120_000 })
})
