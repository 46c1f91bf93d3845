// JoinLines: packing channels and keys into the fewest JOIN lines (soju xirc.GenerateJoin), as named cases.
import { describe, expect, it } from "@effect/vitest"
import { joinLines } from "../../src/irc/JoinLines.js"

describe("joinLines", () => {
  const cases: ReadonlyArray<{
    readonly name: string
    readonly targets: ReadonlyArray<{ name: string; key: string | null }>
    readonly max?: number
    readonly want: ReadonlyArray<string>
  }> = [
    { name: "nothing to join", targets: [], want: [] },
    { name: "one channel", targets: [{ name: "#a", key: null }], want: ["JOIN #a"] },
    {
      name: "keyed channels first so keys pair by position (RFC 2812 §3.2.1)",
      targets: [{ name: "#open", key: null }, { name: "#k1", key: "one" }, { name: "#x", key: null }, { name: "#k2", key: "two" }],
      want: ["JOIN #k1,#k2,#open,#x one,two"]
    },
    {
      name: "unsendable names are skipped, unsendable keys dropped",
      targets: [{ name: "#bad name", key: null }, { name: "#a,b", key: null }, { name: "#ok", key: "sp ace" }, { name: ":x", key: null }],
      want: ["JOIN #ok"]
    },
    {
      name: "split at the line limit, CR-LF counted",
      targets: [{ name: "#aaaa", key: "k" }, { name: "#bbbb", key: null }, { name: "#cccc", key: null }],
      // "JOIN #aaaa,#bbbb k" is 18 bytes + CR-LF = 20
      max: 20,
      want: ["JOIN #aaaa,#bbbb k", "JOIN #cccc"]
    }
  ]
  it.each(cases)("$name", ({ targets, max, want }) => {
    expect(joinLines(targets, max)).toEqual(want)
  })

  it("every line of a large list fits in 512 bytes and every channel is joined once", () => {
    const targets = Array.from({ length: 300 }, (_, i) => ({ name: `#channel-${i}`, key: i % 7 === 0 ? `key${i}` : null }))
    const lines = joinLines(targets)
    for (const line of lines) expect(Buffer.byteLength(line) + 2).toBeLessThanOrEqual(512)
    const joined = lines.flatMap((l) => l.split(" ")[1]!.split(","))
    expect(new Set(joined).size).toBe(300)
    // Keys stay paired with their channels in every line.
    for (const line of lines) {
      const [, names, keys] = line.split(" ")
      const n = names!.split(",")
      for (const [i, key] of (keys?.split(",") ?? []).entries()) expect(key).toBe(`key${n[i]!.slice("#channel-".length)}`)
    }
  })
})
