/**
 * Which messages get a link preview card in the web client (client/src/Previews.ts; docs/contract.md "Link
 * previews"): a message or an action with a web link gets its first link previewed; a message shown as end-to-end
 * encrypted (decrypted or not), an event line or a notice gets none; and none at all while the member's synced
 * preference `linkPreviews` is off.
 */
import { describe, expect, it } from "@effect/vitest"
import { previewUrlOf as previewOf } from "../../client/src/Previews.js"
import type { MessageRecord } from "../../client/src/Protocol.js"

const message = (fields: Partial<MessageRecord>): MessageRecord => ({
  id: 1,
  networkId: 1,
  target: "#belay",
  time: "2026-12-06T12:00:00.000Z",
  kind: "privmsg",
  nick: "carol",
  text: "see https://example.org/a and http://example.net/b",
  self: false,
  ...fields
})

/** With previews on, as the member's preference has them by default. */
const previewUrlOf = (m: MessageRecord) => previewOf(m, true)

describe("previewUrlOf", () => {
  it("previews the first web link of a message or an action, www. links as https", () => {
    expect(previewUrlOf(message({}))).toBe("https://example.org/a")
    expect(previewUrlOf(message({ kind: "action", text: "likes www.example.com/x." }))).toBe("https://www.example.com/x")
    expect(previewUrlOf(message({ text: "\x02https://bold.example/\x02 formatted" }))).toBe("https://bold.example/")
  })

  it("gives no card to encrypted messages, events, notices or text without a link", () => {
    expect(previewUrlOf(message({ encrypted: true }))).toBeUndefined()
    expect(previewUrlOf(message({ encrypted: false }))).toBeUndefined()
    expect(previewUrlOf(message({ kind: "topic" }))).toBeUndefined()
    expect(previewUrlOf(message({ kind: "notice" }))).toBeUndefined()
    expect(previewUrlOf(message({ text: "no link at all" }))).toBeUndefined()
    expect(previewUrlOf(message({ text: `https://example.org/${"a".repeat(2100)}` }))).toBeUndefined()
  })

  it("gives none while the member's preference turns previews off", () => {
    expect(previewOf(message({}), false)).toBeUndefined()
    expect(previewOf(message({}), true)).toBe("https://example.org/a")
  })
})
