import { Migrator, SqlClient } from "@effect/sql"
import { PgMigrator } from "@effect/sql-pg"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { migrations } from "../../../src/services/storage/Database.js"
import { describeMode, TestDatabaseLive } from "../../support/TestDatabase.js"

describe(`Database on ${describeMode}`, () => {
  it.layer(TestDatabaseLive(), { timeout: 60_000 })((it) => {
    it.effect("creates the whole product schema", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ tableName: string }>`
          SELECT table_name AS "tableName" FROM information_schema.tables
          WHERE table_schema = 'public' ORDER BY table_name`
        expect(rows.map((r) => r.tableName)).toEqual(
          expect.arrayContaining([
            "accounts", "api_tokens", "browser_sessions", "buffers", "channels", "messages", "networks", "nick_notes",
            "oauth_clients", "oauth_codes", "oauth_consents", "oauth_tokens", "passkeys", "relay_bots"
          ])
        )
      }))

    it.effect("migrations are idempotent: a second run applies nothing", () =>
      Effect.gen(function*() {
        const applied = yield* PgMigrator.run({ loader: Migrator.fromRecord(migrations) }).pipe(
          Effect.provide(NodeContext.layer)
        )
        expect(applied).toEqual([])
      }))

    it.effect("bigint ids and counts reach the code as numbers", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [account] = yield* sql<{ id: unknown }>`
          INSERT INTO accounts (name, password_hash) VALUES ('ids', 'x') RETURNING id`
        expect(typeof account!.id).toBe("number")
        const [count] = yield* sql<{ n: unknown }>`SELECT count(*) AS n FROM accounts`
        expect(typeof count!.n).toBe("number")
      }))

    it.effect("full-text search ANDs terms over the generated tsvector", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [account] = yield* sql<{ id: number }>`
          INSERT INTO accounts (name, password_hash) VALUES ('fts', 'x') RETURNING id`
        const [network] = yield* sql<{ id: number }>`
          INSERT INTO networks (account_id, name, host, port, nick) VALUES (${account!.id}, 'n', 'h', 6667, 'me') RETURNING id`
        const [buffer] = yield* sql<{ id: number }>`
          INSERT INTO buffers (network_id, target, target_folded, kind) VALUES (${network!.id}, '#c', '#c', 'channel') RETURNING id`
        yield* sql`INSERT INTO messages ${
          sql.insert([
            { buffer_id: buffer!.id, time: new Date(), kind: "privmsg", nick: "a", text: "the quick brown fox" },
            { buffer_id: buffer!.id, time: new Date(), kind: "privmsg", nick: "b", text: "a quick test" }
          ])
        }`
        const hits = yield* sql<{ text: string }>`
          SELECT text FROM messages WHERE tsv @@ websearch_to_tsquery('simple', ${"quick fox"}) ORDER BY id DESC`
        expect(hits.map((h) => h.text)).toEqual(["the quick brown fox"])
      }))

    it.effect("concurrent transactions do not see each other's uncommitted work", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // One transaction inserts and rolls back while others read: no reader may see the row.
        const writer = sql.withTransaction(
          Effect.gen(function*() {
            yield* sql`INSERT INTO accounts (name, password_hash) VALUES ('ghost', 'x')`
            yield* Effect.promise(() => new Promise((r) => setTimeout(r, 50)))
            return yield* Effect.fail("rollback" as const)
          })
        ).pipe(Effect.flip)
        const reader = sql<{ n: number }>`SELECT count(*) AS n FROM accounts WHERE name = 'ghost'`.pipe(
          Effect.map((r) => r[0]!.n)
        )
        const [, counts] = yield* Effect.all([writer, Effect.all(Array.from({ length: 20 }, () => reader), { concurrency: 20 })], {
          concurrency: 2
        })
        expect(counts.every((n) => n === 0)).toBe(true)
        const after = yield* reader
        expect(after).toBe(0)
      }))
  })
})

