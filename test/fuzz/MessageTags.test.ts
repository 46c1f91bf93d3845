/**
 * Hostile message tags from an upstream (docs/contract.md "Message ids, replies, reactions and redaction"): generated
 * `msgid`, `+draft/reply` and `+draft/react` values — over-long, empty, control characters, spaces, lone surrogates,
 * NUL, every escape of IRCv3 message-tags and broken ones (a trailing backslash, unknown escapes) — on PRIVMSG,
 * TAGMSG and REDACT lines. First the pure reading (actors/network/History.ts) against its bounds: a kept msgid or
 * reference is 1..MSGID_MAX characters with no space or control character, a reaction 1..REACTION_MAX with no control
 * character, and a PRIVMSG is stored whatever its tags. Then thousands of those lines through the real MessageWriter
 * into PostgreSQL, their redactions applied, and every row read back through CHATHISTORY's rendering: every message
 * stored (no batch refused), each msgid read back as it was kept, every redaction naming a stored message applied
 * and no other row touched, and each stored row rendered as a line that parses back to its msgid. Also a client's
 * tags against message-tags' 4094-byte bound: counted over every tag as sent, and what passes it passes the relaying
 * checks and is relayed whole. And an upstream's client tags as relayed live to the member's clients
 * (TaggedMessages.relayedClientTags): within the bound, each kept whole or dropped, and carried by the rendered line.
 *
 * Reproducible: fast-check with a fixed seed, printed at the start; FUZZ_SEED overrides it, FUZZ_RUNS scales the count.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import fc from "fast-check"
import { applyLine } from "../../src/actors/network/ChannelReducer.js"
import { emptyChannelState } from "../../src/actors/network/ChannelState.js"
import { type HistoryContext, messagesFor, REACTION_MAX, redactionFor } from "../../src/actors/network/History.js"
import { escapeTagValue, formatLine, parseLine } from "../../src/irc/IrcLine.js"
import { applyISupport, defaultISupport } from "../../src/irc/ISupport.js"
import {
  CLIENT_TAGS_MAX_BYTES,
  clientOnlyTags,
  rawTagDataBytes,
  relayedClientTags,
  tagBytes
} from "../../src/irc/TaggedMessages.js"
import { storedLine, storedRowLine } from "../../src/listener/MessageLines.js"
import { MessageHistory } from "../../src/services/history/MessageHistory.js"
import { MSGID_MAX, type NewMessage } from "../../src/services/history/MessageRow.js"
import { MessageWriter } from "../../src/services/history/MessageWriter.js"
import { seedNetworks } from "../support/MessageFixtures.js"
import { parseClientLine } from "../support/IrcTestClient.js"
import { TestDatabaseLive } from "../support/TestDatabase.js"

const SEED = process.env.FUZZ_SEED !== undefined && process.env.FUZZ_SEED !== "" ? Number(process.env.FUZZ_SEED) : 717171
const RUNS = process.env.FUZZ_RUNS !== undefined && process.env.FUZZ_RUNS !== "" ? Number(process.env.FUZZ_RUNS) : 10_000
/** Lines stored in the database: each is a row, so a fifth of RUNS. */
const STORED_RUNS = Math.ceil(RUNS / 5)

const isupport = applyISupport(defaultISupport, ["me", "CHANTYPES=#", "CASEMAPPING=rfc1459"])
const context = (networkId: number): HistoryContext => ({
  networkId,
  selfNick: "me",
  registered: true,
  isupport,
  channels: applyLine(emptyChannelState("rfc1459"), parseLine(":me!u@h JOIN #fuzz")!, {
    selfNick: "me",
    isupport,
    caseMapping: "rfc1459",
    now: new Date(0)
  }).state,
  lastModeChannel: null,
  time: new Date(1000)
})

/** A tag value as sent: escaped, raw (escapes left as they come), or broken. */
const tagValue: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom("", "a", "abc-123", "\\", "a\\", "\\:", "\\s", "\\\\", "\\r\\n", "\\0", "\\x", "\\\\s", "=", ";", "a\\:b"),
  fc.string({ maxLength: 40 }).map(escapeTagValue),
  fc.fullUnicodeString({ maxLength: 20 }).map(escapeTagValue),
  fc.string({ unit: fc.constantFrom("\u0000", "\u0001", "\u007f", "\u0085", "\u2028", "\ud800", "\udfff", "\u00a0", "x", "\t"), maxLength: 12 })
    .map(escapeTagValue),
  fc.integer({ min: MSGID_MAX - 2, max: MSGID_MAX + 2 }).map((n) => "m".repeat(n)),
  fc.integer({ min: 300, max: 6000 }).map((n) => "é".repeat(n)),
  fc.string({ unit: fc.constantFrom("a", "\\", ":", "s", "n", "r", " "), maxLength: 30 }).map((s) => s.replaceAll(" ", "\\s"))
)

const tagged = fc.record({
  msgid: fc.option(tagValue, { nil: undefined }),
  reply: fc.option(tagValue, { nil: undefined }),
  react: fc.option(tagValue, { nil: undefined }),
  command: fc.constantFrom("PRIVMSG", "TAGMSG", "REDACT"),
  target: fc.constantFrom("#fuzz", "me", "bob"),
  text: fc.string({ maxLength: 30 }).map((t) => t.replace(/[\r\n\0]/g, "") || "x")
})
type Tagged = typeof tagged extends fc.Arbitrary<infer A> ? A : never

const lineOf = (t: Tagged, sender = "bob"): string => {
  const tags = [
    t.msgid !== undefined ? `msgid=${t.msgid}` : undefined,
    t.reply !== undefined ? `+draft/reply=${t.reply}` : undefined,
    t.react !== undefined ? `+draft/react=${t.react}` : undefined
  ].filter((x) => x !== undefined)
  const head = tags.length > 0 ? `@${tags.join(";")} ` : ""
  const rest = t.command === "PRIVMSG" ? `#fuzz :${t.text}` : t.command === "TAGMSG" ? t.target : `${t.target} ${t.text.split(" ")[0] || "x"}`
  return `${head}:${sender}!b@h ${t.command} ${rest}`
}

const keptId = (value: string | null | undefined) =>
  value == null || (value.length >= 1 && value.length <= MSGID_MAX && !/[\p{Cc}\p{Cs}\p{Zs}\p{Zl}\p{Zp}]/u.test(value))

describe("hostile message tags", () => {
  it("the history reads them within their bounds, and a PRIVMSG is kept whatever its tags", () => {
    console.info(`belay fuzz: message tags, seed ${SEED}`)
    const ctx = context(1)
    fc.assert(
      fc.property(tagged, (t) => {
        const line = parseLine(lineOf(t))
        if (line === undefined) return
        const rows = messagesFor(ctx, line, lineOf(t))
        for (const row of rows) {
          expect(keptId(row.msgid)).toBe(true)
          expect(keptId(row.replyTo)).toBe(true)
          if (row.kind === "react") {
            expect(row.replyTo).not.toBeNull()
            expect(row.text.length).toBeGreaterThan(0)
            expect(row.text.length).toBeLessThanOrEqual(REACTION_MAX)
            expect(/\p{Cc}/u.test(row.text)).toBe(false)
          }
        }
        if (t.command === "PRIVMSG") expect(rows).toHaveLength(1)
        if (t.command === "REDACT") expect(rows).toHaveLength(0)
        const redaction = redactionFor(ctx, line)
        if (redaction !== undefined) expect(keptId(redaction.msgid)).toBe(true)
      }),
      { seed: SEED, numRuns: RUNS }
    )
  })

  it("an upstream's client tags relayed live: within 4094 bytes, each kept whole or dropped, the line still parses", () => {
    // message-tags §"Size limit" and §"Client-only tags": what StoredAnnouncer announces with a row of another's.
    const clientTag = fc.record({
      key: fc.oneof(
        fc.constantFrom("+draft/reply", "+draft/channel-context", "+typing", "+", "+a b", "+x=y", "draft/not-client", "msgid"),
        fc.string({ unit: fc.constantFrom("a", "/", ".", "-", "+", "é", "\u0000"), minLength: 1, maxLength: 12 }).map((k) => `+${k}`)
      ),
      value: tagValue
    })
    const view = { caps: new Set(["message-tags", "server-time"]), selfNick: "me", channelTypes: "#", prefixSymbols: "@+" }
    fc.assert(
      fc.property(fc.array(clientTag, { maxLength: 8 }), fc.string({ maxLength: 30 }), (tags, text) => {
        const raw = `${tags.length > 0 ? `@${tags.map((t) => `${t.key}=${t.value}`).join(";")} ` : ""}:bob!b@h PRIVMSG #fuzz :${text.replace(/[\r\n\0]/g, "") || "x"}`
        const relayed = relayedClientTags(raw)
        if (relayed === undefined) return
        const kept = new Map(Object.entries(relayed))
        expect(kept.size).toBeGreaterThan(0)
        expect(tagBytes(kept)).toBeLessThanOrEqual(CLIENT_TAGS_MAX_BYTES)
        // Each kept tag is the line's own, whole: never cut.
        const sent = clientOnlyTags(parseLine(raw)!.tags)
        for (const [key, value] of kept) expect(sent.get(key)).toBe(value)
        const row = {
          id: 1, networkId: 1, target: "#fuzz", time: new Date(0), kind: "privmsg" as const, nick: "bob", text: "x",
          numeric: null, self: false, encryption: "plain" as const
        }
        const out = parseLine(storedLine(row, view, { client: relayed }))
        for (const [key, value] of kept) expect(out?.tags.get(key)).toBe(value)
      }),
      { seed: SEED, numRuns: RUNS }
    )
  })

  it("a client's tags: the 4094-byte bound counts every tag as sent, and what passes it is relayed whole", () => {
    // message-tags §"Size limit": DownstreamSession refuses a line past CLIENT_TAGS_MAX_BYTES of tag data (417);
    // what passes must pass the relaying checks too (ClientCommands, Multiline) and reach the others unchanged.
    const clientTag = fc.record({
      key: fc.constantFrom("+baz", "+draft/reply", "+typing", "foo", "msgid", "+a.example/x", "label"),
      value: fc.oneof(tagValue, fc.integer({ min: 4070, max: 4100 }).map((n) => "a".repeat(n)))
    })
    fc.assert(
      fc.property(fc.array(clientTag, { minLength: 1, maxLength: 4 }), fc.constantFrom("PRIVMSG #c :hi", "TAGMSG #c"), (tags, rest) => {
        const section = tags.map((t) => (t.value === "" ? t.key : `${t.key}=${t.value}`)).join(";")
        const raw = `@${section} ${rest}`
        expect(rawTagDataBytes(raw)).toBe(Buffer.byteLength(section))
        const line = parseLine(raw)
        if (line === undefined || rawTagDataBytes(raw) > CLIENT_TAGS_MAX_BYTES) return
        const relayed = clientOnlyTags(line.tags)
        expect(tagBytes(relayed)).toBeLessThanOrEqual(CLIENT_TAGS_MAX_BYTES)
        expect([...relayed.keys()].every((k) => k.startsWith("+"))).toBe(true)
        if (relayed.size > 0) expect(parseLine(formatLine({ tags: relayed, command: "TAGMSG", params: ["#c"] }))!.tags).toEqual(relayed)
      }),
      { seed: SEED, numRuns: Math.ceil(RUNS / 5) }
    )
  })

  it.layer(Layer.mergeAll(MessageWriter.Default, MessageHistory.Default).pipe(Layer.provideMerge(TestDatabaseLive())), {
    timeout: 300_000
  })((it) => {
    it.scoped("stored, redacted and replayed without breaking storage", () =>
      Effect.gen(function*() {
        const { networkIds: [net] } = yield* seedNetworks()
        const writer = yield* MessageWriter
        const history = yield* MessageHistory
        const sql = yield* SqlClient.SqlClient
        const ctx = context(net!)
        const samples = fc.sample(tagged, { seed: SEED, numRuns: STORED_RUNS })
        const appended: Array<NewMessage> = []
        /**
         * Per appended row, whether a redaction handed over after it names it: it must be redacted. A row appended after
         * a redaction naming it (an upstream that gave one msgid twice, which IRCv3 message-ids forbids) may be too:
         * the redaction applies to what is stored when it runs (MessageRedactions.ts). Any other row must not be.
         */
        const named: Array<boolean> = []
        const mayBe: Array<boolean> = []
        const redactions: Array<{ readonly targetFolded: string; readonly msgid: string }> = []
        const isRedactable = (kind: string) => ["privmsg", "notice", "action", "react"].includes(kind)
        for (const t of samples) {
          const raw = lineOf(t)
          const line = parseLine(raw)
          if (line === undefined) continue
          for (const m of messagesFor(ctx, line, raw)) {
            appended.push(m)
            named.push(false)
            mayBe.push(isRedactable(m.kind) && redactions.some((r) => r.targetFolded === m.targetFolded && r.msgid === m.msgid))
            yield* writer.append(m)
          }
          const redaction = redactionFor(ctx, line)
          if (redaction !== undefined) {
            appended.forEach((m, i) => {
              if (m.targetFolded === redaction.targetFolded && m.msgid === redaction.msgid && isRedactable(m.kind)) named[i] = true
            })
            redactions.push(redaction)
            yield* writer.redact(redaction)
          }
        }
        yield* writer.flush

        const stored = yield* sql<{ msgid: string | null; replyTo: string | null; kind: string; text: string; redacted: boolean }>`
          SELECT m.msgid, m.reply_to AS "replyTo", m.kind, m.text, m.redacted
          FROM messages m JOIN buffers b ON b.id = m.buffer_id WHERE b.network_id = ${net!} ORDER BY m.id`
        // Every message stored, none refused; the ids read back as they were kept.
        expect(stored).toHaveLength(appended.length)
        expect(stored.map((r) => [r.msgid, r.replyTo])).toEqual(appended.map((m) => [m.msgid ?? null, m.replyTo ?? null]))

        // The redactions: applied once the writer and the redaction queue are through (polled: they run on a fiber).
        expect(named.some((n) => n)).toBe(true)
        const read = sql<{ text: string; redacted: boolean }>`
          SELECT m.text, m.redacted FROM messages m JOIN buffers b ON b.id = m.buffer_id
          WHERE b.network_id = ${net!} ORDER BY m.id`
        let after = yield* read
        for (let i = 0; i < 200 && after.some((r, k) => named[k] && !r.redacted); i++) {
          yield* Effect.promise(() => new Promise((r) => setTimeout(r, 50)))
          after = yield* read
        }
        expect(after.map((r, i) => r.redacted || !named[i])).toEqual(after.map(() => true))
        expect(after.map((r, i) => !r.redacted || named[i] || mayBe[i])).toEqual(after.map(() => true))
        expect(after.every((r) => !r.redacted || r.text === "")).toBe(true)

        // Replayed: every row of the channel renders as a line that parses back to the msgid it is shown with.
        const view = { caps: new Set(["message-tags", "server-time", "batch"]), selfNick: "me", channelTypes: "#", prefixSymbols: "@+" }
        const rows = yield* history.range(net!, "#fuzz", { newest: true, limit: 100_000, reactions: true })
        for (const row of rows) {
          const out = storedRowLine(row, view)
          if (out === undefined) continue
          expect(out).not.toMatch(/[\r\n\0]/)
          const parsed = parseLine(out)
          expect(parsed?.tags.get("msgid")).toBe(row.msgid ?? String(row.id))
          expect(parseClientLine(out).command).toBe(row.kind === "react" ? "TAGMSG" : "PRIVMSG")
        }
        expect(rows.length).toBeGreaterThan(0)
      }))
  })
})
