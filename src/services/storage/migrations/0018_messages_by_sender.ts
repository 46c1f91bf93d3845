/**
 * Search by sender (docs/decisions/history.md "Search by sender"): messages by the RFC 1459 folding of their nick,
 * in id order — the expression MessageHistory.search compares a `nick` filter with (soju.im/search `from`,
 * search_messages `nick`), so a search can read a speaker's lines newest first, or AND them with a term's matches
 * in the GIN index, instead of walking every message of the scope. The expression must stay the search's,
 * character for character: PostgreSQL uses an expression index only for the same expression.
 *
 * Cost: one more btree entry per stored message (about 30 bytes a row: 30 MB at 1,000,000). The build reads the
 * table once and holds writes back while it runs, seconds per million rows (8 s at 1,000,000 on a loaded two-core
 * machine), once, at the upgrade; the ANALYZE after it reads a sample.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX messages_nick_folded ON messages (translate(lower(nick), '[]\\~', '{}|^'), id)`
  // PostgreSQL keeps statistics of an index's expression only from ANALYZE, and autovacuum analyzes a large table
  // only after a tenth of it has changed. Until then the planner would take any nick for one in 200 lines, and AND a
  // common speaker's lines with a rare term's matches instead of filtering those matches: a sample of 30,000 rows now.
  yield* sql`ANALYZE messages`
})
