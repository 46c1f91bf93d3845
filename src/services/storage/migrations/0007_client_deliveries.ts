/**
 * Client deliveries (docs/contract.md "The IRC client listener", backlog): for each named IRC client of a member
 * (`account/network@client`), the id of the last message of that network delivered to it, so that a client without
 * CHATHISTORY gets on its next connection what arrived since. One row per (network, client name), not per buffer:
 * message ids grow with the order messages are stored across every buffer (MessageWriter), so one id says exactly
 * what a client has seen of the whole network. `account_id` is the network's owner, kept so rows can be listed and
 * checked without a join. The rows go with their network (ON DELETE CASCADE), as the history does.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE client_deliveries (
      account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      network_id bigint NOT NULL REFERENCES networks(id) ON DELETE CASCADE,
      client_name text NOT NULL CHECK (length(client_name) BETWEEN 1 AND 64),
      message_id bigint NOT NULL CHECK (message_id >= 0),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (network_id, client_name)
    )`
})
