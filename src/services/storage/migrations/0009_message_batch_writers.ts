/**
 * Several writers on one database (cluster mode, docs/decisions/several-nodes.md "Several nodes"): each key of `message_batches`
 * names the writer that stored it, so a writer deletes only its own earlier keys, and records when it was stored, so
 * the keys a writer left behind when its process ended are pruned after a day (docs/decisions/history.md "Message batches and
 * unknown commits"). `ids` holds the batch's own message ids: with several writers the ids between a batch's first
 * and last may be another writer's too. Both columns may be NULL, so a node not yet upgraded can still store batches
 * while the others roll.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    ALTER TABLE message_batches
      ADD COLUMN writer uuid,
      ADD COLUMN ids bigint[],
      ADD COLUMN stored_at timestamptz NOT NULL DEFAULT now()`
})
