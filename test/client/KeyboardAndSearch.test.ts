/**
 * The web client's keyboard and search parsing (client/src): which key presses are shortcuts (Alt+1…9, Alt+↑/↓,
 * Ctrl/⌘+K) and which are left to the page, the ring of buffers Alt+↑/↓ walks, the switcher's matching and order
 * (prefix before word before fuzzy, the channel prefix optional), and the search box's `in:` and `from:` filters
 * turned into search_messages' arguments.
 */
import { describe, expect, it } from "@effect/vitest"
import { keyAction, type KeyLike, matchScore, rankItems, stepIndex, type SwitchItem } from "../../client/src/Keyboard.js"
import { parseSearch, searchArguments } from "../../client/src/SearchFilters.js"

const key = (k: Partial<KeyLike>): KeyLike => ({ key: "", code: "", altKey: false, ctrlKey: false, metaKey: false, shiftKey: false, ...k })

describe("keyAction", () => {
  it("Alt+1…9 by the key's code (Option+1 on a Mac types ¡), Alt+↑/↓, Ctrl+K and ⌘K", () => {
    expect(keyAction(key({ altKey: true, code: "Digit1", key: "1" }))).toEqual({ kind: "nth", index: 0 })
    expect(keyAction(key({ altKey: true, code: "Digit9", key: "9" }))).toEqual({ kind: "nth", index: 8 })
    expect(keyAction(key({ altKey: true, code: "Digit3", key: "£" }))).toEqual({ kind: "nth", index: 2 })
    expect(keyAction(key({ altKey: true, key: "ArrowUp", code: "ArrowUp" }))).toEqual({ kind: "step", delta: -1 })
    expect(keyAction(key({ altKey: true, key: "ArrowDown", code: "ArrowDown" }))).toEqual({ kind: "step", delta: 1 })
    expect(keyAction(key({ ctrlKey: true, key: "k", code: "KeyK" }))).toEqual({ kind: "switcher" })
    expect(keyAction(key({ metaKey: true, key: "k", code: "KeyK" }))).toEqual({ kind: "switcher" })
  })

  it("leaves every other key to the page: plain digits and arrows, Alt+0, Ctrl+Alt, Shift, Ctrl+Shift+K", () => {
    for (
      const k of [
        key({ key: "1", code: "Digit1" }),
        key({ key: "ArrowUp", code: "ArrowUp" }),
        key({ altKey: true, code: "Digit0", key: "0" }),
        key({ altKey: true, ctrlKey: true, code: "Digit1", key: "1" }),
        key({ altKey: true, shiftKey: true, key: "ArrowUp", code: "ArrowUp" }),
        key({ ctrlKey: true, shiftKey: true, key: "K", code: "KeyK" }),
        key({ altKey: true, key: "k", code: "KeyK" }),
        key({ key: "k", code: "KeyK" })
      ]
    ) expect(keyAction(k)).toBeNull()
  })
})

describe("stepIndex", () => {
  it.each([
    [0, 3, 1, 1],
    [2, 3, 1, 0],
    [0, 3, -1, 2],
    [-1, 3, 1, 0],
    [-1, 3, -1, 2],
    [0, 0, 1, -1]
  ] as const)("from %i of %i by %i: %i", (current, count, delta, expected) => {
    expect(stepIndex(current, count, delta)).toBe(expected)
  })
})

const item = (label: string, extra: Partial<SwitchItem> = {}): SwitchItem => ({
  key: `1\n${label}`,
  networkId: 1,
  target: label,
  label,
  network: "libera",
  unread: 0,
  highlights: 0,
  ...extra
})

describe("the switcher's matching", () => {
  it("a prefix, with or without the channel's #, beats a word inside, which beats letters in order; others do not match", () => {
    const prefix = matchScore("bel", "#belay")!
    expect(matchScore("#bel", "#belay")).not.toBeNull()
    const inside = matchScore("lay", "#belay")!
    const fuzzy = matchScore("bly", "#belay")!
    expect(prefix).toBeGreaterThan(inside)
    expect(inside).toBeGreaterThan(fuzzy)
    expect(matchScore("yaleb", "#belay")).toBeNull()
    expect(matchScore("x", "#belay")).toBeNull()
    expect(matchScore("BEL", "#Belay")).toBe(prefix)
    expect(matchScore("", "#anything")).toBe(0)
  })

  it("ranks best first, then by highlights and unread, then by name; finds a buffer by its network's name; bounded", () => {
    const items = [
      item("#rust"),
      item("#belay-dev", { unread: 3 }),
      item("#belay", { highlights: 1, unread: 1 }),
      item("#ubelay"),
      item("bob", { network: "oftc" })
    ]
    expect(rankItems("belay", items).map((i) => i.label)).toEqual(["#belay", "#belay-dev", "#ubelay"])
    expect(rankItems("", items).map((i) => i.label)).toEqual(["#belay", "#belay-dev", "#rust", "#ubelay", "bob"])
    expect(rankItems("oftc", items).map((i) => i.label)).toEqual(["bob"])
    expect(rankItems("", items, 2)).toHaveLength(2)
    expect(rankItems("zzz", items)).toEqual([])
  })
})

describe("search filters", () => {
  it.each([
    ["hello world", { query: "hello world", target: null, nick: null }],
    ["in:#belay hello", { query: "hello", target: "#belay", nick: null }],
    ["hello from:carol in:#belay", { query: "hello", target: "#belay", nick: "carol" }],
    ["FROM:@carol IN:bob deploy", { query: "deploy", target: "bob", nick: "carol" }],
    ["\"release notes\" in:#a in:#b", { query: "\"release notes\"", target: "#b", nick: null }],
    ["in: hello from:", { query: "in: hello from:", target: null, nick: null }],
    ["\"in:#belay is text\" x", { query: "\"in:#belay is text\" x", target: null, nick: null }],
    ["in:\"#belay\" ok", { query: "ok", target: "#belay", nick: null }],
    ["  spaced   out  ", { query: "spaced out", target: null, nick: null }]
  ] as const)("%j", (input, expected) => {
    expect(parseSearch(input)).toEqual(expected)
  })

  it("turns into search_messages' arguments, or says what is missing", () => {
    expect(searchArguments("deploy in:#ops from:carol", 7, 100)).toEqual({
      ok: true,
      args: { query: "deploy", networkId: 7, target: "#ops", nick: "carol", limit: 100 }
    })
    expect(searchArguments("deploy", null, 50)).toEqual({ ok: true, args: { query: "deploy", limit: 50 } })
    expect(searchArguments("in:#ops from:carol", null, 50)).toEqual({ ok: false, error: "Add a word to search for besides the filters." })
    expect(searchArguments("   ", null, 50)).toEqual({ ok: false, error: "Type something to search for." })
  })
})
