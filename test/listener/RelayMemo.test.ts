/**
 * The pure parts of what the listener relays: an upstream line's client-only tags as relayed (within message-tags'
 * 4094 bytes, a tag dropped whole), and ClientTagMemo's multiline messages for the member's other clients (each
 * awaiting session takes one once, on its first stored line; forgotten when all have, or when it was not sent).
 */
import { describe, expect, it } from "@effect/vitest"
import { CLIENT_TAGS_MAX_BYTES, relayedClientTags, tagBytes } from "../../src/irc/TaggedMessages.js"
import type { StoredRow } from "../../src/services/history/MessageRow.js"
import { makeClientTagMemo, MEMO_MULTILINE, type SentMultiline } from "../../src/listener/ClientTagMemo.js"

describe("an upstream line's client tags", () => {
  const cases: ReadonlyArray<readonly [string, string | null, Readonly<Record<string, string>> | undefined]> = [
    ["no line", null, undefined],
    ["no tags", ":bob!b@h PRIVMSG #c :hi", undefined],
    ["server tags only, a + in a value", "@msgid=ab+cd;time=2024-01-01T00:00:00.000Z :bob!b@h PRIVMSG #c :hi", undefined],
    ["client tags, unescaped", "@msgid=1;+draft/reply=x;+a/b=c\\sd :bob!b@h PRIVMSG #c :hi", { "+draft/reply": "x", "+a/b": "c d" }],
    ["first tag a client tag", "@+typing=active :bob!b@h PRIVMSG #c :hi", { "+typing": "active" }],
    ["a bare + is no tag", "@+;msgid=1 :bob!b@h PRIVMSG #c :hi", undefined],
    [
      "one past the bound dropped whole, the rest kept",
      `@+a=1;+big=${"x".repeat(CLIENT_TAGS_MAX_BYTES)};+z=2 :bob!b@h PRIVMSG #c :hi`,
      { "+a": "1", "+z": "2" }
    ]
  ]
  for (const [name, raw, expected] of cases) {
    it(name, () => expect(relayedClientTags(raw)).toEqual(expected))
  }

  it("fills up to the bound exactly, never past it", () => {
    // Two tags whose data is exactly 4094 bytes together (`+a=…;+b=…`): both kept; one byte more, the second goes.
    const first = "x".repeat(2000)
    const exact = "y".repeat(CLIENT_TAGS_MAX_BYTES - 2000 - "+a=;+b=".length)
    const kept = relayedClientTags(`@+a=${first};+b=${exact} :bob!b@h PRIVMSG #c :hi`)!
    expect(tagBytes(new Map(Object.entries(kept)))).toBe(CLIENT_TAGS_MAX_BYTES)
    expect(Object.keys(relayedClientTags(`@+a=${first};+b=${exact}y :bob!b@h PRIVMSG #c :hi`)!)).toEqual(["+a"])
  })
})

describe("multiline messages for the member's other clients", () => {
  const message: SentMultiline = {
    target: "#c",
    targetFolded: "#c",
    command: "PRIVMSG",
    parts: [{ text: "", concat: false }, { text: "one", concat: false }, { text: "two", concat: false }],
    tags: new Map()
  }
  const row = (text: string, over: Partial<StoredRow> = {}): StoredRow => ({
    id: 1,
    networkId: 7,
    target: "#c",
    bufferKind: "channel",
    time: new Date(0),
    kind: "privmsg",
    nick: "me",
    text,
    numeric: null,
    self: true,
    encryption: "plain",
    ...over
  })

  it("each awaiting session takes it once, on its first non-blank line; then it is forgotten", () => {
    const memo = makeClientTagMemo()
    memo.rememberMultiline(7, message, [2, 3])
    expect(memo.takeMultiline(row("two"), "#c", 2)).toBeUndefined()
    expect(memo.takeMultiline(row("one", { self: false }), "#c", 2)).toBeUndefined()
    expect(memo.takeMultiline(row("one", { networkId: 8 }), "#c", 2)).toBeUndefined()
    expect(memo.takeMultiline(row("one"), "#c", 1)).toBeUndefined()
    expect(memo.takeMultiline(row("one"), "#c", 2)).toBe(message)
    expect(memo.takeMultiline(row("one"), "#c", 2)).toBeUndefined()
    expect(memo.takeMultiline(row("one"), "#c", 3)).toBe(message)
    memo.rememberMultiline(7, message, [4])
    memo.forgetMultiline(message)
    expect(memo.takeMultiline(row("one"), "#c", 4)).toBeUndefined()
  })

  it("no other session: nothing kept; past MEMO_MULTILINE the oldest goes", () => {
    const memo = makeClientTagMemo()
    memo.rememberMultiline(7, message, [])
    expect(memo.takeMultiline(row("one"), "#c", 2)).toBeUndefined()
    memo.rememberMultiline(7, message, [2])
    for (let i = 0; i < MEMO_MULTILINE; i++) memo.rememberMultiline(7, { ...message, targetFolded: "#other" }, [3])
    expect(memo.takeMultiline(row("one"), "#c", 2)).toBeUndefined()
  })
})
