/**
 * The cluster's Web Push VAPID key pair (docs/decisions/web.md "Web Push keys in a cluster"): one row, written by the first
 * node that needs it (INSERT … ON CONFLICT DO NOTHING), read by every other, so that a subscription made through any
 * node is honoured by the push service whichever node sends. The private key is sealed with BELAY_SECRET_KEY
 * (SecretBox, purpose `vapid-private-key`), never stored in the clear; the public key is public.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE vapid_keys (
      id smallint PRIMARY KEY CHECK (id = 1),
      public_key text NOT NULL,
      private_key_sealed bytea NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
})
