/**
 * Web Push subscriptions (RFC 8030; docs/contract.md "The member's browser surface", Push): one row per browser push
 * endpoint, with the keys its payloads are encrypted to (RFC 8291: `p256dh`, the browser's P-256 public key, and
 * `auth`, the 16-byte secret), owned by the credential that registered it — a browser session or an OAuth /
 * password-sign-in token, exactly one of them (the interface: "push subscriptions registered with it are
 * deleted" when that token is revoked). A session is deleted when it ends, so its subscriptions go with it
 * (ON DELETE CASCADE); a token is only marked revoked, so PushSubscriptions deletes on the revocation event.
 * An endpoint is one browser's: registering it again moves it to the new credential.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE push_subscriptions (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      session_id bigint REFERENCES browser_sessions(id) ON DELETE CASCADE,
      oauth_token_id bigint REFERENCES oauth_tokens(id) ON DELETE CASCADE,
      endpoint text NOT NULL UNIQUE CHECK (length(endpoint) BETWEEN 1 AND 2048),
      p256dh text NOT NULL,
      auth text NOT NULL,
      created_at timestamptz NOT NULL,
      CHECK ((session_id IS NULL) <> (oauth_token_id IS NULL))
    )`
  yield* sql`CREATE INDEX push_subscriptions_account ON push_subscriptions (account_id)`
  yield* sql`CREATE INDEX push_subscriptions_session ON push_subscriptions (session_id) WHERE session_id IS NOT NULL`
  yield* sql`CREATE INDEX push_subscriptions_token ON push_subscriptions (oauth_token_id) WHERE oauth_token_id IS NOT NULL`
})
