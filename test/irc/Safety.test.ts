import { describe, expect, it } from "@effect/vitest"
import { hasLineBreakingChars, isMiddleParam } from "../../src/irc/Safety.js"

describe("hasLineBreakingChars", () => {
  it.each([
    { name: "plain text", s: "hello world", result: false },
    { name: "empty", s: "", result: false },
    { name: "UTF-8 and tabs", s: "héllo\t😀", result: false },
    { name: "CTCP delimiter is fine", s: "\x01ACTION x\x01", result: false },
    { name: "CR", s: "a\rb", result: true },
    { name: "LF", s: "a\nb", result: true },
    { name: "CRLF injection", s: "hi\r\nQUIT :bye", result: true },
    { name: "NUL", s: "a\0b", result: true },
    { name: "trailing LF", s: "hello\n", result: true }
  ])("$name", ({ s, result }) => {
    expect(hasLineBreakingChars(s)).toBe(result)
  })
})

describe("isMiddleParam", () => {
  it.each([
    { name: "channel", s: "#belay", result: true },
    { name: "mask", s: "*!*@host.example", result: true },
    { name: "colon inside", s: "a:b", result: true },
    { name: "UTF-8", s: "#日本", result: true },
    { name: "empty", s: "", result: false },
    { name: "space", s: "a b", result: false },
    { name: "leading colon", s: ":x", result: false },
    { name: "CR", s: "a\r", result: false },
    { name: "LF", s: "a\n", result: false },
    { name: "NUL", s: "a\0", result: false }
  ])("$name", ({ s, result }) => {
    expect(isMiddleParam(s)).toBe(result)
  })
})
