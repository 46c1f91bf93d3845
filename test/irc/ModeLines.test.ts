import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { parseLine, utf8ByteLength } from "../../src/irc/IrcLine.js"
import { applyISupport, defaultISupport, type ISupport, modeKind } from "../../src/irc/ISupport.js"
import {
  type InvalidModeChangeReason,
  type ModeChange,
  modeLines,
  packModeLines,
  validateModeChanges
} from "../../src/irc/ModeLines.js"

const isupportWith = (...tokens: ReadonlyArray<string>): ISupport =>
  applyISupport(defaultISupport, ["belay", "PREFIX=(ov)@+", "CHANMODES=eIbq,k,l,imnpst", ...tokens, "are supported"])

const modes1 = isupportWith("MODES=1")
const modes3 = isupportWith() // MODES absent: RFC 2812's 3
const modes4 = isupportWith("MODES=4")
const unlimited = isupportWith("MODES")

// "+o alice" / "-n" shorthand for readable tables.
const ch = (spec: string): ModeChange => {
  const [mode = "", param] = spec.split(" ")
  const sign = mode[0] === "-" ? "-" : "+"
  return param === undefined ? { sign, letter: mode.slice(1) } : { sign, letter: mode.slice(1), param }
}
const chs = (...specs: ReadonlyArray<string>) => specs.map(ch)

describe("validateModeChanges", () => {
  it.each<{ name: string; changes: ReadonlyArray<ModeChange>; reason: InvalidModeChangeReason; index: number; mentions: string }>([
    { name: "empty list", changes: [], reason: "no-changes", index: -1, mentions: "no mode changes" },
    { name: "unknown letter", changes: chs("+X"), reason: "unknown-letter", index: 0, mentions: '"X"' },
    { name: "unknown letter after a good one", changes: chs("+n", "+Z"), reason: "unknown-letter", index: 1, mentions: '"Z"' },
    { name: "+b without mask is a list query", changes: chs("+b"), reason: "list-query", index: 0, mentions: "get_mode_list" },
    { name: "+q without mask is a list query", changes: chs("+q"), reason: "list-query", index: 0, mentions: "get_mode_list" },
    { name: "-b without mask", changes: chs("-b"), reason: "missing-param", index: 0, mentions: "-b" },
    { name: "+o without nick", changes: chs("+o"), reason: "missing-param", index: 0, mentions: "+o" },
    { name: "-v without nick", changes: chs("-v"), reason: "missing-param", index: 0, mentions: "-v" },
    { name: "+k without key", changes: chs("+k"), reason: "missing-param", index: 0, mentions: "+k" },
    { name: "+l without limit", changes: chs("+l"), reason: "missing-param", index: 0, mentions: "+l" },
    { name: "-l with a param", changes: chs("-l 5"), reason: "unexpected-param", index: 0, mentions: "-l" },
    { name: "+n with a param", changes: chs("+n x"), reason: "unexpected-param", index: 0, mentions: "+n" },
    { name: "space in a mask", changes: [{ sign: "+", letter: "b", param: "a b" }], reason: "invalid-param", index: 0, mentions: "+b" },
    { name: "mask starting with colon", changes: chs("+b :x!*@*"), reason: "invalid-param", index: 0, mentions: "+b" },
    { name: "CRLF injection in a mask", changes: [{ sign: "+", letter: "b", param: "x\r\nQUIT" }], reason: "invalid-param", index: 0, mentions: "CR" },
    { name: "LF in a nick", changes: [{ sign: "+", letter: "o", param: "a\nb" }], reason: "invalid-param", index: 0, mentions: "+o" },
    { name: "NUL in a key", changes: [{ sign: "+", letter: "k", param: "a\0" }], reason: "invalid-param", index: 0, mentions: "+k" },
    { name: "empty param", changes: [{ sign: "+", letter: "o", param: "" }], reason: "invalid-param", index: 0, mentions: "+o" },
    { name: "non-numeric limit", changes: chs("+l ten"), reason: "invalid-param", index: 0, mentions: "positive integer" },
    { name: "zero limit", changes: chs("+l 0"), reason: "invalid-param", index: 0, mentions: "positive integer" },
    { name: "negative limit", changes: chs("+l -1"), reason: "invalid-param", index: 0, mentions: "positive integer" }
  ])("refuses $name", ({ changes, reason, index, mentions }) => {
    const result = validateModeChanges(changes, modes4)
    expect(Either.isLeft(result)).toBe(true)
    if (Either.isLeft(result)) {
      expect(result.left._tag).toBe("InvalidModeChange")
      expect(result.left.reason).toBe(reason)
      expect(result.left.index).toBe(index)
      expect(result.left.message).toContain(mentions)
    }
  })

  it.each<{ name: string; changes: ReadonlyArray<ModeChange>; storedKey?: string; resolved: ReadonlyArray<ModeChange> }>([
    { name: "-k without key and none stored sends *", changes: chs("-k"), resolved: chs("-k *") },
    { name: "-k without key uses the stored key", changes: chs("-k"), storedKey: "sekrit", resolved: chs("-k sekrit") },
    { name: "-k with an explicit key keeps it", changes: chs("-k given"), storedKey: "sekrit", resolved: chs("-k given") },
    { name: "-k with an unsendable stored key sends *", changes: chs("-k"), storedKey: "a b", resolved: chs("-k *") },
    { name: "+k key", changes: chs("+k hunter2"), resolved: chs("+k hunter2") },
    { name: "+l limit, -l without", changes: chs("+l 25", "-l"), resolved: chs("+l 25", "-l") },
    { name: "list modes both signs", changes: chs("+b *!*@bad", "-e *!*@good"), resolved: chs("+b *!*@bad", "-e *!*@good") },
    { name: "prefix modes both signs", changes: chs("+o alice", "-v bob"), resolved: chs("+o alice", "-v bob") },
    { name: "flags", changes: chs("+m", "-t"), resolved: chs("+m", "-t") },
    { name: "duplicates are passed through in order", changes: chs("+n", "-n", "+n"), resolved: chs("+n", "-n", "+n") },
    { name: "UTF-8 mask", changes: chs("+b *!*@日本.example"), resolved: chs("+b *!*@日本.example") }
  ])("accepts $name", ({ changes, storedKey, resolved }) => {
    const result = validateModeChanges(changes, modes4, storedKey)
    expect(result).toEqual(Either.right(resolved))
  })
})

describe("packModeLines", () => {
  it.each<{ name: string; isupport: ISupport; changes: ReadonlyArray<string>; lines: ReadonlyArray<string> }>([
    { name: "one flag", isupport: modes4, changes: ["+n"], lines: ["MODE #c +n"] },
    { name: "mixed signs in one line", isupport: modes4, changes: ["+o a", "-v b", "+n"], lines: ["MODE #c +o-v+n a b"] },
    { name: "sign written once per run", isupport: modes4, changes: ["-o a", "-o b", "+m", "+t"], lines: ["MODE #c -oo+mt a b"] },
    { name: "MODES=1: one param mode per line", isupport: modes1, changes: ["+o a", "+o b", "+o c"], lines: ["MODE #c +o a", "MODE #c +o b", "MODE #c +o c"] },
    { name: "MODES=1: flags ride along", isupport: modes1, changes: ["+o a", "+n", "+t", "+v b"], lines: ["MODE #c +ont a", "MODE #c +v b"] },
    { name: "MODES=3 (default): four ops take two lines", isupport: modes3, changes: ["+o a", "+o b", "+o c", "+o d"], lines: ["MODE #c +ooo a b c", "MODE #c +o d"] },
    {
      name: "MODES=3: flags do not count",
      isupport: modes3,
      changes: ["+o a", "+n", "+o b", "+t", "+o c", "+o d"],
      lines: ["MODE #c +onoto a b c", "MODE #c +o d"]
    },
    { name: "MODES=3: the sign restarts on a new line", isupport: modes3, changes: ["-b w", "-b x", "-b y", "-b z"], lines: ["MODE #c -bbb w x y", "MODE #c -b z"] },
    { name: "-l counts as a variable mode", isupport: modes1, changes: ["-l", "+o a"], lines: ["MODE #c -l", "MODE #c +o a"] },
    { name: "key and limit", isupport: modes4, changes: ["+k secret", "+l 10"], lines: ["MODE #c +kl secret 10"] },
    {
      name: "unlimited: everything in one line",
      isupport: unlimited,
      changes: Array.from({ length: 20 }, (_, i) => `+v n${i}`),
      lines: [`MODE #c +${"v".repeat(20)} ${Array.from({ length: 20 }, (_, i) => `n${i}`).join(" ")}`]
    },
    { name: "order is kept across lines", isupport: modes1, changes: ["-b x", "+b x"], lines: ["MODE #c -b x", "MODE #c +b x"] }
  ])("$name", ({ isupport, changes, lines }) => {
    expect(modeLines("#c", chs(...changes), isupport)).toEqual(Either.right(lines))
  })

  it("fills -k from the stored key", () => {
    expect(modeLines("#c", chs("-k", "-l"), modes4, { storedKey: "old" })).toEqual(Either.right(["MODE #c -kl old"]))
    expect(modeLines("#c", chs("-k"), modes4)).toEqual(Either.right(["MODE #c -k *"]))
  })

  // "MODE #c +b " is 11 bytes, CR-LF 2: a 499-byte mask makes exactly 512.
  it.each([
    { name: "a single change at exactly 512 bytes fits", masks: ["x".repeat(499)], lineCount: 1 },
    { name: "two changes at exactly 512 bytes share a line", masks: ["x".repeat(248), "y".repeat(249)], lineCount: 1 },
    { name: "one byte more splits them", masks: ["x".repeat(248), "y".repeat(250)], lineCount: 2 },
    { name: "multi-byte chars are counted in bytes", masks: ["é".repeat(124), "y".repeat(249)], lineCount: 1 },
    { name: "multi-byte chars: one byte more splits", masks: ["é".repeat(125), "y".repeat(248)], lineCount: 2 }
  ])("512-byte boundary: $name", ({ masks, lineCount }) => {
    const result = modeLines("#c", masks.map((m) => ({ sign: "+" as const, letter: "b", param: m })), unlimited)
    expect(Either.isRight(result)).toBe(true)
    if (Either.isRight(result)) {
      expect(result.right).toHaveLength(lineCount)
      for (const line of result.right) expect(utf8ByteLength(line) + 2).toBeLessThanOrEqual(512)
    }
  })

  it.each<{ name: string; channel: string; changes: ReadonlyArray<ModeChange>; maxLineBytes?: number; reason: InvalidModeChangeReason; index: number }>([
    { name: "a mask too long for any line", channel: "#c", changes: [{ sign: "+", letter: "b", param: "x".repeat(500) }], reason: "too-long", index: 0 },
    { name: "too long for a small line limit", channel: "#c", changes: chs("+o a", "+o verylongnick"), maxLineBytes: 20, reason: "too-long", index: 1 },
    { name: "not a channel", channel: "alice", changes: chs("+n"), reason: "invalid-channel", index: -1 },
    { name: "channel with a space", channel: "#a b", changes: chs("+n"), reason: "invalid-channel", index: -1 },
    { name: "channel with CRLF", channel: "#a\r\nQUIT", changes: chs("+n"), reason: "invalid-channel", index: -1 },
    { name: "validation errors come first", channel: "#c", changes: chs("+b"), reason: "list-query", index: 0 }
  ])("refuses $name", ({ channel, changes, maxLineBytes, reason, index }) => {
    const result = modeLines(channel, changes, unlimited, maxLineBytes === undefined ? {} : { maxLineBytes })
    expect(Either.isLeft(result)).toBe(true)
    if (Either.isLeft(result)) {
      expect(result.left.reason).toBe(reason)
      expect(result.left.index).toBe(index)
    }
  })

  it("honours a smaller maxLineBytes", () => {
    // "MODE #c +oo a b" = 15 bytes + CR-LF = 17.
    expect(modeLines("#c", chs("+o a", "+o b", "+o c"), unlimited, { maxLineBytes: 17 })).toEqual(
      Either.right(["MODE #c +oo a b", "MODE #c +o c"])
    )
  })

  it("packs validated changes directly", () => {
    const valid = validateModeChanges(chs("+o a", "+v b"), modes1)
    expect(Either.flatMap(valid, (v) => packModeLines("#c", v, modes1))).toEqual(Either.right(["MODE #c +o a", "MODE #c +v b"]))
  })

  it.each([
    { name: "MODES=1", isupport: modes1 },
    { name: "MODES=3", isupport: modes3 },
    { name: "MODES=4", isupport: modes4 },
    { name: "unlimited", isupport: unlimited }
  ])("packs 200 random changes within limits, in order, for $name", ({ isupport }) => {
    // A fixed pseudo-random sequence keeps the test deterministic.
    let seed = 42
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % n
    }
    const specs = ["+o", "-o", "+v", "-v", "+b", "-b", "+k", "-k", "+l", "-l", "+n", "-n", "+m", "-t", "+q", "-e"]
    const changes: Array<ModeChange> = Array.from({ length: 200 }, () => {
      const spec = specs[next(specs.length)] ?? "+n"
      const sign = spec[0] === "-" ? "-" : "+"
      const letter = spec.slice(1)
      const needs = ["o", "v", "b", "k", "q", "e"].includes(letter) || (letter === "l" && sign === "+")
      const param = letter === "l" ? String(1 + next(500)) : `p${"x".repeat(next(60))}${next(1000)}`
      return needs ? { sign, letter, param } : { sign, letter }
    })
    const result = modeLines("#belay", changes, isupport)
    expect(Either.isRight(result)).toBe(true)
    if (Either.isLeft(result)) return

    const limit = isupport.modes === "unlimited" ? Infinity : isupport.modes
    const replayed: Array<ModeChange> = []
    for (const raw of result.right) {
      expect(utf8ByteLength(raw) + 2).toBeLessThanOrEqual(512)
      const line = parseLine(raw)
      expect(line?.command).toBe("MODE")
      const [channel, modeString = "", ...params] = line?.params ?? []
      expect(channel).toBe("#belay")
      let sign: "+" | "-" = "+"
      let variable = 0
      for (const c of modeString) {
        if (c === "+" || c === "-") {
          sign = c
          continue
        }
        const kind = modeKind(isupport, c)
        if (kind !== "no-param") variable++
        const takes = kind === "list" || kind === "prefix" || kind === "always-param" || (kind === "set-param" && sign === "+")
        const param = takes ? params.shift() : undefined
        replayed.push(param === undefined ? { sign, letter: c } : { sign, letter: c, param })
      }
      expect(params).toEqual([])
      expect(variable).toBeLessThanOrEqual(limit)
    }
    // -k without a key was filled with "*".
    const expected = changes.map((c) => (c.sign === "-" && c.letter === "k" && c.param === undefined ? { ...c, param: "*" } : c))
    expect(replayed).toEqual(expected)
    if (isupport.modes !== "unlimited") {
      // Fewest lines: never fewer than the MODES limit forces.
      const variableTotal = changes.filter((c) => modeKind(isupport, c.letter) !== "no-param").length
      expect(result.right.length).toBeGreaterThanOrEqual(Math.ceil(variableTotal / isupport.modes))
    }
  })
})
