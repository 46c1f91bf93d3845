/**
 * LineRows alone: a published line stands after the newest conversation row appended before its own rows (its own
 * conversation rows, such as an INVITE's notice, not counted; the member's own sends before it counted), and names
 * the first and last of its channel-event rows when they carry no upstream msgid; a line that became no row, or
 * events with the upstream's msgid, name none.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeLineRows } from "../../src/actors/LineRows.js"
import type { MessageKind, NewMessage } from "../../src/services/history/MessageRow.js"

const message = (kind: MessageKind, raw: string | null, extra: Partial<NewMessage> = {}): NewMessage => ({
  networkId: 1,
  target: "#c",
  targetFolded: "#c",
  bufferKind: "channel",
  time: new Date(0),
  kind,
  nick: "bob",
  text: "",
  self: false,
  raw,
  ...extra
})

describe("LineRows", () => {
  it.effect("own sends count before the line; the line's own rows are named, its own notice is not counted", () =>
    Effect.sync(() => {
      const rows = makeLineRows()
      let seq = 0
      const append = (m: NewMessage) => rows.appended(m, ++seq)
      const privmsg = ":bob!b@h PRIVMSG #c :hi"
      append(message("privmsg", privmsg))
      expect(rows.published(1, privmsg)).toEqual({ after: 0 })
      // The member sent two pieces (stored as sent), then bob QUIT: stored in #a and #c.
      append(message("privmsg", "PRIVMSG #c :one", { self: true }))
      append(message("privmsg", "PRIVMSG #c :two", { self: true }))
      const quit = ":bob!b@h QUIT :bye"
      append(message("quit", quit, { target: "#a", targetFolded: "#a" }))
      rows.appended(message("privmsg", ":x PRIVMSG #z :elsewhere", { networkId: 2 }), ++seq)
      append(message("quit", quit))
      expect(rows.published(1, quit)).toEqual({ after: 3, rows: [4, 6] })
      // An INVITE is stored as a notice: the line stands after the rows before it, not after its own.
      const invite = ":bob!b@h INVITE alice #d"
      append(message("notice", invite, { target: ":server:1", bufferKind: "server" }))
      expect(rows.published(1, invite)).toEqual({ after: 3 })
      // Network 2's line: after its own conversation row 5.
      expect(rows.published(2, ":y!y@h JOIN #z")).toEqual({ after: 5 })
    }))

  it.effect("a line that became no row, and an event with the upstream's msgid, name no rows", () =>
    Effect.sync(() => {
      const rows = makeLineRows()
      expect(rows.published(1, ":irc 433 alice bob :in use")).toEqual({ after: 0 })
      const join = "@msgid=up :d!u@h JOIN #c"
      rows.appended(message("join", join, { msgid: "up" }), 1)
      expect(rows.published(1, join)).toEqual({ after: 0 })
      const topic = ":d!u@h TOPIC #c :new"
      rows.appended(message("topic", topic), 2)
      // A numeric stored in the server buffer is no channel event.
      rows.appended(message("numeric", ":irc 333 alice #c d 1", { target: ":server:1" }), 3)
      expect(rows.published(1, ":irc 333 alice #c d 1")).toEqual({ after: 0 })
      rows.appended(message("topic", topic), 4)
      expect(rows.published(1, topic)).toEqual({ after: 0, rows: [4, 4] })
    }))
})
