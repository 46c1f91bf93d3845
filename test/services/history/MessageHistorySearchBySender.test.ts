/**
 * search_messages with a nick filter (soju.im/search `from`, with and without `in`) on a word its speaker rarely
 * says, and only in old history (docs/decisions/history.md "Search by sender"): the answer is the newest matches,
 * the same as a plain `ORDER BY id DESC LIMIT` with RFC 1459 folding of the nick, and below the window the search
 * reads the term's probe and at most the word's matches or the speaker's lines (the GIN index and
 * messages_nick_folded), not the scope's history down to the speaker's matches, read from the plans PostgreSQL
 * executes (test/support/QueryPlans.ts).
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { MessageHistory, SEARCH_PROBE_PER_RESULT, SEARCH_WINDOW_PER_RESULT } from "../../../src/services/history/MessageHistory.js"
import { seedTwoChannels } from "../../support/MessageFixtures.js"
import { captured, messagePlans, rowsRead } from "../../support/QueryPlans.js"
import { describeMode, TestDatabaseLive } from "../../support/TestDatabase.js"

const MESSAGES = 20_000
const NICKS = 20
const LIMIT = 10
/**
 * "mid" is in about one line of 20 (a hash of the line's number modulo a prime), more than the probe's cap (40 a
 * result: 400); the speaker, nick 7 of 20 (`User[7]`, found as `user{7}` by RFC 1459 folding), says it in about 15
 * of its 1,000 lines, all among the oldest 6,000, and user3 never.
 */
const MID = "(i * 7919) % 97 < 5 AND i % 20 <> 3 AND (i % 20 <> 7 OR i <= 6000)"

describe(`search_messages by sender on ${describeMode}`, () => {
  const memoMap = Effect.runSync(Layer.makeMemoMap)
  layer(MessageHistory.Default.pipe(Layer.provideMerge(TestDatabaseLive())), { timeout: 300_000, memoMap })((it) => {
    it.effect("a word its speaker rarely says: the newest matches, reading its matches or the speaker's lines", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const history = yield* MessageHistory
        const { accountId, net, other, chat, room } = yield* seedTwoChannels
        // One line in three in #room, the rest in #chat; the speaker talks in both.
        yield* sql`
          INSERT INTO messages (buffer_id, time, kind, nick, text)
          SELECT CASE WHEN i % 3 = 0 THEN ${room!.id}::int8 ELSE ${chat!.id}::int8 END, now(), 'privmsg',
            CASE WHEN i % ${NICKS} = 7 THEN 'User[7]' ELSE 'user' || (i % ${NICKS}) END,
            'line ' || i || CASE WHEN ${sql.literal(MID)} THEN ' mid' ELSE '' END
          FROM generate_series(1, ${MESSAGES}) AS i`
        yield* sql`ANALYZE messages, buffers`
        const [speaker] = yield* sql<{ lines: number }>`
          SELECT count(*)::int AS lines FROM messages WHERE nick = 'User[7]'`
        const [mid] = yield* sql<{ lines: number }>`
          SELECT count(*)::int AS lines FROM messages WHERE tsv @@ websearch_to_tsquery('simple', 'mid')`
        // The term's probe reads its cap and one more; the speaker's, whichever bitmap plan it gets (the two indexes
        // ANDed, or either alone and a filter), no more than the word's matches or the speaker's lines.
        const bound = LIMIT * SEARCH_PROBE_PER_RESULT + 1 + Math.max(speaker!.lines, mid!.lines)

        const cases = [
          { label: "from", query: "mid", nick: "user{7}", buffer: undefined },
          { label: "in #chat, from", query: "mid", nick: "USER[7]", buffer: { networkId: net!, target: "#chat" } },
          { label: "in #room, from", query: "mid", nick: "user{7}", buffer: { networkId: other!, target: "#room" } },
          { label: "from, a word the speaker never says", query: "mid", nick: "user3", buffer: undefined },
          {
            label: "in #chat, from, the speaker's every line",
            query: "line",
            nick: "user{7}",
            buffer: { networkId: net!, target: "#chat" }
          }
        ] as const
        for (const c of cases) {
          const { result, statements } = yield* captured(history.search({
            accountId,
            query: c.query,
            networkId: c.buffer === undefined ? Option.none() : Option.some(c.buffer.networkId),
            targetFolded: c.buffer === undefined ? Option.none() : Option.some(c.buffer.target),
            nick: Option.some(c.nick),
            limit: LIMIT
          }))
          const inBuffer = c.buffer === undefined
            ? sql``
            : sql`AND buffer_id = ${c.buffer.target === "#chat" ? chat!.id : room!.id}`
          const expected = yield* sql<{ id: number }>`
            SELECT id FROM messages
            WHERE tsv @@ websearch_to_tsquery('simple', ${c.query}) ${inBuffer}
              AND translate(lower(nick), '[]\\~', '{}|^') = translate(lower(${c.nick}), '[]\\~', '{}|^')
            ORDER BY id DESC LIMIT ${LIMIT}`
          expect(result.map((m) => m.id), c.label).toEqual(expected.map((r) => r.id))
          if (c.nick !== "user3") expect(result.length, c.label).toBeGreaterThan(0)

          // The scope, then the window (at most its ids), then below it the word's matches or the speaker's lines.
          const [, window, ...below] = yield* messagePlans(statements)
          expect(rowsRead(window!, "messages"), `${c.label}: window`).toBeLessThanOrEqual(LIMIT * SEARCH_WINDOW_PER_RESULT)
          const readBelow = below.reduce((sum, plan) => sum + rowsRead(plan, "messages"), 0)
          expect(readBelow, `${c.label}: below the window`).toBeLessThanOrEqual(bound)
        }
      }))
  })
})
