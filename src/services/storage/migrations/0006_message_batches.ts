/**
 * The key of each message batch the MessageWriter stores, with the range of message ids it took, so a batch whose
 * commit the writer could not hear about (the connection dropped after the statement was sent) is looked up rather
 * than stored twice (docs/decisions/history.md "Message batches and unknown commits"). Every batch statement inserts its key
 * and deletes every other, so the table holds one row, two for the moment of a statement.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE message_batches (
      key uuid PRIMARY KEY,
      first_id bigint NOT NULL,
      last_id bigint NOT NULL
    )`
})
