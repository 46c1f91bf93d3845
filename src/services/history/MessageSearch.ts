/**
 * MessageSearch: full-text search of the stored history, what `search_messages`, the web client's search and the IRC
 * listener's SEARCH ask for (MessageHistory.search, which MessageHistory makes with `makeSearch` from its SQL client).
 *
 * Concurrency: no state of its own; a search is a few statements on the shared pool, those below the first window in
 * one transaction (`planned`), so it never waits for the writer's batches beyond the pool. SQL errors are defects at
 * this edge. `search` is a plain function, not `Effect.fn`, for the reason MessageHistory's methods are (a span and a
 * stack trace on every call).
 *
 * Cost (docs/decisions/history.md "Search that does not scan"; a page is at most 100, the interface's limit for
 * search_messages): GIN finds a term's matches but
 * cannot hand over the newest first, and which of the planner's ways to the newest matches
 * is cheap depends on how common the term is, which its statistics guess from a sample. So
 * search chooses itself, from what it has read, and fixes each statement's plan. First the
 * scope's newest ids, one window of SEARCH_WINDOW_PER_RESULT ids per requested result,
 * tested in a way no index serves, so it reads at most the window: a term in one message of
 * that many is answered there. Below the window, in a transaction whose planner settings
 * leave each statement one kind of plan, the window's share of matches
 * says which is cheaper: walking on (at most SEARCH_WALK_PER_RESULT ids per result), or
 * reading the term's matches through GIN (a probe, at most SEARCH_PROBE_PER_RESULT matches
 * per result, exact when that was all of them); a probe that meets more than its cap gives
 * way (with a nick filter, after a probe of the speaker's lines ANDed with the term's matches)
 * to a walk down to the matches. So a rare or unseen term costs the window and its matches, a
 * common one its distance to the page; only a term common in old history but absent from
 * recent history walks further than that.
 *
 * Search (docs/decisions/history.md "Search"): the message text only — the speaker has its own
 * `nick` filter — through `websearch_to_tsquery('simple', …)` over `messages.tsv`: bare
 * terms are ANDed, a "quoted phrase" is matched as a phrase (`or` and `-term` follow
 * web-search syntax), no user input can make it a SQL error, and a query without any term
 * finds nothing. The nick filter compares with RFC 1459 folding (ASCII lower case plus
 * []\~ ≡ {}|^), the default CASEMAPPING — an approximation on networks that announce
 * another one.
 */
import type { SqlClient } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Option } from "effect"
import type { StoredMessage } from "./MessageRow.js"

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

export const makeSearch = (deps: {
  readonly sql: SqlClient.SqlClient
  /** One buffer's messages as a key range of `messages (buffer_id, id)` (MessageHistory's `ofBuffer` says why). */
  readonly ofBuffer: (buffer: Fragment) => Fragment
}): {
  readonly search: (query: SearchQuery) => Effect.Effect<ReadonlyArray<StoredMessage>>
} => {
  const { sql, ofBuffer } = deps

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

  /** Newest first, across every buffer of the account unless filtered (see the module comment for the cost). */
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

  return { search } as const
}
