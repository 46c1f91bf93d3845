/**
 * Hostile lines read back across nodes (src/services/nodes/ClusterRows.ts): generated tag sections (client-only tags
 * and server tags, bare `+`, stray `;`, `=`, escapes, NUL, astral and lone surrogates, values near the 4094-byte
 * bound), `;+` and `@+` in the text after the first space, lines without a space or without tags, stored through the
 * real MessageWriter into PostgreSQL. Every row read back the way another node reads it (a batch's notice, a catch-up
 * page) carries the client-only tags the storing node announced with it on `stored` — as a client receives them, in
 * UTF-8 — so the statement's cheap test never keeps from a node a tag relayedClientTags would find, and nothing else.
 *
 * Reproducible: fast-check with a fixed seed, printed at the start; FUZZ_SEED overrides it, FUZZ_RUNS scales the count.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Layer, PubSub, Queue } from "effect"
import fc from "fast-check"
import { CLIENT_TAGS_MAX_BYTES } from "../../src/irc/TaggedMessages.js"
import type { StoredRow } from "../../src/services/history/MessageRow.js"
import { MessageWriter } from "../../src/services/history/MessageWriter.js"
import { makeClusterRows } from "../../src/services/nodes/ClusterRows.js"
import { message, seedNetworks } from "../support/MessageFixtures.js"
import { TestDatabaseLive } from "../support/TestDatabase.js"

const SEED = process.env.FUZZ_SEED !== undefined && process.env.FUZZ_SEED !== "" ? Number(process.env.FUZZ_SEED) : 717171
const RUNS = process.env.FUZZ_RUNS !== undefined && process.env.FUZZ_RUNS !== "" ? Number(process.env.FUZZ_RUNS) : 10_000
/** Lines stored in the database: each is a row, so a fifth of RUNS. */
const STORED_RUNS = Math.ceil(RUNS / 5)

const piece = fc.constantFrom("a", "b", "+", ";", "=", "\\", "\\s", "\\:", "/", "-", ".", "é", "\u0000", "\ud83d\ude00", "\ud800", "@", ":")
const key = fc.oneof(
  fc.constantFrom("+draft/reply", "+draft/react", "+vendor/x", "+typing", "+", "msgid", "time", "account", "batch"),
  fc.string({ unit: piece, minLength: 1, maxLength: 10 })
)
const value = fc.oneof(
  fc.string({ unit: piece, maxLength: 20 }),
  fc.integer({ min: CLIENT_TAGS_MAX_BYTES - 40, max: CLIENT_TAGS_MAX_BYTES + 10 }).map((n) => "v".repeat(n))
)
const tag = fc.tuple(key, fc.option(value, { nil: undefined })).map(([k, v]) => (v === undefined ? k : `${k}=${v}`))
const text = fc.string({ unit: fc.constantFrom("x", " ", ";+", "@+", ";", "+", "é", ":"), maxLength: 12 })

/** A line as an upstream might deliver it (the row's `raw`). */
const rawLine = fc.oneof(
  fc.tuple(fc.array(tag, { minLength: 1, maxLength: 6 }), text).map(([tags, t]) => `@${tags.join(";")} :bob!b@h PRIVMSG #fuzz :${t}`),
  fc.tuple(fc.array(tag, { minLength: 1, maxLength: 3 }), text).map(([tags, t]) => `@${tags.join(";")}${t.replaceAll(" ", "")}`),
  text.map((t) => `:bob!b@h PRIVMSG #fuzz :${t}`),
  text.map((t) => `@ :bob!b@h PRIVMSG #fuzz :${t}`),
  text.map((t) => ` @+a=1 :bob!b@h PRIVMSG #fuzz :${t}`)
)

/** A string as a client receives it: written to its socket in UTF-8, where a lone surrogate becomes U+FFFD. */
const utf8 = (s: string) => Buffer.from(s, "utf8").toString("utf8")
/** Tags as a client receives them (PostgreSQL keeps the line in UTF-8 too). */
const asSent = (tags: Readonly<Record<string, string>> | undefined) =>
  tags === undefined ? undefined : Object.entries(tags).map(([k, v]) => [utf8(k), utf8(v)])

describe("hostile lines read back across nodes", () => {
  it.layer(MessageWriter.Default.pipe(Layer.provideMerge(TestDatabaseLive())), { timeout: 300_000 })((it) => {
    it.scoped("each row read back carries the client-only tags its node announced", () =>
      Effect.gen(function*() {
        console.info(`belay fuzz: cluster row tags, seed ${SEED}`)
        const { networkIds: [net] } = yield* seedNetworks()
        const writer = yield* MessageWriter
        const stored = yield* PubSub.subscribe(writer.stored)
        const raws = fc.sample(rawLine, { seed: SEED, numRuns: STORED_RUNS })
        for (const [i, raw] of raws.entries()) {
          yield* writer.append(message(net!, "#fuzz", `line ${i}`, { nick: "bob", raw }))
        }
        yield* writer.flush
        const announced = Chunk.toArray(yield* Queue.takeAll(stored)).flatMap((batch): ReadonlyArray<StoredRow> => batch)
        expect(announced).toHaveLength(raws.length)
        // The sample holds both kinds: rows with client-only tags and rows without.
        expect(announced.some((r) => r.clientTags !== undefined)).toBe(true)
        expect(announced.some((r) => r.clientTags === undefined)).toBe(true)

        const readBack = makeClusterRows(yield* SqlClient.SqlClient)
        const first = announced[0]!.id
        const last = announced[announced.length - 1]!.id
        const expected = announced.map((r) => [r.id, asSent(r.clientTags)])
        const pages = yield* readBack.after(first - 1, raws.length)
        expect(pages.map((r) => [r.id, asSent(r.clientTags)])).toEqual(expected)
        const batches: Array<StoredRow> = []
        for (let from = first; from <= last; from += 500) {
          batches.push(...(yield* readBack.batch([net!], from, Math.min(last, from + 499))))
        }
        expect(batches.map((r) => [r.id, asSent(r.clientTags)])).toEqual(expected)
      }))
  })
})
