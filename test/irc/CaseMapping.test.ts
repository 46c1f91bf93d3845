import { describe, expect, it } from "@effect/vitest"
import {
  type CaseMapping,
  CaseMappedMap,
  equalsFolded,
  foldCase,
  parseCaseMapping
} from "../../src/irc/CaseMapping.js"

describe("parseCaseMapping", () => {
  it.each<{ name: string; value: string | undefined; mapping: CaseMapping }>([
    { name: "ascii", value: "ascii", mapping: "ascii" },
    { name: "rfc1459", value: "rfc1459", mapping: "rfc1459" },
    { name: "strict-rfc1459", value: "strict-rfc1459", mapping: "strict-rfc1459" },
    { name: "soju's rfc1459-strict spelling", value: "rfc1459-strict", mapping: "strict-rfc1459" },
    { name: "rfc7613", value: "rfc7613", mapping: "rfc7613" },
    { name: "upper-case value", value: "ASCII", mapping: "ascii" },
    { name: "unknown falls back to rfc1459", value: "klingon", mapping: "rfc1459" },
    { name: "absent falls back to rfc1459", value: undefined, mapping: "rfc1459" }
  ])("$name", ({ value, mapping }) => {
    expect(parseCaseMapping(value)).toBe(mapping)
  })
})

describe("foldCase", () => {
  it.each<{ name: string; mapping: CaseMapping; input: string; folded: string }>([
    { name: "ascii letters", mapping: "ascii", input: "BeLaY", folded: "belay" },
    { name: "ascii leaves brackets", mapping: "ascii", input: "A[]\\^", folded: "a[]\\^" },
    { name: "rfc1459 folds []\\^ to {}|~", mapping: "rfc1459", input: "Nick[A]\\^", folded: "nick{a}|~" },
    { name: "rfc1459 leaves {}|~ alone", mapping: "rfc1459", input: "{}|~", folded: "{}|~" },
    { name: "strict-rfc1459 folds []\\ but not ^", mapping: "strict-rfc1459", input: "[]\\^", folded: "{}|^" },
    { name: "ascii mappings leave non-ASCII alone", mapping: "rfc1459", input: "ÉCOLE", folded: "École" },
    { name: "rfc7613 lower-cases Unicode", mapping: "rfc7613", input: "ÉCOLE", folded: "école" },
    { name: "rfc7613 maps full-width to half-width", mapping: "rfc7613", input: "ＢＥＬＡＹ", folded: "belay" },
    { name: "rfc7613 composes (NFC)", mapping: "rfc7613", input: "E\u0301", folded: "é" },
    { name: "unchanged string is returned as is", mapping: "ascii", input: "#belay", folded: "#belay" },
    { name: "empty", mapping: "rfc1459", input: "", folded: "" }
  ])("$name", ({ mapping, input, folded }) => {
    expect(foldCase(mapping, input)).toBe(folded)
  })
})

describe("equalsFolded", () => {
  it.each<{ name: string; mapping: CaseMapping; a: string; b: string; equal: boolean }>([
    { name: "ascii: letters", mapping: "ascii", a: "Nick", b: "nICK", equal: true },
    { name: "ascii: [] vs {} differ", mapping: "ascii", a: "[a]", b: "{a}", equal: false },
    { name: "rfc1459: [] vs {}", mapping: "rfc1459", a: "[a]", b: "{A}", equal: true },
    { name: "rfc1459: \\ vs |", mapping: "rfc1459", a: "nick\\", b: "NICK|", equal: true },
    { name: "rfc1459: ^ vs ~", mapping: "rfc1459", a: "a^", b: "A~", equal: true },
    { name: "strict-rfc1459: []\\ vs {}|", mapping: "strict-rfc1459", a: "[]\\", b: "{}|", equal: true },
    { name: "strict-rfc1459: ^ vs ~ differ", mapping: "strict-rfc1459", a: "^", b: "~", equal: false },
    { name: "ascii: non-ASCII case differs", mapping: "ascii", a: "É", b: "é", equal: false },
    { name: "rfc7613: non-ASCII case", mapping: "rfc7613", a: "Ünïcödé", b: "ünÏcödé", equal: true },
    { name: "channel names", mapping: "rfc1459", a: "#Belay", b: "#belay", equal: true },
    { name: "different names", mapping: "rfc1459", a: "alice", b: "bob", equal: false }
  ])("$name", ({ mapping, a, b, equal }) => {
    expect(equalsFolded(mapping, a, b)).toBe(equal)
    expect(equalsFolded(mapping, b, a)).toBe(equal)
  })
})

describe("CaseMappedMap", () => {
  const base = CaseMappedMap.empty<number>("rfc1459").set("Alice", 1).set("Bob[away]", 2)

  it("empty: one shared instance per casemapping, which a set leaves empty", () => {
    const empty = CaseMappedMap.empty<number>("rfc1459")
    expect(CaseMappedMap.empty<string>("rfc1459")).toBe(empty)
    expect(CaseMappedMap.empty<number>("ascii")).not.toBe(empty)
    expect(CaseMappedMap.empty<number>("ascii").mapping).toBe("ascii")
    expect(empty.set("Alice", 1).size).toBe(1)
    expect(empty.size).toBe(0)
    expect(CaseMappedMap.empty<number>("rfc1459").has("alice")).toBe(false)
  })

  it.each([
    { name: "exact name", lookup: "Alice", value: 1 },
    { name: "other case", lookup: "aLICE", value: 1 },
    { name: "rfc1459 brackets", lookup: "bob{AWAY}", value: 2 },
    { name: "absent", lookup: "carol", value: undefined }
  ])("get: $name", ({ lookup, value }) => {
    expect(base.get(lookup)).toBe(value)
    expect(base.has(lookup)).toBe(value !== undefined)
  })

  it.each([
    {
      name: "set keeps one entry per folded name and the latest casing",
      run: () => base.set("ALICE", 10),
      entries: [["ALICE", 10], ["Bob[away]", 2]]
    },
    { name: "remove by other casing", run: () => base.remove("alice"), entries: [["Bob[away]", 2]] },
    { name: "remove absent is a no-op", run: () => base.remove("carol"), entries: [["Alice", 1], ["Bob[away]", 2]] },
    { name: "rename (NICK) moves the value", run: () => base.rename("alice", "Alicia"), entries: [["Alicia", 1], ["Bob[away]", 2]] },
    { name: "rename to a case variant", run: () => base.rename("Alice", "ALICE"), entries: [["ALICE", 1], ["Bob[away]", 2]] },
    { name: "rename absent is a no-op", run: () => base.rename("carol", "dave"), entries: [["Alice", 1], ["Bob[away]", 2]] },
    { name: "modify keeps casing", run: () => base.modify("ALICE", (n) => n + 1), entries: [["Alice", 2], ["Bob[away]", 2]] },
    { name: "modify absent is a no-op", run: () => base.modify("carol", (n) => n + 1), entries: [["Alice", 1], ["Bob[away]", 2]] }
  ])("$name", ({ run, entries }) => {
    const next = run()
    const sorted = [...next].sort(([a], [b]) => a.localeCompare(b))
    expect(sorted).toEqual(entries)
    expect(next.size).toBe(entries.length)
    // The original is untouched: maps are values.
    expect([...base].sort(([a], [b]) => a.localeCompare(b))).toEqual([["Alice", 1], ["Bob[away]", 2]])
  })

  it("remembers the original casing", () => {
    expect(base.originalName("bob{AWAY}")).toBe("Bob[away]")
    expect(base.originalName("carol")).toBeUndefined()
  })

  it("names and values", () => {
    expect([...base.names()].sort()).toEqual(["Alice", "Bob[away]"])
    expect([...base.values()].sort()).toEqual([1, 2])
  })

  it("withMapping: ascii → rfc1459 merges bracket variants", () => {
    const ascii = CaseMappedMap.fromEntries("ascii", [["[x]", 1], ["{x}", 2]])
    expect(ascii.size).toBe(2)
    const rfc = ascii.withMapping("rfc1459")
    expect(rfc.mapping).toBe("rfc1459")
    expect(rfc.size).toBe(1)
    expect(rfc.get("{X}")).toBeDefined()
  })

  it("withMapping: rfc1459 → ascii re-keys, letters still fold", () => {
    const ascii = base.withMapping("ascii")
    expect(ascii.get("ALICE")).toBe(1)
    expect(ascii.get("bob{away}")).toBeUndefined()
    expect(ascii.get("BOB[AWAY]")).toBe(2)
  })

  it("withMapping to the same mapping returns the same map", () => {
    expect(base.withMapping("rfc1459")).toBe(base)
  })
})
