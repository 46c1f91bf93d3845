/**
 * HistoryAudit: what the fault tests read back from Belay's database and how they judge it. `storedTexts` reads the
 * texts of one buffer's PRIVMSGs in id order (the order Belay stored them: ids grow with append order, the
 * MessageWriter's rule) straight from PostgreSQL; `audit` compares them with the lines a test sent; `faultSummary`
 * prints the one line per case that the suite's closing figures are taken from.
 *
 * Stateless: every call opens and closes its own connection.
 */
import { Effect } from "effect"
import pg from "pg"

/** The texts of the PRIVMSGs stored in the buffer `targetFolded` (every network), oldest first. */
export const storedTexts = (databaseUrl: string, targetFolded: string) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: databaseUrl })
    await client.connect()
    try {
      const result = await client.query<{ text: string }>(
        `SELECT m.text FROM messages m JOIN buffers b ON b.id = m.buffer_id
         WHERE b.target_folded = $1 AND m.kind = 'privmsg' ORDER BY m.id`,
        [targetFolded]
      )
      return result.rows.map((r) => r.text)
    } finally {
      await client.end()
    }
  })

export interface Audit {
  /** Rows read back. */
  readonly stored: number
  /** Texts stored more than once (each counted once per extra copy). */
  readonly duplicates: number
  /** Stored texts that were never sent. */
  readonly foreign: number
  /** Stored rows whose sent position is lower than the row before them. */
  readonly outOfOrder: number
  /** Sent lines that are not stored. */
  readonly missing: ReadonlyArray<string>
}

/** Compares `stored` (in id order) with `sent` (in sending order); texts are unique per line. */
export const audit = (sent: ReadonlyArray<string>, stored: ReadonlyArray<string>): Audit => {
  const position = new Map(sent.map((text, i) => [text, i]))
  const seen = new Set<string>()
  let duplicates = 0
  let foreign = 0
  let outOfOrder = 0
  let last = -1
  for (const text of stored) {
    const at = position.get(text)
    if (at === undefined) {
      foreign++
      continue
    }
    if (seen.has(text)) duplicates++
    seen.add(text)
    if (at < last) outOfOrder++
    last = Math.max(last, at)
  }
  return { stored: stored.length, duplicates, foreign, outOfOrder, missing: sent.filter((t) => !seen.has(t)) }
}

/** One figure line on stdout, `faults: <case> …`, collected for the closing note. */
export const faultSummary = (line: string) => Effect.sync(() => console.log(`faults: ${line}`))

export const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`

/** How many PRIVMSGs the buffer `targetFolded` holds (those carrying `text` alone, when given). */
export const storedCount = (databaseUrl: string, targetFolded: string, text?: string) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: databaseUrl })
    await client.connect()
    try {
      const result = await client.query<{ n: string }>(
        `SELECT count(*) AS n FROM messages m JOIN buffers b ON b.id = m.buffer_id
         WHERE b.target_folded = $1 AND m.kind = 'privmsg' AND ($2::text IS NULL OR m.text = $2)`,
        [targetFolded, text ?? null]
      )
      return Number(result.rows[0]?.n ?? 0)
    } finally {
      await client.end()
    }
  })
