/**
 * AccountData: the one list of the kinds of rows an account owns, in the order the deletion job deletes them
 * (docs/decisions/leaving.md "Deleting an account: a marker row, then a resumable job"). Each kind deletes by account
 * id, at most `batch` rows a statement, so no statement of the job holds locks on a member's whole history, and a
 * crash rolls back at most the batch in flight, which the next run deletes again. The networks themselves come after
 * this list and the account row last (AccountDeletion.ts: both are announced). A kind added later is one more entry
 * here, placed before the tables its rows hang from (upload chunks before uploads).
 *
 * The owners of these tables keep every other write; this list is the account's end, which no owner could order
 * alone (history before buffers before networks, the account row last). Anything an entry misses is still deleted by
 * the account row's ON DELETE CASCADE, in one statement, so a missed kind costs time, never a leftover.
 *
 * Pure data over a SqlClient; no state.
 */
import type { SqlClient, SqlError, Statement } from "@effect/sql"
import { Effect } from "effect"

export interface ErasureStep {
  readonly kind: string
  /** Rows a statement deletes at most. */
  readonly batch: number
  /** Deletes at most `batch` rows of this kind owned by `accountId`; how many (fewer than `batch`: none are left). */
  readonly erase: (accountId: number) => Effect.Effect<number, SqlError.SqlError>
}

/** Messages are the bulk: 5,000 a statement is a short transaction, so the job renews its lease often. */
const HISTORY_BATCH = 5000
const ROW_BATCH = 1000
/** Upload chunks are 256 KiB each (uploads/Uploads.ts): 64 a statement is 16 MiB, as short as the other batches. */
const UPLOAD_CHUNK_BATCH = 64

const deleted = (statement: Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>) =>
  Effect.map(statement, (rows) => rows.length)

export const erasureSteps = (sql: SqlClient.SqlClient): ReadonlyArray<ErasureStep> => {
  const networksOf = (accountId: number) => sql`SELECT id FROM networks WHERE account_id = ${accountId}`

  /** Rows of `table` matched by `where`, ROW_BATCH at a time, by their physical address (whatever the key's shape). */
  const byRow = (kind: string, table: string, where: (accountId: number) => Statement.Fragment): ErasureStep => ({
    kind,
    batch: ROW_BATCH,
    erase: (accountId) =>
      deleted(sql`
        DELETE FROM ${sql(table)} WHERE ctid = ANY(ARRAY(
          SELECT ctid FROM ${sql(table)} WHERE ${where(accountId)} LIMIT ${ROW_BATCH}))
        RETURNING 1`)
  })
  const ofNetworks = (kind: string, table: string) => byRow(kind, table, (a) => sql`network_id IN (${networksOf(a)})`)
  const ofAccount = (kind: string, table: string) => byRow(kind, table, (a) => sql`account_id = ${a}`)

  return [
    {
      kind: "history",
      batch: HISTORY_BATCH,
      // Buffer by buffer through messages_buffer_id (LATERAL), never a scan of every member's messages.
      erase: (accountId) =>
        deleted(sql`
          DELETE FROM messages WHERE id = ANY(ARRAY(
            SELECT m.id FROM buffers b
            CROSS JOIN LATERAL (SELECT id FROM messages WHERE buffer_id = b.id LIMIT ${HISTORY_BATCH}) m
            WHERE b.network_id IN (${networksOf(accountId)})
            LIMIT ${HISTORY_BATCH}))
          RETURNING 1`)
    },
    ofNetworks("read-markers", "read_markers"),
    ofNetworks("client-deliveries", "client_deliveries"),
    ofNetworks("nick-notes", "nick_notes"),
    ofNetworks("relay-bots", "relay_bots"),
    ofAccount("buffer-preferences", "buffer_preferences"),
    ofAccount("client-preferences", "client_preferences"),
    ofNetworks("buffers", "buffers"),
    ofNetworks("channels", "channels"),
    {
      kind: "upload-chunks",
      batch: UPLOAD_CHUNK_BATCH,
      // Through the account's uploads and the chunks' primary key, never a scan of every member's chunks.
      erase: (accountId) =>
        deleted(sql`
          DELETE FROM upload_chunks WHERE (upload_id, seq) IN (
            SELECT c.upload_id, c.seq FROM uploads u JOIN upload_chunks c ON c.upload_id = u.id
            WHERE u.account_id = ${accountId} LIMIT ${UPLOAD_CHUNK_BATCH})
          RETURNING 1`)
    },
    ofAccount("uploads", "uploads"),
    ofAccount("push-subscriptions", "push_subscriptions"),
    ofAccount("api-tokens", "api_tokens"),
    ofAccount("oauth-tokens", "oauth_tokens"),
    ofAccount("oauth-codes", "oauth_codes"),
    ofAccount("sessions", "browser_sessions"),
    ofAccount("passkeys", "passkeys")
  ]
}
