/**
 * Read markers (docs/decisions/web.md "The web client's server surface"): how far the member has read each buffer, kept
 * on the server so that every tab and device of the member agrees. One row per buffer, keyed as `buffers` is
 * (network_id, target_folded), holding the id of the last message read; a marker only moves forward (ReadMarkers.ts,
 * its only writer). `account_id` is the network's owner, kept so a marker can be checked and listed without a join.
 * The rows go with their network (ON DELETE CASCADE), as the history does.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE read_markers (
      account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      network_id bigint NOT NULL REFERENCES networks(id) ON DELETE CASCADE,
      target_folded text NOT NULL,
      message_id bigint NOT NULL CHECK (message_id > 0),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (network_id, target_folded)
    )`
})
