/**
 * search_messages for a rare or unseen term when the statistics call it common, read from the plans PostgreSQL
 * executes (test/support/QueryPlans.ts): the search reads the newest window and the term's matches, never the rest
 * of the buffer, for an account with one network and with 100.
 *
 * The statistics are made to mislead the way the bench's corpus does at 1,000,000 messages: every word of a small
 * vocabulary is in about one message of eight, so ANALYZE keeps them all as the column's most common elements, and
 * PostgreSQL estimates a term it has no entry for at half the least common one's share, at most half a percent of
 * the table — 150 messages here. A page of newest matches then looks cheaper found by walking the
 * ids down and testing each row than through the GIN index, and for a term in no message that walk reads the whole
 * buffer. The table is small enough (≤ 30,000 rows: the sample of ANALYZE at the default statistics target) that
 * ANALYZE reads all of it, so the statistics are the same on every run; autovacuum is off for it.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { MessageHistory, SEARCH_WINDOW_PER_RESULT, type SearchQuery } from "../../../src/services/history/MessageHistory.js"
import { seedNetworks, seedTwoChannels } from "../../support/MessageFixtures.js"
import { captured, messagePlans, nodes, rowsRead, scansOf } from "../../support/QueryPlans.js"
import { describeMode, TestDatabaseLive } from "../../support/TestDatabase.js"

const MESSAGES = 30_000
/** Words a message is made of, each drawn from VOCABULARY words. */
const WORDS_PER_MESSAGE = 8
const VOCABULARY = 64
/** "needle" is in two of the oldest messages (1-based, as generate_series numbers them). */
const NEEDLES = [5, 17]
/**
 * Lines in each network's server buffer, written after the channel (the newest ids are theirs, as in the bench), in
 * the same words, so that they add no rarer element to the statistics.
 */
const SERVER_LINES = 3
/**
 * A page of 10: the planner's estimate for a term it does not know is capped at half a percent of the table
 * (DEFAULT_TS_MATCH_SEL), 150 of these 30,000 messages, and a page must be well below that for the walk to look cheap.
 */
const LIMIT = 10

describe(`search_messages plans on ${describeMode} when the statistics call a rare term common`, () => {
  for (const networkCount of [1, 100]) {
    // A memo map of its own: the layers of the two cases would otherwise share one database.
    const memoMap = Effect.runSync(Layer.makeMemoMap)
    layer(MessageHistory.Default.pipe(Layer.provideMerge(TestDatabaseLive())), { timeout: 300_000, memoMap })((it) => {
      it.effect(`an account with ${networkCount} network${networkCount === 1 ? "" : "s"}: the window and the matches`, () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const history = yield* MessageHistory
          yield* sql`ALTER TABLE messages SET (autovacuum_enabled = false)`
          const { accountId, networkIds } = yield* seedNetworks(networkCount)
          const [chat] = yield* sql<{ id: number }>`
            INSERT INTO buffers (network_id, target, target_folded, kind)
            VALUES (${networkIds[0]!}, '#chat', '#chat', 'channel') RETURNING id`
          yield* sql`
            INSERT INTO messages (buffer_id, time, kind, nick, text)
            SELECT ${chat!.id}, now(), 'privmsg', 'user' || (i % 20),
              (SELECT string_agg('w' || ((i * 7919 + j * 104729 + (i / 7) * j) % ${VOCABULARY}), ' ')
               FROM generate_series(1, ${WORDS_PER_MESSAGE}) AS j)
              || CASE WHEN i IN (${NEEDLES[0]!}, ${NEEDLES[1]!}) THEN ' needle' ELSE '' END
            FROM generate_series(1, ${MESSAGES}) AS i`
          for (const networkId of networkIds) {
            const [server] = yield* sql<{ id: number }>`
              INSERT INTO buffers (network_id, target, target_folded, kind)
              VALUES (${networkId}, ${`:server:${networkId}`}, ${`:server:${networkId}`}, 'server') RETURNING id`
            yield* sql`
              INSERT INTO messages (buffer_id, time, kind, nick, text, numeric)
              SELECT ${server!.id}, now(), 'numeric', 'irc.example.org', 'w1 w2 w' || i, '001'
              FROM generate_series(1, ${SERVER_LINES}) AS i`
          }
          yield* sql`ANALYZE messages, buffers`
          const [first] = yield* sql<{ id: number }>`SELECT min(id) AS id FROM messages WHERE buffer_id = ${chat!.id}`
          const idOf = (i: number) => first!.id + i - 1

          // The premise: the planner believes an unseen term is in hundreds of messages, far more than a page.
          const [estimate] = yield* sql.unsafe<{ "QUERY PLAN": ReadonlyArray<{ Plan: { "Plan Rows": number } }> }>(
            "EXPLAIN (FORMAT JSON) SELECT id FROM messages WHERE tsv @@ websearch_to_tsquery('simple', 'qqqq')"
          )
          expect(estimate!["QUERY PLAN"][0]!.Plan["Plan Rows"]).toBeGreaterThan(4 * LIMIT)

          const search = (query: string, nick: Option.Option<string> = Option.none()) =>
            captured(history.search({
              accountId,
              query,
              networkId: Option.none(),
              targetFolded: Option.none(),
              nick,
              limit: LIMIT
            } satisfies SearchQuery))

          const buffers = 2 * networkCount
          for (const [label, query, nick, expected] of [
            ["a term in no message", "qqqq", Option.none(), []],
            ["a term in two messages, the oldest", "needle", Option.none(), [idOf(NEEDLES[1]!), idOf(NEEDLES[0]!)]],
            ["the same with a nick filter", "needle", Option.some(`user${NEEDLES[1]! % 20}`), [idOf(NEEDLES[1]!)]]
          ] as const) {
            const { result, statements } = yield* search(query, nick)
            expect(result.map((m) => m.id), label).toEqual(expected)
            expect(result.every((m) => m.target === "#chat" && m.networkId === networkIds[0]), label).toBe(true)
            const [scope, window, ...below] = yield* messagePlans(statements)
            // The scope: the first and the last entry of each buffer in (buffer_id, id).
            expect(rowsRead(scope!, "messages"), `${label}: scope`).toBeLessThanOrEqual(2 * buffers)
            // The window: at most its ids, whatever the term.
            expect(rowsRead(window!, "messages"), `${label}: window`).toBeLessThanOrEqual(LIMIT * SEARCH_WINDOW_PER_RESULT)
            // Below it: one statement, the GIN index's matches and nothing else.
            expect(below.length, `${label}: one statement below the window`).toBe(1)
            expect(rowsRead(below[0]!, "messages"), `${label}: below the window`).toBeLessThanOrEqual(NEEDLES.length)
            const scans = scansOf(below[0]!, "messages")
            expect(scans.map((n) => n["Node Type"]), label).toEqual(["Bitmap Heap Scan"])
            expect(
              nodes(below[0]!).filter((n) => n["Node Type"] === "Bitmap Index Scan").map((n) => n["Index Name"]),
              label
            ).toContain("messages_tsv")
          }
        }))
    })
  }
})

/**
 * Every route search can take gives the newest matches, the same as a plain `ORDER BY id DESC LIMIT` over every
 * match: the window alone, a walk on below it, the GIN probe, a walk that finds nothing before the probe, and a probe
 * that finds too many for its cap before the last walk. Which route a term takes follows from where its matches
 * are (MessageHistory's cost rule), so each term is placed for one of them, and the statements say which it took.
 */
describe(`search_messages routes on ${describeMode}`, () => {
  const memoMap = Effect.runSync(Layer.makeMemoMap)
  layer(MessageHistory.Default.pipe(Layer.provideMerge(TestDatabaseLive())), { timeout: 300_000, memoMap })((it) => {
    it.effect("each route answers the newest matches, with and without a nick filter", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const history = yield* MessageHistory
        const { accountId, net, other, chat, room } = yield* seedTwoChannels
        // i from 1 to MESSAGES; the newest window of a page of 10 is the last 1,000.
        yield* sql`
          INSERT INTO messages (buffer_id, time, kind, nick, text)
          SELECT CASE WHEN i % 10 = 0 THEN ${room!.id}::int8 ELSE ${chat!.id}::int8 END, now(), 'privmsg', 'user' || (i % 7),
            'line ' || i
            || CASE WHEN i % 3 = 0 THEN ' dense' ELSE '' END
            || CASE WHEN i % 200 = 3 THEN ' mid' ELSE '' END
            || CASE WHEN i IN (15, 22, 29) THEN ' rare' ELSE '' END
            || CASE WHEN i <= 6000 AND i % 5 = 1 THEN ' oldburst' ELSE '' END
            || CASE WHEN (i > ${MESSAGES - 1000} AND i % 250 = 1) OR i IN (101, 201, 301, 401, 501, 601, 701)
                 THEN ' gap' ELSE '' END
          FROM generate_series(1, ${MESSAGES}) AS i`
        yield* sql`ANALYZE messages, buffers`

        const routeOf = (statements: ReadonlyArray<readonly [string, ReadonlyArray<unknown>]>) =>
          statements
            .filter(([text]) => /\bmessages\b/.test(text))
            .slice(1)
            .map(([text]) => (/MATERIALIZED/.test(text) ? "probe" : "walk"))
        for (const [query, route] of [
          ["dense", ["walk"]],
          ["mid", ["walk", "walk"]],
          ["rare", ["walk", "probe"]],
          ["oldburst", ["walk", "probe", "walk"]],
          ["gap", ["walk", "walk", "probe"]]
        ] as const) {
          for (const nick of [Option.none(), Option.some("USER1")]) {
            const { result, statements } = yield* captured(history.search({
              accountId,
              query,
              networkId: Option.none(),
              targetFolded: Option.none(),
              nick,
              limit: LIMIT
            }))
            const byNick = Option.match(nick, { onNone: () => sql``, onSome: (n) => sql`AND nick = lower(${n})` })
            const expected = yield* sql<{ id: number }>`
              SELECT id FROM messages WHERE tsv @@ websearch_to_tsquery('simple', ${query}) ${byNick}
              ORDER BY id DESC LIMIT ${LIMIT}`
            const label = `${query}${Option.isSome(nick) ? " by user1" : ""}`
            expect(result.map((m) => m.id), label).toEqual(expected.map((r) => r.id))
            expect(result.length, label).toBeGreaterThan(0)
            if (Option.isNone(nick)) expect(routeOf(statements), label).toEqual(route)
          }
        }
      }))
  })
})
