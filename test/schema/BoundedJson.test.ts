/**
 * BoundedJson, and the two bounds of a refusal's message (Ids.showValue, ProblemList): texts and values of any depth
 * and size are answered without recursion past a small bound, in a few characters.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import fc from "fast-check"
import { JSON_MAX_DEPTH, parseBoundedJson, textNestsWithin } from "../../src/schema/BoundedJson.js"
import { showValue } from "../../src/schema/Ids.js"
import { listProblems, PROBLEM_CHARACTERS, PROBLEMS_SHOWN } from "../../src/schema/ProblemList.js"

const arrays = (depth: number): string => `${"[".repeat(depth)}1${"]".repeat(depth)}`
const objects = (depth: number): string => `${"{\"a\":".repeat(depth)}1${"}".repeat(depth)}`

describe("BoundedJson", () => {
  it("counts an array or object as one level and a scalar as none; the bound is inclusive", () => {
    expect(textNestsWithin("1", 0)).toBe(true)
    expect(textNestsWithin("\"x\"", 0)).toBe(true)
    expect(textNestsWithin("[]", 0)).toBe(false)
    expect(textNestsWithin("[]", 1)).toBe(true)
    expect(textNestsWithin("{\"a\":[1,{\"b\":[]}]}", 4)).toBe(true)
    expect(textNestsWithin("{\"a\":[1,{\"b\":[]}]}", 3)).toBe(false)
    for (const text of [arrays, objects]) {
      expect(parseBoundedJson(text(JSON_MAX_DEPTH))).toEqual(Either.right(JSON.parse(text(JSON_MAX_DEPTH))))
      expect(parseBoundedJson(text(JSON_MAX_DEPTH + 1))).toEqual(Either.left("too-deep"))
    }
    // The deep member need not be the first; closed brackets give their level back.
    expect(textNestsWithin("[0,{\"a\":1},[[[[1]]]]]", 4)).toBe(false)
    expect(textNestsWithin("[0,{\"a\":1},[[[[1]]]]]", 5)).toBe(true)
    expect(textNestsWithin("[[1],[2],[3],[4],[5],[6]]", 2)).toBe(true)
  })

  it("does not count brackets inside strings, escaped quotes and backslashes included", () => {
    for (const inner of ["[[[[", "\\\"[[[[", "{{{{\\\\", "\\u005b[[[", "\\\\\\\"]]]]{{{{"]) {
      const text = `["${inner}",[1]]`
      expect(JSON.parse(text)).toHaveLength(2)
      expect(textNestsWithin(text, 2)).toBe(true)
      expect(textNestsWithin(text, 1)).toBe(false)
      expect(textNestsWithin(`{"${inner}":[[1]]}`, 3)).toBe(true)
      expect(textNestsWithin(`{"${inner}":[[1]]}`, 2)).toBe(false)
    }
    // A generated value of any strings: the measure is JSON's own nesting.
    const value = { a: ["x\"[{", { b: "\\", c: [["]]]\\\""]] }], d: "[" }
    expect(textNestsWithin(JSON.stringify(value), 5)).toBe(true)
    expect(textNestsWithin(JSON.stringify(value), 4)).toBe(false)
  })

  it("agrees with the depth of the parsed value, for any JSON value and string content", () => {
    const depthOf = (u: unknown): number =>
      typeof u !== "object" || u === null ? 0 : 1 + Math.max(0, ...Object.values(u).map(depthOf))
    const text = fc.string({ unit: fc.constantFrom("[", "]", "{", "}", "\"", "\\", "a", "\u0000", "\uD800") })
    fc.assert(fc.property(fc.jsonValue({ maxDepth: 8 }), fc.array(text, { maxLength: 3 }), (value, strings) => {
      const json = JSON.stringify([value, ...strings])
      const depth = depthOf(JSON.parse(json))
      expect(textNestsWithin(json, depth)).toBe(true)
      expect(textNestsWithin(json, depth - 1)).toBe(false)
    }), { seed: 42, numRuns: 2_000 })
  })

  it("refuses nesting at any depth a 1 MiB body holds without parsing it, and reads wide values", () => {
    for (const text of [arrays(500_000), objects(170_000), `{"x":${arrays(300_000)}}`, "[".repeat(1_000_000)]) {
      expect(text.length).toBeLessThanOrEqual(1024 * 1024)
      expect(parseBoundedJson(text)).toEqual(Either.left("too-deep"))
    }
    const wide = `[${Array.from({ length: 200_000 }, (_, i) => (i % 2 === 0 ? "[1]" : "{\"a\":\"]]\"}")).join(",")}]`
    expect(Either.isRight(parseBoundedJson(wide))).toBe(true)
  })

  it("measures a text with more than 64 brackets, in strings or side by side, as one with fewer", () => {
    // Up to 64 brackets cannot nest past 64, and is not walked; past that the walk decides, as it always did.
    const inStrings = JSON.stringify({ note: "[".repeat(200) + "{".repeat(200), list: [[1]] })
    expect(parseBoundedJson(inStrings)).toEqual(Either.right(JSON.parse(inStrings)))
    const sideBySide = `[${Array.from({ length: 100 }, () => "{\"a\":[1]}").join(",")}]`
    expect(parseBoundedJson(sideBySide)).toEqual(Either.right(JSON.parse(sideBySide)))
    for (const text of [arrays, objects]) {
      const deepInString = `["${"[".repeat(100)}",${text(JSON_MAX_DEPTH)}]`
      expect(parseBoundedJson(deepInString)).toEqual(Either.left("too-deep"))
      expect(parseBoundedJson(`["${"{".repeat(100)}",${text(JSON_MAX_DEPTH - 1)}]`)).toEqual(
        Either.right(JSON.parse(`["${"{".repeat(100)}",${text(JSON_MAX_DEPTH - 1)}]`))
      )
    }
    // The property of the walk holds for parseBoundedJson itself: refused exactly when the value is too deep.
    const depthOf = (u: unknown): number =>
      typeof u !== "object" || u === null ? 0 : 1 + Math.max(0, ...Object.values(u).map(depthOf))
    fc.assert(fc.property(fc.integer({ min: 0, max: 80 }), fc.integer({ min: 0, max: 80 }), fc.string(), (a, o, s) => {
      const json = JSON.stringify([s, "[".repeat(a), JSON.parse(arrays(a)), JSON.parse(objects(o))])
      const refused = Either.isLeft(parseBoundedJson(json))
      expect(refused).toBe(depthOf(JSON.parse(json)) > JSON_MAX_DEPTH)
    }), { seed: 7, numRuns: 500 })
  })

  it("refuses what is not JSON as not-json", () => {
    for (const text of ["", "{", "[1,]", "\u0000", "[\"unterminated", "]]]]"]) expect(parseBoundedJson(text)).toEqual(Either.left("not-json"))
  })
})

describe("showValue", () => {
  it("is the JSON of a small value", () => {
    for (const value of [0, -1.5, true, null, "a\"b\u0000", [1, "x", null], { a: 1, b: [true] }, {}, []]) {
      expect(showValue(value)).toBe(JSON.stringify(value))
    }
    expect(showValue(undefined)).toBe("undefined")
    expect(showValue([undefined, () => 1])).toBe("[null,null]")
    expect(showValue({ a: undefined, b: 1 })).toBe("{\"b\":1}")
  })

  it("shows at most 60 characters of a value of any depth or size, cut with ...", () => {
    const deepArray = JSON.parse(arrays(500_000)) as unknown
    const deepObject = JSON.parse(objects(170_000)) as unknown
    const wideObject = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i]))
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [deepArray, "[".repeat(57)],
      [deepObject, "{\"a\":".repeat(11) + "{\""],
      ["x".repeat(1_000_000), `"${"x".repeat(56)}`],
      [Array.from({ length: 500_000 }, () => 0), `[${"0,".repeat(28)}`],
      [wideObject, JSON.stringify(wideObject).slice(0, 57)]
    ]
    for (const [value, start] of cases) {
      const shown = showValue(value)
      expect(shown).toBe(`${start}...`)
      expect(shown.length).toBe(60)
    }
    const circular: Array<unknown> = [1]
    circular.push(circular)
    expect(showValue(circular)).toMatch(/^\[1,\[1,\[1,.*\.\.\.$/)
  })
})

describe("listProblems", () => {
  it("joins the first problems, each cut short, and counts the rest", () => {
    expect(listProblems(["a: is required", "b: is required"])).toBe("a: is required; b: is required")
    const many = Array.from({ length: 200_000 }, (_, i) => `changes[${i}]: must be an object`)
    expect(listProblems(many)).toBe(`${many.slice(0, PROBLEMS_SHOWN).join("; ")}; and ${200_000 - PROBLEMS_SHOWN} more`)
    const long = listProblems([`x: ${"y".repeat(10_000)}`])
    expect(long).toHaveLength(PROBLEM_CHARACTERS)
    expect(long.endsWith("y...")).toBe(true)
  })
})
