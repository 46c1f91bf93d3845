/**
 * ListenerSearch owns section E's IRC client of Belay's listener (BELAY_IRC_LISTEN): one connection signed in with the
 * API token and bound to one network, `batch` and `soju.im/search` requested, that sends `SEARCH` (soju.im/search,
 * src/listener/Search.ts) and times each answer from the line's write to its batch's end — the whole answer as a
 * client has it; the variants of each search case (`in` and `text`, then with `from`, `after` or `before`), and the
 * reference each answer is checked against: the same criteria straight to PostgreSQL, newest `limit` first, shown
 * oldest first (docs/contract.md "The IRC client listener").
 *
 * Concurrency rule: one SEARCH in flight per client; `search` rejects a second call while one is pending.
 */
import * as Net from "node:net"
import type pg from "pg"
import { escapeTagValue, parseLine } from "../../src/irc/IrcLine.js"
import { type Figure, perRound, type Target } from "./Report.js"
import { median, percentile } from "./Stats.js"

/** How long one answer may take before the bench gives up on the connection. */
const ANSWER_TIMEOUT_MS = 30_000
/** The target: p95 of the whole answer under 50 ms, as search_messages' own. */
const TARGET_P95_MS = 50

export interface SearchAnswer {
  /** From the SEARCH line's write to its batch's end (or to its FAIL). */
  readonly ms: number
  /** The msgids (Belay's message ids) of the batch's messages, in the order sent. */
  readonly ids: ReadonlyArray<number>
  /** `FAIL SEARCH …` instead of a batch. */
  readonly fail?: string
}

export interface SearchClient {
  readonly search: (attributes: string) => Promise<SearchAnswer>
  readonly close: () => void
}

interface Pending {
  readonly started: number
  readonly resolve: (answer: SearchAnswer) => void
  readonly reject: (error: Error) => void
  readonly timer: NodeJS.Timeout
  batch: string | undefined
  readonly ids: Array<number>
}

/** Signs in as `account/network` with `token` and waits for the PONG after the welcome. */
export const openSearchClient = (port: number, account: string, network: string, token: string): Promise<SearchClient> =>
  new Promise((resolveOpen, rejectOpen) => {
    const socket = Net.connect({ host: "127.0.0.1", port, noDelay: true })
    socket.setEncoding("utf8")
    let registered = false
    let pending: Pending | undefined
    let buffered = ""
    const failAll = (error: Error) => {
      if (!registered) rejectOpen(error)
      if (pending !== undefined) {
        clearTimeout(pending.timer)
        pending.reject(error)
        pending = undefined
      }
    }
    const onLine = (raw: string) => {
      const line = parseLine(raw)
      if (line === undefined) return
      if (!registered) {
        if (line.command === "CAP" && line.params[1] === "NAK") failAll(new Error(`listener refused the capabilities: ${raw}`))
        else if (line.command === "ERROR" || line.command === "464") failAll(new Error(`listener sign-in failed: ${raw}`))
        else if (line.command === "PONG" && line.params.at(-1) === "registered") {
          registered = true
          resolveOpen({ search, close: () => socket.destroy() })
        }
        return
      }
      const p = pending
      if (p === undefined) return
      const done = (answer: SearchAnswer) => {
        clearTimeout(p.timer)
        pending = undefined
        p.resolve(answer)
      }
      if (line.command === "BATCH") {
        const ref = line.params[0] ?? ""
        if (ref.startsWith("+") && line.params[1] === "soju.im/search") p.batch = ref.slice(1)
        else if (ref === `-${p.batch}`) done({ ms: performance.now() - p.started, ids: p.ids })
      } else if ((line.command === "PRIVMSG" || line.command === "NOTICE") && line.tags.get("batch") === p.batch) {
        p.ids.push(Number(line.tags.get("msgid")))
      } else if (line.command === "FAIL" && line.params[0] === "SEARCH") {
        done({ ms: performance.now() - p.started, ids: [], fail: raw })
      }
    }
    socket.on("data", (chunk: string) => {
      const data = buffered + chunk
      let start = 0
      for (let lf = data.indexOf("\n"); lf !== -1; lf = data.indexOf("\n", start)) {
        onLine(data.slice(start, lf))
        start = lf + 1
      }
      buffered = data.slice(start)
    })
    socket.on("error", (e) => failAll(e))
    socket.on("close", () => failAll(new Error("the listener closed the connection")))
    const search = (attributes: string) =>
      new Promise<SearchAnswer>((resolve, reject) => {
        if (pending !== undefined) return reject(new Error("one SEARCH at a time"))
        const timer = setTimeout(() => failAll(new Error(`no answer to SEARCH ${attributes} in ${ANSWER_TIMEOUT_MS} ms`)), ANSWER_TIMEOUT_MS)
        pending = { started: performance.now(), resolve, reject, timer, batch: undefined, ids: [] }
        socket.write(`SEARCH ${attributes}\r\n`)
      })
    socket.write(
      [
        "CAP LS 302",
        `PASS ${account}/${network}:${token}`,
        "NICK bench",
        "USER bench 0 * :Bench",
        "CAP REQ :server-time message-tags batch soju.im/search",
        "CAP END",
        "PING :registered"
      ].map((l) => `${l}\r\n`).join("")
    )
  })

export type VariantKey = "in" | "from" | "after" | "before"
export const VARIANTS: ReadonlyArray<VariantKey> = ["in", "from", "after", "before"]

/** One SEARCH: its attributes on the wire, and the criteria the reference applies. */
export interface SearchVariant {
  readonly key: VariantKey
  readonly attributes: string
  readonly text: string
  readonly from: string | undefined
  readonly after: Date | undefined
  readonly before: Date | undefined
}

/**
 * The four SEARCHes of a case in channel `target`: `in` and `text` (and the case's own nick filter as `from`, if it
 * has one); with `from` (`fromNick`, unless the case already has one); with `after`; with `before`.
 */
export const variantsOf = (
  c: { readonly query: string; readonly nick?: string },
  target: string,
  limit: number,
  bounds: { readonly fromNick: string; readonly after: Date; readonly before: Date }
): ReadonlyArray<SearchVariant> => {
  const make = (key: VariantKey, from: string | undefined, after?: Date, before?: Date): SearchVariant => ({
    key,
    attributes: [
      `in=${escapeTagValue(target)}`,
      `text=${escapeTagValue(c.query)}`,
      ...(from === undefined ? [] : [`from=${escapeTagValue(from)}`]),
      ...(after === undefined ? [] : [`after=${after.toISOString()}`]),
      ...(before === undefined ? [] : [`before=${before.toISOString()}`]),
      `limit=${limit}`
    ].join(";"),
    text: c.query,
    from,
    after,
    before
  })
  return [
    make("in", c.nick),
    make("from", c.nick ?? bounds.fromNick),
    make("after", c.nick, bounds.after),
    make("before", c.nick, undefined, bounds.before)
  ]
}

/**
 * What the SEARCH should answer: the channel's PRIVMSG, NOTICE and ACTION messages matching the text (the full-text
 * query search_messages parses), by the nick (casemapped as the search folds it), within the bounds (inclusive, at
 * millisecond precision, as the listener reads them); the newest `limit` of them, oldest first.
 */
export const referenceIds = async (client: pg.Client, bufferId: number, v: SearchVariant, limit: number) => {
  const params: Array<unknown> = [bufferId, v.text]
  const where = [
    "buffer_id = $1",
    "tsv @@ websearch_to_tsquery('simple', $2)",
    "kind IN ('privmsg', 'notice', 'action')"
  ]
  if (v.from !== undefined) {
    params.push(v.from)
    where.push(`translate(lower(nick), '[]\\~', '{}|^') = translate(lower($${params.length}), '[]\\~', '{}|^')`)
  }
  if (v.after !== undefined) {
    params.push(v.after)
    where.push(`date_trunc('milliseconds', time) >= $${params.length}`)
  }
  if (v.before !== undefined) {
    params.push(v.before)
    where.push(`date_trunc('milliseconds', time) <= $${params.length}`)
  }
  const { rows } = await client.query<{ id: string }>(
    `SELECT id FROM messages WHERE ${where.join(" AND ")} ORDER BY id DESC LIMIT ${limit}`,
    params
  )
  return rows.map((r) => Number(r.id)).reverse()
}

/**
 * The bounds of the `after` and `before` variants in buffer `bufferId`: the time of the message at nine tenths of the
 * buffer (the newest tenth is after it) and at half of it (the older half is before it).
 */
export const timeBounds = async (client: pg.Client, bufferId: number) => {
  const { rows: [range] } = await client.query<{ lo: string; hi: string }>(
    "SELECT min(id) AS lo, max(id) AS hi FROM messages WHERE buffer_id = $1",
    [bufferId]
  )
  const at = async (share: number) => {
    const id = Math.round(Number(range!.lo) + share * (Number(range!.hi) - Number(range!.lo)))
    const { rows: [row] } = await client.query<{ time: Date }>(
      "SELECT time FROM messages WHERE buffer_id = $1 AND id >= $2 ORDER BY id LIMIT 1",
      [bufferId, id]
    )
    // Whole milliseconds, as SEARCH carries them.
    return new Date(Math.floor(row!.time.getTime()))
  }
  return { after: await at(0.9), before: await at(0.5) }
}

/** One SEARCH's answer against its reference: messages found, messages expected, and whether they were the same. */
export interface ListenerAnswer {
  readonly got: number
  readonly expected: number
  readonly same: boolean
}

/** One round's answer times of one case, by variant (ms). */
export type ListenerSamples = Record<VariantKey, Array<number>>

const spread = (v: ReadonlyArray<number>) =>
  `${percentile(v, 50).toFixed(2)} / ${percentile(v, 95).toFixed(2)} / ${percentile(v, 99).toFixed(2)} ms`

/**
 * The figures and targets of the listener's SEARCH on one corpus: per case, whether each variant answered as the
 * reference and its p50 / p95 / p99 over every round, beside search_messages' own through /mcp; per variant, the same
 * over every case; the worst p95 of any case and variant per round, judged against `TARGET_P95_MS`.
 */
export const listenerFigures = (
  key: string,
  cases: ReadonlyArray<{ readonly query: string; readonly nick?: string; readonly label: string }>,
  variants: ReadonlyArray<ReadonlyArray<SearchVariant>>,
  answers: ReadonlyArray<ReadonlyArray<ListenerAnswer>>,
  rounds: ReadonlyArray<ReadonlyArray<ListenerSamples>>,
  mcp: ReadonlyArray<ReadonlyArray<number>>,
  count: string
): { readonly figures: ReadonlyArray<Figure>; readonly targets: ReadonlyArray<Target> } => {
  const figures: Array<Figure> = []
  const all = (i: number, v: VariantKey) => rounds.flatMap((r) => r[i]![v])
  for (const [i, c] of cases.entries()) {
    const tag = `${key} SEARCH text="${c.query}"${c.nick ? ` from=${c.nick}` : ""} (${c.label})`
    figures.push(
      {
        name: `${tag}: answered as the reference, found (${VARIANTS.join("; ")})`,
        value: answers[i]!.map((a) => a.same ? `yes, ${a.got}` : `NO: ${a.got} found, ${a.expected} expected`).join("; ")
      },
      {
        name: `${tag}: p50 / p95 / p99 to the batch's end (${VARIANTS.join("; ")}); search_messages via /mcp`,
        value: [...VARIANTS.map((v) => spread(all(i, v))), spread(mcp[i]!)].join("; ")
      }
    )
  }
  for (const v of VARIANTS) {
    figures.push({
      name: `${key} SEARCH ${v} (${variants[0]![VARIANTS.indexOf(v)]!.attributes.replace(/text=[^;]*/, "text=…")}), every case: p50 / p95 / p99`,
      value: spread(cases.flatMap((_, i) => all(i, v)))
    })
  }
  figures.push({ name: `${key} search_messages via /mcp, every case: p50 / p95 / p99`, value: spread(mcp.flat()) })
  const worst = rounds.map((r) => Math.max(...r.flatMap((c) => VARIANTS.map((v) => percentile(c[v], 95)))))
  figures.push(perRound(`${key}: worst p95 of SEARCH, any case and variant`, worst, "ms"))
  const answered = answers.flat()
  return {
    figures,
    targets: [
      {
        name: `listener SEARCH p95 to the batch's end, every case and variant, ${key} corpus (${count} messages)`,
        measured: median(worst),
        comparator: "<=",
        target: TARGET_P95_MS,
        unit: "ms",
        runs: worst
      },
      {
        name: `listener SEARCH answers as the reference ÷ answers, ${key} corpus`,
        measured: answered.filter((a) => a.same).length / answered.length,
        comparator: "==",
        target: 1
      }
    ]
  }
}
