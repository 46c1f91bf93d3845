/**
 * Per-account limits (docs/decisions/account-limits.md): `account_limits` holds an operator's overrides, one row per
 * account that has any, set with `belay account limits NAME …`. A NULL column means "the deployment's default"
 * (BELAY_ACCOUNT_MAX_NETWORKS, BELAY_NETWORK_MAX_CHANNELS, or the fixed bounds of AccountLimits.ts); `unlimited` is
 * stored as -1, and only networks and channels may be unlimited (the other counts are bounded always).
 *
 * Nothing else changes: the counts are read from the tables that hold what is counted, under a lock on the account's
 * row (AccountLimits.reserve), so no counter can drift from what it counts.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE account_limits (
      account_id bigint PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
      max_networks integer CHECK (max_networks >= -1),
      max_channels integer CHECK (max_channels >= -1),
      max_apps integer CHECK (max_apps >= 0),
      max_push_subscriptions integer CHECK (max_push_subscriptions >= 0),
      max_passkeys integer CHECK (max_passkeys >= 0),
      max_sessions integer CHECK (max_sessions >= 1),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
})
