/**
 * The hostile values every fuzzed body is made of (fast-check arbitraries): strings with the Unicode edge cases a
 * parser or a database trips on (lone surrogates, NUL, text-direction controls, combining marks, emoji sequences, line
 * breaks, IRC-significant characters), huge strings, deeply nested JSON, every JSON type where another was expected,
 * and raw byte mutations that no JSON encoder produces (invalid UTF-8, truncation, a BOM). Pure; no state.
 */
import fc from "fast-check"

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

/** `depth` arrays or objects nested in one another, for parsers and decoders that recurse. */
export const deepNesting: fc.Arbitrary<unknown> = fc
  .tuple(fc.integer({ min: 50, max: 5_000 }), fc.boolean())
  .map(([depth, arrays]) => {
    let value: unknown = "bottom"
    for (let i = 0; i < depth; i++) value = arrays ? [value] : { a: value }
    return value
  })

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

/** JSON.stringify that survives what it cannot encode (a nesting too deep for its recursion). */
export const encodeJson = (value: unknown): Buffer => {
  try {
    return Buffer.from(JSON.stringify(value) ?? "null")
  } catch {
    return Buffer.from("[".repeat(100_000))
  }
}
