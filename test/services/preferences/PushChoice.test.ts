/**
 * What the member chose decides Web Push (docs/contract.md "Preferences"): a table of messages and choices through
 * WebPush.notifiesAsChosen, and the client document's merge rules (schema/Preferences.ts), pure.
 */
import { describe, expect, it } from "@effect/vitest"
import type { HeardMessage } from "../../../src/services/events/MemberEvents.js"
import { notifiesAsChosen } from "../../../src/services/push/WebPush.js"
import type { MessageRecord } from "../../../src/schema/SocketFrame.js"
import { type BufferChoice, DEFAULT_CHOICE, DEFAULT_CLIENT_DOCUMENT, mergeClientDocument, readClientDocument } from "../../../src/schema/Preferences.js"

const heard = (record: Partial<MessageRecord>, bufferKind: "channel" | "dm" | "server" = "channel"): HeardMessage => ({
  accountId: 1,
  bufferKind,
  selfNick: "alice",
  storedHere: true,
  caseMapping: "rfc1459",
  record: {
    id: 1,
    networkId: 1,
    target: bufferKind === "dm" ? "bob" : "#belay",
    time: "2025-01-01T00:00:00.000Z",
    kind: "privmsg",
    nick: "bob",
    text: "hello",
    self: false,
    ...record
  } as MessageRecord
})

const choice = (patch: Partial<BufferChoice>): BufferChoice => ({ ...DEFAULT_CHOICE, ...patch })

describe("push as the member chose", () => {
  const plain = heard({})
  const mention = heard({ text: "alice: look" })
  const dm = heard({}, "dm")
  const own = heard({ self: true, text: "alice: me" })
  const notice = heard({ kind: "notice", text: "alice: notice" })
  const cases: ReadonlyArray<readonly [string, HeardMessage, BufferChoice, boolean]> = [
    ["default: a channel line", plain, DEFAULT_CHOICE, false],
    ["default: a highlight", mention, DEFAULT_CHOICE, true],
    ["default: a direct message", dm, DEFAULT_CHOICE, true],
    ["all: a channel line", plain, choice({ notify: "all" }), true],
    ["all: an action", heard({ kind: "action", text: "waves" }), choice({ notify: "all" }), true],
    ["all: our own line", own, choice({ notify: "all" }), false],
    ["all: a notice", notice, choice({ notify: "all" }), false],
    ["all: a server buffer line", heard({}, "server"), choice({ notify: "all" }), false],
    ["highlights: a channel line", plain, choice({ notify: "highlights" }), false],
    ["highlights: a direct message", dm, choice({ notify: "highlights" }), true],
    ["none: a highlight", mention, choice({ notify: "none" }), false],
    ["none: a direct message", dm, choice({ notify: "none" }), false],
    ["muted: a highlight", mention, choice({ muted: true }), false],
    ["muted and all: a channel line", plain, choice({ muted: true, notify: "all" }), false],
    ["muted: a direct message", dm, choice({ muted: true }), false],
    ["pinned and detached: a highlight", mention, choice({ pinned: true, detached: true }), true]
  ]
  for (const [name, message, c, expected] of cases) {
    it(name, () => expect(notifiesAsChosen(message, c)).toBe(expected))
  }
})

describe("the client document", () => {
  it("merges known and extra keys; null removes an extra key", () => {
    const once = mergeClientDocument(DEFAULT_CLIENT_DOCUMENT, { theme: "dark", fontSize: 14, compact: true })
    expect(once).toEqual({ ok: true, document: { theme: "dark", linkPreviews: true, fontSize: 14, compact: true } })
    if (!once.ok) return
    expect(mergeClientDocument(once.document, { compact: null, linkPreviews: false })).toEqual({
      ok: true,
      document: { theme: "dark", linkPreviews: false, fontSize: 14 }
    })
  })
  const refused: ReadonlyArray<readonly [string, unknown]> = [
    ["a theme not offered", { theme: "sepia" }],
    ["linkPreviews not a boolean", { linkPreviews: 1 }],
    ["null for a known key", { theme: null }],
    ["a key with a space", { "font size": 1 }],
    ["a key starting upper-case", { Theme: "dark" }],
    ["a key of 33 characters", { ["a".repeat(33)]: true }],
    ["a nested object", { extra: { a: 1 } }],
    ["an array value", { extra: [1] }],
    ["a string of 257 characters", { extra: "x".repeat(257) }],
    ["a non-finite number", { extra: Number.POSITIVE_INFINITY }],
    ["17 extra keys", Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 1]))],
    ["past 4096 bytes", Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, "é".repeat(200)]))],
    ["half a surrogate pair (jsonb refuses it)", { extra: "a\ud800b" }],
    ["a NUL (jsonb refuses it)", { extra: "a\u0000b" }],
    ["an array", ["theme"]],
    ["a string", "dark"],
    ["null", null]
  ]
  for (const [name, patch] of refused) {
    it(`refuses ${name}`, () => {
      const merged = mergeClientDocument(DEFAULT_CLIENT_DOCUMENT, patch)
      expect(merged.ok).toBe(false)
      if (!merged.ok) expect(merged.reason.length).toBeGreaterThan(0)
    })
  }
  it("reads back a stored document it cannot take whole as the default", () => {
    expect(readClientDocument({ theme: "sepia" })).toEqual(DEFAULT_CLIENT_DOCUMENT)
    expect(readClientDocument({ theme: "light", x: 1 })).toEqual({ theme: "light", linkPreviews: true, x: 1 })
  })
})
