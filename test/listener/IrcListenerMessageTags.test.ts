/**
 * Message ids, replies, reactions and redaction end to end (docs/contract.md "Message ids, replies, reactions and
 * redaction"): the scripted upstream sends messages with its own msgids, a reply, a reaction and then a REDACT; a
 * client with message-tags and draft/message-redaction and one with neither are attached through the listener, the
 * member's tabs (MemberEvents) and an agent (MCP recent_messages and search_messages) look on. Real database.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { MemberEvents } from "../../src/services/events/MemberEvents.js"
import { MessageWriter } from "../../src/services/history/MessageWriter.js"
import { Networks } from "../../src/services/networks/Networks.js"
import type { ClientLine, IrcTestClient } from "../support/IrcTestClient.js"
import { batchEnd, CAPS, PASSWORD, startListenerApp, welcomedClient } from "../support/IrcListenerApp.js"
import { describeMode } from "../support/TestDatabase.js"

const at = (seconds: number) => `2024-01-01T10:00:${String(seconds).padStart(2, "0")}.000Z`

const page = (c: IrcTestClient, command: string) =>
  Effect.gen(function*() {
    yield* c.send(`CHATHISTORY ${command}`)
    const lines = yield* c.until(batchEnd)
    const ref = lines.find((l) => l.command === "BATCH" && l.params[0]!.startsWith("+"))!.params[0]!.slice(1)
    return lines.filter((l) => l.tags.batch === ref && l.command !== "BATCH")
  })

/** A line as [command, msgid, reply, react, last param]. */
const shape = (l: ClientLine) =>
  [l.command, l.tags.msgid, l.tags["+draft/reply"], l.tags["+draft/react"], l.params.at(-1)] as const

type Payload = Record<string, unknown>

describe(`message ids, replies, reactions and redaction on ${describeMode}`, () => {
  it.scopedLive("stored with the upstream's msgid, shown in CHATHISTORY and to agents, redacted everywhere", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp({ upstreamCaps: ["message-tags", "server-time", "draft/message-redaction"] })
      const { upstream, port, networkId, httpUrl, readToken } = app
      const tagged = yield* welcomedClient(port, "alice/fake", PASSWORD, `${CAPS} draft/message-redaction`)
      const plain = yield* welcomedClient(port, "alice/fake", PASSWORD, "server-time batch draft/chathistory")

      const mcp = (name: string, args: Payload) =>
        Effect.promise(async () => {
          const response = await fetch(`${httpUrl}/mcp`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${readToken}` },
            body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } })
          })
          const body = await response.json() as { result: { content: Array<{ text: string }> } }
          return JSON.parse(body.result.content[0]!.text) as Payload
        })
      const recent = Effect.map(mcp("recent_messages", { networkId, target: "#belay" }), (p) => p.messages as Array<Payload>)

      yield* upstream.send(
        `@msgid=up-1;time=${at(1)} :bob!b@host PRIVMSG #belay :hello there`,
        `@msgid=up-2;time=${at(2)};+draft/reply=up-1 :carol!c@host PRIVMSG #belay :hi bob`,
        `@msgid=up-3;time=${at(3)};+draft/react=👍;+draft/reply=up-1 :carol!c@host TAGMSG #belay`,
        `@time=${at(4)} :bob!b@host PRIVMSG #belay :no id`
      )
      const live = (yield* tagged.until((l) => l.params.at(-1) === "no id", "10 seconds")).filter((l) => l.command === "PRIVMSG" || l.command === "TAGMSG")
      expect(live.map(shape).slice(0, 3)).toEqual([
        ["PRIVMSG", "up-1", undefined, undefined, "hello there"],
        ["PRIVMSG", "up-2", "up-1", undefined, "hi bob"],
        ["TAGMSG", "up-3", "up-1", "👍", "#belay"]
      ])
      // Without message-tags: the messages, no tags, no reaction.
      const plainLive = yield* plain.until((l) => l.params.at(-1) === "no id", "10 seconds")
      expect(plainLive.filter((l) => l.command === "PRIVMSG" || l.command === "TAGMSG").map((l) => [l.command, l.params[1], l.tags.msgid]))
        .toEqual([["PRIVMSG", "hello there", undefined], ["PRIVMSG", "hi bob", undefined], ["PRIVMSG", "no id", undefined]])
      yield* app.get(MessageWriter).flush

      // History: the upstream's msgids, the reply tag, the reaction as TAGMSG in its place; Belay's id for the last.
      const all = yield* page(tagged, "LATEST #belay * 10")
      expect(all.map(shape).slice(0, 3)).toEqual([
        ["PRIVMSG", "up-1", undefined, undefined, "hello there"],
        ["PRIVMSG", "up-2", "up-1", undefined, "hi bob"],
        ["TAGMSG", "up-3", "up-1", "👍", "#belay"]
      ])
      const ownId = all[3]!.tags.msgid!
      expect(ownId).toMatch(/^[1-9][0-9]*$/)
      expect((yield* page(plain, "LATEST #belay * 10")).map((l) => [l.command, l.params[1]])).toEqual([
        ["PRIVMSG", "hello there"],
        ["PRIVMSG", "hi bob"],
        ["PRIVMSG", "no id"]
      ])
      // References by the upstream's msgid, by Belay's, and one that names nothing.
      expect((yield* page(tagged, "AFTER #belay msgid=up-1 10")).map((l) => l.tags.msgid)).toEqual(["up-2", "up-3", ownId])
      expect((yield* page(tagged, "BEFORE #belay msgid=up-2 10")).map((l) => l.tags.msgid)).toEqual(["up-1"])
      expect((yield* page(tagged, `BEFORE #belay msgid=${ownId} 1`)).map((l) => l.tags.msgid)).toEqual(["up-3"])
      expect((yield* page(tagged, `BETWEEN #belay msgid=up-1 msgid=${ownId} 10`)).map((l) => l.tags.msgid)).toEqual(["up-2", "up-3"])
      expect(yield* page(tagged, "AFTER #belay msgid=nothing-here 10")).toEqual([])

      // The agent's view (this read also keeps the newest page in memory, which the redaction must then fix).
      const before = (yield* recent).filter((m) => m.kind === "privmsg" || m.kind === "react")
      expect(before.map((m) => [m.kind, m.nick, m.text, m.msgid, m.replyTo, m.redacted])).toEqual([
        ["privmsg", "bob", "hello there", "up-1", undefined, undefined],
        ["privmsg", "carol", "hi bob", "up-2", "up-1", undefined],
        ["react", "carol", "👍", "up-3", "up-1", undefined],
        ["privmsg", "bob", "no id", undefined, undefined, undefined]
      ])
      const helloId = before[0]!.id as number
      expect(((yield* mcp("search_messages", { query: "hello" })).messages as Array<Payload>).map((m) => m.id)).toEqual([helloId])

      // The redaction: the tabs hear it, the client that asked for it gets REDACT live, the other does not.
      const network = Option.getOrThrow(yield* app.get(Networks).config(networkId))
      const tabs = yield* app.get(MemberEvents).subscribe(network.accountId)
      yield* upstream.send(`@msgid=up-5;time=${at(5)} :bob!b@host REDACT #belay up-1 :oops`, `@time=${at(6)} :bob!b@host PRIVMSG #belay :after`)
      const redactLive = (yield* tagged.until((l) => l.params.at(-1) === "after", "10 seconds")).filter((l) => l.command === "REDACT")
      expect(redactLive.map((l) => l.params)).toEqual([["#belay", "up-1", "oops"]])
      expect((yield* plain.until((l) => l.params.at(-1) === "after", "10 seconds")).some((l) => l.command === "REDACT")).toBe(false)
      const frames: Array<Payload> = []
      while (!frames.some((f) => f.type === "redaction")) {
        for (const o of yield* tabs.take(100)) frames.push(JSON.parse(o.frame) as Payload)
      }
      expect(frames.find((f) => f.type === "redaction")).toEqual({ type: "redaction", networkId, target: "#belay", messageId: helloId })

      // Stored: the row kept, its text and raw line gone; search finds nothing; the agent sees it redacted (from the
      // page kept in memory); CHATHISTORY leaves it out.
      const sql = app.get(SqlClient.SqlClient)
      const [row] = yield* sql<{ text: string; raw: string | null; redacted: boolean }>`SELECT text, raw, redacted FROM messages WHERE id = ${helloId}`
      expect(row).toEqual({ text: "", raw: null, redacted: true })
      expect((yield* mcp("search_messages", { query: "hello" })).messages).toEqual([])
      const after = (yield* recent).find((m) => m.id === helloId)
      expect(after).toMatchObject({ kind: "privmsg", nick: "bob", text: "", msgid: "up-1", redacted: true })
      expect((yield* page(tagged, "LATEST #belay * 10")).map((l) => l.tags.msgid).slice(0, 2)).toEqual(["up-2", "up-3"])
    }), 60_000)
})
