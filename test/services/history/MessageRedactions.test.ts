/**
 * MessageRedactions against a real database (embedded, or TEST_DATABASE_URL), through the real MessageWriter: where a
 * redaction falls among the stored messages (`redacted_after`, migration 0019), which is what a tab resuming with
 * `?since=` is replayed from (MessageHistory.redactedSince; docs/contract.md, WebSocket `?since=`).
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, PubSub, Queue } from "effect"
import { MessageHistory } from "../../../src/services/history/MessageHistory.js"
import { MessageWriter } from "../../../src/services/history/MessageWriter.js"
import { message, seedNetworks } from "../../support/MessageFixtures.js"
import { describeMode, TestDatabaseLive } from "../../support/TestDatabase.js"

describe(`MessageRedactions on ${describeMode}`, () => {
  it.layer(Layer.mergeAll(MessageWriter.Default, MessageHistory.Default).pipe(Layer.provideMerge(TestDatabaseLive())), {
    timeout: 120_000
  })((it) => {
    it.scoped("a message stored while a redaction is written is counted: a tab that saw it is replayed the redaction", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const writer = yield* MessageWriter
        const history = yield* MessageHistory
        const { accountId, networkIds: [net] } = yield* seedNetworks()
        yield* writer.append(message(net!, "#c", "take it back", { nick: "bob", msgid: "up-1" }))
        yield* writer.flush
        const [target] = yield* sql<{ id: number; bufferId: number }>`
          SELECT m.id, m.buffer_id AS "bufferId" FROM messages m JOIN buffers b ON b.id = m.buffer_id
          WHERE b.network_id = ${net!} AND m.msgid = 'up-1'`

        // Another connection is storing a message: its id is taken, its transaction not yet committed (a writer's
        // batch in flight, here or on another node).
        const taken = yield* Deferred.make<number>()
        const commit = yield* Deferred.make<void>()
        const inFlight = yield* sql.withTransaction(Effect.gen(function*() {
          const [row] = yield* sql<{ id: number }>`
            INSERT INTO messages (buffer_id, time, kind, nick, text)
            VALUES (${target!.bufferId}, now(), 'privmsg', 'carol', 'in flight') RETURNING id`
          yield* Deferred.succeed(taken, row!.id)
          yield* Deferred.await(commit)
          return row!.id
        })).pipe(Effect.fork)
        const inFlightId = yield* Deferred.await(taken)
        expect(inFlightId).toBeGreaterThan(target!.id)

        const redacted = yield* PubSub.subscribe(writer.redacted)
        yield* writer.redact({ networkId: net!, target: "#c", targetFolded: "#c", msgid: "up-1" })
        expect((yield* Queue.take(redacted)).messageId).toBe(target!.id)

        // The message commits after the redaction was written; its frame may reach a tab before the redaction's.
        yield* Deferred.succeed(commit, undefined)
        expect(yield* Fiber.join(inFlight)).toBe(inFlightId)

        // A tab that saw it (and no redaction frame) resumes with ?since=<its id>: the redaction is replayed.
        expect(yield* history.redactedSince(accountId, inFlightId, 10)).toEqual([
          { networkId: net!, target: "#c", messageId: target!.id }
        ])
        // Only up to where the redaction fell: a tab past every id taken by then had its frame live.
        const [seq] = yield* sql<{ lastValue: string }>`SELECT last_value AS "lastValue" FROM messages_id_seq`
        expect(yield* history.redactedSince(accountId, Number(seq!.lastValue) + 1, 10)).toEqual([])
      }))

    it.scoped("a redaction naming no stored message changes nothing and announces nothing", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const writer = yield* MessageWriter
        const { networkIds: [net] } = yield* seedNetworks()
        yield* writer.append(message(net!, "#c", "stays", { nick: "bob", msgid: "up-2" }))
        yield* writer.flush
        const redacted = yield* PubSub.subscribe(writer.redacted)
        yield* writer.redact({ networkId: net!, target: "#c", targetFolded: "#c", msgid: "nowhere" })
        // The redactions are applied one at a time, in order: once this one is announced, the one before was applied.
        yield* writer.redact({ networkId: net!, target: "#c", targetFolded: "#c", msgid: "up-2" })
        expect((yield* Queue.take(redacted)).target).toBe("#c")
        expect(yield* Queue.size(redacted)).toBe(0)
        const rows = yield* sql<{ text: string; redacted: boolean; after: string | null }>`
          SELECT m.text, m.redacted, m.redacted_after AS after FROM messages m JOIN buffers b ON b.id = m.buffer_id
          WHERE b.network_id = ${net!} ORDER BY m.id`
        expect(rows.map((r) => [r.text, r.redacted, r.after !== null])).toEqual([["", true, true]])
      }))
  })
})
