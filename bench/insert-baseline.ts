/**
 * The ingest baseline, run as a child process on the server core: the same rows the flood produces, stored with plain
 * multi-row INSERTs of 500 rows a statement (`sql.insert`, sequential) into a fresh database of the same kind, through
 * the application's own Database layer (the embedded PostgreSQL of its data dir, started by this process, or
 * DATABASE_URL). Prints one JSON line `{ rows, seconds }`. argv: JSON of the database environment, row count, and
 * optionally `cte`: the same batches in the statement shape MessageWriter.ts uses (INSERT … RETURNING inside a CTE that
 * also updates the buffer's last_message_at), to tell the cost of that shape from the cost of Belay's pipeline.
 * Concurrency: one statement at a time, like Belay's single writer.
 */
import { Effect } from "effect"
import { floodLine, FLOOD_TARGET } from "./lib/Flood.js"
import { nickOf, textOf } from "./lib/Corpus.js"
import { withDatabase } from "./lib/Db.js"

const env = JSON.parse(process.argv[2]!) as Record<string, string>
const rows = Number(process.argv[3])
const cte = process.argv[4] === "cte"
const BATCH = 500

const result = await withDatabase(env, (sql) =>
  Effect.gen(function*() {
    const account = yield* sql<{ id: number }>`
      INSERT INTO accounts (name, password_hash) VALUES ('baseline', 'x') RETURNING id`
    const network = yield* sql<{ id: number }>`
      INSERT INTO networks (account_id, name, host, port, nick) VALUES (${account[0]!.id}, 'baseline', '127.0.0.1', 6667, 'bench')
      RETURNING id`
    const buffer = yield* sql<{ id: number }>`
      INSERT INTO buffers (network_id, target, target_folded, kind) VALUES (${network[0]!.id}, ${FLOOD_TARGET}, ${FLOOD_TARGET}, 'channel')
      RETURNING id`
    const bufferId = buffer[0]!.id
    const started = performance.now()
    for (let from = 0; from < rows; from += BATCH) {
      const batch = []
      const time = new Date()
      for (let i = from; i < Math.min(rows, from + BATCH); i++) {
        batch.push({
          buffer_id: bufferId,
          time,
          kind: "privmsg",
          nick: nickOf(i),
          text: textOf(i),
          numeric: null,
          self: false,
          encryption: "plain",
          raw: floodLine(i)
        })
      }
      if (cte) {
        yield* sql`
          WITH m AS (INSERT INTO messages ${sql.insert(batch)} RETURNING buffer_id, time)
          UPDATE buffers AS b SET last_message_at = GREATEST(b.last_message_at, x.t)
          FROM (SELECT buffer_id, max(time) AS t FROM m GROUP BY buffer_id) AS x
          WHERE b.id = x.buffer_id`
      } else {
        yield* sql`INSERT INTO messages ${sql.insert(batch)}`
      }
    }
    const seconds = (performance.now() - started) / 1000
    const stored = yield* sql<{ n: number }>`SELECT count(*)::int8 AS n FROM messages WHERE buffer_id = ${bufferId}`
    return { rows: stored[0]!.n, seconds }
  }))

process.stdout.write(JSON.stringify(result) + "\n")
