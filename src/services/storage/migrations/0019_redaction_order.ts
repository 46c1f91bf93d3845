/**
 * Where a redaction falls in the order of stored messages (docs/contract.md "The member's browser surface", WebSocket
 * `?since=`): `redacted_after` is the newest message id stored when the row was redacted (MessageRedactions.ts). A tab
 * that resumes with `since` has seen the messages up to `since`, so the redactions it may have missed are the rows
 * with `redacted_after >= since` and `id <= since` (a row after `since` is replayed whole, already redacted). Message
 * ids come from the one database, so this order holds whichever node applied the redaction and whichever node the
 * tab comes back to. NULL for rows redacted before this migration and for every other row.
 *
 * Cheap on a table of millions of rows, as 0017: ADD COLUMN without a default only changes the catalog; the partial
 * index reads the table once (every existing row has NULL, so it starts empty), once, at the upgrade, and stays as
 * small as the redactions.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE messages ADD COLUMN redacted_after bigint`
  yield* sql`CREATE INDEX messages_redacted_after ON messages (redacted_after) WHERE redacted_after IS NOT NULL`
})
