/**
 * McpSql owns what the MCP section (bench/sections/Mcp.ts) asks of the database without Belay's HTTP in between: the
 * statements MessageHistory runs for a search or for an older page of recent_messages, captured as compiled from the
 * service itself, and those statements replayed with `pg`, one at a time or looped by several connections.
 *
 * Concurrency rule: each function owns the connections it opens and closes them before it resolves.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option } from "effect"
import pg from "pg"
import { MessageHistory } from "../../src/services/history/MessageHistory.js"
import { Networks } from "../../src/services/networks/Networks.js"
import { captured, type Compiled } from "../../test/support/QueryPlans.js"
import { ACCOUNT } from "./Belay.js"
import { replayStatements, runningDatabaseUrl, withRunningDatabase } from "./Db.js"

/** The statements MessageHistory runs for each query, captured as compiled (text and parameters) from the service. */
export const captureSearches = (env: Record<string, string>, queries: ReadonlyArray<string>) =>
  withRunningDatabase(
    env,
    Effect.gen(function*() {
      const history = yield* MessageHistory
      const sql = yield* SqlClient.SqlClient
      const [account] = yield* sql<{ id: number }>`SELECT id FROM accounts WHERE name = ${ACCOUNT}`
      const accountId = account!.id
      return yield* Effect.forEach(queries, (query) =>
        Effect.map(
          captured(history.search({
            accountId,
            query,
            networkId: Option.none(),
            targetFolded: Option.none(),
            nick: Option.none(),
            limit: 50
          })),
          ({ result, statements }) => ({ statements, found: result.length })
        ))
    }).pipe(Effect.provide(MessageHistory.Default))
  )

/**
 * The SQL one recent_messages call for an older page sends (MessageHistory.recent with `before`; the ownership check
 * is remembered after the first call), as compiled.
 */
export const captureRecent = (env: Record<string, string>, networkId: number, target: string, before: number) =>
  withRunningDatabase(
    env,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const [account] = yield* sql<{ id: number }>`SELECT id FROM accounts WHERE name = ${ACCOUNT}`
      const networks = yield* Networks
      const history = yield* MessageHistory
      if (!(yield* networks.isOwnedBy(account!.id, networkId))) throw new Error("the bench network is not the account's")
      const recent = yield* captured(history.recent(networkId, target, { before: Option.some(before), limit: 100 }))
      if (recent.result.length !== 100) throw new Error(`recent read ${recent.result.length} messages, expected 100`)
      return recent.statements
    }).pipe(Effect.provide(Layer.mergeAll(Networks.Default, MessageHistory.Default)))
  )

/**
 * Calls per second of `statements` sent in turn by `connections` clients straight to PostgreSQL from the bench process
 * (core 1), each looping for `seconds` after a second of warm-up: what the database allows with no HTTP and no Belay.
 */
export const sqlThroughput = async (
  env: Record<string, string>,
  statements: ReadonlyArray<Compiled>,
  connections: number,
  seconds: number
) => {
  const clients = await Promise.all(Array.from({ length: connections }, async () => {
    const client = new pg.Client({ connectionString: runningDatabaseUrl(env) })
    await client.connect()
    return client
  }))
  try {
    const loop = async (client: pg.Client, until: number) => {
      let calls = 0
      while (performance.now() < until) {
        for (const [text, params] of statements) await client.query(text, [...params])
        calls++
      }
      return calls
    }
    await Promise.all(clients.map((c) => loop(c, performance.now() + 1000)))
    const started = performance.now()
    const calls = await Promise.all(clients.map((c) => loop(c, started + seconds * 1000)))
    return calls.reduce((a, b) => a + b, 0) / ((performance.now() - started) / 1000)
  } finally {
    await Promise.all(clients.map((c) => c.end()))
  }
}

/** Runs one search's statements in turn on `client`, as MessageHistory runs them; the milliseconds they took together. */
export const direct = async (client: pg.Client, statements: ReadonlyArray<Compiled>) => {
  const started = performance.now()
  await replayStatements(client, statements)
  return performance.now() - started
}
