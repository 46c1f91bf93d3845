/**
 * Uploads owns `uploads` and `upload_chunks` (migration 0014; docs/decisions/uploads.md): files members upload from
 * the web client's composer and through the IRC listener's `soju.im/FILEHOST`, stored in PostgreSQL so that every
 * node serves every file and `pg_dump` keeps them.
 *
 * - `store` takes the body as a stream and writes it in CHUNK_BYTES rows as it arrives, holding one chunk in memory;
 *   the `uploads` row comes last, after the account's total is checked under the account row's lock, all in one
 *   transaction: a file too large, over the account's total, cut off or failed leaves no row at all.
 * - `read` streams a byte range back one chunk row at a time, fetching only the rows (and with EXTERNAL storage only
 *   the slices of them) the range covers.
 * - Limits: BELAY_UPLOAD_MAX_BYTES a file; the account's `uploads` limit (AccountLimits, MiB) for all its files.
 *
 * Concurrency rule: state in PostgreSQL only. An upload in progress holds one pooled connection (its transaction)
 * until its body has arrived, bounded by the HTTP request deadline; UPLOADS_AT_ONCE per process bounds how many do,
 * so the pool keeps connections for everything else. Two uploads of one account check the total in turn (the account
 * row's lock, taken only at the end); a file is never changed once stored, so reads need no lock.
 */
import { createHash, randomBytes } from "node:crypto"
import { SqlClient, SqlError } from "@effect/sql"
import { Data, Effect, Option, Stream } from "effect"
import { AppConfig } from "../AppConfig.js"
import { AccountLimits } from "../identity/AccountLimits.js"
import { normalizeContentType, sanitizeFileName } from "./UploadNames.js"

/**
 * Bytes a chunk row holds (docs/decisions/uploads.md "Chunks"): large enough that a 25 MiB file is 100 rows and a
 * download 100 short queries, small enough that an upload or a download in flight holds a quarter of a MiB.
 */
export const CHUNK_BYTES = 256 * 1024

/** Random bytes of an upload's id: 128 bits, 22 base64url characters (docs/decisions/uploads.md "Ids"). */
export const ID_BYTES = 16

/** Uploads receiving at once in one process; each holds a pooled connection (5 embedded, 10 external). */
export const UPLOADS_AT_ONCE = 2

const MIB = 1024 * 1024

/** Where a file is uploaded (POST), under the server's public URL (docs/contract.md "Uploads"). */
export const UPLOAD_ENDPOINT = "/api/uploads"

/**
 * The IRC listener's `soju.im/FILEHOST` value: the endpoint under PUBLIC_BASE_URL. None without it: the listener
 * cannot know the address browsers and clients reach the web at, and a guessed one would send credentials elsewhere.
 */
export const filehostUrl = (publicBaseUrl: Option.Option<string>): Option.Option<string> =>
  Option.map(publicBaseUrl, (base) => `${base}${UPLOAD_ENDPOINT}`)

/** An id as `store` mints them: exactly 22 base64url characters. */
export const isUploadId = (id: string): boolean => /^[A-Za-z0-9_-]{22}$/.test(id)

/** Longest the name part of a file's URL may be, encoded: a link must fit an IRC line with room for more. */
const MAX_SLUG = 80

/**
 * The name as it appears in the URL, percent-encoded, cut to MAX_SLUG characters with its extension kept: the link is
 * sent as a PRIVMSG, and a name of a hundred emoji is 1,200 characters encoded.
 */
const slugOf = (name: string): string => {
  const whole = encodeURIComponent(name)
  if (whole.length <= MAX_SLUG) return whole
  const dot = name.lastIndexOf(".")
  const extension = dot > 0 && name.length - dot <= 16 ? encodeURIComponent(name.slice(dot)) : ""
  let stem = ""
  for (const c of Array.from(dot > 0 && extension !== "" ? name.slice(0, dot) : name)) {
    const next = stem + encodeURIComponent(c)
    if (next.length + extension.length > MAX_SLUG) break
    stem = next
  }
  return stem + extension
}

/** The path a stored file is served at; the name is there for people reading the link and is not checked. */
export const uploadPath = (id: string, name: string): string => `/uploads/${id}/${slugOf(name)}`

export interface Upload {
  readonly id: string
  readonly accountId: number
  readonly name: string
  readonly contentType: string
  readonly size: number
  /** SHA-256 of the bytes, base64url; the download's ETag. */
  readonly sha256: string
  readonly createdAt: Date
}

/** Why an upload was refused; nothing was stored. */
export class UploadRefused extends Data.TaggedError("UploadRefused")<{
  readonly reason: "too-large" | "quota-exceeded"
  /** too-large: BELAY_UPLOAD_MAX_BYTES in bytes; quota-exceeded: the account's total in MiB. */
  readonly max: number
}> {
  override get message(): string {
    return this.reason === "too-large"
      ? `the file is larger than ${this.max} bytes, the largest upload this server takes`
      : `limit reached: at most ${this.max} MiB of uploads on this account (limit "uploads"); ask the operator for more room`
  }
}

export interface UploadMeta {
  readonly accountId: number
  /** As the client gave it; sanitised here (UploadNames). */
  readonly name: string
  readonly contentType: string | undefined
  /** Content-Length, when the client declared one: refused before a byte is read when it is already too much. */
  readonly declaredSize: number | undefined
}

interface UploadRow {
  readonly id: string
  readonly accountId: number
  readonly name: string
  readonly contentType: string
  readonly size: number
  readonly sha256: Buffer
  readonly createdAt: Date
}

const fromRow = (row: UploadRow): Upload => ({ ...row, sha256: row.sha256.toString("base64url") })

export class Uploads extends Effect.Service<Uploads>()("belay/Uploads", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const limits = yield* AccountLimits
    const receiving = yield* Effect.makeSemaphore(UPLOADS_AT_ONCE)

    /** Bytes the account's stored uploads hold together. */
    const usedBytes = (accountId: number) =>
      Effect.map(
        sql<{ used: number }>`SELECT COALESCE(SUM(size), 0)::bigint AS used FROM uploads WHERE account_id = ${accountId}`,
        (rows) => rows[0]?.used ?? 0
      )

    /** The account's total in bytes and in MiB as configured; null: none. */
    const quotaOf = (accountId: number) =>
      Effect.map(limits.limitOf(accountId, "uploads"), (mib) => (mib === null ? null : { mib, bytes: mib * MIB }))

    /**
     * Stores `body` as one file of the account; its record, or UploadRefused (nothing stored). A body that fails
     * (the client went away) fails with its own error, and nothing is stored either.
     */
    const store = <E>(meta: UploadMeta, body: Stream.Stream<Uint8Array, E>): Effect.Effect<Upload, UploadRefused | E> =>
      Effect.gen(function*() {
        const maxBytes = config.uploadMaxBytes
        const name = sanitizeFileName(meta.name)
        const contentType = normalizeContentType(meta.contentType, name)
        const quota = yield* quotaOf(meta.accountId)
        const usedBefore = quota === null ? 0 : yield* usedBytes(meta.accountId).pipe(Effect.orDie)
        const over = (size: number) =>
          size > maxBytes
            ? Option.some(new UploadRefused({ reason: "too-large", max: maxBytes }))
            : quota !== null && usedBefore + size > quota.bytes
            ? Option.some(new UploadRefused({ reason: "quota-exceeded", max: quota.mib }))
            : Option.none()
        // Refused before reading when the declared length already says so (the client is told at once).
        if (meta.declaredSize !== undefined) {
          const early = over(meta.declaredSize)
          if (Option.isSome(early)) return yield* early.value
        }

        const id = randomBytes(ID_BYTES).toString("base64url")
        const hash = createHash("sha256")
        let pending = Buffer.allocUnsafe(CHUNK_BYTES)
        let filled = 0
        let seq = 0
        let size = 0

        const flush = Effect.suspend(() => {
          if (filled === 0) return Effect.void
          const data = pending.subarray(0, filled)
          const at = seq
          // A fresh buffer for what follows: the one handed to the driver is not written again.
          pending = Buffer.allocUnsafe(CHUNK_BYTES)
          filled = 0
          seq += 1
          return sql`INSERT INTO upload_chunks (upload_id, seq, data) VALUES (${id}, ${at}, ${data})`.pipe(Effect.orDie)
        })

        /** Copies `bytes` into the pending chunk, writing each chunk as it fills. */
        const copyIn = (bytes: Uint8Array): Effect.Effect<void> =>
          Effect.suspend(() => {
            const n = Math.min(CHUNK_BYTES - filled, bytes.length)
            pending.set(bytes.subarray(0, n), filled)
            filled += n
            if (filled < CHUNK_BYTES) return Effect.void
            // flush takes the full buffer and starts a fresh one before the rest is copied.
            return Effect.zipRight(flush, n < bytes.length ? copyIn(bytes.subarray(n)) : Effect.void)
          })

        const take = (chunk: Uint8Array): Effect.Effect<void, UploadRefused> =>
          Effect.suspend(() => {
            size += chunk.length
            const refused = over(size)
            if (Option.isSome(refused)) return Effect.fail(refused.value)
            hash.update(chunk)
            return copyIn(chunk)
          })

        const written = Effect.gen(function*() {
          yield* Stream.runForEach(body, take)
          yield* flush
          // The account's total, now under its row's lock: another upload of the account that committed meanwhile
          // counts (each statement of READ COMMITTED sees what committed before it).
          if (quota !== null) {
            yield* sql`SELECT id FROM accounts WHERE id = ${meta.accountId} FOR NO KEY UPDATE`.pipe(Effect.orDie)
            const used = yield* usedBytes(meta.accountId).pipe(Effect.orDie)
            if (used + size > quota.bytes) return yield* new UploadRefused({ reason: "quota-exceeded", max: quota.mib })
          }
          const rows = yield* sql<UploadRow>`
            INSERT INTO uploads (id, account_id, name, content_type, size, sha256)
            VALUES (${id}, ${meta.accountId}, ${name}, ${contentType}, ${size}, ${hash.digest()})
            RETURNING id, account_id AS "accountId", name, content_type AS "contentType", size, sha256,
                      created_at AS "createdAt"`.pipe(Effect.orDie)
          return fromRow(rows[0]!)
        })

        // Database failures are defects here, as at every repository edge (the route answers 500).
        const stored = yield* receiving.withPermits(1)(sql.withTransaction(written)).pipe(
          Effect.catchIf((e): e is SqlError.SqlError => e instanceof SqlError.SqlError, (e) => Effect.die(e))
        )
        yield* Effect.logInfo("upload stored").pipe(
          Effect.annotateLogs({ accountId: meta.accountId, size: stored.size, contentType: stored.contentType })
        )
        return stored
      })

    /** The file with this id, if there is one. */
    const find = Effect.fn("Uploads.find")(function*(id: string) {
      if (!isUploadId(id)) return Option.none<Upload>()
      const rows = yield* sql<UploadRow>`
        SELECT id, account_id AS "accountId", name, content_type AS "contentType", size, sha256, created_at AS "createdAt"
        FROM uploads WHERE id = ${id}`.pipe(Effect.orDie)
      return Option.map(Option.fromNullable(rows[0]), fromRow)
    })

    /**
     * Bytes `start` to `end` (inclusive, within the file) of `upload`, one chunk row a query. A file deleted while it
     * is read ends the stream with a defect, so the answer is cut rather than completed short.
     */
    const read = (upload: Upload, start: number, end: number): Stream.Stream<Uint8Array> => {
      if (end < start) return Stream.empty
      const first = Math.floor(start / CHUNK_BYTES)
      const last = Math.floor(end / CHUNK_BYTES)
      return Stream.fromIterable(Array.from({ length: last - first + 1 }, (_, i) => first + i)).pipe(
        Stream.mapEffect((seq) => {
          const from = seq === first ? start - seq * CHUNK_BYTES : 0
          const to = seq === last ? end - seq * CHUNK_BYTES : CHUNK_BYTES - 1
          return sql<{ data: Buffer }>`
            SELECT substring(data FROM ${from + 1} FOR ${to - from + 1}) AS data
            FROM upload_chunks WHERE upload_id = ${upload.id} AND seq = ${seq}`.pipe(
            Effect.orDie,
            Effect.flatMap((rows) =>
              rows[0] === undefined ? Effect.dieMessage(`upload ${upload.id} lost chunk ${seq}`) : Effect.succeed(rows[0].data)
            )
          )
        })
      )
    }

    /**
     * Deletes one file of the account, its chunks and its row in one transaction (a 25 MiB file is 100 rows); whether
     * there was one. Another account's file is not found, as a missing one is.
     */
    const remove = Effect.fn("Uploads.remove")(function*(accountId: number, id: string) {
      if (!isUploadId(id)) return false
      const gone = yield* sql.withTransaction(Effect.gen(function*() {
        const rows = yield* sql<{ id: string }>`DELETE FROM uploads WHERE id = ${id} AND account_id = ${accountId} RETURNING id`
        if (rows.length > 0) yield* sql`DELETE FROM upload_chunks WHERE upload_id = ${id}`
        return rows.length > 0
      })).pipe(Effect.orDie)
      if (gone) yield* Effect.logInfo("upload deleted").pipe(Effect.annotateLogs({ accountId }))
      return gone
    })

    /** What the account's uploads hold together, in bytes (`belay account show`). */
    const usage = (accountId: number): Effect.Effect<number> => usedBytes(accountId).pipe(Effect.orDie)

    return { store, find, read, remove, usage, maxBytes: config.uploadMaxBytes } as const
  }),
  dependencies: [AccountLimits.Default]
}) {}
