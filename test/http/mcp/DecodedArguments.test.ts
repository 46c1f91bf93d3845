// DecodedArguments: the memo gives what ToolCatalog.decodeToolArguments gives, keeps only values that are exactly JSON
// and short, and stays within its bound.
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { argumentsKey, ENTRIES, KEY_CHARS, makeDecodedArguments } from "../../../src/http/mcp/DecodedArguments.js"
import { decodeToolArguments } from "../../../src/schema/ToolCatalog.js"

describe("DecodedArguments", () => {
  it("decodes as decodeToolArguments does, once and again", () => {
    const memo = makeDecodedArguments()
    const cases: ReadonlyArray<readonly [string, unknown]> = [
      ["defaults applied", { networkId: 1, target: "#a" }],
      ["limit given", { networkId: 1, target: "#a", limit: 7 }],
      ["limit too large", { networkId: 1, target: "#a", limit: 501 }],
      ["unknown key", { networkId: 1, target: "#a", nope: true }],
      ["absent", undefined],
      ["not an object", [1, 2]],
      ["an undefined member", { networkId: 1, target: "#a", before: undefined }],
      ["-0", { networkId: 1, target: "#a", before: -0 }]
    ]
    for (const [name, args] of cases) {
      const expected = decodeToolArguments("recent_messages", args)
      expect(memo.decode("recent_messages", args), `${name}, first`).toEqual(expected)
      expect(memo.decode("recent_messages", args), `${name}, again`).toEqual(expected)
    }
  })

  it("keeps a success under its tool and exact JSON text only", () => {
    const memo = makeDecodedArguments()
    const first = memo.decode("recent_messages", { networkId: 1, target: "#a" })
    const again = memo.decode("recent_messages", { networkId: 1, target: "#a" })
    expect(Either.isRight(first) && Either.isRight(again) && first.right === again.right).toBe(true)
    expect(memo.size()).toBe(1)
    // Same text, other tool: decoded for that tool.
    expect(Either.isLeft(memo.decode("list_networks", { networkId: 1, target: "#a" }))).toBe(true)
    // Failures are not kept.
    memo.decode("recent_messages", { networkId: 1, target: "#a", limit: 0 })
    expect(memo.size()).toBe(1)
  })

  it("finds a frozen value's decoding by the value (a request sent again), under its own tool only", () => {
    const memo = makeDecodedArguments()
    const args = Object.freeze({ networkId: 1, target: "#a" })
    const expected = decodeToolArguments("recent_messages", args)
    const first = memo.decode("recent_messages", args)
    const again = memo.decode("recent_messages", args)
    expect(first).toEqual(expected)
    expect(Either.isRight(first) && Either.isRight(again) && first.right === again.right).toBe(true)
    // The same frozen value for another tool is decoded for that tool.
    expect(memo.decode("list_networks", args)).toEqual(decodeToolArguments("list_networks", args))
    expect(memo.decode("recent_messages", args)).toEqual(expected)
    // A frozen value that does not decode is refused each time; a write tool's is decoded and not kept.
    const bad = Object.freeze({ networkId: 1, target: "#a", limit: 0 })
    for (let i = 0; i < 2; i++) expect(memo.decode("recent_messages", bad)).toEqual(decodeToolArguments("recent_messages", bad))
    const write = Object.freeze({ networkId: 1, target: "#a", text: "identify hunter2" })
    for (let i = 0; i < 2; i++) expect(memo.decode("send_message", write)).toEqual(decodeToolArguments("send_message", write))
    expect(memo.size()).toBe(1)
  })

  it("makes no key for what is not exactly JSON or is too long", () => {
    const table: ReadonlyArray<readonly [string, unknown, string | undefined]> = [
      ["object", { b: 1, a: "x" }, `{"b":1,"a":"x"}`],
      ["nested", { a: [true, null, { c: 1.5 }] }, `{"a":[true,null,{"c":1.5}]}`],
      ["absent", undefined, "absent"],
      ["undefined member", { a: undefined }, undefined],
      ["-0", { a: -0 }, undefined],
      ["NaN", { a: Number.NaN }, undefined],
      ["a Date", { a: new Date(0) }, undefined],
      ["a bigint", { a: 1n }, undefined],
      ["a long string", { a: "x".repeat(KEY_CHARS) }, undefined],
      ["a long array", { a: Array.from({ length: KEY_CHARS }, () => 1) }, undefined],
      ["deep", { a: [[[[[[[[[1]]]]]]]]] }, undefined]
    ]
    for (const [name, value, key] of table) expect(argumentsKey(value), name).toBe(key)
  })

  it("keeps nothing of a write tool's arguments: a message's text is not held past its call", () => {
    const memo = makeDecodedArguments()
    const args = { networkId: 1, target: "#a", text: "identify hunter2" }
    expect(Either.isRight(memo.decode("send_message", args))).toBe(true)
    expect(Either.isRight(memo.decode("send_message", args))).toBe(true)
    expect(memo.size()).toBe(0)
  })

  it("holds at most ENTRIES decoded inputs", () => {
    const memo = makeDecodedArguments()
    for (let i = 1; i <= ENTRIES + 10; i++) memo.decode("recent_messages", { networkId: i, target: "#a" })
    expect(memo.size()).toBe(ENTRIES)
  })
})
