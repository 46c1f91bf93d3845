/**
 * The authorization server's 2026 additions (docs/decisions/oauth.md "Client ID Metadata Documents: a client row keyed
 * by the URL" and "`resource` names this server's /mcp, and the token remembers it"):
 * - `resource` (RFC 8707) on the approval record, the code and the token: what the authorization named travels to the
 *   token, which keeps it. NULL for a 2025-era client that sent none.
 * - `oauth_clients.kind`: `registered` (RFC 7591, a server-issued id) or `document` (a Client ID Metadata Document, the
 *   id the document's https URL). A document client's row holds the document's last accepted metadata; codes, consents
 *   and tokens reference it as they reference a registered one. Only `registered` rows count against the pending cap;
 *   unapproved `document` rows have a cap of their own (OAuthClients) and the same hour.
 * - `application_type` (OpenID Connect Registration §2; the MCP 2026-07-28 revision asks DCR clients to send it) and
 *   `logo_uri` (a metadata document's), both optional.
 * Nullable or defaulted, so a node not yet upgraded keeps working while the others roll.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE oauth_consents ADD COLUMN resource text`
  yield* sql`ALTER TABLE oauth_codes ADD COLUMN resource text`
  yield* sql`ALTER TABLE oauth_tokens ADD COLUMN resource text`
  yield* sql`
    ALTER TABLE oauth_clients
      ADD COLUMN kind text NOT NULL DEFAULT 'registered' CHECK (kind IN ('registered', 'document')),
      ADD COLUMN application_type text CHECK (application_type IN ('native', 'web')),
      ADD COLUMN logo_uri text,
      ADD COLUMN document_fetched_at timestamptz`
  yield* sql`DROP INDEX oauth_clients_pending`
  yield* sql`CREATE INDEX oauth_clients_pending ON oauth_clients (kind, created_at) WHERE approved_at IS NULL`
})
