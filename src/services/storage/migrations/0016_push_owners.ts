/**
 * Web Push subscriptions registered by IRC clients (soju's `soju.im/webpush`, docs/decisions/irc-listener.md "Web Push
 * for IRC clients"), beside the browsers' (migration 0004):
 * - `kind`: `web` (a browser; its payload is the web client's JSON) or `irc` (an IRC client; its payload is one IRC
 *   line, as the extension requires).
 * - The owner is still exactly one credential, now one of four: a browser session or an OAuth / password-sign-in
 *   token (both kinds), an API token (`api_token_id`, IRC only: the web takes no API token), or the account's password
 *   (`password_owner`, IRC only), whose end is the account's next recovery: `password_recovered_at` keeps the
 *   account's `recovered_at` as it was at sign-in (NULL: never recovered), so a recovery makes it differ. A token is
 *   only marked revoked, so PushSubscriptions deletes on the revocation event, as for OAuth tokens.
 * - `network_id`: the network of the connection that registered it (the extension's subscriptions are per
 *   connection, and soju's per network); NULL for a control connection, which is pushed nothing. Deleted with it.
 * - `irc_caps`: the capabilities of the registering client that shape the line (`server-time`, `message-tags`),
 *   space-separated: the extension sends lines "with the same capabilities as when the client registered".
 * Defaulted, so a node not yet upgraded keeps inserting browsers' rows while the others roll.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    ALTER TABLE push_subscriptions
      ADD COLUMN kind text NOT NULL DEFAULT 'web' CHECK (kind IN ('web', 'irc')),
      ADD COLUMN api_token_id bigint REFERENCES api_tokens(id) ON DELETE CASCADE,
      ADD COLUMN password_owner boolean NOT NULL DEFAULT false,
      ADD COLUMN password_recovered_at timestamptz,
      ADD COLUMN network_id bigint REFERENCES networks(id) ON DELETE CASCADE,
      ADD COLUMN irc_caps text`
  // Migration 0004's one-owner rule (PostgreSQL named it push_subscriptions_check), widened to the four owners.
  yield* sql`ALTER TABLE push_subscriptions DROP CONSTRAINT push_subscriptions_check`
  yield* sql`
    ALTER TABLE push_subscriptions
      ADD CONSTRAINT push_subscriptions_one_owner
        CHECK (num_nonnulls(session_id, oauth_token_id, api_token_id) + (CASE WHEN password_owner THEN 1 ELSE 0 END) = 1),
      ADD CONSTRAINT push_subscriptions_web_owner
        CHECK (kind = 'irc' OR (api_token_id IS NULL AND NOT password_owner AND network_id IS NULL AND irc_caps IS NULL))`
  yield* sql`CREATE INDEX push_subscriptions_api_token ON push_subscriptions (api_token_id) WHERE api_token_id IS NOT NULL`
  yield* sql`CREATE INDEX push_subscriptions_password ON push_subscriptions (account_id) WHERE password_owner`
  yield* sql`CREATE INDEX push_subscriptions_network ON push_subscriptions (network_id) WHERE network_id IS NOT NULL`
})
