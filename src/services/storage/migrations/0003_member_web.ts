/**
 * The member's web (docs/decisions/web.md):
 *
 * - Password-sign-in tokens (`POST /api/auth/login/token`) are rows of `oauth_tokens` with
 *   `kind = 'password'` and no client: they are the same credential as an app's token —
 *   read-write, no expiry, revoked by logout, in Settings and by account recovery, and
 *   listed with the apps — so one table, one lookup and one revocation path serve both
 *   (docs/decisions/web.md, "Password-sign-in tokens are OAuth tokens without an app").
 * - `last_used_at` on `oauth_tokens` (Settings > Authorized apps shows it; API tokens
 *   already have the column).
 * - `passkeys.user_handle`: the WebAuthn user handle (W3C WebAuthn §5.4.3 `user.id`), random
 *   per account and reused for its every passkey, so that an assertion's `userHandle` can
 *   be checked against the credential's owner (§7.2 step 6). The table was unused so far,
 *   so the column can be NOT NULL at once.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`ALTER TABLE oauth_tokens ALTER COLUMN client_id DROP NOT NULL`
  yield* sql`ALTER TABLE oauth_tokens ADD COLUMN kind text NOT NULL DEFAULT 'app' CHECK (kind IN ('app', 'password'))`
  yield* sql`ALTER TABLE oauth_tokens ADD CONSTRAINT oauth_tokens_kind_client CHECK ((kind = 'app') = (client_id IS NOT NULL))`
  yield* sql`ALTER TABLE oauth_tokens ADD COLUMN last_used_at timestamptz`

  yield* sql`ALTER TABLE passkeys ADD COLUMN user_handle bytea NOT NULL`
  yield* sql`ALTER TABLE passkeys ADD CONSTRAINT passkeys_name_length CHECK (length(name) BETWEEN 1 AND 64)`
  yield* sql`CREATE INDEX passkeys_account ON passkeys (account_id)`
})
