/**
 * The web client's pure parts of reactions, replies, typing and redaction (client/src; the shared design in
 * docs/contract.md "The member's browser surface"): reactions gathered under the msgid they name (each nick once per
 * reaction, the member's own marked, redacted ones taken back, bounded), never drawn as rows of their own; a reply's
 * quote found among the loaded lines or said to be not loaded; who is typing, dropped after 6 s without a refresh, at
 * once on `done`/`paused` or on the nick's message; the member's own notices (`active` at most every 3 s, `done` when
 * the box empties); a redaction shown on the one message it names.
 */
import { describe, expect, it } from "@effect/vitest"
import { withRedaction } from "../../client/src/Buffer.js"
import { OwnTyping } from "../../client/src/OwnTyping.js"
import type { MessageRecord } from "../../client/src/Protocol.js"
import { featuresOf } from "../../client/src/Protocol.js"
import { MAX_REACTION_CHARS, MAX_REACTIONS_SHOWN, reactedBy, reactionLabel, reactions, sameReactions } from "../../client/src/Reactions.js"
import { excerpt, msgidIndex, QUOTE_MAX_CHARS, quoteOf } from "../../client/src/Replies.js"
import { rows } from "../../client/src/Rows.js"
import { MAX_TYPING, Typing, type TypingClock, typingText } from "../../client/src/Typing.js"

let nextId = 1
const message = (fields: Partial<MessageRecord>): MessageRecord => ({
  id: nextId++,
  networkId: 1,
  target: "#belay",
  time: "2026-12-06T12:00:00.000Z",
  kind: "privmsg",
  nick: "carol",
  text: "hello",
  self: false,
  ...fields
})
const react = (to: string, nick: string, reaction: string, fields: Partial<MessageRecord> = {}) =>
  message({ kind: "react", nick, text: reaction, replyTo: to, ...fields })

describe("reactions", () => {
  it("gathers reactions under the msgid they name: one chip per reaction, first given first, each nick once", () => {
    const said = message({ msgid: "m1" })
    const other = message({ msgid: "m2", nick: "dave" })
    const all = [
      said,
      other,
      react("m1", "dave", "👍"),
      react("m1", "erin", "🎉"),
      react("m1", "Dave", "👍"), // the same nick again (folded): counted once
      react("m1", "alice", "👍", { self: true }),
      react("m2", "carol", "❤️")
    ]
    const byMsgid = reactions(all)
    expect(byMsgid.get("m1")).toEqual([
      { reaction: "👍", count: 2, nicks: ["dave", "alice"], mine: true },
      { reaction: "🎉", count: 1, nicks: ["erin"], mine: false }
    ])
    expect(byMsgid.get("m2")).toEqual([{ reaction: "❤️", count: 1, nicks: ["carol"], mine: false }])
    expect(byMsgid.has("m3")).toBe(false)
  })

  it("takes back a redacted reaction and ignores one without a target or text", () => {
    const all = [
      react("m1", "dave", "👍", { redacted: true, text: "" }),
      message({ kind: "react", nick: "erin", text: "👍" }),
      react("m1", "frank", "   ")
    ]
    expect(reactions(all).size).toBe(0)
  })

  it("draws at most MAX_REACTIONS_SHOWN distinct reactions on a message; a reaction's label is cut whole", () => {
    const all = Array.from({ length: MAX_REACTIONS_SHOWN + 5 }, (_, i) => react("m1", `n${i}`, `r${i}`))
    const groups = reactions(all).get("m1")!
    expect(groups).toHaveLength(MAX_REACTIONS_SHOWN)
    expect(groups.map((g) => g.reaction)).toEqual(Array.from({ length: MAX_REACTIONS_SHOWN }, (_, i) => `r${i}`))
    expect(reactionLabel("👍")).toBe("👍")
    const long = "😀".repeat(MAX_REACTION_CHARS + 3)
    expect(reactionLabel(long)).toBe(`${"😀".repeat(MAX_REACTION_CHARS)}…`)
  })

  it("says who reacted, the member as 'you', a long list cut", () => {
    const group = (nicks: ReadonlyArray<string>) => ({ reaction: "👍", count: nicks.length, nicks, mine: false })
    expect(reactedBy(group(["carol"]), "alice")).toBe("carol")
    expect(reactedBy(group(["carol", "Alice"]), "alice")).toBe("carol and you")
    expect(reactedBy(group(["carol", "dave", "erin"]), null)).toBe("carol, dave and erin")
    const many = Array.from({ length: 13 }, (_, i) => `n${i}`)
    expect(reactedBy(group(many), null)).toBe(`${many.slice(0, 10).join(", ")} and 3 more`)
  })

  it("compares reactions by what they draw, not by identity", () => {
    const a = reactions([react("m1", "dave", "👍")]).get("m1")
    const b = reactions([react("m1", "dave", "👍")]).get("m1")
    const c = reactions([react("m1", "dave", "👍"), react("m1", "erin", "👍")]).get("m1")
    expect(sameReactions(a, b)).toBe(true)
    expect(sameReactions(a, c)).toBe(false)
    expect(sameReactions(a, undefined)).toBe(false)
  })

  it("never draws a reaction as a row: the rows and the 'new messages' line skip them", () => {
    const said = message({ msgid: "m1" })
    const reaction = react("m1", "dave", "👍")
    const drawn = rows([said, reaction], said.id)
    expect(drawn.filter((r) => r.kind === "line").map((r) => r.kind === "line" && r.message.id)).toEqual([said.id])
    // Only a reaction past the read marker: nothing new to read, no "new messages" line.
    expect(drawn.some((r) => r.kind === "unread")).toBe(false)
  })
})

describe("hostile input stays bounded", () => {
  it("10,000 reactions of 1,000 kinds, huge and odd texts: at most MAX_REACTIONS_SHOWN chips, labels and quotes cut", () => {
    const odd = ["\u0000", "\u202e", "<img src=x onerror=alert(1)>", "a".repeat(100_000), "🏳️‍🌈".repeat(50)]
    const all: Array<MessageRecord> = [message({ msgid: "m1", text: "x".repeat(1_000_000) })]
    for (let i = 0; i < 10_000; i++) all.push(react(i % 7 === 0 ? "m1" : `m${i % 50}`, `nick${i}`, i % 5 === 0 ? odd[i % odd.length]! : `r${i % 1000}`))
    const byMsgid = reactions(all)
    for (const groups of byMsgid.values()) {
      expect(groups.length).toBeLessThanOrEqual(MAX_REACTIONS_SHOWN)
      for (const g of groups) expect([...reactionLabel(g.reaction)].length).toBeLessThanOrEqual(MAX_REACTION_CHARS + 1)
    }
    const quote = quoteOf(msgidIndex(all), "m1")
    expect(quote.found && [...quote.excerpt].length).toBe(QUOTE_MAX_CHARS + 1)
  })
})

describe("reply quotes", () => {
  it("finds the answered message among the loaded lines, its first line cut and its formatting removed", () => {
    const answered = message({ msgid: "m1", nick: "dave", text: "\x02first\x02   line\nsecond line" })
    const index = msgidIndex([answered, react("m1", "erin", "👍", { msgid: "m9" })])
    expect(quoteOf(index, "m1")).toEqual({ found: true, id: answered.id, nick: "dave", excerpt: "first line", redacted: false })
    // A reaction is not a message to answer.
    expect(quoteOf(index, "m9")).toEqual({ found: false })
    expect(quoteOf(index, "not-loaded")).toEqual({ found: false })
  })

  it("quotes a removed message as removed, without its text", () => {
    const removed = message({ msgid: "m1", text: "", redacted: true })
    expect(quoteOf(msgidIndex([removed]), "m1")).toEqual({ found: true, id: removed.id, nick: "carol", excerpt: "", redacted: true })
  })

  it("cuts a long excerpt at QUOTE_MAX_CHARS characters", () => {
    expect(excerpt("x".repeat(QUOTE_MAX_CHARS))).toBe("x".repeat(QUOTE_MAX_CHARS))
    expect(excerpt("y".repeat(QUOTE_MAX_CHARS + 1))).toBe(`${"y".repeat(QUOTE_MAX_CHARS)}…`)
    expect(excerpt("\n\n  ")).toBe("")
  })
})

/** A clock the test moves: timers fire when `advance` passes them. */
const fakeClock = () => {
  let now = 1_000_000
  const timers: Array<{ at: number; f: () => void }> = []
  const clock: TypingClock = { now: () => now, after: (ms, f) => void timers.push({ at: now + ms, f }) }
  const advance = (ms: number) => {
    now += ms
    for (;;) {
      timers.sort((a, b) => a.at - b.at)
      if (timers[0] === undefined || timers[0].at > now) return
      timers.shift()!.f()
    }
  }
  return { clock, advance }
}

describe("who is typing", () => {
  it("shows an active nick for 6 s, refreshed by each active; then drops it and wakes the view", () => {
    const { clock, advance } = fakeClock()
    let wakes = 0
    const typing = new Typing(() => wakes++, clock)
    typing.onFrame("1\n#belay", "carol", "active")
    expect(typing.who("1\n#belay")).toEqual(["carol"])
    advance(4_000)
    typing.onFrame("1\n#belay", "carol", "active")
    advance(4_000)
    expect(typing.who("1\n#belay")).toEqual(["carol"])
    advance(2_001)
    expect(typing.who("1\n#belay")).toEqual([])
    expect(wakes).toBeGreaterThan(0)
  })

  it("drops a nick at once on done, paused, or its message; others stay, first to start first", () => {
    const { clock } = fakeClock()
    const typing = new Typing(() => undefined, clock)
    typing.onFrame("1\n#belay", "carol", "active")
    typing.onFrame("1\n#belay", "dave", "active")
    typing.onFrame("1\n#other", "erin", "active")
    expect(typing.who("1\n#belay")).toEqual(["carol", "dave"])
    typing.onFrame("1\n#belay", "CAROL", "done")
    expect(typing.who("1\n#belay")).toEqual(["dave"])
    typing.onFrame("1\n#belay", "carol", "active")
    typing.onFrame("1\n#belay", "carol", "paused")
    typing.spoke("1\n#belay", "Dave")
    expect(typing.who("1\n#belay")).toEqual([])
    expect(typing.who("1\n#other")).toEqual(["erin"])
  })

  it("holds at most MAX_TYPING nicks, dropping the one closest to expiry", () => {
    const { clock, advance } = fakeClock()
    const typing = new Typing(() => undefined, clock)
    for (let i = 0; i <= MAX_TYPING; i++) {
      typing.onFrame("1\n#big", `n${i}`, "active")
      advance(1)
    }
    const who = typing.who("1\n#big")
    expect(who).toHaveLength(MAX_TYPING)
    expect(who[0]).toBe("n1")
  })

  it("says who is typing in a sentence", () => {
    expect(typingText([])).toBe("")
    expect(typingText(["carol"])).toBe("carol is typing…")
    expect(typingText(["carol", "dave"])).toBe("carol and dave are typing…")
    expect(typingText(["carol", "dave", "erin"])).toBe("carol, dave and erin are typing…")
    expect(typingText(["a", "b", "c", "d"])).toBe("a, b, c and 1 other are typing…")
    expect(typingText(["a", "b", "c", "d", "e"])).toBe("a, b, c and 2 others are typing…")
  })
})

describe("the member's own typing notices", () => {
  it("sends active at most every 3 s while typing, done once the box empties", () => {
    const own = new OwnTyping()
    expect(own.input("h", 0)).toBe("active")
    expect(own.input("he", 1_000)).toBeNull()
    expect(own.input("hel", 2_999)).toBeNull()
    expect(own.input("hell", 3_000)).toBe("active")
    expect(own.input("", 3_500)).toBe("done")
    expect(own.input("", 3_600)).toBeNull()
    expect(own.stop()).toBeNull()
  })

  it("says done when the text is sent or the buffer left, and counts a command as no typing, but /me as typing", () => {
    const own = new OwnTyping()
    expect(own.input("/join #x", 0)).toBeNull()
    expect(own.input("/me waves", 10)).toBe("active")
    expect(own.input("/join #x", 20)).toBe("done")
    expect(own.input("//slash", 30)).toBe("active")
    expect(own.stop()).toBe("done")
    expect(own.stop()).toBeNull()
  })
})

describe("redaction and features", () => {
  it("shows the one message named as removed, and leaves a list without it unchanged", () => {
    const a = message({ msgid: "m1", text: "oops" })
    const b = message({ msgid: "m2", text: "fine" })
    const list = [a, b]
    const after = withRedaction(list, a.id)
    expect(after[0]).toEqual({ ...a, text: "", redacted: true })
    expect(after[1]).toBe(b)
    expect(list[0]!.text).toBe("oops")
    expect(withRedaction(list, 999_999)).toBe(list)
    expect(withRedaction(after, a.id)).toBe(after)
  })

  it("reads a network's features, offering nothing where the server says nothing", () => {
    const view = { id: 1, name: "n", state: "connected" as const, nick: "alice" }
    expect(featuresOf(view)).toEqual({ tags: false, redaction: false, multiline: false })
    expect(featuresOf({ ...view, features: { tags: true, redaction: false, multiline: true } })).toEqual({ tags: true, redaction: false, multiline: true })
    expect(featuresOf({ ...view, features: { tags: "yes" } })).toEqual({ tags: false, redaction: false, multiline: false })
  })
})
