import { describe, expect, it } from "@effect/vitest"
import { Cause } from "effect"
import {
  escapeTagValue,
  formatLine,
  formatPrefix,
  type IrcLine,
  type IrcLineInput,
  type IrcSource,
  parseLine,
  parsePrefix,
  unescapeTagValue,
  utf8ByteLength
} from "../../src/irc/IrcLine.js"

// Compares a parsed line through plain data so Map contents show up in diffs.
const plain = (line: IrcLine | undefined) =>
  line === undefined ? undefined : { ...line, tags: Object.fromEntries(line.tags) }

describe("parseLine", () => {
  it.each([
    { name: "command with trailing", raw: "PING :irc.example.net", command: "PING", params: ["irc.example.net"] },
    { name: "lower-case command is upper-cased", raw: "privmsg #c :hi", command: "PRIVMSG", params: ["#c", "hi"] },
    { name: "numeric command", raw: ":srv 001 belay :Welcome home", command: "001", params: ["belay", "Welcome home"] },
    { name: "middles only", raw: "MODE #c +ov alice bob", command: "MODE", params: ["#c", "+ov", "alice", "bob"] },
    { name: "empty trailing is kept", raw: ":n!u@h PRIVMSG #c :", command: "PRIVMSG", params: ["#c", ""] },
    { name: "trailing starting with a colon", raw: "PRIVMSG #c ::-) smile", command: "PRIVMSG", params: ["#c", ":-) smile"] },
    { name: "colon inside a middle", raw: "CMD a:b c", command: "CMD", params: ["a:b", "c"] },
    { name: "runs of spaces", raw: "PRIVMSG   #c    :hi  there ", command: "PRIVMSG", params: ["#c", "hi  there "] },
    { name: "trailing spaces after middles", raw: "JOIN #c   ", command: "JOIN", params: ["#c"] },
    { name: "CRLF stripped", raw: "PING :x\r\n", command: "PING", params: ["x"] },
    { name: "bare LF stripped", raw: "PING :x\n", command: "PING", params: ["x"] },
    { name: "no params", raw: "QUIT", command: "QUIT", params: [] },
    { name: "UTF-8 text", raw: "PRIVMSG #c :héllo 😀 中文", command: "PRIVMSG", params: ["#c", "héllo 😀 中文"] },
    { name: "more than 15 params kept", raw: `X ${"a ".repeat(16)}`, command: "X", params: Array(16).fill("a") }
  ])("$name", ({ raw, command, params }) => {
    const line = parseLine(raw)
    expect(line?.command).toBe(command)
    expect(line?.params).toEqual(params)
  })

  it.each([
    { name: "full prefix", raw: ":nick!user@host.example PRIVMSG #c :x", source: { nick: "nick", user: "user", host: "host.example" } },
    { name: "server prefix", raw: ":irc.example.net 005 b X :y", source: { nick: "irc.example.net" } },
    { name: "nick@host prefix", raw: ":nick@host CMD", source: { nick: "nick", host: "host" } },
    { name: "no prefix", raw: "CMD", source: undefined }
  ])("source: $name", ({ raw, source }) => {
    expect(parseLine(raw)?.source).toEqual(source)
  })

  it.each([
    {
      name: "server-time and msgid",
      raw: "@time=2024-01-01T00:00:00.000Z;msgid=abc :n!u@h PRIVMSG #c :x",
      tags: { time: "2024-01-01T00:00:00.000Z", msgid: "abc" }
    },
    { name: "every escape", raw: "@a=\\:\\s\\\\\\r\\n CMD", tags: { a: "; \\\r\n" } },
    { name: "valueless and empty-valued tags", raw: "@a;b= CMD", tags: { a: "", b: "" } },
    { name: "unknown escape stands for the char", raw: "@a=\\b\\x CMD", tags: { a: "bx" } },
    { name: "trailing lone backslash dropped", raw: "@a=xy\\ CMD", tags: { a: "xy" } },
    { name: "duplicate key: last wins", raw: "@a=1;b=2;a=3 CMD", tags: { b: "2", a: "3" } },
    { name: "client-only and vendor tags", raw: "@+draft/reply=12;example.com/x=y CMD", tags: { "+draft/reply": "12", "example.com/x": "y" } },
    { name: "= inside a value", raw: "@a=b=c CMD", tags: { a: "b=c" } },
    { name: "empty items skipped", raw: "@;a=1;; CMD", tags: { a: "1" } }
  ])("tags: $name", ({ raw, tags }) => {
    expect(plain(parseLine(raw))?.tags).toEqual(tags)
  })

  it("keeps tag order", () => {
    expect([...(parseLine("@z=1;a=2;m=3 CMD")?.tags.keys() ?? [])]).toEqual(["z", "a", "m"])
  })

  it.each([
    { name: "empty", raw: "" },
    { name: "only CRLF", raw: "\r\n" },
    { name: "only spaces", raw: "   " },
    { name: "prefix without command", raw: ":nick!u@h" },
    { name: "tags without command", raw: "@a=b" },
    { name: "CR inside", raw: "PRIVMSG #c :a\rb" },
    { name: "LF inside", raw: "PRIVMSG #c :a\nQUIT" },
    { name: "NUL inside", raw: "PRIVMSG #c :a\0b" }
  ])("refuses $name", ({ raw }) => {
    expect(parseLine(raw)).toBeUndefined()
  })
})

describe("parsePrefix / formatPrefix", () => {
  it.each<{ name: string; prefix: string; source: IrcSource }>([
    { name: "nick!user@host", prefix: "nick!~user@host.example", source: { nick: "nick", user: "~user", host: "host.example" } },
    { name: "nick@host", prefix: "nick@host", source: { nick: "nick", host: "host" } },
    { name: "nick!user", prefix: "nick!user", source: { nick: "nick", user: "user" } },
    { name: "bare nick", prefix: "nick", source: { nick: "nick" } },
    { name: "server name", prefix: "irc.example.net", source: { nick: "irc.example.net" } },
    { name: "IPv6 host", prefix: "n!u@2001:db8::1", source: { nick: "n", user: "u", host: "2001:db8::1" } }
  ])("$name", ({ prefix, source }) => {
    expect(parsePrefix(prefix)).toEqual(source)
    expect(formatPrefix(source)).toBe(prefix)
  })
})

describe("tag value escaping", () => {
  it.each([
    { name: "plain", value: "abc", escaped: "abc" },
    { name: "semicolon", value: "a;b", escaped: "a\\:b" },
    { name: "space", value: "a b", escaped: "a\\sb" },
    { name: "backslash", value: "a\\b", escaped: "a\\\\b" },
    { name: "CR and LF", value: "a\r\nb", escaped: "a\\r\\nb" },
    { name: "all at once", value: "; \\\r\n", escaped: "\\:\\s\\\\\\r\\n" },
    { name: "UTF-8 untouched", value: "é😀", escaped: "é😀" }
  ])("$name", ({ value, escaped }) => {
    expect(escapeTagValue(value)).toBe(escaped)
    expect(unescapeTagValue(escaped)).toBe(value)
  })
})

describe("formatLine", () => {
  it.each<{ name: string; input: IrcLineInput; wire: string }>([
    { name: "command only", input: { command: "PING" }, wire: "PING" },
    { name: "simple last param has no colon", input: { command: "JOIN", params: ["#c"] }, wire: "JOIN #c" },
    { name: "last param with space", input: { command: "PRIVMSG", params: ["#c", "hello world"] }, wire: "PRIVMSG #c :hello world" },
    { name: "empty last param", input: { command: "TOPIC", params: ["#c", ""] }, wire: "TOPIC #c :" },
    { name: "last param starting with colon", input: { command: "PRIVMSG", params: ["#c", ":)"] }, wire: "PRIVMSG #c ::)" },
    { name: "several middles", input: { command: "MODE", params: ["#c", "+ov", "a", "b"] }, wire: "MODE #c +ov a b" },
    { name: "source", input: { source: { nick: "n", user: "u", host: "h" }, command: "PRIVMSG", params: ["#c", "x"] }, wire: ":n!u@h PRIVMSG #c x" },
    {
      name: "tags from a Map, escaped, valueless",
      input: { tags: new Map([["a", "x y;z"], ["b", ""]]), command: "TAGMSG", params: ["#c"] },
      wire: "@a=x\\sy\\:z;b TAGMSG #c"
    },
    { name: "tags from a record", input: { tags: { "+draft/reply": "1" }, command: "TAGMSG", params: ["#c"] }, wire: "@+draft/reply=1 TAGMSG #c" },
    { name: "numeric", input: { command: "005", params: ["me", "MODES=4", "are supported"] }, wire: "005 me MODES=4 :are supported" }
  ])("$name", ({ input, wire }) => {
    expect(formatLine(input)).toBe(wire)
  })

  it.each<{ name: string; input: IrcLineInput }>([
    { name: "middle param with space", input: { command: "MODE", params: ["#c d", "+n"] } },
    { name: "empty middle param", input: { command: "MODE", params: ["", "+n"] } },
    { name: "middle param starting with colon", input: { command: "MODE", params: [":x", "+n"] } },
    { name: "CR in last param", input: { command: "PRIVMSG", params: ["#c", "a\rb"] } },
    { name: "LF in last param", input: { command: "PRIVMSG", params: ["#c", "a\nQUIT :bye"] } },
    { name: "NUL in last param", input: { command: "PRIVMSG", params: ["#c", "a\0"] } },
    { name: "NUL in tag value", input: { tags: { a: "\0" }, command: "TAGMSG", params: ["#c"] } },
    { name: "bad tag key", input: { tags: { "a b": "1" }, command: "TAGMSG", params: ["#c"] } },
    { name: "bad command", input: { command: "PRIV MSG" } },
    { name: "empty command", input: { command: "" } }
  ])("throws IllegalArgumentException for $name", ({ input }) => {
    expect(() => formatLine(input)).toThrow(Cause.IllegalArgumentException)
  })

  it.each([
    { name: "privmsg with tags and source", raw: "@time=2024-01-01T00:00:00.000Z;a=\\s :n!u@h PRIVMSG #c :hello there" },
    { name: "mode with middles", raw: ":srv MODE #c +ov a b" },
    { name: "empty trailing", raw: ":n!u@h TOPIC #c :" },
    { name: "colon trailing", raw: "PRIVMSG #c ::D" }
  ])("round-trips $name", ({ raw }) => {
    const line = parseLine(raw)
    expect(line).toBeDefined()
    if (line !== undefined) expect(formatLine(line)).toBe(raw)
  })
})

describe("utf8ByteLength", () => {
  it.each([
    { name: "empty", s: "", bytes: 0 },
    { name: "ASCII", s: "PRIVMSG", bytes: 7 },
    { name: "2-byte (é)", s: "é", bytes: 2 },
    { name: "3-byte (€)", s: "€", bytes: 3 },
    { name: "CJK", s: "中文", bytes: 6 },
    { name: "4-byte emoji (surrogate pair)", s: "😀", bytes: 4 },
    { name: "ZWJ family", s: "👨‍👩‍👧", bytes: 18 },
    { name: "lone high surrogate", s: "\ud83d", bytes: 3 },
    { name: "lone low surrogate", s: "\ude00x", bytes: 4 },
    { name: "mixed", s: "aé€😀", bytes: 10 }
  ])("$name", ({ s, bytes }) => {
    expect(utf8ByteLength(s)).toBe(bytes)
    expect(utf8ByteLength(s)).toBe(Buffer.byteLength(s, "utf8"))
  })
})
