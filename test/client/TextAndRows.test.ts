/**
 * The log's pure parts (client/src): links found in message text (and nothing else made a link), IRC formatting
 * removed, nick folding, highlights, and the rows — day separators, the "new messages" line, folded joins and parts.
 */
import { describe, expect, it } from "@effect/vitest"
import { bufferKey, fold } from "../../client/src/Casemap.js"
import { mentions } from "../../client/src/Highlight.js"
import { linkify, stripFormatting } from "../../client/src/Linkify.js"
import { rows } from "../../client/src/Rows.js"
import { mergeById } from "../../client/src/MergeById.js"

describe("linkify", () => {
  it.each([
    ["no links here", [{ kind: "text", text: "no links here" }]],
    ["see https://example.org/a?b=1.", [
      { kind: "text", text: "see " },
      { kind: "link", text: "https://example.org/a?b=1", href: "https://example.org/a?b=1" },
      { kind: "text", text: "." }
    ]],
    ["(https://en.wikipedia.org/wiki/IRC_(protocol))", [
      { kind: "text", text: "(" },
      { kind: "link", text: "https://en.wikipedia.org/wiki/IRC_(protocol)", href: "https://en.wikipedia.org/wiki/IRC_(protocol)" },
      { kind: "text", text: ")" }
    ]],
    ["www.example.com, then", [
      { kind: "link", text: "www.example.com", href: "https://www.example.com" },
      { kind: "text", text: ", then" }
    ]],
    ["<script>alert(1)</script> javascript:alert(1)", [{ kind: "text", text: "<script>alert(1)</script> javascript:alert(1)" }]]
  ] as const)("%j", (text, segments) => {
    expect(linkify(text)).toEqual(segments)
  })

  it("strips bold, colours and resets", () => {
    expect(stripFormatting("\x02bold\x02 \x0304,12red\x03 \x1ditalic\x0f")).toBe("bold red italic")
  })
})

describe("casemapping and highlights", () => {
  it("folds as RFC 1459 and keys buffers by the folded name", () => {
    expect(fold("Nick[Away]\\~")).toBe("nick{away}|^")
    expect(bufferKey(3, "#Belay")).toBe(bufferKey(3, "#belay"))
  })

  it.each([
    ["alice: hi", "alice", true],
    ["hi ALICE!", "alice", true],
    ["malice aforethought", "alice", false],
    ["alice_ is not alice?", "alice", true],
    ["alice_ only", "alice", false],
    ["anything", null, false]
  ] as const)("%j mentions %j: %s", (text, nick, expected) => {
    expect(mentions(text, nick)).toBe(expected)
  })
})

const at = (id: number, time: string, kind = "privmsg", nick = "n") => ({ id, time, kind, nick, text: `t${id}` })

describe("rows", () => {
  it("puts a day separator at each new local day, the unread line after the marker, and folds joins and parts", () => {
    const day1 = new Date(2025, 0, 1, 12).toISOString()
    const day2 = new Date(2025, 0, 2, 12).toISOString()
    const out = rows([
      at(1, day1),
      at(2, day1, "join"),
      at(3, day1, "part"),
      at(4, day2),
      at(5, day2, "quit"),
      at(6, day2)
    ], 4)
    expect(out.map((r) => r.kind === "fold" ? `fold:${r.summary}` : r.kind === "line" ? `line:${r.message.id}` : r.kind)).toEqual([
      "day",
      "line:1",
      "fold:1 join, 1 part",
      "day",
      "line:4",
      "unread",
      "line:5",
      "line:6"
    ])
  })

  it("shows no unread line when every message is new or none is", () => {
    const t = new Date(2025, 0, 1, 12).toISOString()
    expect(rows([at(5, t), at(6, t)], 4).some((r) => r.kind === "unread")).toBe(false)
    expect(rows([at(5, t), at(6, t)], 6).some((r) => r.kind === "unread")).toBe(false)
  })
})

describe("mergeById", () => {
  it("keeps one entry per id, sorted, whatever the order pages and live lines arrive in", () => {
    const m = (id: number) => ({ id })
    expect(mergeById([m(1), m(3)], [m(2), m(3), m(5)]).map((x) => x.id)).toEqual([1, 2, 3, 5])
    expect(mergeById([m(1), m(2)], [m(3)]).map((x) => x.id)).toEqual([1, 2, 3])
    expect(mergeById([], [m(4), m(2)]).map((x) => x.id)).toEqual([2, 4])
  })
})
