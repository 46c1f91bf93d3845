import { describe, expect, it } from "@effect/vitest"
import {
  type Ctcp,
  ctcpOverhead,
  decodeAction,
  decodeCtcp,
  encodeAction,
  encodeCtcp
} from "../../src/irc/Ctcp.js"

describe("decodeCtcp", () => {
  it.each<{ name: string; text: string; ctcp: Ctcp | undefined }>([
    { name: "ACTION", text: "\x01ACTION waves\x01", ctcp: { command: "ACTION", params: "waves" } },
    { name: "lower-case command", text: "\x01action waves\x01", ctcp: { command: "ACTION", params: "waves" } },
    { name: "missing final delimiter", text: "\x01ACTION waves", ctcp: { command: "ACTION", params: "waves" } },
    { name: "no params", text: "\x01VERSION\x01", ctcp: { command: "VERSION", params: "" } },
    { name: "no params, no final delimiter", text: "\x01VERSION", ctcp: { command: "VERSION", params: "" } },
    { name: "empty ACTION", text: "\x01ACTION \x01", ctcp: { command: "ACTION", params: "" } },
    { name: "params with spaces", text: "\x01PING 123 456\x01", ctcp: { command: "PING", params: "123 456" } },
    { name: "spaces inside params are kept", text: "\x01ACTION  two  spaces \x01", ctcp: { command: "ACTION", params: " two  spaces " } },
    { name: "inner delimiter kept", text: "\x01ACTION a\x01b\x01", ctcp: { command: "ACTION", params: "a\x01b" } },
    { name: "UTF-8 params", text: "\x01ACTION 挥手 👋\x01", ctcp: { command: "ACTION", params: "挥手 👋" } },
    { name: "ordinary text", text: "hello", ctcp: undefined },
    { name: "delimiter not first", text: "hi \x01ACTION x\x01", ctcp: undefined },
    { name: "empty text", text: "", ctcp: undefined },
    { name: "lone delimiter", text: "\x01", ctcp: undefined },
    { name: "empty CTCP", text: "\x01\x01", ctcp: undefined },
    { name: "space where the command should be", text: "\x01 x\x01", ctcp: undefined }
  ])("$name", ({ text, ctcp }) => {
    expect(decodeCtcp(text)).toEqual(ctcp)
  })
})

describe("encodeCtcp", () => {
  it.each<{ name: string; command: string; params?: string; text: string }>([
    { name: "with params", command: "ACTION", params: "waves", text: "\x01ACTION waves\x01" },
    { name: "command upper-cased", command: "version", text: "\x01VERSION\x01" },
    { name: "empty params keep the space", command: "ACTION", params: "", text: "\x01ACTION \x01" },
    { name: "UTF-8", command: "ACTION", params: "😀", text: "\x01ACTION 😀\x01" }
  ])("$name", ({ command, params, text }) => {
    expect(encodeCtcp(command, params)).toBe(text)
  })
})

describe("actions", () => {
  it.each([
    { name: "simple", text: "waves" },
    { name: "empty", text: "" },
    { name: "spaces", text: " hi  there " },
    { name: "UTF-8", text: "salue 🙂 à tous" }
  ])("round-trips $name", ({ text }) => {
    expect(decodeAction(encodeAction(text))).toBe(text)
  })

  it.each([
    { name: "not CTCP", text: "hello", action: undefined },
    { name: "another CTCP", text: "\x01VERSION\x01", action: undefined },
    { name: "ACTION without final delimiter", text: "\x01ACTION dances", action: "dances" }
  ])("decodeAction: $name", ({ text, action }) => {
    expect(decodeAction(text)).toBe(action)
  })

  it.each([
    { name: "ACTION", command: "ACTION", overhead: 9 },
    { name: "PING", command: "PING", overhead: 7 }
  ])("ctcpOverhead: $name", ({ command, overhead }) => {
    expect(ctcpOverhead(command)).toBe(overhead)
    expect(Buffer.byteLength(encodeCtcp(command, "x"))).toBe(overhead + 1)
  })
})
