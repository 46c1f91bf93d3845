import { describe, expect, it } from "@effect/vitest"
import { decodeAction } from "../../src/irc/Ctcp.js"
import { parseLine, utf8ByteLength } from "../../src/irc/IrcLine.js"
import {
  DEFAULT_PREFIX_ALLOWANCE,
  messageLines,
  prefixAllowance,
  type SplitOptions,
  splitText,
  textBudget
} from "../../src/irc/TextSplit.js"

// Options giving `budget` bytes of text per line to "#c" ("PRIVMSG #c :" is 12 bytes, CR-LF 2).
const budgetOf = (budget: number, extra: SplitOptions = {}): SplitOptions => ({
  prefixAllowance: 0,
  maxLineBytes: budget + 12 + 2,
  ...extra
})

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

describe("prefixAllowance", () => {
  it.each([
    { name: "nothing known", source: {}, bytes: 1 + 32 + 1 + 11 + 1 + 64 + 1 },
    { name: "all known", source: { nick: "belay", user: "~belay", host: "example.org" }, bytes: ":belay!~belay@example.org ".length },
    { name: "nick known", source: { nick: "belay" }, bytes: 1 + 5 + 1 + 11 + 1 + 64 + 1 },
    { name: "UTF-8 host counted in bytes", source: { nick: "n", user: "u", host: "日本" }, bytes: 1 + 1 + 1 + 1 + 1 + 6 + 1 }
  ])("$name", ({ source, bytes }) => {
    expect(prefixAllowance(source)).toBe(bytes)
  })

  it("defaults to the unknown-source allowance", () => {
    expect(DEFAULT_PREFIX_ALLOWANCE).toBe(111)
  })
})

describe("textBudget", () => {
  it.each<{ name: string; target: string; options: SplitOptions; budget: number }>([
    { name: "default PRIVMSG to #c", target: "#c", options: {}, budget: 512 - 2 - 111 - 12 },
    { name: "NOTICE is one byte shorter", target: "#c", options: { command: "NOTICE" }, budget: 512 - 2 - 111 - 11 },
    { name: "ACTION framing", target: "#c", options: { ctcp: "ACTION" }, budget: 512 - 2 - 111 - 12 - 9 },
    { name: "known prefix", target: "#c", options: { prefixAllowance: 26 }, budget: 512 - 2 - 26 - 12 },
    { name: "UTF-8 target", target: "#日本", options: { prefixAllowance: 0 }, budget: 512 - 2 - "PRIVMSG # :".length - 6 },
    { name: "never below one code point", target: "#c", options: { maxLineBytes: 10 }, budget: 4 }
  ])("$name", ({ target, options, budget }) => {
    expect(textBudget(target, options)).toBe(budget)
  })
})

describe("splitText", () => {
  it.each<{ name: string; text: string; budget: number; chunks: ReadonlyArray<string>; wordWindow?: number }>([
    { name: "empty text gives one empty chunk", text: "", budget: 10, chunks: [""] },
    { name: "short text is one chunk", text: "hello", budget: 10, chunks: ["hello"] },
    { name: "exactly the budget", text: "0123456789", budget: 10, chunks: ["0123456789"] },
    { name: "one byte over", text: "0123456789a", budget: 10, chunks: ["0123456789", "a"] },
    { name: "hard split without spaces", text: "abcdefghijklmnopqrstuvwxy", budget: 10, chunks: ["abcdefghij", "klmnopqrst", "uvwxy"] },
    { name: "cut at the last space", text: "hello brave new world", budget: 10, wordWindow: 5, chunks: ["hello", "brave new", "world"] },
    { name: "default window is a third of the budget", text: "hello brave new world", budget: 10, chunks: ["hello brav", "e new worl", "d"] },
    { name: "cut lands exactly on a space", text: "0123456789 abc", budget: 10, chunks: ["0123456789", "abc"] },
    { name: "space too far back: hard cut", text: "a bcdefghijklmnop", budget: 10, chunks: ["a bcdefghi", "jklmnop"] },
    { name: "wider window reaches the space", text: "a bcdefghijklmnop", budget: 10, wordWindow: 9, chunks: ["a", "bcdefghijk", "lmnop"] },
    { name: "leading space is not a cut point", text: " abcdefghijk", budget: 10, chunks: [" abcdefghi", "jk"] },
    { name: "2-byte chars never split", text: "é".repeat(7), budget: 5, chunks: ["éé", "éé", "éé", "é"] },
    { name: "CJK never split", text: "中文字符测试", budget: 7, chunks: ["中文", "字符", "测试"] },
    { name: "emoji (surrogate pairs) never split", text: "😀😀😀", budget: 6, chunks: ["😀", "😀", "😀"] },
    { name: "ASCII then emoji at the boundary", text: "abcd😀", budget: 7, chunks: ["abcd", "😀"] },
    { name: "combining accent stays with its letter", text: "ae\u0301e\u0301", budget: 4, chunks: ["ae\u0301", "e\u0301"] },
    { name: "ZWJ family stays whole", text: "x👨‍👩‍👧", budget: 18, chunks: ["x", "👨‍👩‍👧"] },
    { name: "flag (regional indicators) stays whole", text: "ab🇫🇷", budget: 9, chunks: ["ab", "🇫🇷"] },
    { name: "cluster bigger than a line is cut between code points", text: "👨‍👩‍👧", budget: 8, chunks: ["👨\u200d", "👩\u200d", "👧"] },
    { name: "words and UTF-8", text: "héllo wörld ça va", budget: 13, chunks: ["héllo wörld", "ça va"] }
  ])("$name", ({ text, budget, chunks, wordWindow }) => {
    const result = splitText("#c", text, budgetOf(budget, wordWindow === undefined ? {} : { wordWindow }))
    expect(result).toEqual(chunks)
    for (const chunk of result) {
      expect(utf8ByteLength(chunk)).toBeLessThanOrEqual(budget)
      expect(chunk).not.toMatch(LONE_SURROGATE)
    }
  })

  it.each([
    { name: "emoji", unit: "😀", bytes: 4 },
    { name: "CJK", unit: "中", bytes: 3 },
    { name: "2-byte", unit: "ß", bytes: 2 },
    { name: "ZWJ family", unit: "👨‍👩‍👧‍👦", bytes: 25 }
  ])("long $name text at the real 512-byte limit", ({ unit, bytes }) => {
    const text = unit.repeat(500)
    const budget = textBudget("#belay")
    const chunks = splitText("#belay", text)
    expect(chunks.join("")).toBe(text)
    for (const chunk of chunks) {
      const length = utf8ByteLength(chunk)
      expect(length).toBeLessThanOrEqual(budget)
      expect(length % bytes).toBe(0)
      expect(chunk).not.toMatch(LONE_SURROGATE)
    }
    // Fewest chunks for whole units.
    expect(chunks).toHaveLength(Math.ceil(500 / Math.floor(budget / bytes)))
  })

  it("words: only the cut spaces are dropped", () => {
    const words = Array.from({ length: 300 }, (_, i) => `word${i}`)
    const text = words.join(" ")
    const chunks = splitText("#belay", text)
    expect(chunks.length).toBeGreaterThan(1)
    expect(chunks.join(" ")).toBe(text)
    for (const chunk of chunks) {
      expect(chunk.startsWith(" ")).toBe(false)
      expect(chunk.endsWith(" ")).toBe(false)
    }
  })
})

describe("messageLines", () => {
  const relay = (line: string, allowance: number) => utf8ByteLength(line) + 2 + allowance

  it.each([
    { name: "privmsg", kind: "privmsg" as const, command: "PRIVMSG" },
    { name: "notice", kind: "notice" as const, command: "NOTICE" },
    { name: "action", kind: "action" as const, command: "PRIVMSG" }
  ])("$name: every relayed line fits 512 bytes and the text survives", ({ kind, command }) => {
    const text = Array.from({ length: 200 }, (_, i) => (i % 3 === 0 ? "😀" : i % 3 === 1 ? "中文" : `w${i}`)).join(" ")
    const lines = messageLines(kind, "#belay", text)
    expect(lines.length).toBeGreaterThan(1)
    const texts = lines.map((raw) => {
      expect(relay(raw, DEFAULT_PREFIX_ALLOWANCE)).toBeLessThanOrEqual(512)
      const line = parseLine(raw)
      expect(line?.command).toBe(command)
      expect(line?.params[0]).toBe("#belay")
      const body = line?.params[1] ?? ""
      return kind === "action" ? decodeAction(body) : body
    })
    expect(texts.join(" ")).toBe(text)
  })

  it.each([
    { name: "privmsg", kind: "privmsg" as const, line: "PRIVMSG #c :hello world" },
    { name: "single word has no colon", kind: "privmsg" as const, line: "PRIVMSG #c hello" },
    { name: "notice", kind: "notice" as const, line: "NOTICE #c :hello world" },
    { name: "action", kind: "action" as const, line: "PRIVMSG #c :\x01ACTION hello world\x01" },
    { name: "text starting with a colon", kind: "privmsg" as const, line: "PRIVMSG #c ::)" }
  ])("short $name", ({ kind, line }) => {
    const text = kind === "action" ? "hello world" : (parseLine(line)?.params[1] ?? "")
    expect(messageLines(kind, "#c", text)).toEqual([line])
  })

  it("relayed with a known prefix, a full line is exactly 512 bytes", () => {
    const source = { nick: "belay", user: "~belay", host: "example.org" }
    const allowance = prefixAllowance(source)
    // The space makes the first chunk a ":"-trailing param; a chunk without one is sent without the colon,
    // one byte under the budget.
    const text = `a ${"x".repeat(2000)}`
    const lines = messageLines("privmsg", "#c", text, { prefixAllowance: allowance })
    expect(relay(lines[0] ?? "", allowance)).toBe(512)
    expect(relay(lines[1] ?? "", allowance)).toBe(511)
    expect(lines.map((l) => parseLine(l)?.params[1]).join("")).toBe(text)
  })

  it("an ACTION line stays within the limit with its framing", () => {
    const lines = messageLines("action", "#c", "y".repeat(1000), { prefixAllowance: 0 })
    expect(utf8ByteLength(lines[0] ?? "") + 2).toBe(512)
    for (const line of lines) expect(decodeAction(parseLine(line)?.params[1] ?? "")).toMatch(/^y+$/)
  })
})
