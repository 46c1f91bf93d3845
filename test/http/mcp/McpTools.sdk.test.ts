/**
 * Every tool through the official MCP TypeScript client (which validates every
 * structuredContent against the tool's published outputSchema and throws on a
 * mismatch), against the real app in-process with scripted network actors: each
 * tool's success shape and its failure shapes, scopes, and the CR/LF/NUL rule with
 * nothing sent.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { toIsoTime } from "../../../src/schema/Ids.js"
import { Refused, Timeout } from "../../../src/schema/ToolErrors.js"
import { MessageWriter } from "../../../src/services/history/MessageWriter.js"
import { E2eKeys } from "../../../src/services/networks/E2eKeys.js"
import { seedAccount, startTestApp } from "../../support/TestApp.js"
import { describeMode } from "../../support/TestDatabase.js"

const connect = (url: string, token: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "belay-test", version: "1.0.0" })
      const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } }
      })
      await client.connect(transport)
      await client.listTools() // caches outputSchemas so callTool validates results
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

type Payload = Record<string, unknown>

describe(`MCP tools through the SDK client on ${describeMode}`, () => {
  it.scoped("every tool answers its success and failure shapes", () =>
    Effect.gen(function*() {
      const app = yield* startTestApp()
      const { networkId, accountId, token } = yield* seedAccount(app)
      const client = yield* connect(app.url, token)
      const call = (name: string, args: Record<string, unknown> = {}) =>
        Effect.promise(async () => {
          const r = await client.callTool({ name, arguments: args })
          return { isError: r.isError === true, payload: r.structuredContent as Payload }
        })

      const tools = yield* Effect.promise(() => client.listTools())
      expect(tools.tools).toHaveLength(23)
      for (const tool of tools.tools) {
        expect(tool.inputSchema.type).toBe("object")
        expect(tool.outputSchema).toBeDefined()
      }

      // Offline: every write that needs the socket answers not-connected, and nothing is sent.
      const offline = yield* call("send_message", { networkId, target: "#belay", text: "hello" })
      expect(offline).toEqual({ isError: true, payload: expect.objectContaining({ ok: false, error: "not-connected" }) })
      expect((yield* call("list_networks")).payload).toEqual({
        networks: [{
          id: networkId, name: "testnet", host: "irc.test", port: 6667, tls: false, state: "offline", nick: null,
          lastError: null, nextRetryAt: null
        }]
      })
      const unknown = yield* call("recent_messages", { networkId: networkId + 999, target: "#belay" })
      expect(unknown.payload).toMatchObject({ ok: false, error: "unknown-network" })
      const tooMany = yield* call("recent_messages", { networkId, target: "#belay", limit: 501 })
      expect(tooMany.payload).toMatchObject({ ok: false, error: "invalid-arguments" })
      expect(String(tooMany.payload.message)).toContain("limit")

      // Connected: the fake actors accept commands.
      app.fake.network(networkId).status = { state: "connected", nick: "alice" }
      // list_networks shows the new status (its records are kept per status, not past a change).
      expect((yield* call("list_networks")).payload).toMatchObject({ networks: [{ id: networkId, state: "connected", nick: "alice" }] })
      for (const [name, args] of [
        ["send_message", { networkId, target: "#belay", text: "hello" }],
        ["send_action", { networkId, target: "#belay", text: "waves" }],
        ["send_notice", { networkId, target: "bob", text: "psst" }],
        ["join_channel", { networkId, channel: "#belay", key: "sekrit" }],
        ["part_channel", { networkId, channel: "#old", reason: "bye" }],
        ["set_topic", { networkId, channel: "#belay", topic: "" }],
        ["connect_network", { networkId, reconnect: true }],
        ["disconnect_network", { networkId }]
      ] as const) {
        expect((yield* call(name, args)).payload, name).toEqual({ ok: true })
      }
      for (const [name, args] of [
        ["send_raw", { networkId, line: "VERSION" }],
        ["set_nick", { networkId, nick: "alice2" }],
        ["whois", { networkId, nick: "bob" }]
      ] as const) {
        expect((yield* call(name, args)).payload, name).toEqual({ ok: true, serverBuffer: `:server:${networkId}` })
      }
      expect((yield* call("set_away", { message: "lunch" })).payload).toEqual({ ok: true, away: true })
      expect((yield* call("set_away", { networkId })).payload).toEqual({ ok: true, away: false })
      const sent = (yield* app.fake.calls).map((c) => c.method)
      expect(sent).toEqual(expect.arrayContaining(["say", "join", "part", "setTopic", "raw", "nick", "whois", "away", "connect", "disconnect"]))

      // send_raw to an encrypted channel is refused before anything is sent
      app.fake.network(networkId).encrypted.add("#secret")
      const before = (yield* app.fake.calls).length
      const e2e = yield* call("send_raw", { networkId, line: "privmsg #secret :plaintext" })
      expect(e2e.payload).toMatchObject({ ok: false, error: "e2e-channel-use-send-message" })
      expect((yield* app.fake.calls).length).toBe(before)

      // Channel reads
      app.fake.network(networkId).members.set("#belay", [
        { nick: "alice", prefix: "@", modes: ["o"], away: false },
        { nick: "bob", prefix: "", modes: [], away: true },
        { nick: "carol", prefix: "+", modes: ["v"], away: false }
      ])
      expect((yield* call("list_members", { networkId, channel: "#belay", limit: 2 })).payload).toEqual({
        channel: "#belay",
        count: 3,
        truncated: true,
        members: [
          { nick: "alice", prefix: "@", modes: ["o"], away: false },
          { nick: "bob", prefix: "", modes: [], away: true }
        ]
      })
      expect((yield* call("list_members", { networkId, channel: "#nope" })).payload).toMatchObject({ error: "not-in-channel" })
      app.fake.network(networkId).topics.set("#belay", { channel: "#belay", topic: "hi", setBy: "alice", setAt: toIsoTime(new Date("2026-01-02T03:04:05Z")) })
      expect((yield* call("get_topic", { networkId, channel: "#belay" })).payload).toEqual({
        channel: "#belay", topic: "hi", setBy: "alice", setAt: "2026-01-02T03:04:05.000Z"
      })
      app.fake.network(networkId).modeLists.set("#belay b", Either.right({
        channel: "#belay", letter: "b", entries: [{ mask: "*!*@bad", setBy: "alice", setAt: toIsoTime(new Date(0)) }]
      }))
      expect((yield* call("get_mode_list", { networkId, channel: "#belay", letter: "b" })).payload).toEqual({
        ok: true, channel: "#belay", letter: "b", entries: [{ mask: "*!*@bad", setBy: "alice", setAt: "1970-01-01T00:00:00.000Z" }]
      })
      app.fake.network(networkId).modeLists.set("#belay e", Either.left(new Refused({ numeric: "482", text: "You're not channel operator" })))
      expect((yield* call("get_mode_list", { networkId, channel: "#belay", letter: "e" })).payload).toEqual({
        ok: false, error: "refused", numeric: "482", text: "You're not channel operator", message: expect.stringContaining("482")
      })
      app.fake.network(networkId).modeLists.set("#belay I", Either.left(new Timeout({ operation: "the I list query for #belay", seconds: 15 })))
      expect((yield* call("get_mode_list", { networkId, channel: "#belay", letter: "I" })).payload).toEqual({
        ok: false, error: "timeout", message: "the I list query for #belay got no answer within 15 s; try again"
      })
      expect((yield* call("set_channel_modes", { networkId, channel: "#belay", changes: [{ sign: "+", letter: "o", param: "bob" }] })).payload)
        .toEqual({ ok: true, lines: ["MODE #belay +o"] })

      // Notes and relay bots
      expect((yield* call("get_nick_note", { networkId, nick: "Bob" })).payload).toEqual({ networkId, nick: "Bob", note: "" })
      expect((yield* call("set_nick_note", { networkId, nick: "Bob", note: "met at FOSDEM" })).payload).toEqual({
        ok: true, networkId, nick: "Bob", note: "met at FOSDEM"
      })
      expect((yield* call("get_nick_note", { networkId, nick: "bob" })).payload).toMatchObject({ note: "met at FOSDEM" })
      expect((yield* call("set_nick_note", { networkId, nick: "x", note: "n".repeat(4097) })).payload).toMatchObject({ error: "invalid-arguments" })
      // A note never goes to IRC: line breaks are kept as written (docs/decisions/http-and-mcp.md), and nothing is sent.
      const multiLine = "met at FOSDEM\r\nprefers DMs\n\nsigned the key"
      const callsBeforeNote = (yield* app.fake.calls).length
      expect((yield* call("set_nick_note", { networkId, nick: "Carol", note: multiLine })).payload).toEqual({
        ok: true, networkId, nick: "Carol", note: multiLine
      })
      expect((yield* call("get_nick_note", { networkId, nick: "carol" })).payload).toEqual({ networkId, nick: "carol", note: multiLine })
      expect((yield* app.fake.calls).length).toBe(callsBeforeNote)
      expect((yield* call("set_relay_bot", { networkId, nick: "Relay", marked: true, pattern: "[{source}] <{nick}> {message}" })).payload)
        .toEqual({ networkId, nick: "Relay", marked: true, pattern: "[{source}] <{nick}> {message}" })
      expect((yield* call("set_relay_bot", { networkId, nick: "RELAY", marked: true, pattern: "no placeholders" })).payload)
        .toEqual({ networkId, nick: "Relay", marked: true, pattern: "no placeholders" })
      expect((yield* call("set_relay_bot", { networkId, nick: "relay", marked: true, pattern: "[{source}] <{nick}> {message}" })).payload)
        .toMatchObject({ nick: "Relay", marked: true })

      // History: stored lines, relay rendering, paging, search, buffers
      const store = app.get(MessageWriter)
      const line = (target: string, nick: string, text: string, kind: "privmsg" | "numeric" = "privmsg") =>
        store.append({
          networkId, target, targetFolded: target.toLowerCase(), bufferKind: target.startsWith(":") ? "server" : target.startsWith("#") ? "channel" : "dm",
          time: new Date(), kind, nick, text, self: false
        })
      yield* line("#belay", "bob", "first message about fish")
      yield* line("#belay", "relay", "[matrix] <dave> hello from the bridge")
      yield* line("#belay", "carol", "third message about fish and chips")
      yield* line("bob", "bob", "a private fish")
      yield* line(`:server:${networkId}`, "irc.test", "End of WHOIS", "numeric")
      yield* store.flush

      const recent = (yield* call("recent_messages", { networkId, target: "#BELAY" })).payload as { messages: Array<Payload> }
      expect(recent.messages.map((m) => m.text)).toEqual([
        "first message about fish", "hello from the bridge", "third message about fish and chips"
      ])
      expect(recent.messages[1]).toMatchObject({ nick: "dave", relayBot: "Relay", kind: "privmsg", self: false })
      // The page is now kept in memory with its records serialized; a change of mark renders it again, both ways.
      const bridged = () =>
        Effect.map(call("recent_messages", { networkId, target: "#belay" }), (r) => (r.payload as { messages: Array<Payload> }).messages[1])
      yield* call("set_relay_bot", { networkId, nick: "relay", marked: false })
      const unmarked = yield* bridged()
      expect(unmarked).toMatchObject({ nick: "relay", text: "[matrix] <dave> hello from the bridge" })
      expect(unmarked).not.toHaveProperty("relayBot")
      yield* call("set_relay_bot", { networkId, nick: "relay", marked: true, pattern: "[{source}] <{nick}> {message}" })
      expect(yield* bridged()).toMatchObject({ nick: "dave", text: "hello from the bridge", relayBot: "relay" })
      const page = (yield* call("recent_messages", { networkId, target: "#belay", before: recent.messages[2]!.id, limit: 1 })).payload as { messages: Array<Payload> }
      expect(page.messages.map((m) => m.text)).toEqual(["hello from the bridge"])
      const search = (yield* call("search_messages", { query: "fish about" })).payload as { messages: Array<Payload> }
      expect(search.messages.map((m) => m.text)).toEqual(["third message about fish and chips", "first message about fish"])
      const byNick = (yield* call("search_messages", { query: "fish", nick: "bob" })).payload as { messages: Array<Payload> }
      expect(byNick.messages.map((m) => m.target)).toEqual(["bob", "#belay"])
      const buffers = (yield* call("list_buffers")).payload as { buffers: Array<Payload> }
      expect(buffers.buffers.map((b) => b.target).sort()).toEqual(["#belay", "bob"])
      const server = (yield* call("recent_messages", { networkId, target: `:server:${networkId}` })).payload as { messages: Array<Payload> }
      expect(server.messages).toEqual([expect.objectContaining({ kind: "numeric", text: "End of WHOIS" })])
      expect(accountId).toBeGreaterThan(0)
    }), { timeout: 90_000 })

  it.scoped("CR, LF and NUL in every string argument of every write tool are refused with nothing sent", () =>
    Effect.gen(function*() {
      const app = yield* startTestApp()
      const { networkId, token } = yield* seedAccount(app)
      app.fake.network(networkId).status = { state: "connected", nick: "alice" }
      const client = yield* connect(app.url, token)
      const { tools } = yield* Effect.promise(() => client.listTools())
      const base: Record<string, unknown> = {
        networkId, target: "#a", text: "t", line: "VERSION", channel: "#a", key: "k", reason: "r", nick: "n", message: "m",
        topic: "t", letter: "b", note: "n", marked: true, pattern: "<{nick}> {message}", query: "q", reconnect: false,
        changes: [{ sign: "+", letter: "o", param: "x" }]
      }
      let cases = 0
      for (const tool of tools) {
        const props = (tool.inputSchema.properties ?? {}) as Record<string, { type?: string }>
        const required = new Set(tool.inputSchema.required ?? [])
        const args = Object.fromEntries(Object.keys(props).filter((k) => required.has(k)).map((k) => [k, base[k]]))
        const stringFields = Object.entries(props).filter(([k, p]) => p.type === "string" && k !== "letter").map(([k]) => k)
        for (const field of stringFields) {
          for (const bad of ["a\rb", "a\nb", "a\u0000b"]) {
            if (tool.name === "set_nick_note" && field === "note" && bad !== "a\u0000b") continue // notes may hold line breaks
            const r = yield* Effect.promise(() => client.callTool({ name: tool.name, arguments: { ...args, [field]: bad } }))
            expect(r.isError, `${tool.name}.${field}`).toBe(true)
            expect((r.structuredContent as Payload).error, `${tool.name}.${field}`).toBe("invalid-arguments")
            cases++
          }
        }
      }
      expect(cases).toBeGreaterThan(60)
      expect(yield* app.fake.calls).toEqual([])
    }), { timeout: 90_000 })

  it.scoped("channel encrypt stores the key under the casefolded target", () =>
    Effect.gen(function*() {
      const app = yield* startTestApp()
      const { networkId } = yield* seedAccount(app)
      yield* app.get(E2eKeys).set("alice", networkId, "#Secret", "cbc:key").pipe(Effect.orDie)
      const keys = yield* app.get(E2eKeys).forNetwork(networkId)
      expect([...keys.keys()]).toEqual(["#secret"])
    }))
})
