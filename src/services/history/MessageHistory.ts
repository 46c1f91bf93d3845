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
 * - search (docs/decisions/history.md "Search that does not scan"): GIN finds a term's matches but
 *   cannot hand over the newest first, and which of the planner's ways to the newest matches
 *   is cheap depends on how common the term is, which its statistics guess from a sample. So
 *   search chooses itself, from what it has read, and fixes each statement's plan. First the
 *   scope's newest ids, one window of SEARCH_WINDOW_PER_RESULT ids per requested result,
 *   tested in a way no index serves, so it reads at most the window: a term in one message of
 *   that many is answered there. Below the window, in a transaction whose planner settings
 *   leave each statement one kind of plan, the window's share of matches
 *   says which is cheaper: walking on (at most SEARCH_WALK_PER_RESULT ids per result), or
 *   reading the term's matches through GIN (a probe, at most SEARCH_PROBE_PER_RESULT matches
 *   per result, exact when that was all of them); a probe that meets more than its cap gives
 *   way (with a nick filter, after a probe of the speaker's lines ANDed with the term's matches)
 *   to a walk down to the matches. So a rare or unseen term costs the window and its matches, a
 *   common one its distance to the page; only a term common in old history but absent from
 *   recent history walks further than that.
 *
 * Search (docs/decisions/history.md "Search"): the message text only — the speaker has its own
 * `nick` filter — through `websearch_to_tsquery('simple', …)` over `messages.tsv`: bare
 * terms are ANDed, a "quoted phrase" is matched as a phrase (`or` and `-term` follow
 * web-search syntax), no user input can make it a SQL error, and a query without any term
 * finds nothing. The nick filter compares with RFC 1459 folding (ASCII lower case plus
 * []\~ ≡ {}|^), the default CASEMAPPING — an approximation on networks that announce
 * another one.
 */
import { SqlClient } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Exit, Option } from "effect"
import type { StoredMessage, StoredMessageInBuffer } from "./MessageRow.js"
import { Networks } from "../networks/Networks.js"
import { RecentPages } from "./RecentPages.js"

export type { StoredMessage, StoredMessageInBuffer }

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

export interface SearchQuery {
  readonly accountId: number
  /** Full-text over the message text; every term must match (ANDed). */
  readonly query: string
  readonly networkId: Option.Option<number>
  /** Folded target (with the network's CASEMAPPING) when filtering by buffer. */
  readonly targetFolded: Option.Option<string>
  readonly nick: Option.Option<string>
  readonly limit: number
  /**
   * Inclusive bounds on the message's time, at millisecond precision (the IRC listener's SEARCH `after` and
   * `before`). They narrow the id range searched (ids follow store order, so time nearly follows id; `idAtTime`) and
   * are tested on every row, so no row outside them is answered.
   */
  readonly after?: Date
  readonly before?: Date
  /** Only messages with an id below this (exclusive): the cursor of an older page (the web's Mentions view). */
  readonly beforeId?: number
}

/**
 * Width of search's first window, in message ids per requested result: with the largest page
 * (100), the newest 10,000 ids of the scope.
 */
export const SEARCH_WINDOW_PER_RESULT = 100
/**
 * How far below the window search walks on when the window's matches say walking is the cheaper way to the rest,
 * in ids per requested result (100,000 ids for the default page of 50): twice the longest walk it chooses.
 */
export const SEARCH_WALK_PER_RESULT = 2_000
/**
 * How many of the GIN index's matches below the window search reads at most, per requested result, before it
 * concludes the term is too common for reading its matches to be cheaper than walking (2,000 for a page of 50).
 */
export const SEARCH_PROBE_PER_RESULT = 40
/**
 * What one match read through the GIN index costs, in rows walked: each is a heap page of its own (matches of a
 * term that is not frequent rarely share one), fetched out of order, where a walk reads some 20 rows a page in
 * order. Measured at 1,000,000 messages with the bench's corpus: 11 µs a match (count of a word in 1 % of
 * messages), 0.42 µs a row (a walk of the whole table), so about 25.
 */
export const ROWS_PER_PROBED_MATCH = 25

/** A buffer of a search's scope, with its id range and the query's number of terms. */
interface ScopeBuffer {
  readonly id: number
  readonly networkId: number
  readonly target: string
  readonly newest: number
  readonly oldest: number
  readonly terms: number
}

/** A message as search reads it; its network and target come from its ScopeBuffer. */
type FoundRow = Omit<StoredMessage, "networkId" | "target"> & { readonly bufferId: number }

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

    const FOUND_COLUMNS = sql`id, buffer_id AS "bufferId", time, kind, nick, text, numeric, self, encryption, msgid,
      reply_to AS "replyTo", redacted`

    /**
     * Runs `effect` in a transaction whose planner has no sequential scan, no sort, no parallel workers and no JIT
     * (docs/decisions/history.md "Search that does not scan"). Then a statement ordered by id with a LIMIT can only read an
     * index in id order and stop at the LIMIT (the GIN index hands its matches over unordered, to a sort), and one
     * given nothing but the term can only read the GIN index's matches (its only index): both whatever the
     * statistics estimate. Parallel workers would split a walk that a LIMIT ends early, each starting up and all
     * merged: a walk of 60,000 rows took twice as long with two of them on the bench machine. JIT compilation would
     * cost more than these statements run.
     */
    const planned = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      sql.withTransaction(
        Effect.zipRight(
          sql`SELECT set_config('enable_seqscan', 'off', true), set_config('enable_sort', 'off', true),
                     set_config('max_parallel_workers_per_gather', '0', true), set_config('jit', 'off', true)`,
          effect
        )
      ).pipe(Effect.orDie)
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

    /** Newest first, across every buffer of the account unless filtered (see the module comment for the cost). */
    /**
     * The first id in [lo, hi) of buffer `bufferId` whose message's time (at millisecond precision) is after `time`
     * (`which` "after") or at or after it ("atOrAfter"); `hi` when none is. A binary search over
     * `messages (buffer_id, id)`, each step one probe of the next stored id: about 2 log2(hi - lo) index probes.
     * A buffer's times are its server's (server-time), stored in the order they arrived, so they follow ids but for
     * the odd line stamped out of order; the search's own test of each row's time keeps such a line out when it falls
     * outside the bounds, and one inside them beyond the id so found is the price of not scanning by time
     * (docs/decisions/history.md "Search that does not scan").
     */
    const idAtTime = (bufferId: number, time: Date, which: "after" | "atOrAfter", lo: number, hi: number) =>
      Effect.gen(function*() {
        const bound = Math.floor(time.getTime())
        while (lo < hi) {
          const mid = lo + Math.floor((hi - lo) / 2)
          const next = yield* sql<{ readonly id: number; readonly ms: number }>`
            SELECT id, floor(extract(epoch FROM time) * 1000)::float8 AS ms FROM messages
            WHERE buffer_id = ${bufferId} AND id >= ${mid} AND id < ${hi} ORDER BY buffer_id, id LIMIT 1`.pipe(Effect.orDie)
          const row = next[0]
          if (row === undefined) hi = mid
          else if (which === "after" ? row.ms > bound : row.ms >= bound) hi = row.id
          else lo = row.id + 1
        }
        return lo
      })

    const search = (query: SearchQuery): Effect.Effect<ReadonlyArray<StoredMessage>> =>
      query.limit <= 0 || query.query.trim() === "" ? Effect.succeed([]) : searchTerms(query)

    const searchTerms = (query: SearchQuery) => Effect.gen(function*() {
      const inNetwork = Option.match(query.networkId, { onNone: () => sql``, onSome: (id) => sql`AND n.id = ${id}` })
      const inTarget = Option.match(query.targetFolded, {
        onNone: () => sql``,
        onSome: (t) => sql`AND b.target_folded = ${t}`
      })
      const tsquery = sql`websearch_to_tsquery('simple', ${query.query})`

      // The account's buffers in the scope with their id ranges (two probes of (buffer_id, id) each), and whether the
      // query has a term at all (a query of stop characters parses to an empty tsquery, which matches nothing).
      const buffers = yield* sql<ScopeBuffer>`
        SELECT b.id, b.network_id AS "networkId", b.target, x.newest, x.oldest, numnode(${tsquery}) AS terms
        FROM networks n
        JOIN buffers b ON b.network_id = n.id
        CROSS JOIN LATERAL (
          SELECT
            (SELECT id FROM messages WHERE ${ofBuffer(sql`b.id`)} ORDER BY buffer_id DESC, id DESC LIMIT 1) AS newest,
            (SELECT id FROM messages WHERE ${ofBuffer(sql`b.id`)} ORDER BY buffer_id, id LIMIT 1) AS oldest
        ) AS x
        WHERE n.account_id = ${query.accountId} ${inNetwork} ${inTarget} AND x.newest IS NOT NULL`.pipe(Effect.orDie)
      if (buffers.length === 0 || buffers[0]!.terms === 0) return []
      const byId = new Map(buffers.map((b) => [b.id, b]))
      const inScope = sql`buffer_id = ANY(${`{${buffers.map((b) => b.id).join(",")}}`}::int8[])`
      const byNick = Option.match(query.nick, {
        onNone: () => sql``,
        onSome: (n) => sql`AND translate(lower(nick), '[]\\~', '{}|^') = translate(lower(${n}), '[]\\~', '{}|^')`
      })
      const inTime = sql`${query.after === undefined ? sql`` : sql`AND date_trunc('milliseconds', time) >= ${query.after}`} ${
        query.before === undefined ? sql`` : sql`AND date_trunc('milliseconds', time) <= ${query.before}`
      }`
      const toMessage = (row: FoundRow): StoredMessage => {
        const buffer = byId.get(row.bufferId)!
        return {
          id: row.id,
          networkId: buffer.networkId,
          target: buffer.target,
          time: row.time,
          kind: row.kind,
          nick: row.nick,
          text: row.text,
          numeric: row.numeric,
          self: row.self,
          encryption: row.encryption,
          msgid: row.msgid ?? null,
          replyTo: row.replyTo ?? null,
          redacted: row.redacted ?? false
        }
      }

      /**
       * The newest matches with ids in [from, below), at most `limit`: the scope's messages read down from `below`
       * along an index in id order, each tested for the term and the nick, until the LIMIT is met or the range
       * ends. It reads at most the range, and stops early when the matches are dense. Inside `planned` only: the
       * settings are what make it a walk whatever the statistics say.
       */
      const walk = (from: number, below: number, limit: number) =>
        sql<FoundRow>`
          SELECT ${FOUND_COLUMNS} FROM messages
          WHERE ${inScope} AND id >= ${from} AND id < ${below} AND tsv @@ ${tsquery} ${byNick} ${inTime}
          ORDER BY id DESC
          LIMIT ${limit}`.pipe(Effect.orDie)

      /**
       * The newest matches in the window [from, below), at most `limit`, without planner settings (so without a
       * transaction, for the searches it answers alone). The term is tested as `(…) IS TRUE`, which no index can
       * serve (an index matches an operator on its column, not a test of its result), so whatever plan the window
       * gets reads at most its ids: the walk down the primary key, which the LIMIT stops, or the range's rows and a
       * sort of them.
       */
      const windowOf = (from: number, below: number, limit: number) =>
        sql<FoundRow>`
          SELECT ${FOUND_COLUMNS} FROM messages
          WHERE ${inScope} AND id >= ${from} AND id < ${below} AND (tsv @@ ${tsquery}) IS TRUE ${byNick} ${inTime}
          ORDER BY id DESC
          LIMIT ${limit}`.pipe(Effect.orDie)

      /**
       * The term's matches as the GIN index finds them (a bitmap scan of it: it reads the matches, never a
       * range), read until `cap` + 1 of them: `raw` how many it read, and of those in the scope
       * with ids in [from, below) the newest `limit` that pass the nick filter. `raw` ≤ `cap` means they were
       * all the matches, so the answer is exact. Only the term is given to the scan, and with `bySender` the nick
       * (its bitmap of messages_nick_folded ANDed with the term's; docs/decisions/history.md "Search by sender"):
       * any other condition could be served by an index of ids, which the planner might prefer on a wrong estimate
       * and which reads a range; the rows it hands up are filtered after.
       */
      const probe = (from: number, below: number, limit: number, cap: number, bySender: boolean) =>
        sql<{ readonly raw: number } & Partial<FoundRow>>`
          WITH matched AS MATERIALIZED (
            SELECT id, buffer_id, time, kind, nick, text, numeric, self, encryption, msgid, reply_to, redacted
            FROM messages
            WHERE tsv @@ ${tsquery} ${bySender ? byNick : sql``}
            LIMIT ${cap + 1}
          )
          SELECT c.raw, r.* FROM (SELECT count(*) AS raw FROM matched) AS c
          LEFT JOIN LATERAL (
            SELECT ${FOUND_COLUMNS} FROM matched
            WHERE ${inScope} AND id >= ${from} AND id < ${below} ${byNick} ${inTime}
            ORDER BY id DESC
            LIMIT ${limit}
          ) AS r ON true`.pipe(Effect.orDie)

      // Time bounds narrow the ids of one buffer (see idAtTime); across buffers, whose lines may carry the clocks of
      // different servers, they are only tested on each row.
      const only = buffers.length === 1 ? buffers[0]! : undefined
      let end = Math.min(Math.max(...buffers.map((b) => b.newest)) + 1, query.beforeId ?? Infinity)
      let oldest = Math.min(...buffers.map((b) => b.oldest))
      if (only !== undefined && query.before !== undefined) end = yield* idAtTime(only.id, query.before, "after", oldest, end)
      if (only !== undefined && query.after !== undefined) oldest = yield* idAtTime(only.id, query.after, "atOrAfter", oldest, end)
      if (oldest >= end) return []
      const window = Math.max(oldest, end - query.limit * SEARCH_WINDOW_PER_RESULT)
      const cap = query.limit * SEARCH_PROBE_PER_RESULT
      const newest = yield* windowOf(window, end, query.limit)
      if (newest.length >= query.limit || window === oldest) return newest.map(toMessage)

      // Below the window: walk on, or read the term's matches through the GIN index, whichever the window's density
      // of matches says is cheaper. With a nick filter a walk reads only the speaker's lines (messages_nick_folded), a
      // share of its ids the window cannot tell, so any match in the window makes it the first way ("Search by sender").
      const walkRows = newest.length === 0 ? Infinity : Option.isSome(query.nick) ? 0
        : ((query.limit - newest.length) * (end - window)) / newest.length
      const probeMatches = Math.min(cap, (newest.length * (window - oldest)) / (end - window))
      const older = planned(Effect.gen(function*() {
        const found: Array<FoundRow> = []
        const need = () => query.limit - newest.length - found.length
        let below = window
        if (walkRows < probeMatches * ROWS_PER_PROBED_MATCH) {
          const from = Math.max(oldest, below - query.limit * SEARCH_WALK_PER_RESULT)
          found.push(...(yield* walk(from, below, need())))
          below = from
          if (need() === 0 || below === oldest) return found
        }
        const exact = (probed: ReadonlyArray<{ readonly raw: number } & Partial<FoundRow>>) =>
          (probed[0]?.raw ?? 0) <= cap ? [...found, ...probed.filter((r): r is typeof r & FoundRow => r.id != null)] : undefined
        const byTerm = exact(yield* probe(oldest, below, need(), cap, false))
        if (byTerm !== undefined) return byTerm
        // The speaker's matches may be few among many: the term alone first, at most the cap's heap pages.
        const bySender = Option.isSome(query.nick) ? exact(yield* probe(oldest, below, need(), cap, true)) : undefined
        if (bySender !== undefined) return bySender
        // More matches than the cap, yet too few near the top: walk down to them.
        return [...found, ...(yield* walk(oldest, below, need()))]
      }))
      return [...newest, ...(yield* older)].map(toMessage)
    })

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
