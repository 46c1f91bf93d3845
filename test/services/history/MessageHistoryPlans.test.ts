/**
 * What MessageHistory's reads cost on a buffer of 200,000 messages, read from the plans PostgreSQL executes
 * (test/support/QueryPlans.ts: every statement the service runs, replayed under `EXPLAIN (ANALYZE, FORMAT JSON)`).
 * Counted: the rows each plan read from `messages` — rows returned by its scans plus those its filters removed, over
 * every loop — and the rows each Sort node took in. No timing anywhere.
 *
 * Both planner states are covered: before the table has statistics (autovacuum is off for it here, so the state is
 * not left to chance) and after an ANALYZE, when the planner knows one buffer is nearly the whole table (the state in
 * which an equality on buffer_id made it walk the primary key through the other buffers' rows).
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { MessageHistory, SEARCH_WINDOW_PER_RESULT, type SearchQuery } from "../../../src/services/history/MessageHistory.js"
import { seedNetworks } from "../../support/MessageFixtures.js"
import { captured, messagePlans, rowsRead, rowsSorted } from "../../support/QueryPlans.js"
import { describeMode, TestDatabaseLive } from "../../support/TestDatabase.js"

const BIG = 200_000
/** Rows of a second buffer written after the big one: the newest ids of the table belong to it. */
const NEWER = 2_000
/** Every tenth message of the big buffer says "common"; one in a thousand "sparse"; two of the oldest "needle". */
const COMMON_EVERY = 10
const SPARSE_EVERY = 1_000
const NEEDLES = [3, 11]

describe(`MessageHistory plans on ${describeMode}, ${BIG.toLocaleString("en-US")} messages in one buffer`, () => {
  it.layer(MessageHistory.Default.pipe(Layer.provideMerge(TestDatabaseLive())), { timeout: 300_000 })((it) => {
    it.effect("every read stops at its page, with and without statistics", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const history = yield* MessageHistory
        yield* sql`ALTER TABLE messages SET (autovacuum_enabled = false)`
        const { accountId, networkIds: [net, net2] } = yield* seedNetworks(2)
        const [big] = yield* sql<{ id: number }>`
          INSERT INTO buffers (network_id, target, target_folded, kind) VALUES (${net!}, '#Big', '#big', 'channel')
          RETURNING id`
        const [newer] = yield* sql<{ id: number }>`
          INSERT INTO buffers (network_id, target, target_folded, kind) VALUES (${net2!}, '#newer', '#newer', 'channel')
          RETURNING id`
        yield* sql`INSERT INTO buffers (network_id, target, target_folded, kind) VALUES (${net!}, 'bob', 'bob', 'dm')`
        yield* sql`
          INSERT INTO messages (buffer_id, time, kind, nick, text)
          SELECT ${big!.id}, now(), 'privmsg', 'user' || (i % 50), 'line ' || i
            || CASE WHEN i % ${COMMON_EVERY} = 0 THEN ' common' ELSE '' END
            || CASE WHEN i % ${SPARSE_EVERY} = 7 THEN ' sparse' ELSE '' END
            || CASE WHEN i IN (${NEEDLES[0]!}, ${NEEDLES[1]!}) THEN ' needle' ELSE '' END
          FROM generate_series(1, ${BIG}) AS i`
        yield* sql`
          INSERT INTO messages (buffer_id, time, kind, nick, text)
          SELECT ${newer!.id}, now(), 'privmsg', 'someone', 'newer ' || i FROM generate_series(1, ${NEWER}) AS i`
        const [first] = yield* sql<{ id: number }>`SELECT min(id) AS id FROM messages WHERE buffer_id = ${big!.id}`
        /** The id of the big buffer's i-th message (1-based), as generate_series numbered them. */
        const idOf = (i: number) => first!.id + i - 1

        const search = (query: string, limit: number) =>
          captured(history.search({
            accountId,
            query,
            networkId: Option.none(),
            targetFolded: Option.none(),
            nick: Option.none(),
            limit
          } satisfies SearchQuery))

        for (const state of ["without statistics", "after ANALYZE"] as const) {
          if (state === "after ANALYZE") yield* sql`ANALYZE messages, buffers`
          // Each state reads through its own MessageHistory, so the newest page is not yet kept in memory.
          const reader = yield* Effect.provide(MessageHistory, MessageHistory.Default)

          // recent_messages: the page, and nothing of the other 199,900 messages or of the newer buffer.
          for (const before of [Option.none(), Option.some(idOf(BIG / 2))]) {
            const { result, statements } = yield* captured(reader.recent(net!, "#big", { before, limit: 100 }))
            const expectedNewest = Option.isSome(before) ? BIG / 2 - 1 : BIG
            expect(result.map((m) => m.id), state).toEqual(
              Array.from({ length: 100 }, (_, k) => idOf(expectedNewest - 99 + k))
            )
            const [plan, ...more] = yield* messagePlans(statements)
            expect(more, state).toEqual([])
            expect(rowsRead(plan!, "messages"), `recent ${state}`).toBe(100)
            // Three buffers in all: with statistics the planner rightly scans that tiny table instead of its index.
            expect(rowsRead(plan!, "buffers"), `recent ${state}`).toBeLessThanOrEqual(3)
            expect(rowsSorted(plan!), `recent ${state}: only the page is put oldest first`).toBeLessThanOrEqual(100)
          }
          // The newest page, read again, is answered from memory (RecentPages): no statement at all.
          {
            const { result, statements } = yield* captured(reader.recent(net!, "#big", { before: Option.none(), limit: 100 }))
            expect(result.map((m) => m.id)).toEqual(Array.from({ length: 100 }, (_, k) => idOf(BIG - 99 + k)))
            expect(statements).toEqual([])
          }

          // list_buffers: one index entry per buffer tells it has history.
          {
            const { result, statements } = yield* captured(history.listBuffers(accountId, Option.none()))
            expect(result.map((b) => b.target).sort(), state).toEqual(["#Big", "#newer"])
            const [plan, ...more] = yield* messagePlans(statements)
            expect(more, state).toEqual([])
            expect(rowsRead(plan!, "messages"), `listBuffers ${state}`).toBeLessThanOrEqual(3)
            expect(rowsRead(plan!, "buffers"), `listBuffers ${state}`).toBeLessThanOrEqual(3)
          }

          // search_messages, a term in one message of ten (20,000 matches): the newest window answers; it reads at
          // most the window's rows and sorts at most the window's matches, never the buffer's.
          for (const limit of [50, 100]) {
            const window = limit * SEARCH_WINDOW_PER_RESULT
            const { result, statements } = yield* search("common", limit)
            expect(result.map((m) => m.id), state).toEqual(
              Array.from({ length: limit }, (_, k) => idOf(BIG - k * COMMON_EVERY))
            )
            const [scope, newest, ...rest] = yield* messagePlans(statements)
            expect(rest, `search common ${state}: no statement beyond the window`).toEqual([])
            expect(rowsRead(scope!, "messages"), `search scope ${state}: two index entries per buffer`).toBeLessThanOrEqual(4)
            expect(rowsRead(newest!, "messages"), `search common ${state}`).toBeLessThanOrEqual(window)
            expect(rowsSorted(newest!), `search common ${state}`).toBeLessThanOrEqual(window / COMMON_EVERY)
          }

          // A rare term (200 matches) and one in two of the oldest messages: the window finds too few, and the rest
          // is read through the GIN index below it, whether or not the planner has statistics: the rows read and
          // sorted there are the matches.
          for (const [term, matches, expected] of [
            ["sparse", BIG / SPARSE_EVERY, Array.from({ length: 50 }, (_, k) => idOf(BIG - SPARSE_EVERY + 7 - k * SPARSE_EVERY))],
            ["needle", NEEDLES.length, [idOf(NEEDLES[1]!), idOf(NEEDLES[0]!)]]
          ] as const) {
            const { result, statements } = yield* search(term, 50)
            expect(result.map((m) => m.id), `${term} ${state}`).toEqual(expected)
            const [, newest, older, ...more] = yield* messagePlans(statements)
            expect(more, state).toEqual([])
            expect(rowsRead(newest!, "messages"), `search ${term} window ${state}`).toBeLessThanOrEqual(50 * SEARCH_WINDOW_PER_RESULT)
            expect(rowsRead(older!, "messages"), `search ${term} below the window ${state}`).toBeLessThanOrEqual(matches)
            expect(rowsSorted(older!), `search ${term} below the window ${state}`).toBeLessThanOrEqual(matches)
          }
        }
      }))
  })
})
