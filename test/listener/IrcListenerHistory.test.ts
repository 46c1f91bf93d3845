/**
 * CHATHISTORY (IRCv3 draft/chathistory) against the real database, through the listener: messages with the server's
 * own `time` tags, three of them sharing one timestamp, in a channel and two DMs. AROUND (half the limit before the
 * reference, the rest from it), BETWEEN in both directions (the messages nearest the first reference), references by
 * msgid and by timestamp (equal timestamps keep the order they were stored in), TARGETS in both directions, and a
 * limit above 1000 clamped to 1000.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { CHATHISTORY_LIMIT } from "../../src/listener/ChatHistoryRequest.js"
import { MessageWriter } from "../../src/services/history/MessageWriter.js"
import type { IrcTestClient } from "../support/IrcTestClient.js"
import { batchEnd, PASSWORD, startListenerApp, texts, welcomedClient } from "../support/IrcListenerApp.js"
import { describeMode } from "../support/TestDatabase.js"

const at = (seconds: number) => `2024-01-01T10:00:${String(seconds).padStart(2, "0")}.000Z`

/** m1…m9 in #hist; m4, m5 and m6 share one timestamp. */
const SECONDS = [1, 2, 3, 5, 5, 5, 7, 8, 9]

const page = (c: IrcTestClient, command: string) =>
  Effect.gen(function*() {
    yield* c.send(`CHATHISTORY ${command}`)
    const lines = yield* c.until(batchEnd)
    // Only the batch's own lines (live messages may arrive meanwhile).
    const ref = lines.find((l) => l.command === "BATCH" && l.params[0]!.startsWith("+"))!.params[0]!.slice(1)
    return lines.filter((l) => l.tags.batch === ref)
  })

describe(`CHATHISTORY against ${describeMode}`, () => {
  it.scopedLive("AROUND, BETWEEN both ways, equal timestamps, TARGETS, and a limit above 1000", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp()
      const { upstream, port, networkId } = app
      const c = yield* welcomedClient(port, "alice/fake", PASSWORD)
      yield* upstream.send(
        ...SECONDS.map((s, i) => `@time=${at(s)} :bob!b@host PRIVMSG #hist :m${i + 1}`),
        `@time=${at(4)} :carol!c@host PRIVMSG alice :dm from carol`,
        `@time=${at(6)} :dave!d@host PRIVMSG alice :dm from dave`
      )
      yield* c.next((l) => l.command === "PRIVMSG" && l.params[1] === "dm from dave", "10 seconds")
      const writer = app.get(MessageWriter)
      yield* writer.flush

      const all = yield* page(c, "LATEST #hist * 100")
      expect(texts(all)).toEqual(SECONDS.map((_, i) => `m${i + 1}`))
      expect(all.filter((l) => l.command === "PRIVMSG").map((l) => l.tags.time)).toEqual(SECONDS.map(at))
      const id = (text: string) => all.find((l) => l.params[1] === text)!.tags.msgid!

      // AROUND: half the limit before the reference, the rest from it on.
      expect(texts(yield* page(c, `AROUND #hist msgid=${id("m5")} 4`))).toEqual(["m3", "m4", "m5", "m6"])
      expect(texts(yield* page(c, `AROUND #hist timestamp=${at(5)} 4`))).toEqual(["m2", "m3", "m4", "m5"])
      // BETWEEN, exclusive; the limit keeps the messages nearest the first reference, in either direction.
      expect(texts(yield* page(c, `BETWEEN #hist msgid=${id("m2")} msgid=${id("m8")} 100`))).toEqual(["m3", "m4", "m5", "m6", "m7"])
      expect(texts(yield* page(c, `BETWEEN #hist msgid=${id("m2")} msgid=${id("m8")} 2`))).toEqual(["m3", "m4"])
      expect(texts(yield* page(c, `BETWEEN #hist msgid=${id("m8")} msgid=${id("m2")} 2`))).toEqual(["m6", "m7"])
      expect(texts(yield* page(c, `BETWEEN #hist timestamp=${at(9)} timestamp=${at(2)} 3`))).toEqual(["m6", "m7", "m8"])
      expect(texts(yield* page(c, `BETWEEN #hist timestamp=${at(4)} timestamp=${at(6)} 100`))).toEqual(["m4", "m5", "m6"])
      // Equal timestamps: msgid references order them as stored; a timestamp reference takes or leaves them all.
      expect(texts(yield* page(c, `AFTER #hist msgid=${id("m4")} 2`))).toEqual(["m5", "m6"])
      expect(texts(yield* page(c, `BEFORE #hist msgid=${id("m6")} 2`))).toEqual(["m4", "m5"])
      expect(texts(yield* page(c, `AFTER #hist timestamp=${at(5)} 100`))).toEqual(["m7", "m8", "m9"])
      expect(texts(yield* page(c, `BEFORE #hist timestamp=${at(5)} 100`))).toEqual(["m1", "m2", "m3"])

      // TARGETS: the channels and DMs whose last message falls between the times, oldest first, either way round.
      const targets = (lines: ReadonlyArray<{ readonly command: string; readonly params: ReadonlyArray<string> }>) =>
        lines.filter((l) => l.command === "CHATHISTORY").map((l) => [l.params[1], l.params[2]])
      const expected = [["carol", at(4)], ["dave", at(6)], ["#hist", at(9)]]
      expect(targets(yield* page(c, `TARGETS timestamp=${at(0)} timestamp=${at(10)} 10`))).toEqual(expected)
      expect(targets(yield* page(c, `TARGETS timestamp=${at(10)} timestamp=${at(0)} 10`))).toEqual(expected)
      expect(targets(yield* page(c, `TARGETS timestamp=${at(0)} timestamp=${at(10)} 2`))).toEqual(expected.slice(0, 2))
      expect(targets(yield* page(c, `TARGETS timestamp=${at(5)} timestamp=${at(10)} 10`))).toEqual(expected.slice(1))
      // The DMs answer by the peer's name.
      expect(texts(yield* page(c, "LATEST carol * 10"))).toEqual(["dm from carol"])

      // A limit above 1000 is clamped: 1005 messages stored, 1000 (the newest) answered.
      const total = CHATHISTORY_LIMIT + 5
      for (let i = 0; i < total; i++) {
        yield* writer.append({
          networkId,
          target: "#big",
          targetFolded: "#big",
          bufferKind: "channel",
          time: new Date(Date.parse(at(0)) + i),
          kind: "privmsg",
          nick: "bob",
          text: `big ${i}`,
          self: false
        })
      }
      yield* writer.flush
      const big = texts(yield* page(c, "LATEST #big * 5000"))
      expect(big).toHaveLength(CHATHISTORY_LIMIT)
      expect(big[0]).toBe("big 5")
      expect(big.at(-1)).toBe(`big ${total - 1}`)
    }), 60_000)
})
