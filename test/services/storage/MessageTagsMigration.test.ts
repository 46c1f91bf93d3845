/**
 * Migration 0017 (message ids, replies, reactions, redaction) on a `messages` table that already has rows: the
 * database is taken back to 0016's shape, filled, and migrated again. The rows keep every field, read with the new
 * columns' defaults; the table is not rewritten (its file stays the same: the columns only changed the catalog);
 * the widened kind check is NOT VALID yet enforced on new rows, as are the msgid bounds; the partial index answers a
 * lookup by msgid.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import migration0017 from "../../../src/services/storage/migrations/0017_message_tags.js"
import { describeMode, TestDatabaseLive } from "../../support/TestDatabase.js"

const ROWS = 5000

describe(`migration 0017 on ${describeMode}`, () => {
  it.layer(TestDatabaseLive(), { timeout: 60_000 })((it) => {
    it.effect("adds msgid, reply_to, redacted and kind react to a filled table without rewriting it", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // Back to 0016's table.
        yield* sql`DROP INDEX messages_msgid`
        yield* sql`ALTER TABLE messages DROP CONSTRAINT messages_msgid_length, DROP CONSTRAINT messages_reply_to_length`
        yield* sql`ALTER TABLE messages DROP CONSTRAINT messages_kind_check`
        yield* sql`ALTER TABLE messages DROP COLUMN msgid, DROP COLUMN reply_to, DROP COLUMN redacted`
        yield* sql`
          ALTER TABLE messages ADD CONSTRAINT messages_kind_check CHECK (kind IN (
            'privmsg', 'notice', 'action', 'join', 'part', 'quit', 'kick', 'nick', 'mode', 'topic', 'numeric', 'error'))`

        const [account] = yield* sql<{ id: number }>`INSERT INTO accounts (name, password_hash) VALUES ('m17', 'x') RETURNING id`
        const [network] = yield* sql<{ id: number }>`
          INSERT INTO networks (account_id, name, host, port, nick) VALUES (${account!.id}, 'n', 'h', 6667, 'me') RETURNING id`
        const [buffer] = yield* sql<{ id: number }>`
          INSERT INTO buffers (network_id, target, target_folded, kind) VALUES (${network!.id}, '#c', '#c', 'channel') RETURNING id`
        yield* sql`
          INSERT INTO messages (buffer_id, time, kind, nick, text, raw)
          SELECT ${buffer!.id}, now(), 'privmsg', 'bob', 'line ' || i, '@msgid=x' || i || ' :bob PRIVMSG #c :line ' || i
          FROM generate_series(1, ${ROWS}) AS i`
        const fileOf = sql<{ file: number }>`SELECT relfilenode AS file FROM pg_class WHERE relname = 'messages'`
        const [before] = yield* fileOf
        const oldRows = yield* sql<{ id: number; text: string; raw: string }>`
          SELECT id, text, raw FROM messages WHERE buffer_id = ${buffer!.id} ORDER BY id`

        yield* migration0017

        const [after] = yield* fileOf
        expect(after!.file).toBe(before!.file)
        const rows = yield* sql<{ id: number; text: string; raw: string; msgid: string | null; replyTo: string | null; redacted: boolean }>`
          SELECT id, text, raw, msgid, reply_to AS "replyTo", redacted FROM messages WHERE buffer_id = ${buffer!.id} ORDER BY id`
        expect(rows).toHaveLength(ROWS)
        expect(rows.map(({ id, text, raw }) => ({ id, text, raw }))).toEqual(oldRows)
        expect(rows.every((r) => r.msgid === null && r.replyTo === null && r.redacted === false)).toBe(true)

        const checks = yield* sql<{ name: string; validated: boolean }>`
          SELECT conname AS name, convalidated AS validated FROM pg_constraint
          WHERE conrelid = 'messages'::regclass AND conname IN ('messages_kind_check', 'messages_msgid_length', 'messages_reply_to_length')
          ORDER BY conname`
        expect(checks).toEqual([
          { name: "messages_kind_check", validated: false },
          { name: "messages_msgid_length", validated: false },
          { name: "messages_reply_to_length", validated: false }
        ])

        // New rows: a reaction is a kind now; an unknown kind and an over-long msgid are still refused.
        yield* sql`
          INSERT INTO messages (buffer_id, time, kind, nick, text, msgid, reply_to)
          VALUES (${buffer!.id}, now(), 'react', 'carol', '👍', 'r1', 'x1')`
        const refused = (statement: Effect.Effect<unknown, unknown>) => Effect.map(Effect.exit(statement), Exit.isFailure)
        expect(yield* refused(sql`INSERT INTO messages (buffer_id, time, kind, text) VALUES (${buffer!.id}, now(), 'bogus', '')`))
          .toBe(true)
        expect(yield* refused(sql`
          INSERT INTO messages (buffer_id, time, kind, text, msgid) VALUES (${buffer!.id}, now(), 'privmsg', '', ${"m".repeat(257)})`))
          .toBe(true)

        // The partial index serves a lookup by msgid within a buffer.
        yield* sql`ANALYZE messages`
        const plan = yield* sql<{ "QUERY PLAN": string }>`
          EXPLAIN SELECT id FROM messages WHERE buffer_id = ${buffer!.id} AND msgid = 'r1'`
        expect(plan.map((p) => p["QUERY PLAN"]).join("\n")).toContain("messages_msgid")
        const [found] = yield* sql<{ kind: string }>`SELECT kind FROM messages WHERE buffer_id = ${buffer!.id} AND msgid = 'r1'`
        expect(found!.kind).toBe("react")
      }))
  })
})
