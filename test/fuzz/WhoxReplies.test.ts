/**
 * Hostile WHOX requests and replies against the listener's narrowing of a 354's flags (src/listener/MessageLines.ts,
 * docs/contract.md "The IRC client listener": the `f` field narrowed for a client without multi-prefix). Generated
 * `WHO` second params (standard and non-standard field letters in any order and case, repeated, flags before the
 * `%`, tokens present, empty or hostile, several `%` and commas, edge-case strings) read by `whoxRequest`; and 354 lines,
 * well formed for the request (field values with prefix symbols, spaces, `:` and hostile text) or not (a field short
 * or over, hostile lines), relayed by `relayedLine` with the request they answer. Held to: the request read is the
 * standard letters asked for, once each, in the reply's order, or none when a letter is not standard; relaying never
 * throws; with multi-prefix or no known request the line is what it is without the narrowing; without multi-prefix,
 * a reply that carries exactly the fields asked for differs at most in its flags, which keep their characters but
 * for dropped prefix symbols, with one prefix symbol at most left in the run, and any other reply is unchanged.
 *
 * Reproducible: fast-check with a fixed seed, printed at the start; FUZZ_SEED overrides it, FUZZ_RUNS the count.
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { parseLine } from "../../src/irc/IrcLine.js"
import { type ClientView, relayedLine, type WhoxRequest, whoxRequest } from "../../src/listener/MessageLines.js"
import { edgeString } from "./support/HostileValues.js"

const SEED = process.env.FUZZ_SEED !== undefined && process.env.FUZZ_SEED !== "" ? Number(process.env.FUZZ_SEED) : 354354
const RUNS = process.env.FUZZ_RUNS !== undefined && process.env.FUZZ_RUNS !== "" ? Number(process.env.FUZZ_RUNS) : 10_000

const ORDER = "tcuihsnfdlaor"
const PREFIXES = "~&@%+"
const view = (caps: ReadonlyArray<string>): ClientView => ({
  caps: new Set(caps),
  selfNick: "alice",
  channelTypes: "#&",
  prefixSymbols: PREFIXES
})

/** The second param of a WHO: mostly a WHOX one, letters from the standard set and a few others. */
const whoArg: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.tuple(
      fc.constantFrom("", "o", "n", "+x"),
      fc.array(fc.constantFrom(...ORDER, ...ORDER, "S", "U", "F", "x", "%", "9"), { maxLength: 16 }),
      fc.oneof(fc.constant(""), fc.constant(","), fc.integer({ min: 0, max: 999 }).map((n) => `,${n}`), edgeString.map((t) => `,${t}`))
    ).map(([flags, letters, token]) => `${flags}%${letters.join("")}${token}`)
  },
  { weight: 1, arbitrary: edgeString }
)

/** A request of standard fields only, with or without a token: one whose replies can be narrowed. */
const standardRequest: fc.Arbitrary<WhoxRequest> = fc
  .tuple(fc.subarray([...ORDER], { minLength: 1 }), fc.boolean())
  .map(([letters, token]) => whoxRequest(["#c", `%${letters.join("")}${token ? ",42" : ""}`])!)

/** One field's value in a reply: the flags with prefix symbols, or any word, or hostile text. */
const fieldValue = (letter: string): fc.Arbitrary<string> =>
  letter === "f"
    ? fc.array(fc.constantFrom("H", "G", "*", "B", "r", ...PREFIXES), { minLength: 1, maxLength: 8 }).map((c) => c.join(""))
    : fc.oneof(
      fc.string({ minLength: 1, maxLength: 12 }).map((v) => v.replace(/[\s:\0]/g, "x")),
      fc.constantFrom("@+", "~&@%+", "#c@+", "0", "*", "n/a")
    )

/** A 354 for `request`: its fields, or one short or over; the realname, when asked, may have spaces. */
const reply = (request: WhoxRequest): fc.Arbitrary<{ readonly line: string; readonly exact: boolean }> =>
  fc.tuple(
    fc.tuple(...[...request.fields].map(fieldValue)),
    fc.constantFrom("exact", "short", "over"),
    fc.oneof(fc.constant("Real Name"), fc.constant(":@+ r"), fc.string({ maxLength: 20 }).map((v) => v.replace(/[\r\n\0]/g, " ")))
  ).map(([values, shape, realname]) => {
    const fields = [...values]
    if (request.fields.endsWith("r")) fields[fields.length - 1] = realname
    if (shape === "short" && fields.length > 0) fields.splice(0, 1)
    if (shape === "over") fields.unshift("extra")
    const last = fields.length > 0 ? `:${fields.pop()}` : ""
    const middle = fields.map((f) => `${f} `).join("")
    return { line: `:irc.test 354 alice ${middle}${last}`.trimEnd(), exact: shape === "exact" }
  })

/** Removes every prefix symbol from `s`: what narrowing may take away. */
const withoutPrefixes = (s: string) => [...s].filter((c) => !PREFIXES.includes(c)).join("")

describe("WHOX requests and replies", () => {
  console.info(`belay fuzz: WHOX replies, seed ${SEED}`)

  it("a request reads as its standard fields in the reply's order, or as none", () =>
    fc.assert(fc.property(whoArg, (arg) => {
      const request = whoxRequest(["#c", arg])
      const percent = arg.indexOf("%")
      const comma = percent === -1 ? -1 : arg.indexOf(",", percent)
      const letters = percent === -1 ? "" : arg.slice(percent + 1, comma === -1 ? undefined : comma)
      if (letters === "" || [...letters].some((l) => !ORDER.includes(l))) expect(request).toBeUndefined()
      else {
        expect(request).toEqual({
          fields: [...ORDER].filter((l) => letters.includes(l)).join(""),
          token: comma !== -1 && comma < arg.length - 1
        })
      }
    }), { seed: SEED, numRuns: RUNS }))

  it("a reply is narrowed in its flags alone, and only when it carries the fields asked for", () => {
    const caseArb = standardRequest.chain((request) => reply(request).map((r) => ({ request, ...r })))
    fc.assert(fc.property(caseArb, ({ request, line, exact }) => {
      const plain = relayedLine(line, 0, view([]))
      const narrowed = relayedLine(line, 0, view([]), { whox: request })
      expect(relayedLine(line, 0, view(["multi-prefix"]), { whox: request })).toBe(relayedLine(line, 0, view(["multi-prefix"])))
      expect(narrowed === undefined).toBe(plain === undefined)
      if (plain === undefined || narrowed === undefined) return
      const before = parseLine(plain)!.params
      const after = parseLine(narrowed)!.params
      expect(after.length).toBe(before.length)
      const f = request.fields.indexOf("f")
      const tokenOmitted = !request.token && request.fields.startsWith("t") && before.length === request.fields.length
      const at = f === -1 ? -1 : exact ? f + 1 : tokenOmitted ? f : -1
      for (let i = 0; i < before.length; i++) {
        if (i !== at) {
          expect(after[i]).toBe(before[i])
          continue
        }
        expect(withoutPrefixes(after[i]!)).toBe(withoutPrefixes(before[i]!))
        const run = /[~&@%+]+/.exec(after[i]!)?.[0] ?? ""
        expect(run.length).toBeLessThanOrEqual(1)
      }
    }), { seed: SEED, numRuns: RUNS })
  })

  it("a hostile 354 with any request relays without throwing, as a line that parses", () =>
    fc.assert(fc.property(whoArg, edgeString, fc.boolean(), (arg, text, multi) => {
      const request = whoxRequest(["#c", arg])
      const raw = `:irc.test 354 alice ${text.replace(/[\r\n]/g, " ")}`
      const out = relayedLine(raw, 0, view(multi ? ["multi-prefix"] : []), request !== undefined ? { whox: request } : {})
      if (out !== undefined) expect(parseLine(out)).toBeDefined()
    }), { seed: SEED, numRuns: RUNS }))
})
