/**
 * Link previews (docs/decisions/previews.md "One fetch per URL, kept in PostgreSQL"): one row per URL a member's
 * client asked about, shared by every member and every node — what the page said (`preview`), that it had nothing to
 * show (`none`), or that it could not be reached (`failed`), kept until `expires_at` (shorter for the last two). Not
 * member data: no account column, nothing to delete with an account or to export. Bounded by LinkPreviews' prune job
 * (expired rows, then the oldest past a row cap), which the `fetched_at` and `expires_at` indexes serve.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE link_previews (
      url text PRIMARY KEY CHECK (length(url) BETWEEN 1 AND 2048),
      outcome text NOT NULL CHECK (outcome IN ('preview', 'none', 'failed')),
      final_url text CHECK (length(final_url) <= 2048),
      title text,
      description text,
      image_url text CHECK (length(image_url) <= 2048),
      site_name text,
      fetched_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX link_previews_expires ON link_previews (expires_at)`
  yield* sql`CREATE INDEX link_previews_fetched ON link_previews (fetched_at)`
})
