/**
 * HistoryRetention against a real database (docs/decisions/account-limits.md "Retention: windows of the oldest ids,
 * one node at a time"): a window deletes at most its batch, a round deletes every old line and nothing newer, a page
 * kept in memory loses them too, two rounds at once (two nodes) delete each line once and fail nothing, and a round
 * that meets another node's lock leaves the work to it.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Option } from "effect"
import { HistoryRetention } from "../../../src/services/history/HistoryRetention.js"
import { MessageHistory } from "../../../src/services/history/MessageHistory.js"
import { MessageWriter } from "../../../src/services/history/MessageWriter.js"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import { message, seedNetworks as seed, T0 } from "../../support/MessageFixtures.js"
import { describeMode, TestDatabaseLive } from "../../support/TestDatabase.js"

const DAY = 86_400_000
const cutoff = new Date(T0 - 30 * DAY)

/** `old` lines 40 days before T0, then `fresh` lines at T0, in one buffer; its network id. */
const fill = (old: number, fresh: number, target = "#r") =>
  Effect.gen(function*() {
    const { networkIds: [net] } = yield* seed()
    const writer = yield* MessageWriter
    for (let i = 0; i < old; i++) yield* writer.append(message(net!, target, `old ${i}`, { time: new Date(T0 - 40 * DAY + i) }))
    for (let i = 0; i < fresh; i++) yield* writer.append(message(net!, target, `new ${i}`, { time: new Date(T0 + i) }))
    yield* writer.flush
    return net!
  })

const texts = (net: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ text: string }>`
        SELECT m.text FROM messages m JOIN buffers b ON b.id = m.buffer_id WHERE b.network_id = ${net} ORDER BY m.id`,
      (rows) => rows.map((r) => r.text)
    ))

describe(`HistoryRetention on ${describeMode}`, () => {
  it.layer(
    Layer.mergeAll(HistoryRetention.Default, MessageWriter.Default, MessageHistory.Default, Networks.Default, Accounts.Default)
      .pipe(Layer.provideMerge(TestDatabaseLive({ BELAY_HISTORY_RETENTION_DAYS: "30" }))),
    { timeout: 120_000 }
  )((it) => {
    it.effect("a window deletes at most its batch; a round deletes every old line and no newer one", () =>
      Effect.gen(function*() {
        const retention = yield* HistoryRetention
        const net = yield* fill(1_200, 50)
        const first = yield* retention.pruneWindow(0, cutoff, 500)
        expect(first.deleted).toBe(500)
        expect(Option.isSome(first.next)).toBe(true)
        yield* retention.pruneBefore(cutoff, "0 millis")
        const left = yield* texts(net)
        expect(left).toEqual(Array.from({ length: 50 }, (_, i) => `new ${i}`))
        // Again: nothing old is left, and the round stops at the first window.
        expect(yield* retention.pruneBefore(cutoff, "0 millis")).toBe(0)
      }))

    it.effect("a page kept in memory loses the old lines too", () =>
      Effect.gen(function*() {
        const history = yield* MessageHistory
        const net = yield* fill(5, 3, "#kept")
        const page = () => Effect.map(history.recent(net, "#kept", { before: Option.none(), limit: 100 }), (r) => r.map((m) => m.text))
        expect(yield* page()).toHaveLength(8)
        // Read again: from memory (RecentPages).
        expect(yield* page()).toHaveLength(8)
        yield* (yield* HistoryRetention).pruneBefore(cutoff, "0 millis")
        expect(yield* page()).toEqual(["new 0", "new 1", "new 2"])
      }))

    it.effect("two rounds at once (two nodes) delete each line once; a held lock leaves the round to its holder", () =>
      Effect.gen(function*() {
        const retention = yield* HistoryRetention
        const sql = yield* SqlClient.SqlClient
        const net = yield* fill(1_500, 10)
        const both = yield* Effect.all([retention.pruneBefore(cutoff, "0 millis"), retention.pruneBefore(cutoff, "0 millis")], {
          concurrency: 2
        })
        expect(both[0] + both[1]).toBeGreaterThanOrEqual(1_500)
        expect(yield* texts(net)).toHaveLength(10)

        const other = yield* fill(20, 0)
        const held = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const holder = yield* sql.withTransaction(
          Effect.zipRight(
            sql`SELECT pg_advisory_xact_lock(${0x42656c61}, 1)`,
            Effect.zipRight(Deferred.succeed(held, undefined), Deferred.await(release))
          )
        ).pipe(Effect.fork)
        yield* Deferred.await(held)
        expect(yield* retention.pruneWindow(0, cutoff)).toEqual({ deleted: 0, next: Option.none() })
        expect(yield* texts(other)).toHaveLength(20)
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(holder)
        yield* retention.pruneBefore(cutoff, "0 millis")
        expect(yield* texts(other)).toHaveLength(0)
      }))
  })
})
