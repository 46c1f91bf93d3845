/**
 * MessageBatches: the statement that stores one batch of messages, and the lookup of a batch
 * by its key (docs/decisions/history.md "Message batches and unknown commits"). MessageWriter is the
 * only caller; it owns `messages`, `buffers.last_message_at` and `message_batches`.
 *
 * A batch is one statement, atomic: its rows, the buffers' `last_message_at`, and the batch's
 * random key with its writer and the ids it took. A statement that got no answer may have
 * committed; sending it again with the same key fails on the key's primary key if it did, and
 * `committedBatch` then finds its ids instead of storing the rows twice.
 *
 * Several writers share one database in cluster mode (one per node, docs/decisions/several-nodes.md "Several
 * nodes"), so each reasons only about its own keys: a batch deletes its writer's earlier keys
 * (their answers were heard before this batch was sent, since a writer sends one batch at a
 * time) and never another live writer's, whose key may be the one it is about to look up. Keys
 * left by writers that are gone (a process that ended) are pruned once older than
 * STALE_KEY_AGE, skipping rows another statement holds, so two writers never wait on each other
 * here. The ids are kept as a list rather than a range, because concurrent writers interleave
 * on the sequence.
 *
 * In cluster mode the statement also NOTIFYs the other nodes (`BatchNotice`; docs/decisions/secrets.md "What carries events
 * between nodes"): one `pg_notify` per batch, not per row, in the same statement, so PostgreSQL delivers it exactly
 * when the rows commit and never for a batch that did not. The payload is compact: the networks of the batch and the
 * range of its ids; the other nodes read the rows back.
 */
import * as Crypto from "node:crypto"
import type { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"

/** The primary key of message_batches (migration 0006): violated when a batch that did commit is sent again. */
export const BATCH_KEY_CONSTRAINT = "message_batches_pkey"

/** A batch attempt that got no answer: its key, and how many of the rows at hand it held (they come first). */
export interface Unsure {
  readonly key: string
  readonly rows: number
}

/** A batch's key; also a writer's id (one per MessageWriter, so per node). */
export const newKey = (): string => Crypto.randomUUID()

/**
 * Another writer's key older than this is pruned. A writer looks its unsure key up at its next
 * attempt, which comes within seconds of the database answering again; a writer cut off from the
 * database for longer than this while others go on writing could store that one batch twice.
 */
export const STALE_KEY_AGE = "1 day"

/** A `messages` row as inserted (a type alias, not an interface: `sql.insert` takes string-keyed records). */
export type MessageValues = {
  readonly buffer_id: number
  readonly time: Date
  readonly kind: string
  readonly nick: string | null
  readonly text: string
  readonly numeric: string | null
  readonly self: boolean
  readonly encryption: string
  readonly raw: string | null
  readonly msgid: string | null
  readonly reply_to: string | null
}

/** What the batch statement NOTIFYs: on `channel`, `{"o":origin,"t":"m","n":[network ids],"r":[first id,last id]}`. */
export interface BatchNotice {
  readonly channel: string
  readonly origin: string
  readonly networkIds: ReadonlyArray<number>
}

/** The payload up to the id range, which only the statement knows. */
export const batchNoticeHead = (notice: BatchNotice): string =>
  `{"o":${JSON.stringify(notice.origin)},"t":"m","n":${JSON.stringify(notice.networkIds)},"r":[`

/**
 * Stores `values` under `key` for `writer`; the new ids in row order. The ids come from the
 * sequence row by row in VALUES order (other writers' statements may take ids in between, but
 * never reorder this statement's), so the batch's ids sorted ascending are its rows' ids in order.
 */
export const insertBatch = (
  sql: SqlClient.SqlClient,
  values: ReadonlyArray<MessageValues>,
  key: string,
  writer: string,
  notice?: BatchNotice
) =>
  Effect.map(
    sql<{ id: number }>`
      WITH m AS (INSERT INTO messages ${sql.insert(values)} RETURNING id, buffer_id, time),
      u AS (
        UPDATE buffers AS b SET last_message_at = GREATEST(b.last_message_at, x.t)
        FROM (SELECT buffer_id, max(time) AS t FROM m GROUP BY buffer_id) AS x
        WHERE b.id = x.buffer_id
      ),
      k AS (
        INSERT INTO message_batches (key, writer, first_id, last_id, ids)
        SELECT ${key}::uuid, ${writer}::uuid, min(id), max(id), array_agg(id ORDER BY id) FROM m
      ),
      d AS (
        DELETE FROM message_batches WHERE key IN (
          SELECT key FROM message_batches
          WHERE (writer = ${writer}::uuid AND key <> ${key}::uuid)
             OR stored_at < now() - ${STALE_KEY_AGE}::interval
          FOR UPDATE SKIP LOCKED
        )
      )
      SELECT id${
      notice === undefined
        ? sql``
        // An uncorrelated subquery: evaluated once, for the first row (a batch has at least one).
        : sql`, (SELECT pg_notify(${notice.channel}, ${batchNoticeHead(notice)} || min(x.id) || ',' || max(x.id) || ']}')
               FROM m AS x) AS notified`
    } FROM m ORDER BY id`,
    (rows) => rows.map((r) => r.id)
  )

/**
 * The ids of the batch stored under `key`, if it committed: those of its rows still there (fewer than it had means a
 * network was removed since, and its rows went with it). Only the writer that stored the key looks it up, and only it
 * deletes it before STALE_KEY_AGE, so the key is there if the batch committed.
 */
export const committedBatch = (sql: SqlClient.SqlClient, key: string) =>
  Effect.gen(function*() {
    const found = yield* sql<{ key: string }>`SELECT key FROM message_batches WHERE key = ${key}::uuid`
    if (found.length === 0) return Option.none<ReadonlyArray<number>>()
    const rows = yield* sql<{ id: number }>`
      SELECT m.id FROM message_batches AS b JOIN messages AS m ON m.id = ANY(b.ids)
      WHERE b.key = ${key}::uuid ORDER BY m.id`
    return Option.some(rows.map((r) => r.id))
  })
