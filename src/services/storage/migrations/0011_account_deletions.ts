/**
 * A member's way out (docs/decisions/leaving.md "Deleting an account: a marker row, then a resumable job"): a row of
 * `account_deletions` marks an account as being deleted. From the transaction that writes it the account is unusable
 * (Accounts never answers for it, every credential was revoked in the same transaction) though its name stays taken;
 * the deletion job (services/memberdata/AccountDeletion.ts) then deletes what the account owns in batches, and the
 * account row last, which takes this row with it (ON DELETE CASCADE): the name is free only when everything is gone.
 * `claimed_by` / `claimed_until` are the lease of the process working on it, so that a crash leaves it to whichever
 * process looks next once the lease ran out.
 *
 * The job deletes by account id: `oauth_tokens` kept an index of live tokens only, and `oauth_codes` none, so both
 * get one on `account_id`.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE account_deletions (
      account_id bigint PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
      requested_at timestamptz NOT NULL DEFAULT now(),
      claimed_by uuid,
      claimed_until timestamptz
    )`
  yield* sql`CREATE INDEX oauth_tokens_account_all ON oauth_tokens (account_id)`
  yield* sql`CREATE INDEX oauth_codes_account ON oauth_codes (account_id)`
})
