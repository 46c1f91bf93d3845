/**
 * MessageBatches: the statement that stores one batch of messages, and the lookup of a batch
 * by its key (docs/decisions.md "Message batches and unknown commits"). MessageWriter is the
 * only caller; it owns `messages`, `buffers.last_message_at` and `message_batches`.
 *
 * A batch is one statement, atomic: its rows, the buffers' `last_message_at`, and the batch's
 * random key with the range of ids it took (every other key deleted: the previous batch's
 * answer was heard before this one was sent, so the table holds one row). A statement that
 * got no answer may have committed; sending it again with the same key fails on the key's
 * primary key if it did, and `committedBatch` then finds its ids instead of storing the rows
 * twice.
 *
 * In cluster mode the statement also NOTIFYs the other nodes (`BatchNotice`; docs/decisions.md "What carries events
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

export const newKey = (): string => Crypto.randomUUID()

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
 * Stores `values` under `key`; the new ids in row order. The ids come from the sequence row
 * by row in VALUES order, and only the writer's fiber inserts, so the batch's ids sorted
 * ascending are its rows' ids in order.
 */
export const insertBatch = (
  sql: SqlClient.SqlClient,
  values: ReadonlyArray<MessageValues>,
  key: string,
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
      k AS (INSERT INTO message_batches (key, first_id, last_id) SELECT ${key}::uuid, min(id), max(id) FROM m),
      d AS (DELETE FROM message_batches WHERE key <> ${key}::uuid)
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
 * The ids of the batch stored under `key`, if it committed. Only the writer inserts messages, so the ids between the
 * batch's first and last are its rows'; fewer than it had means a network was removed since (its rows went with it).
 */
export const committedBatch = (sql: SqlClient.SqlClient, key: string) =>
  Effect.gen(function*() {
    const found = yield* sql<{ firstId: number; lastId: number }>`
      SELECT first_id AS "firstId", last_id AS "lastId" FROM message_batches WHERE key = ${key}::uuid`
    if (found.length === 0) return Option.none<ReadonlyArray<number>>()
    const rows = yield* sql<{ id: number }>`
      SELECT id FROM messages WHERE id BETWEEN ${found[0]!.firstId} AND ${found[0]!.lastId} ORDER BY id`
    return Option.some(rows.map((r) => r.id))
  })
