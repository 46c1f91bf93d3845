/**
 * Hostile stamps in another node's line notice (src/services/nodes/ClusterLines.ts `decodeLines`, the `s` field):
 * generated indexes (negative, repeated, past the lines), msgids (spaces, CR, LF, NUL, `;`, `\`, `=`, lone surrogates,
 * empty, at and past MSGID_MAX) and times (negative, fractional, past what a Date holds). Every line decodes; a stamp is
 * kept exactly when it is one a node makes (a msgid Belay keeps, a time a Date holds), on the line it names; and the
 * line a client with message-tags and server-time then gets is one line, never broken by the stamp, whose `msgid` is
 * the stamp's. Stamps a node makes survive the notice's JSON unchanged.
 *
 * Reproducible: fast-check with a fixed seed, printed at the start; FUZZ_SEED overrides it, FUZZ_RUNS scales the count.
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { parseLine } from "../../src/irc/IrcLine.js"
import { relayedLine } from "../../src/listener/MessageLines.js"
import { MSGID_MAX, upstreamMsgid } from "../../src/services/history/MessageRow.js"
import { decodeLines, encodeLines, type OutLine } from "../../src/services/nodes/ClusterLines.js"

const SEED = process.env.FUZZ_SEED !== undefined && process.env.FUZZ_SEED !== "" ? Number(process.env.FUZZ_SEED) : 424242
const RUNS = process.env.FUZZ_RUNS !== undefined && process.env.FUZZ_RUNS !== "" ? Number(process.env.FUZZ_RUNS) : 10_000

const piece = fc.constantFrom("a", "7", " ", "\r", "\n", "\u0000", ";", "\\", "=", "@", ":", "é", "\ud83d\ude00", "\ud800", "\u00a0", "\t")
const msgid = fc.oneof(
  fc.string({ unit: piece, maxLength: 12 }),
  fc.integer({ min: MSGID_MAX - 2, max: MSGID_MAX + 2 }).map((n) => "m".repeat(n)),
  fc.integer({ min: 1, max: 2 ** 53 }).map(String)
)
const time = fc.oneof(
  fc.integer({ min: 0, max: 4_102_444_800_000 }),
  fc.double({ noNaN: true }),
  fc.constantFrom(8.64e15, 8.64e15 + 1, -8.64e15, -8.64e15 - 1, Number.MAX_VALUE, -0.5)
)
const lineText = fc.constantFrom(":d!u@h TOPIC #c :new topic", ":d!u@h JOIN #c", ":b!b@h KICK #c d :out", ":b QUIT", "PART #c")
const lines = fc.array(
  fc.tuple(fc.integer({ min: 1, max: 9 }), lineText, fc.integer({ min: 0, max: 4_102_444_800_000 }), fc.nat()),
  { maxLength: 5 }
)
const stamps = fc.array(fc.tuple(fc.integer({ min: -2, max: 6 }), msgid, time), { maxLength: 6 })

const kept = (id: string, t: number) => upstreamMsgid(id) === id && Number.isFinite(t) && Math.abs(t) <= 8.64e15
const view = { caps: new Set(["message-tags", "server-time"]), selfNick: "alice", channelTypes: "#", prefixSymbols: "@+" }

describe("hostile stamps in another node's line notice", () => {
  it("a stamp is kept only as a node makes it, and never breaks the client's line", () => {
    console.info(`belay fuzz: cluster line stamps, seed ${SEED}`)
    fc.assert(
      fc.property(lines, stamps, (l, s) => {
        const decoded = decodeLines(5, l, s)
        expect(decoded.map((d) => [d.accountId, d.line, d.time, d.afterId])).toEqual(l)
        decoded.forEach((d, i) => {
          // The last valid stamp naming this index wins, as the notice's order says.
          const named = s.filter(([at, id, t]) => at === i && kept(id, t)).at(-1)
          expect(d.stamp).toEqual(named === undefined ? undefined : { msgid: named[1], time: named[2] })
          const out = relayedLine(d.line, d.time, view, d.stamp === undefined ? {} : { stamp: d.stamp })
          if (out === undefined) return
          expect(out).not.toMatch(/[\r\n\0]/)
          if (d.stamp !== undefined) expect(parseLine(out)?.tags.get("msgid")).toBe(d.stamp.msgid)
        })
      }),
      { seed: SEED, numRuns: RUNS }
    )
  })

  it("the stamps a node makes cross the notice's JSON unchanged", () => {
    const made = fc.tuple(
      fc.oneof(fc.integer({ min: 1, max: 2 ** 53 }).map(String), msgid.filter((id) => upstreamMsgid(id) === id)),
      fc.integer({ min: 0, max: 4_102_444_800_000 })
    )
    fc.assert(
      fc.property(fc.array(fc.option(made, { nil: undefined }), { maxLength: 6 }), (stampsMade) => {
        const out: ReadonlyArray<OutLine> = stampsMade.map((m, i) => ({
          line: { accountId: 1, networkId: 5, line: ":d JOIN #c", time: 0, after: i },
          afterId: i,
          ...(m !== undefined ? { stamp: { msgid: m[0], time: m[1] } } : {})
        }))
        const notice = JSON.parse(JSON.stringify(encodeLines(out))) as ReturnType<typeof encodeLines>
        const back = decodeLines(5, notice.l, "s" in notice ? notice.s : undefined)
        expect(back.map((b) => b.stamp)).toEqual(out.map((o) => o.stamp))
      }),
      { seed: SEED, numRuns: Math.ceil(RUNS / 5) }
    )
  })
})
