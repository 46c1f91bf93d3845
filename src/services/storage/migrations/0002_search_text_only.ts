/**
 * search_messages matches the message text only: the speaker has its own `nick` filter
 * (docs/decisions/history.md, "search"). 0001 indexed the nick with the text, so a search for a
 * word could find every line a person of that name said. A generated column cannot be
 * altered in place on PostgreSQL 15, so the column and its GIN index are rebuilt; this
 * rewrites `messages` once, inside the migration's transaction.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE messages DROP COLUMN tsv`
  yield* sql`ALTER TABLE messages ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED`
  yield* sql`CREATE INDEX messages_tsv ON messages USING gin (tsv)`
})
