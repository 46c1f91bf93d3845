/**
 * The hostile values every fuzzed body is made of (fast-check arbitraries): strings with the Unicode edge cases a
 * parser or a database trips on (lone surrogates, NUL, text-direction controls, combining marks, emoji sequences, line
 * breaks, IRC-significant characters), huge strings, JSON nested at every depth up to what a body holds (written as
 * text: DeepJson), every JSON type where another was expected, and raw byte mutations that no JSON encoder produces
 * (invalid UTF-8, truncation, a BOM). Pure; no state.
 */
import fc from "fast-check"
import { JSON_MAX_DEPTH } from "../../../src/schema/BoundedJson.js"

/** Single characters and short sequences that break naive handling, one edge case each. */
export const EDGE_TEXT: ReadonlyArray<string> = [
  "\u0000", // NUL: PostgreSQL text cannot hold it, IRC ends a line at it
  "\uD800", "\uDBFF", "\uDC00", "\uDFFF", // lone surrogates (not UTF-8 encodable)
  "\uDFFF\uD800", // a reversed pair
  "\u202E", "\u202D", "\u2066", "\u2069", "\u200F", "\u061C", // text-direction controls
  "\u0301", "\u0336", "e\u0301", "a\u0308\u0308\u0308\u0308", // combining marks
  "Z\u0351\u0352\u0353\u0354\u0355\u0356\u0357\u0358", // stacked marks ("zalgo")
  "\uD83D\uDCA9", "\uD83D\uDC69\u200D\uD83D\uDC69\u200D\uD83D\uDC67", "\uD83C\uDDFA\uD83C\uDDF8", // emoji, ZWJ, flags
  "\uFEFF", "\uFFFD", "\uFFFE", "\uFFFF", "\u200B", "\u2028", "\u2029", "\u0085",
  "\r", "\n", "\r\n", "\t", "\u0001", "\u0007", "\u001B[31m", "\u007F",
  " ", ":", "#", "&", "@", "!", "*", ",", "%", "+", "=", "\\", "\"", "'", "`", "/", "?", "~",
  "<script>", "${x}", "{{x}}", "%00", "%s", "\\u0000", "../", "'; DROP TABLE accounts; --",
  "İ", "ß", "ﬃ", "𝕏", "Ω", "日本語", "العربية", "עברית", "\u0E01\u0E34\u0E4A",
  "__proto__", "constructor", "prototype", "toString", "hasOwnProperty"
]

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c))

/** A string of edge cases, or of random code units (lone surrogates included), or an ordinary one. */
export const edgeString: fc.Arbitrary<string> = fc.oneof(
  fc.array(fc.constantFrom(...EDGE_TEXT), { minLength: 1, maxLength: 12 }).map((parts) => parts.join("")),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: fc.oneof(fc.char16bits(), loneSurrogate), maxLength: 40 }),
  fc.string({ maxLength: 40 }),
  fc.constantFrom("", " ", "null", "true", "0", "-1", "1e309", "NaN", "[]", "{}")
)

/** A string past every documented length bound (60, 1024, 2000, 4096, 16 KiB), and some past 1 MiB. */
export const hugeString: fc.Arbitrary<string> = fc
  .tuple(fc.constantFrom("a", "\u00e9", "\uD83D\uDCA9", "\u0000", "\uD800", "#", " ", "x\r\n"), fc.constantFrom(61, 1025, 2001, 4097, 16_385, 70_000, 300_000))
  .map(([unit, count]) => unit.repeat(count))

/** Hostile text: mostly short edge cases, sometimes huge. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: edgeString },
  { weight: 1, arbitrary: hugeString }
)

/** Numbers a schema of integers must refuse or bound: fractions, negatives, zero, beyond 2^53, and the extremes. */
export const hostileNumber: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(0, -0, -1, 1.5, 0.1, 1e21, -1e21, 2 ** 53, 2 ** 53 + 2, -(2 ** 53), Number.MAX_VALUE, Number.MIN_VALUE, 501, 1001, 101, 4097),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true })
)

/**
 * A JSON value of `depth` arrays, objects `{"a": …}` or both in turn, nested in one another around `leaf`: for
 * parsers, decoders and messages that recurse. Written as text by `encodeJson` — JSON.stringify gives up at about
 * 4,000 levels, and a body the client cannot encode never reaches the server's decoders.
 */
export class DeepJson {
  constructor(readonly depth: number, readonly kind: "array" | "object" | "mixed", readonly leaf: string) {}

  text(): string {
    const open = this.kind === "array" ? "[" : this.kind === "object" ? "{\"a\":" : "[{\"a\":"
    const close = this.kind === "array" ? "]" : this.kind === "object" ? "}" : "}]"
    const pairs = this.kind === "mixed" ? Math.floor(this.depth / 2) : this.depth
    const odd = this.kind === "mixed" && this.depth % 2 === 1
    return `${open.repeat(pairs)}${odd ? `[${this.leaf}]` : this.leaf}${close.repeat(pairs)}`
  }
}

/** Bytes per level of each kind of nesting. */
const BYTES_PER_LEVEL = { array: 2, object: 6, mixed: 4 } as const

/** An integer from `min` to `max`, as likely in each power of two as in any other. */
const logUniform = (min: number, max: number): fc.Arbitrary<number> =>
  max <= min
    ? fc.constant(min)
    : fc.double({ min: Math.log(min), max: Math.log(max + 1), noNaN: true }).map((x) => Math.min(max, Math.max(min, Math.floor(Math.exp(x)))))

/**
 * Deep nesting whose text fits in `roomBytes`: within the server's bound (JSON_MAX_DEPTH, where decoders and refusal
 * messages see the value), around the bound, and past it up to everything the room holds (a 1 MiB body holds 500,000
 * levels of arrays).
 */
export const deepJson = (roomBytes: number): fc.Arbitrary<DeepJson> =>
  fc.constantFrom<DeepJson["kind"]>("array", "object", "mixed").chain((kind) => {
    const most = Math.max(JSON_MAX_DEPTH + 1, Math.floor(roomBytes / BYTES_PER_LEVEL[kind]))
    return fc.tuple(
      fc.oneof(
        { weight: 4, arbitrary: fc.integer({ min: 1, max: JSON_MAX_DEPTH - 3 }) },
        { weight: 2, arbitrary: fc.integer({ min: JSON_MAX_DEPTH - 6, max: JSON_MAX_DEPTH + 6 }) },
        { weight: 3, arbitrary: logUniform(JSON_MAX_DEPTH + 1, most) },
        { weight: 1, arbitrary: fc.constant(most) }
      ),
      fc.constantFrom("1", "\"x\"", "null", "true", "[]", "{}", "\"[[{\\\"\"", "-0.5e3")
    ).map(([depth, leaf]) => new DeepJson(depth, kind, leaf))
  })

/** Deep nesting that fits in the OAuth and /api bodies' 16 KiB with room for the other members. */
export const deepNesting: fc.Arbitrary<DeepJson> = deepJson(14 * 1024)

/** Any JSON value, of hostile content. */
export const hostileJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: hostileString },
  { weight: 2, arbitrary: hostileNumber },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false) },
  { weight: 2, arbitrary: fc.array(fc.oneof(edgeString, hostileNumber, fc.constant(null)), { maxLength: 5 }) },
  { weight: 2, arbitrary: fc.dictionary(edgeString, fc.oneof(edgeString, hostileNumber), { maxKeys: 4 }) },
  { weight: 1, arbitrary: deepNesting },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }) }
)

/** `arbitrary`'s value one time in `oneIn`, otherwise undefined. */
export const oneTimeIn = <A>(oneIn: number, arbitrary: fc.Arbitrary<A>): fc.Arbitrary<A | undefined> =>
  fc.oneof({ weight: oneIn - 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary })

/** Ways to spoil the bytes of an otherwise well-formed body; `undefined` leaves them alone. */
export type ByteMutation =
  | { readonly kind: "truncate"; readonly at: number }
  | { readonly kind: "invalid-utf8"; readonly at: number; readonly bytes: ReadonlyArray<number> }
  | { readonly kind: "bom" }
  | { readonly kind: "nul"; readonly at: number }
  | { readonly kind: "replace"; readonly bytes: ReadonlyArray<number> }

/** Byte sequences that are not UTF-8: stray continuation bytes, overlongs, CESU surrogates, 0xFF, a cut sequence. */
const INVALID_UTF8: ReadonlyArray<ReadonlyArray<number>> = [
  [0x80], [0xbf], [0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf], [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0xff], [0xfe], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80], [0xc3]
]

export const byteMutation: fc.Arbitrary<ByteMutation> = fc.oneof(
  fc.double({ min: 0, max: 1, noNaN: true }).map((at) => ({ kind: "truncate" as const, at })),
  fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.constantFrom(...INVALID_UTF8)).map(([at, bytes]) => ({ kind: "invalid-utf8" as const, at, bytes })),
  fc.constant({ kind: "bom" as const }),
  fc.double({ min: 0, max: 1, noNaN: true }).map((at) => ({ kind: "nul" as const, at })),
  fc.uint8Array({ maxLength: 64 }).map((bytes) => ({ kind: "replace" as const, bytes: [...bytes] }))
)

export const mutateBytes = (body: Buffer, mutation: ByteMutation): Buffer => {
  const at = (fraction: number) => Math.floor(fraction * body.length)
  switch (mutation.kind) {
    case "truncate":
      return body.subarray(0, at(mutation.at))
    case "invalid-utf8":
      return Buffer.concat([body.subarray(0, at(mutation.at)), Buffer.from(mutation.bytes), body.subarray(at(mutation.at))])
    case "bom":
      return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body])
    case "nul":
      return Buffer.concat([body.subarray(0, at(mutation.at)), Buffer.from([0]), body.subarray(at(mutation.at))])
    case "replace":
      return Buffer.from(mutation.bytes)
  }
}

const DEEP_MARK = "~deep~7f3a9c~"
const DEEP_MARKED = /"~deep~7f3a9c~(\d+)"/g

/**
 * A value's JSON, with each DeepJson in it written as its text. Survives what JSON.stringify cannot encode (a nesting
 * too deep for its recursion, built as objects rather than as DeepJson) by sending something that is not JSON.
 */
export const encodeJson = (value: unknown): Buffer => {
  const deep: Array<DeepJson> = []
  let json: string
  try {
    json = JSON.stringify(value, (_key, v: unknown) => (v instanceof DeepJson ? `${DEEP_MARK}${deep.push(v) - 1}` : v)) ?? "null"
  } catch {
    return Buffer.from("[".repeat(100_000))
  }
  return Buffer.from(deep.length === 0 ? json : json.replace(DEEP_MARKED, (_mark, i: string) => deep[Number(i)]!.text()))
}
