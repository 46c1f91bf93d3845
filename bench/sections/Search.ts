/**
 * Section E: search_messages at 1,000,000 messages, for every kind of term, on two corpora, each against the GIN
 * index alone counting the term's matches in the same run (docs/decisions/history.md "Search that does not scan").
 *
 * 1. For each corpus, a fresh Belay set up as section A sets its own up: account, read-write token and a network on
 *    the scripted fake IRC server with the CLI; Belay stopped; 1,000,000 messages in that network's `#bench` by direct
 *    SQL through the app's Database layer (no ANALYZE by hand); Belay again, 99 more networks through the admin
 *    socket, all 100 connected; then until autovacuum has analyzed and vacuumed `messages` and the server core is
 *    quiet. Corpora (bench/lib/Corpus.ts): the bench's (5,000 sentences of a 3,000-word vocabulary, repeated) and a
 *    Zipf one (every line its own, 12 words drawn by Zipf's law from 200,000).
 * 2. What the planner believes: the column's most common elements and its estimate for a term it does not know; and
 *    the statement search ran below its window before this change, for that term, under EXPLAIN ANALYZE.
 * 3. Each case of the corpus (a word in no message, in 1 of 5,000, 1 of 1,000, 1 of 100, the most frequent, two
 *    frequent words, a quoted phrase, a nick filter) is checked against `ORDER BY id DESC LIMIT 50` over all its
 *    matches, and its route and the rows its statements read are taken from their plans (test/support/QueryPlans.ts).
 * 4. Latency, one request at a time, in BENCH_ROUNDS rounds of BENCH_SEARCH_PASSES passes over the cases: through
 *    /mcp; the same statements straight to PostgreSQL; the statements of the search before this change; and the
 *    baseline, the GIN index alone counting the matches (`SELECT count(*) … WHERE tsv @@ query`, bitmap scans only).
 *    The four back to back for each case, their order rotated by pass. p50 and p95 per round.
 * 5. The IRC listener's SEARCH (soju.im/search, src/listener/Search.ts) over the same corpus, from one client of the
 *    listener bound to the loaded network (bench/lib/ListenerSearch.ts): per case `in=#bench;text=…;limit=50`, and the
 *    same with `from`, `after` or `before`, each answer first checked against the same criteria straight to
 *    PostgreSQL, then timed from the line's write to its batch's end beside the four above, in the same rotation.
 *
 * Concurrency rule: strictly sequential; one Belay at a time, one request at a time.
 */
import { type SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import pg from "pg"
import { MessageHistory } from "../../src/services/history/MessageHistory.js"
import { freePort } from "../../test/support/BelayProcess.js"
import { startFakeIrcServer } from "../../test/support/FakeIrcServer.js"
import { captured, type Compiled, messagePlans, rowsRead } from "../../test/support/QueryPlans.js"
import {
  ACCOUNT,
  addNetworkWithAdmin,
  addNetworkWithCli,
  connectedCount,
  createAccount,
  type RunningBelay,
  startBelay
} from "../lib/Belay.js"
import {
  NICKS,
  nickCase,
  type SearchCase,
  searchCases,
  zipfCases,
  zipfLines,
  zipfText
} from "../lib/Corpus.js"
import { autovacuumState, replayStatements, runningDatabaseUrl, withDatabase, withRunningDatabase } from "../lib/Db.js"
import { databaseMode, freshDatabase, SERVER_CORE, waitForQuietCore, waitUntil } from "../lib/Env.js"
import {
  type ListenerAnswer,
  listenerFigures,
  type ListenerSamples,
  openSearchClient,
  referenceIds,
  timeBounds,
  VARIANTS,
  variantsOf
} from "../lib/ListenerSearch.js"
import { sequentialClient } from "../lib/Load.js"
import { callBody, checkAnswer, headers, probe } from "../lib/McpCalls.js"
import { insertCorpusHistory } from "../lib/MessageLoad.js"
import { type Figure, type LoadAverage, loadNow, perRound, type SectionResult, type Target } from "../lib/Report.js"
import { median, percentile } from "../lib/Stats.js"

const MESSAGES = Number(process.env.BENCH_SEARCH_MESSAGES ?? 1_000_000)
const NETWORKS = Number(process.env.BENCH_MCP_NETWORKS ?? 100)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const PASSES = Number(process.env.BENCH_SEARCH_PASSES ?? 20)
const AUTOVACUUM_WAIT_MS = 240_000
const QUIET_CORE = { maxBusy: 0.1, windowMs: 5_000, timeoutMs: 180_000 } as const
/** The interface's default page (search_messages limit 50). */
const LIMIT = 50
const TARGET_P95_MS = 50
const TARGET = "#bench"
/** The network that holds the corpus, which the listener's client binds to. */
const LOADED = "loaded"
const LOAD_CHUNK = 100_000
const ZIPF_CHUNK = 10_000
const COUNT = MESSAGES.toLocaleString("en-US")

type Case = SearchCase & { readonly nick?: string }

interface Corpus {
  readonly key: string
  readonly title: string
  readonly cases: () => ReadonlyArray<Case>
  /** Fills buffer `bufferId` with MESSAGES messages, message i (1-based) by nick `user(i % NICKS)`. */
  readonly load: (sql: SqlClient.SqlClient, bufferId: number) => Effect.Effect<void, unknown>
}

const timeOf = (i: string) => `now() - make_interval(secs => ${MESSAGES} - ${i})`

const benchCorpus: Corpus = {
  key: "bench",
  title: "bench corpus (5,000 sentences of a 3,000-word vocabulary, repeated)",
  cases: () => [...searchCases(), nickCase()],
  // As section A loads it: one message a second, ending now; nick and text cycle through the corpus.
  load: (sql, bufferId) => insertCorpusHistory(sql, bufferId, MESSAGES)
}

const zipfCorpus: Corpus = {
  key: "zipf",
  title: "Zipf corpus (every line its own, 12 words drawn by Zipf's law from 200,000)",
  cases: () => zipfCases(MESSAGES),
  // The lines as one text[] parameter per chunk: the words are a-z only, so each element is quoted and nothing
  // needs escaping.
  load: (sql, bufferId) =>
    Effect.gen(function*() {
      let chunk: Array<string> = []
      let from = 1
      const flush = Effect.suspend(() => {
        const texts = `{${chunk.map((t) => `"${t}"`).join(",")}}`
        const first = from
        from += chunk.length
        chunk = []
        return sql`
          INSERT INTO messages (buffer_id, time, kind, nick, text)
          SELECT ${bufferId}, ${sql.literal(timeOf(`(${first} + u.k - 1)`))}, 'privmsg',
                 'user' || ((${first} + u.k - 1) % ${NICKS}), u.t
          FROM unnest(${texts}::text[]) WITH ORDINALITY AS u (t, k)`
      })
      for (const ranks of zipfLines(MESSAGES)) {
        chunk.push(zipfText(ranks))
        if (chunk.length === ZIPF_CHUNK) yield* flush
      }
      if (chunk.length > 0) yield* flush
    })
}

const searchBody = (c: Case) => callBody("search_messages", { query: c.query, ...(c.nick ? { nick: c.nick } : {}) })

/** A fresh Belay with the corpus loaded, NETWORKS networks connected and the table analyzed by autovacuum. */
const prepare = async (port: number, source: Corpus, figures: Array<Figure>) => {
  const db = await freshDatabase(`search-${source.key}`)
  try {
    let belay = await startBelay(db.env)
    let token: string
    let networkId: number
    try {
      token = (await createAccount(belay)).token
      networkId = await addNetworkWithCli(belay, LOADED, port)
    } finally {
      await belay.stop()
    }
    const started = performance.now()
    const stored = await withDatabase(db.env, (sql) =>
      Effect.gen(function*() {
        const [buffer] = yield* sql<{ id: number }>`
          INSERT INTO buffers (network_id, target, target_folded, kind)
          VALUES (${networkId}, ${TARGET}, ${TARGET}, 'channel') RETURNING id`
        yield* source.load(sql, buffer!.id)
        yield* sql`UPDATE buffers SET last_message_at = now() WHERE id = ${buffer!.id}`
        const [n] = yield* sql<{ n: number }>`SELECT count(*)::int8 AS n FROM messages WHERE buffer_id = ${buffer!.id}`
        return n!.n
      }))
    if (stored !== MESSAGES) throw new Error(`loaded ${stored} messages, expected ${MESSAGES}`)
    figures.push({ name: `${source.key}: load time (direct SQL)`, value: (performance.now() - started) / 1000, unit: "s" })

    const ircPort = await Effect.runPromise(freePort)
    belay = await startBelay({ ...db.env, BELAY_IRC_LISTEN: `127.0.0.1:${ircPort}` })
    const belayStarted = performance.now()
    try {
      for (let i = 2; i <= NETWORKS; i++) await addNetworkWithAdmin(belay, `idle${i}`, port)
      await waitUntil(`${NETWORKS} networks connected`, 120_000, async () =>
        connectedCount(await belay.metrics()) === NETWORKS || undefined, 200)
      const settled = await waitUntil("autovacuum's ANALYZE and VACUUM of messages", AUTOVACUUM_WAIT_MS, async () => {
        const state = await autovacuumState(db.env)
        return state.analyzed !== null && state.vacuumed !== null ? state : undefined
      }, 1000).catch(() => undefined)
      figures.push({
        name: `${source.key}: autovacuum had analyzed and vacuumed messages (s after Belay started)`,
        value: settled === undefined ? `not within ${AUTOVACUUM_WAIT_MS / 1000} s` : (performance.now() - belayStarted) / 1000,
        ...(settled === undefined ? {} : { unit: "s" })
      })
      const quiet = await waitForQuietCore(SERVER_CORE, QUIET_CORE)
      figures.push({
        name: `${source.key}: server core quiet before the rounds, waited`,
        value: quiet === undefined ? `not within ${QUIET_CORE.timeoutMs / 1000} s` : quiet,
        ...(quiet === undefined ? {} : { unit: "s" })
      })
      return { db, belay, token, ircPort }
    } catch (e) {
      await belay.stop()
      throw e
    }
  } catch (e) {
    await db.dispose()
    throw e
  }
}

/** What the planner believes about the column, and the previous statement's plan for a term it does not know. */
const plannerView = async (client: pg.Client, networkIds: ReadonlyArray<number>, unseen: string) => {
  const { rows: [stats] } = await client.query<{ elements: number; least: number }>(
    `SELECT coalesce(array_length(most_common_elems, 1), 0) AS elements,
            (SELECT min(f) FROM unnest(most_common_elem_freqs[1:array_length(most_common_elem_freqs, 1) - 3]) AS f) AS least
     FROM pg_stats WHERE tablename = 'messages' AND attname = 'tsv'`
  )
  const { rows: [estimate] } = await client.query<{ "QUERY PLAN": ReadonlyArray<{ Plan: { "Plan Rows": number } }> }>(
    `EXPLAIN (FORMAT JSON) SELECT 1 FROM messages WHERE tsv @@ websearch_to_tsquery('simple', $1)`,
    [unseen]
  )
  const [scope] = await previousScope(client, networkIds, unseen)
  const [text, params] = previousBelow(networkIds, unseen, undefined, scope!.oldest, scope!.window, LIMIT)
  const started = performance.now()
  const { rows: [plan] } = await client.query<{ "QUERY PLAN": ReadonlyArray<{ Plan: PlanSummary }> }>(
    `EXPLAIN (ANALYZE, FORMAT JSON) ${text}`,
    [...params]
  )
  return {
    elements: stats?.elements ?? 0,
    least: stats?.least ?? 0,
    estimate: estimate!["QUERY PLAN"][0]!.Plan["Plan Rows"],
    previous: { plan: summarize(plan!["QUERY PLAN"][0]!.Plan), ms: performance.now() - started }
  }
}

interface PlanSummary {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly "Index Name"?: string
  readonly "Scan Direction"?: string
  readonly "Actual Rows": number
  readonly "Rows Removed by Filter"?: number
  readonly Plans?: ReadonlyArray<PlanSummary>
}

/** The scans of messages in a plan: "Index Scan Backward using messages_pkey, 996,000 rows read". */
const summarize = (plan: PlanSummary): string => {
  const all = (p: PlanSummary): Array<PlanSummary> => [p, ...(p.Plans ?? []).flatMap(all)]
  return all(plan)
    .filter((n) => n["Relation Name"] === "messages" || (n["Node Type"] === "Bitmap Index Scan" && n["Index Name"]?.startsWith("messages")))
    .map((n) =>
      `${n["Node Type"]}${n["Scan Direction"] === "Backward" ? " Backward" : ""}${n["Index Name"] ? ` using ${n["Index Name"]}` : ""}, ${
        (n["Actual Rows"] + (n["Rows Removed by Filter"] ?? 0)).toLocaleString("en-US")
      } rows`
    )
    .join("; ")
}

/**
 * The statements search_messages ran before this change (MessageHistory at the parent commit), kept here only to
 * measure them beside the new ones: the scope's id range over the account's networks, a window of the newest
 * 100 ids per result, then one statement for the rest of the range, each plan left to the planner.
 */
const previousScope = async (client: pg.Client, networkIds: ReadonlyArray<number>, query: string) => {
  const ids = networkIds.map((_, i) => `$${i + 2}`).join(", ")
  const { rows } = await client.query<{ newest: number | null; oldest: number | null; terms: number }>(
    `SELECT max(x.newest)::int8 AS newest, min(x.oldest)::int8 AS oldest, numnode(websearch_to_tsquery('simple', $1)) AS terms
     FROM buffers b
     CROSS JOIN LATERAL (
       SELECT
         (SELECT id FROM messages WHERE buffer_id BETWEEN b.id AND b.id ORDER BY buffer_id DESC, id DESC LIMIT 1) AS newest,
         (SELECT id FROM messages WHERE buffer_id BETWEEN b.id AND b.id ORDER BY buffer_id, id LIMIT 1) AS oldest
     ) AS x
     WHERE b.network_id IN (${ids})`,
    [query, ...networkIds]
  )
  return rows.map((r) => ({
    ...r,
    newest: Number(r.newest),
    oldest: Number(r.oldest),
    window: Math.max(Number(r.oldest), Number(r.newest) + 1 - LIMIT * 100)
  }))
}

const previousBelow = (
  networkIds: ReadonlyArray<number>,
  query: string,
  nick: string | undefined,
  from: number,
  below: number,
  limit: number
): Compiled => {
  const ids = networkIds.map((_, i) => `$${i + 5}`).join(", ")
  const byNick = nick === undefined
    ? ""
    : `AND translate(lower(m.nick), '[]\\~', '{}|^') = translate(lower($${networkIds.length + 5}), '[]\\~', '{}|^')`
  return [
    `SELECT m.id, b.network_id AS "networkId", b.target, m.time, m.kind, m.nick, m.text, m.numeric, m.self, m.encryption
     FROM messages m
     JOIN buffers b ON b.id = m.buffer_id
     WHERE b.network_id IN (${ids})
       AND m.id >= $1 AND m.id < $2
       AND m.tsv @@ websearch_to_tsquery('simple', $3)
       ${byNick}
     ORDER BY m.id DESC
     LIMIT $4`,
    [from, below, query, limit, ...networkIds, ...(nick === undefined ? [] : [nick])]
  ]
}

/** The previous search, statement by statement as it ran them; the ids it found. */
const previousSearch = async (client: pg.Client, networkIds: ReadonlyArray<number>, c: Case) => {
  await client.query(`SELECT id FROM networks WHERE account_id = (SELECT id FROM accounts WHERE name = $1) ORDER BY id`, [
    ACCOUNT
  ])
  const [scope] = await previousScope(client, networkIds, c.query)
  const run = async (from: number, below: number, limit: number) => {
    const [text, params] = previousBelow(networkIds, c.query, c.nick, from, below, limit)
    return (await client.query<{ id: number }>(text, [...params])).rows.map((r) => Number(r.id))
  }
  const end = scope!.newest + 1
  const newest = await run(scope!.window, end, LIMIT)
  if (newest.length >= LIMIT || scope!.window === scope!.oldest) return newest
  return [...newest, ...(await run(scope!.oldest, scope!.window, LIMIT - newest.length))]
}

/** The baseline: the GIN index alone counting the matches (with the nick filter on the rows it finds). */
const ginCount = (client: pg.Client, c: Case) =>
  client.query(
    c.nick === undefined
      ? `SELECT count(*) FROM messages WHERE tsv @@ websearch_to_tsquery('simple', $1)`
      : `SELECT count(*) FROM messages WHERE tsv @@ websearch_to_tsquery('simple', $1)
           AND translate(lower(nick), '[]\\~', '{}|^') = translate(lower($2), '[]\\~', '{}|^')`,
    c.nick === undefined ? [c.query] : [c.query, c.nick]
  )

/** The route a search took: its statements after the scope, "walk" or "probe" (docs/decisions/history.md). */
const routeOf = (statements: ReadonlyArray<Compiled>) =>
  statements
    .filter(([text]) => /\bmessages\b/.test(text))
    .slice(1)
    .map(([text]) => (/MATERIALIZED/.test(text) ? "probe" : "walk"))

const timed = async (f: () => Promise<unknown>) => {
  const started = performance.now()
  await f()
  return performance.now() - started
}

const measureCorpus = async (port: number, source: Corpus) => {
  const figures: Array<Figure> = []
  const loads: Array<LoadAverage> = []
  const cases = source.cases()
  const { db, belay, token, ircPort } = await prepare(port, source, figures)
  const url = runningDatabaseUrl(db.env)
  const client = new pg.Client({ connectionString: url })
  const baseline = new pg.Client({ connectionString: url })
  const http = sequentialClient(`${belay.url}/mcp`, headers(token), (status, text) => void checkAnswer(status, text))
  let irc: Awaited<ReturnType<typeof openSearchClient>> | undefined
  try {
    await client.connect()
    await baseline.connect()
    irc = await openSearchClient(ircPort, ACCOUNT, LOADED, token)
    // The GIN index alone: bitmap scans only, so the count never becomes a sequential scan of the table.
    await baseline.query("SET enable_seqscan = off")
    await baseline.query("SET enable_indexscan = off")
    const networkIds = (await client.query<{ id: string }>(
      "SELECT n.id FROM networks n JOIN accounts a ON a.id = n.account_id WHERE a.name = $1 ORDER BY n.id",
      [ACCOUNT]
    )).rows.map((r) => Number(r.id))

    const accountId = Number((await client.query<{ id: string }>("SELECT id FROM accounts WHERE name = $1", [ACCOUNT])).rows[0]!.id)
    const view = await plannerView(client, networkIds, "qqqqqqqqqqqq")
    figures.push(
      {
        name: `${source.key}: the planner's statistics for messages.tsv: most common elements, the least common's share`,
        value: `${view.elements} elements, down to ${(view.least * 100).toFixed(3)} % of messages`
      },
      { name: `${source.key}: the planner's estimate for a term it has no entry for`, value: view.estimate, unit: "messages" },
      {
        name: `${source.key}: before this change, the statement below the window for a word in no message (EXPLAIN ANALYZE)`,
        value: `${view.previous.plan}; ${view.previous.ms.toFixed(0)} ms`
      }
    )

    // Each case: the same ids as every match newest first; its route and rows read, from the plans.
    const captures = await withRunningDatabase(
      db.env,
      Effect.gen(function*() {
        const history = yield* MessageHistory
        return yield* Effect.forEach(cases, (c) =>
          Effect.gen(function*() {
            const search = history.search({
              accountId,
              query: c.query,
              networkId: Option.none(),
              targetFolded: Option.none(),
              nick: Option.fromNullable(c.nick),
              limit: LIMIT
            })
            const { result, statements } = yield* captured(search)
            const plans = yield* messagePlans(statements)
            return { ids: result.map((m) => m.id), statements, read: plans.reduce((n, p) => n + rowsRead(p, "messages"), 0) }
          }))
      }).pipe(Effect.provide(MessageHistory.Default))
    )
    for (const [i, c] of cases.entries()) {
      const viaMcp = (await probe(belay, token, searchBody(c))).result.structuredContent?.messages?.map((m) => m.id) ?? []
      const reference = (await baseline.query<{ id: string }>(
        c.nick === undefined
          ? `SELECT id FROM messages WHERE tsv @@ websearch_to_tsquery('simple', $1) ORDER BY id DESC LIMIT ${LIMIT}`
          : `SELECT id FROM messages WHERE tsv @@ websearch_to_tsquery('simple', $1)
               AND translate(lower(nick), '[]\\~', '{}|^') = translate(lower($2), '[]\\~', '{}|^')
             ORDER BY id DESC LIMIT ${LIMIT}`,
        c.nick === undefined ? [c.query] : [c.query, c.nick]
      )).rows.map((r) => Number(r.id))
      const previous = await previousSearch(client, networkIds, c)
      for (const [what, ids] of [["/mcp", viaMcp], ["MessageHistory", captures[i]!.ids], ["the previous search", previous]] as const) {
        if (JSON.stringify(ids) !== JSON.stringify(reference)) {
          throw new Error(`${source.key} ${JSON.stringify(c.query)}: ${what} found other messages than every match newest first`)
        }
      }
    }

    // The listener's SEARCH, four variants a case (in the loaded channel; with from, after, before): each answer
    // checked against the same criteria straight to PostgreSQL, newest LIMIT oldest first.
    const { rows: [loaded] } = await client.query<{ id: string }>(
      "SELECT b.id FROM buffers b JOIN networks n ON n.id = b.network_id WHERE n.name = $1 AND b.target_folded = $2",
      [LOADED, TARGET]
    )
    const bufferId = Number(loaded!.id)
    const bounds = { fromNick: "user7", ...(await timeBounds(client, bufferId)) }
    const variants = cases.map((c) => variantsOf(c, TARGET, LIMIT, bounds))
    const answers: Array<Array<ListenerAnswer>> = []
    for (const vs of variants) {
      const out: Array<ListenerAnswer> = []
      for (const v of vs) {
        const got = await irc.search(v.attributes)
        if (got.fail !== undefined) throw new Error(`${source.key} SEARCH ${v.attributes}: ${got.fail}`)
        const expected = await referenceIds(client, bufferId, v, LIMIT)
        out.push({ got: got.ids.length, expected: expected.length, same: JSON.stringify(got.ids) === JSON.stringify(expected) })
      }
      answers.push(out)
    }

    // Latency: the eight back to back per case, the order rotated by pass.
    const samples = cases.map(() => ({
      mcp: [] as Array<number>,
      sql: [] as Array<number>,
      previous: [] as Array<number>,
      gin: [] as Array<number>,
      in: [] as Array<number>,
      from: [] as Array<number>,
      after: [] as Array<number>,
      before: [] as Array<number>
    }))
    const ircWay = (k: number) => async (i: number) => (await irc!.search(variants[i]![k]!.attributes)).ms
    const ways = [
      (i: number) => timed(() => http.post(searchBody(cases[i]!))),
      (i: number) => timed(() => replayStatements(client, captures[i]!.statements)),
      (i: number) => timed(() => previousSearch(client, networkIds, cases[i]!)),
      (i: number) => timed(() => ginCount(baseline, cases[i]!)),
      ...VARIANTS.map((_, k) => ircWay(k))
    ] as const
    const keys = ["mcp", "sql", "previous", "gin", ...VARIANTS] as const
    for (let i = 0; i < cases.length; i++) for (const way of ways) await way(i)
    const rounds: Array<Array<{ mcp: Array<number>; gin: Array<number> }>> = []
    const ircRounds: Array<Array<ListenerSamples>> = []
    for (let round = 0; round < ROUNDS; round++) {
      const load0 = loadNow()
      const thisRound = cases.map(() => ({ mcp: [] as Array<number>, gin: [] as Array<number> }))
      const ircRound = cases.map((): ListenerSamples => ({ in: [], from: [], after: [], before: [] }))
      for (let pass = 0; pass < PASSES; pass++) {
        for (let i = 0; i < cases.length; i++) {
          for (let k = 0; k < ways.length; k++) {
            const w = (k + pass) % ways.length
            const ms = await ways[w]!(i)
            samples[i]![keys[w]!].push(ms)
            if (keys[w] === "mcp") thisRound[i]!.mcp.push(ms)
            if (keys[w] === "gin") thisRound[i]!.gin.push(ms)
            const key = keys[w]!
            if (key === "in" || key === "from" || key === "after" || key === "before") ircRound[i]![key].push(ms)
          }
        }
      }
      rounds.push(thisRound)
      ircRounds.push(ircRound)
      loads.push({ start: load0, end: loadNow() })
    }

    const p95 = (i: number, key: "mcp" | "gin") => rounds.map((r) => percentile(r[i]![key], 95))
    for (const [i, c] of cases.entries()) {
      const route = routeOf(captures[i]!.statements)
      const tag = `${source.key} "${c.query}"${c.nick ? ` by ${c.nick}` : ""} (${c.label}, ${(c.share * 100).toFixed(c.share < 0.001 ? 4 : 2)} % of messages)`
      const ms = (v: ReadonlyArray<number>) => `${median(v).toFixed(2)} ms`
      figures.push(
        {
          name: `${tag}: route, rows of messages its statements read, found`,
          value: `${route.join(" → ")}; ${captures[i]!.read.toLocaleString("en-US")} rows; ${captures[i]!.ids.length} found`
        },
        perRound(`${tag}: p95 via /mcp`, p95(i, "mcp"), "ms"),
        perRound(`${tag}: p95 of the GIN count`, p95(i, "gin"), "ms"),
        perRound(`${tag}: ratio p95 /mcp ÷ GIN count`, p95(i, "mcp").map((m, r) => m / p95(i, "gin")[r]!)),
        {
          name: `${tag}: p50 via /mcp; its statements direct; the previous search's direct; the GIN count`,
          value: [samples[i]!.mcp, samples[i]!.sql, samples[i]!.previous, samples[i]!.gin].map(ms).join("; ")
        }
      )
    }
    const worst = rounds.map((r) => Math.max(...r.map((c) => percentile(c.mcp, 95))))
    figures.push(perRound(`${source.key}: worst p95 via /mcp of the ${cases.length} cases`, worst, "ms"))
    const listener = listenerFigures(source.key, cases, variants, answers, ircRounds, samples.map((s) => s.mcp), COUNT)
    const target: Target = {
      name: `search_messages p95, every case, ${source.key} corpus (${COUNT} messages, ${NETWORKS} networks)`,
      measured: median(worst),
      comparator: "<=",
      target: TARGET_P95_MS,
      unit: "ms",
      runs: worst
    }
    figures.push(...listener.figures)
    return { figures, loads, targets: [target, ...listener.targets] }
  } finally {
    irc?.close()
    http.close()
    await client.end().catch(() => undefined)
    await baseline.end().catch(() => undefined)
    await belay.stop()
    await db.dispose()
  }
}

export const runSearch = async (): Promise<SectionResult> => {
  const started = performance.now()
  const fake = await startFakeIrcServer({ timeout: "60 seconds", onConnection: (connection) => connection.register() })
  const figures: Array<Figure> = []
  const targets: Array<Target> = []
  const loads: Array<LoadAverage> = []
  try {
    for (const source of [benchCorpus, zipfCorpus]) {
      const measured = await measureCorpus(fake.server.port, source)
      figures.push(...measured.figures)
      targets.push(...measured.targets)
      loads.push(...measured.loads)
    }
  } finally {
    await fake.close()
  }
  return {
    key: "search",
    title: "E. Search",
    seconds: (performance.now() - started) / 1000,
    figures,
    targets,
    load: loads,
    method: [
      `Belay ran as \`node bin/belay serve\` on ${databaseMode}, a fresh data dir per corpus; account, read-write token and the loaded network made with the CLI, ${
        NETWORKS - 1
      } more networks through the admin socket, all connected to the scripted fake IRC server and idle. ${COUNT} messages in the loaded network's ${TARGET} by direct SQL while Belay was stopped (the app's Database layer: same migrations and indexes); no ANALYZE by hand: the section waits (up to ${
        AUTOVACUUM_WAIT_MS / 1000
      } s) for autovacuum to analyze and vacuum the table, then for the server core to be quiet. BELAY_IRC_LISTEN on a loopback port for the listener's SEARCH.`,
      `Corpora: ${benchCorpus.title}, as section A loads it; ${zipfCorpus.title}. 50 nicks; message i said by user(i mod 50).`,
      `Cases (bench/lib/Corpus.ts): searchCases on the bench corpus plus the most frequent word with a nick filter (nickCase); zipfCases on the Zipf corpus, chosen the same way. All account-wide (${NETWORKS} networks), limit ${LIMIT} (the default). Before timing, each case's answer through /mcp, through MessageHistory in the bench process, and through the previous search's statements was checked to be the same ids as \`ORDER BY id DESC LIMIT ${LIMIT}\` over all its matches.`,
      "Route and rows read: the statements MessageHistory.search sends for the case, captured as compiled from the service itself and replayed in one transaction under EXPLAIN ANALYZE (test/support/QueryPlans.ts); the route lists the statements after the scope (walk: the scope's messages down an index in id order; probe: the GIN index's matches); rows read are those returned and filtered out by every scan of messages, the scope's two index entries per buffer included.",
      `Latency: one request at a time, ${ROUNDS} rounds of ${PASSES} passes over the cases after one warm-up pass; for each case back to back, the order rotated by pass: search_messages through /mcp (one keep-alive connection from the bench process); the same statements sent straight to PostgreSQL with \`pg\` in a transaction; the statements of the search before this change (its scope, window and rest, each planned as the planner likes, kept in bench/sections/Search.ts for this only) straight to PostgreSQL; and the baseline, \`SELECT count(*) FROM messages WHERE tsv @@ websearch_to_tsquery('simple', query)\` (and the nick filter, when the case has one) on a connection with enable_seqscan and enable_indexscan off, so that it is the GIN index alone counting the matches. p95 per round over its ${PASSES} samples, ratios per round, and the median and range of the rounds; p50 over all rounds.`,
      `The listener's SEARCH (bench/lib/ListenerSearch.ts): one client of BELAY_IRC_LISTEN, signed in with \`PASS ${ACCOUNT}/${LOADED}:<token>\` and \`CAP REQ :server-time message-tags batch soju.im/search\`, bound to the loaded network. Per case four SEARCHes, limit ${LIMIT}: in (\`in=${TARGET};text=<the case's query>\`, with \`from=<nick>\` when the case has a nick filter), from (with \`from=user7\`), after (with \`after=\` the time of the message nine tenths into the buffer: the newest tenth is after it) and before (with \`before=\` the time of the message half-way: the older half). Each answer was first compared with the reference, the same criteria straight to PostgreSQL (the buffer, the full-text query, the nick casemapped, the bounds inclusive at milliseconds, ORDER BY id DESC LIMIT ${LIMIT}, shown oldest first), by msgid (Belay's message id); a difference is reported, not fatal. Then each of the four is a fifth to eighth way in the latency rotation above, timed from the write of the SEARCH line to the \`BATCH -\` line that ends its answer (one connection, one request at a time). p50 / p95 / p99 over every round (nearest rank: with fewer than 100 samples, ${ROUNDS * PASSES} per case and variant by default, p99 is the largest), beside search_messages' own through /mcp; the target is judged on the worst p95 of any case and variant per round.`
    ]
  }
}
