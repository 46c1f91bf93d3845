/**
 * MessageHistory owns the reads of the message history that MessageWriter stores: a
 * buffer's recent messages (recent_messages), full-text search (search_messages), the
 * buffers with history (list_buffers), and for the browser WebSocket the newest id of an
 * account and every message after an id (its `?since=` resume). Which networks an account has is Networks' to say.
 *
 * Concurrency: no state of its own (the pages kept in memory are RecentPages'); every read is a few statements on the shared pool (plus the
 * account's networks), so reads never wait for the writer's batches beyond the pool.
 * SQL errors are defects at this edge. The methods are plain functions, not `Effect.fn`:
 * a named Effect.fn captures a stack trace and opens a span on every call, about 20 µs
 * each on the bench machine, which recent_messages would pay on every page.
 *
 * Cost: each read walks an index in the order it answers in and stops at its page (the
 * interface's limits: recent_messages ≤ 500, search_messages ≤ 100), so recent and
 * listBuffers cost the same at any buffer size, whatever the planner's statistics say:
 * - recent: a buffer's newest pages come from memory (RecentPages); other pages resolve the
 *   buffer once (its unique key, network_id + target_folded) and read its messages backwards
 *   along `messages (buffer_id, id)` from `before`.
 * - listBuffers: the account's buffers, each with one probe of that index to know it has
 *   history.
 * - search: MessageSearch.ts (its own module comment gives its cost and its syntax).
 */
import { SqlClient } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Exit, Option } from "effect"
import type { StoredMessage, StoredMessageInBuffer } from "./MessageRow.js"
import { Networks } from "../networks/Networks.js"
import { RecentPages } from "./RecentPages.js"
import { makeSearch } from "./MessageSearch.js"

export type { StoredMessage, StoredMessageInBuffer }
export {
  ROWS_PER_PROBED_MATCH,
  SEARCH_PROBE_PER_RESULT,
  SEARCH_WALK_PER_RESULT,
  SEARCH_WINDOW_PER_RESULT,
  type SearchQuery
} from "./MessageSearch.js"

/**
 * A reference into a buffer's history (IRCv3 draft/chathistory `msgid=` or `timestamp=`): a message id, or a time.
 * Times compare at millisecond precision, the precision of the `time` tags clients send back: timestamptz keeps
 * microseconds, and `AFTER timestamp=T` would otherwise return the message T was taken from.
 */
export type Bound = { readonly _tag: "Id"; readonly id: number } | { readonly _tag: "Time"; readonly time: Date }

export interface BufferSummary {
  readonly networkId: number
  readonly target: string
  readonly kind: "channel" | "dm"
  readonly lastMessageAt: Date | null
}

export class MessageHistory extends Effect.Service<MessageHistory>()("belay/MessageHistory", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const networks = yield* Networks
    const pages = yield* RecentPages

    /**
     * One buffer's messages as a key range of `messages (buffer_id, id)`, for statements that
     * read in that index's order (`ORDER BY buffer_id DESC, id DESC`). Not `buffer_id = …`:
     * an equality makes buffer_id a constant to the planner, and `ORDER BY id` can then also
     * be served by walking the primary key and filtering on buffer_id, which it prefers when
     * the statistics say one buffer is most of the table, and which reads every newer row of
     * the other buffers. Only `(buffer_id, id)` yields the order of a range, whatever the
     * statistics say.
     */
    const ofBuffer = (buffer: Fragment) => sql`buffer_id BETWEEN ${buffer} AND ${buffer}`

    const { search } = makeSearch({ sql, ofBuffer })

    /** The account's networks, narrowed to `networkId` when given (empty when it is not the account's). */
    const networksOf = (accountId: number, networkId: Option.Option<number>) =>
      Effect.map(networks.listForAccount(accountId), (owned) => {
        const ids = owned.map((n) => n.id)
        return Option.match(networkId, { onNone: () => ids, onSome: (id) => ids.filter((n) => n === id) })
      })

    /**
     * Oldest first; `before` is exclusive (an id from a previous page). One statement: the
     * buffer's row by its unique key, then (LATERAL, so its id is a constant of the inner
     * plan) its newest `limit` ids below `before`, backwards along `(buffer_id, id)`.
     */
    const read = (
      networkId: number,
      targetFolded: string,
      before: Option.Option<number>,
      limit: number
    ): Effect.Effect<ReadonlyArray<StoredMessage>> => {
      const below = Option.match(before, { onNone: () => sql``, onSome: (id) => sql`AND id < ${id}` })
      return sql<StoredMessage>`
        SELECT m.id, b.network_id AS "networkId", b.target, m.time, m.kind, m.nick, m.text, m.numeric, m.self,
               m.encryption, m.msgid, m.reply_to AS "replyTo", m.redacted
        FROM buffers b
        CROSS JOIN LATERAL (
          SELECT id, time, kind, nick, text, numeric, self, encryption, msgid, reply_to, redacted
          FROM messages
          WHERE ${ofBuffer(sql`b.id`)} ${below}
          ORDER BY buffer_id DESC, id DESC
          LIMIT ${limit}
        ) AS m
        WHERE b.network_id = ${networkId} AND b.target_folded = ${targetFolded}
        ORDER BY m.id`.pipe(Effect.orDie)
    }

    /**
     * A page of the buffer, oldest first: from RecentPages when it holds the page; else read
     * from the index, and a newest page read so is kept for the next reader.
     */
    const recent = (
      networkId: number,
      targetFolded: string,
      page: { readonly before: Option.Option<number>; readonly limit: number }
    ): Effect.Effect<ReadonlyArray<StoredMessage>> => {
      if (page.limit <= 0) return Effect.succeed([])
      const kept = pages.page(networkId, targetFolded, page.before, page.limit)
      if (Option.isSome(kept)) return Effect.succeed(kept.value)
      const install = Option.isNone(page.before) ? pages.beginLoad(networkId, targetFolded, page.limit) : Option.none()
      const rows = read(networkId, targetFolded, page.before, page.limit)
      if (Option.isNone(install)) return rows
      return rows.pipe(
        Effect.onExit((exit) =>
          Effect.sync(() =>
            Exit.isSuccess(exit) ? install.value(exit.value) : pages.abandonLoad(networkId, targetFolded)
          )
        )
      )
    }


    /**
     * Channels and DMs with history (server pseudo-buffers excluded), most recent first. Rows
     * read: the account's buffers, by `buffers (network_id, target_folded)`, and one entry of
     * `messages (buffer_id, id)` for each to see that it has history.
     */
    const listBuffers = (accountId: number, networkId: Option.Option<number>) => Effect.gen(function*() {
      const ids = yield* networksOf(accountId, networkId)
      if (ids.length === 0) return []
      return yield* sql<BufferSummary>`
        SELECT b.network_id AS "networkId", b.target, b.kind, b.last_message_at AS "lastMessageAt"
        FROM buffers b
        WHERE ${sql.in("b.network_id", ids)} AND b.kind IN ('channel', 'dm')
          AND EXISTS (SELECT 1 FROM messages m WHERE m.buffer_id = b.id)
        ORDER BY b.last_message_at DESC NULLS LAST, b.network_id, b.target_folded`.pipe(Effect.orDie)
    })

    /** The newest message id of the account's networks; None when there is none. */
    const lastId = Effect.fn("MessageHistory.lastId")(function*(accountId: number) {
      const ids = yield* networksOf(accountId, Option.none())
      if (ids.length === 0) return Option.none<number>()
      const rows = yield* sql<{ id: number | null }>`
        SELECT max(m.id) AS id FROM messages m JOIN buffers b ON b.id = m.buffer_id
        WHERE ${sql.in("b.network_id", ids)}`.pipe(Effect.orDie)
      return Option.fromNullable(rows[0]?.id ?? null)
    })

    /**
     * The account's messages after `afterId` (exclusive), every buffer, oldest first, at most `limit`. Ids grow in
     * the order messages were stored (MessageWriter), so this is what a tab missed since it saw `afterId`.
     */
    const after = Effect.fn("MessageHistory.after")(function*(accountId: number, afterId: number, limit: number) {
      const ids = yield* networksOf(accountId, Option.none())
      if (ids.length === 0 || limit <= 0) return []
      return yield* sql<StoredMessageInBuffer>`
        SELECT m.id, b.network_id AS "networkId", b.target, b.kind AS "bufferKind", m.time, m.kind, m.nick, m.text,
               m.numeric, m.self, m.encryption, m.msgid, m.reply_to AS "replyTo", m.redacted
        FROM messages m JOIN buffers b ON b.id = m.buffer_id
        WHERE m.id > ${afterId} AND ${sql.in("b.network_id", ids)}
        ORDER BY m.id
        LIMIT ${limit}`.pipe(Effect.orDie)
    })

    /**
     * The account's messages stored at or before `since` and redacted since (`redacted_after >= since`, migration
     * 0019), the order they were redacted in, at most `limit`: what a tab that saw up to `since` may have missed.
     */
    const redactedSince = Effect.fn("MessageHistory.redactedSince")(function*(accountId: number, since: number, limit: number) {
      const ids = yield* networksOf(accountId, Option.none())
      if (ids.length === 0 || limit <= 0) return []
      return yield* sql<{ readonly networkId: number; readonly target: string; readonly messageId: number }>`
        SELECT b.network_id AS "networkId", b.target, m.id AS "messageId"
        FROM messages m JOIN buffers b ON b.id = m.buffer_id
        WHERE m.redacted_after >= ${since} AND m.id <= ${since} AND ${sql.in("b.network_id", ids)}
        ORDER BY m.redacted_after, m.id
        LIMIT ${limit}`.pipe(Effect.orDie)
    })

    // ---- the IRC listener's reads (IRCv3 draft/chathistory, backlog, read markers) ----

    /** A bound as a condition on a message row: an id compares by id, a time at millisecond precision (see Bound). */
    const beyond = (bound: Bound, op: ">" | ">=" | "<" | "<=") =>
      bound._tag === "Id"
        ? sql`AND id ${sql.literal(op)} ${bound.id}`
        : sql`AND date_trunc('milliseconds', time) ${sql.literal(op)} ${bound.time}`

    /**
     * A buffer's conversation messages (PRIVMSG, NOTICE, ACTION; with `events` its channel events too, with
     * `reactions` its reactions) between two bounds, oldest first, at most `limit`, redacted ones left out (their
     * sender asked for their removal; docs/contract.md "Message ids, replies, reactions and redaction"):
     * the newest of the range when `newest`, else the oldest. `after` is exclusive unless `afterInclusive`; `before`
     * is exclusive. Walks `messages (buffer_id, id)` from the end it keeps.
     */
    const range = (
      networkId: number,
      targetFolded: string,
      window: {
        readonly after?: Bound | undefined
        readonly afterInclusive?: boolean
        readonly before?: Bound | undefined
        readonly newest: boolean
        readonly limit: number
        /** Also the channel events (IRCv3 draft/event-playback): JOIN, PART, QUIT, KICK, NICK, MODE, TOPIC. */
        readonly events?: boolean
        /** Also the reactions (`react` rows), which a client with message-tags is sent as TAGMSG. */
        readonly reactions?: boolean
      }
    ): Effect.Effect<ReadonlyArray<StoredMessage>> => {
      if (window.limit <= 0) return Effect.succeed([])
      const names = ["privmsg", "notice", "action"]
      if (window.events === true) names.push("join", "part", "quit", "kick", "nick", "mode", "topic")
      if (window.reactions === true) names.push("react")
      const kinds = sql`kind IN ${sql.literal(`(${names.map((k) => `'${k}'`).join(", ")})`)} AND NOT redacted`
      const lower = window.after === undefined ? sql`` : beyond(window.after, window.afterInclusive === true ? ">=" : ">")
      const upper = window.before === undefined ? sql`` : beyond(window.before, "<")
      const order = window.newest ? sql`ORDER BY buffer_id DESC, id DESC` : sql`ORDER BY buffer_id, id`
      return sql<StoredMessage>`
        SELECT m.id, b.network_id AS "networkId", b.target, m.time, m.kind, m.nick, m.text, m.numeric, m.self,
               m.encryption, m.msgid, m.reply_to AS "replyTo", m.redacted
        FROM buffers b
        CROSS JOIN LATERAL (
          SELECT id, time, kind, nick, text, numeric, self, encryption, msgid, reply_to, redacted
          FROM messages
          WHERE ${ofBuffer(sql`b.id`)} AND ${kinds} ${lower} ${upper}
          ${order}
          LIMIT ${window.limit}
        ) AS m
        WHERE b.network_id = ${networkId} AND b.target_folded = ${targetFolded}
        ORDER BY m.id`.pipe(Effect.orDie)
    }

    /** Channels and DMs of the network whose last message is strictly between two times, oldest first. */
    const targetsBetween = (networkId: number, from: Date, to: Date, limit: number) => {
      const [lo, hi] = from <= to ? [from, to] : [to, from]
      return sql<{ target: string; lastMessageAt: Date }>`
        SELECT target, last_message_at AS "lastMessageAt" FROM buffers
        WHERE network_id = ${networkId} AND kind IN ('channel', 'dm')
          AND date_trunc('milliseconds', last_message_at) > ${lo} AND date_trunc('milliseconds', last_message_at) < ${hi}
        ORDER BY last_message_at, target_folded
        LIMIT ${limit}`.pipe(Effect.orDie)
    }

    /**
     * The network's conversation messages in channels and DMs with ids above `afterId`, oldest first, at most
     * `limit` (an IRC client's backlog). Per buffer one walk of `(buffer_id, id)` from `afterId`.
     */
    const networkAfter = (networkId: number, afterId: number, limit: number) =>
      limit <= 0 ? Effect.succeed([]) : sql<StoredMessageInBuffer>`
        SELECT m.id, b.network_id AS "networkId", b.target, b.kind AS "bufferKind", m.time, m.kind, m.nick, m.text,
               m.numeric, m.self, m.encryption, m.msgid, m.reply_to AS "replyTo", m.redacted
        FROM buffers b
        CROSS JOIN LATERAL (
          SELECT id, time, kind, nick, text, numeric, self, encryption, msgid, reply_to, redacted
          FROM messages
          WHERE ${ofBuffer(sql`b.id`)} AND id > ${afterId} AND kind IN ('privmsg', 'notice', 'action') AND NOT redacted
          ORDER BY buffer_id, id
          LIMIT ${limit}
        ) AS m
        WHERE b.network_id = ${networkId} AND b.kind IN ('channel', 'dm')
        ORDER BY m.id
        LIMIT ${limit}`.pipe(Effect.orDie)

    /** The newest message id of the network; 0 when it has none. */
    const newestOfNetwork = (networkId: number) =>
      sql<{ id: number | null }>`
        SELECT max(x.id) AS id FROM buffers b
        CROSS JOIN LATERAL (
          SELECT id FROM messages WHERE ${ofBuffer(sql`b.id`)} ORDER BY buffer_id DESC, id DESC LIMIT 1
        ) AS x
        WHERE b.network_id = ${networkId}`.pipe(Effect.orDie, Effect.map((rows) => rows[0]?.id ?? 0))

    /**
     * The id of the buffer's message whose upstream msgid is `msgid` (the newest, should the upstream have given one
     * twice); None when there is none. One probe of the partial index `messages (buffer_id, msgid)`.
     */
    const idOfMsgid = (networkId: number, targetFolded: string, msgid: string) =>
      sql<{ id: number }>`
        SELECT m.id FROM buffers b
        CROSS JOIN LATERAL (
          SELECT id FROM messages WHERE buffer_id = b.id AND msgid = ${msgid} ORDER BY id DESC LIMIT 1
        ) AS m
        WHERE b.network_id = ${networkId} AND b.target_folded = ${targetFolded}`.pipe(
        Effect.orDie,
        Effect.map((rows) => Option.fromNullable(rows[0]?.id))
      )

    /** The time of a message of the network; None when there is no such message there. */
    const timeOf = (networkId: number, messageId: number) =>
      sql<{ time: Date }>`
        SELECT m.time FROM messages m JOIN buffers b ON b.id = m.buffer_id
        WHERE m.id = ${messageId} AND b.network_id = ${networkId}`.pipe(
        Effect.orDie,
        Effect.map((rows) => Option.fromNullable(rows[0]?.time))
      )

    /** The newest message of the buffer at or before `time` (millisecond precision): what "read up to time" means. */
    const idAtOrBefore = (networkId: number, targetFolded: string, time: Date) =>
      sql<{ id: number; time: Date }>`
        SELECT m.id, m.time FROM buffers b
        CROSS JOIN LATERAL (
          SELECT id, time FROM messages
          WHERE ${ofBuffer(sql`b.id`)} AND date_trunc('milliseconds', time) <= ${time}
          ORDER BY buffer_id DESC, id DESC
          LIMIT 1
        ) AS m
        WHERE b.network_id = ${networkId} AND b.target_folded = ${targetFolded}`.pipe(
        Effect.orDie,
        Effect.map((rows) => Option.fromNullable(rows[0]))
      )

    return {
      recent,
      search,
      listBuffers,
      lastId,
      after,
      redactedSince,
      range,
      targetsBetween,
      networkAfter,
      newestOfNetwork,
      timeOf,
      idOfMsgid,
      idAtOrBefore
    } as const
  }),
  dependencies: [Networks.Default, RecentPages.Default]
}) {}
