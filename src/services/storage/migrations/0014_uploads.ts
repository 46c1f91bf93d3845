/**
 * Uploads (docs/decisions/uploads.md): the files members upload from the web client's composer and through the IRC
 * listener's `soju.im/FILEHOST`, kept in PostgreSQL so that every node serves them and `pg_dump` keeps them.
 *
 * - `uploads`: one row a file — its unguessable id (128 random bits, base64url), owner, sanitised name, content type,
 *   size, SHA-256 and creation time. Written last, in the transaction that wrote the chunks, so a file is either
 *   whole or absent.
 * - `upload_chunks`: the bytes in rows of 256 KiB (`seq` from 0), so neither an upload nor a download holds a whole
 *   file in memory and a `Range` read fetches only the rows it needs. The foreign key is checked at commit
 *   (DEFERRABLE INITIALLY DEFERRED) because the chunks are written before their `uploads` row. `data` is stored
 *   EXTERNAL: uncompressed out of line, since uploads are mostly already compressed media (compressing them again
 *   costs CPU for nothing) and `substring` of an uncompressed value reads only the TOAST slices it covers.
 * - `account_limits.max_upload_mib`: the per-account override of the uploads total (`belay account limits NAME
 *   --uploads N`), NULL for the deployment's default, -1 for unlimited, as the other count limits.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE uploads (
      id text PRIMARY KEY,
      account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      name text NOT NULL,
      content_type text NOT NULL,
      size bigint NOT NULL CHECK (size >= 0),
      sha256 bytea NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX uploads_account ON uploads (account_id, created_at)`
  yield* sql`
    CREATE TABLE upload_chunks (
      upload_id text NOT NULL REFERENCES uploads(id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
      seq integer NOT NULL CHECK (seq >= 0),
      data bytea NOT NULL,
      PRIMARY KEY (upload_id, seq)
    )`
  yield* sql`ALTER TABLE upload_chunks ALTER COLUMN data SET STORAGE EXTERNAL`
  yield* sql`ALTER TABLE account_limits ADD COLUMN max_upload_mib integer CHECK (max_upload_mib >= -1)`
})
