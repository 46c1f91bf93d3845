/**
 * Preferences (docs/contract.md "Preferences"; services/preferences/README.md): what a member chose per buffer, and the
 * web client's settings that follow the member from browser to browser.
 *
 * - `buffer_preferences`: one row per buffer with a non-default choice (pinned, muted, detached, or a notification
 *   level other than `highlights`), keyed as `buffers` and `read_markers` are (network_id, target folded by the
 *   network's CASEMAPPING), with the target as last written. `account_id` is the network's owner, so the rows of an
 *   account are counted (the bound of BufferPreferences.ts) and listed without a join. The rows go with their network
 *   and with their account (ON DELETE CASCADE), and the account's deletion job deletes them first (AccountData.ts).
 * - `client_preferences`: one small JSON document per account, checked before it is stored
 *   (schema/Preferences.ts: CLIENT_DOCUMENT_BYTES); the CHECK here is the last guard on its size.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE buffer_preferences (
      account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      network_id bigint NOT NULL REFERENCES networks(id) ON DELETE CASCADE,
      target_folded text NOT NULL CHECK (length(target_folded) BETWEEN 1 AND 512),
      target text NOT NULL CHECK (length(target) BETWEEN 1 AND 512),
      pinned boolean NOT NULL DEFAULT false,
      muted boolean NOT NULL DEFAULT false,
      detached boolean NOT NULL DEFAULT false,
      notify text NOT NULL DEFAULT 'highlights' CHECK (notify IN ('all', 'highlights', 'none')),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (network_id, target_folded)
    )`
  yield* sql`CREATE INDEX buffer_preferences_account ON buffer_preferences (account_id)`
  yield* sql`
    CREATE TABLE client_preferences (
      account_id bigint PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
      document jsonb NOT NULL CHECK (octet_length(document::text) <= 8192),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
})
