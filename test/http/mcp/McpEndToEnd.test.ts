/**
 * MCP end to end: the official SDK client drives a real Belay (real network actors,
 * real database) whose network is connected to the scripted fake IRC server. Proves
 * that tool calls reach IRC, that IRC reaches history, and that asynchronous replies
 * land where the tool descriptions say.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { HttpAddress } from "../../../src/http/HttpServer.js"
import { makeAppLayer, NetworkActorsLive } from "../../../src/main.js"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { ApiTokens } from "../../../src/services/identity/ApiTokens.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import * as FakeIrcServer from "../../support/FakeIrcServer.js"
import { describeMode, settingsFrom, testEnvironment } from "../../support/TestDatabase.js"

type Payload = Record<string, unknown>

const poll = <A>(what: string, attempt: Effect.Effect<A | undefined>, timeoutMs = 10_000) =>
  Effect.promise(async () => {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const value = await Effect.runPromise(attempt)
      if (value !== undefined) return value
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
      await new Promise((r) => setTimeout(r, 50))
    }
  })

describe(`MCP end to end with real actors on ${describeMode}`, () => {
  it.live("send, receive, whois and history through a connected network", () =>
    Effect.scoped(Effect.gen(function*() {
      const irc = yield* FakeIrcServer.make()
      const settings = yield* settingsFrom(yield* testEnvironment({ HOST: "127.0.0.1" }))
      const context = yield* Layer.build(makeAppLayer(settings, NetworkActorsLive).pipe(Layer.orDie))
      const url = Context.get(context, HttpAddress).url
      yield* Context.get(context, Accounts).create("alice", "a long password").pipe(Effect.orDie)
      const networkId = yield* Context.get(context, Networks).add("alice", {
        name: "fake", host: "127.0.0.1", port: irc.port, tls: false, tlsInsecure: false, nick: "alice",
        username: Option.none(), realname: Option.none(), serverPassword: Option.none(), sasl: Option.none(), join: ["#belay"]
      }).pipe(Effect.orDie)
      const token = yield* Context.get(context, ApiTokens).create("alice", "agent", "read-write").pipe(Effect.orDie)

      // The supervisor notices the new network and connects; the fake answers registration.
      const conn = yield* irc.nextConnection("10 seconds")
      yield* conn.register("alice")
      yield* conn.waitFor(/^JOIN #belay/)
      yield* conn.send(":alice!a@host JOIN #belay", ":irc.fake.test 353 alice = #belay :@alice bob", ":irc.fake.test 366 alice #belay :End of /NAMES list.")

      const client = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const c = new Client({ name: "e2e", version: "1" })
          await c.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }))
          await c.listTools()
          return c
        }),
        (c) => Effect.promise(() => c.close())
      )
      const call = (name: string, args: Payload = {}) =>
        Effect.promise(async () => (await client.callTool({ name, arguments: args })).structuredContent as Payload)

      const networks = yield* poll("connected state", Effect.map(call("list_networks"), (p) => {
        const n = (p.networks as Array<Payload>)[0]
        return n?.state === "connected" ? n : undefined
      }))
      expect(networks).toMatchObject({ id: networkId, state: "connected", nick: "alice" })

      // send_message reaches IRC, and is stored as self
      expect(yield* call("send_message", { networkId, target: "#belay", text: "hello from an agent" })).toEqual({ ok: true })
      yield* conn.waitFor("PRIVMSG #belay :hello from an agent")

      // a line from IRC reaches history
      yield* conn.send(":bob!b@host PRIVMSG #belay :hi alice")
      const messages = yield* poll("bob's message in history", Effect.map(call("recent_messages", { networkId, target: "#belay" }), (p) => {
        const list = p.messages as Array<Payload>
        return list.some((m) => m.text === "hi alice") ? list : undefined
      }))
      expect(messages.filter((m) => m.kind === "privmsg").map((m) => [m.nick, m.text, m.self])).toEqual([
        ["alice", "hello from an agent", true],
        ["bob", "hi alice", false]
      ])

      // whois: sent, and the reply lands in the server buffer
      const whois = yield* call("whois", { networkId, nick: "bob" })
      expect(whois).toEqual({ ok: true, serverBuffer: `:server:${networkId}` })
      yield* conn.waitFor("WHOIS bob")
      yield* conn.send(":irc.fake.test 311 alice bob b host * :Bob Example", ":irc.fake.test 318 alice bob :End of /WHOIS list.")
      const server = yield* poll("WHOIS reply", Effect.map(call("recent_messages", { networkId, target: `:server:${networkId}` }), (p) => {
        const list = p.messages as Array<Payload>
        return list.some((m) => m.numeric === "311") ? list : undefined
      }))
      expect(server.find((m) => m.numeric === "311")).toMatchObject({ kind: "numeric" })

      // members come from NAMES
      const members = yield* call("list_members", { networkId, channel: "#BELAY" })
      expect(members).toMatchObject({ count: 2, truncated: false })
      expect((members.members as Array<Payload>).map((m) => [m.nick, m.prefix])).toEqual([["alice", "@"], ["bob", ""]])

      // disconnect: offline, and the write gate answers not-connected
      expect(yield* call("disconnect_network", { networkId })).toEqual({ ok: true })
      yield* poll("offline", Effect.map(call("list_networks"), (p) => (p.networks as Array<Payload>)[0]?.state === "offline" ? true : undefined))
      const refused = yield* call("send_message", { networkId, target: "#belay", text: "nope" })
      expect(refused).toMatchObject({ ok: false, error: "not-connected" })
    })), 60_000)
})
