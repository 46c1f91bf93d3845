/**
 * The browser WebSocket over real network actors connected to the scripted fake IRC server: what a chat client needs
 * to draw a channel without polling arrives as events — the network's connection and nick, the channel joined whole
 * (topic and members), each member joining, leaving, getting a prefix or going away, topics, the member's own away
 * state — and every message, from IRC or from an MCP write, with the id recent_messages gives it. A tab that stops
 * reading is closed with 1013 without slowing the member's other tab.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, FiberRef, Layer, LogLevel, Option } from "effect"
import { HttpAddress } from "../../../src/http/HttpServer.js"
import { makeAppLayer, NetworkActorsLive } from "../../../src/main.js"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { ApiTokens } from "../../../src/services/identity/ApiTokens.js"
import { MessageWriter } from "../../../src/services/history/MessageWriter.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import * as FakeIrcServer from "../../support/FakeIrcServer.js"
import { describeMode, settingsFrom, testEnvironment } from "../../support/TestDatabase.js"
import { postJson } from "../oauth/OAuthHarness.js"
import { connect, type Frame } from "./SocketClient.js"

const PASSWORD = "a long password"

const startLive = Effect.gen(function*() {
  // The app's fibers inherit this fiber's log level: keep test output to warnings.
  yield* Effect.locallyScoped(FiberRef.currentMinimumLogLevel, LogLevel.Warning)
  const irc = yield* FakeIrcServer.make()
  const settings = yield* settingsFrom(yield* testEnvironment({ HOST: "127.0.0.1" }))
  const context = yield* Layer.build(makeAppLayer(settings, NetworkActorsLive).pipe(Layer.orDie))
  const url = Context.get(context, HttpAddress).url
  yield* Context.get(context, Accounts).create("alice", PASSWORD).pipe(Effect.orDie)
  const api = yield* Context.get(context, ApiTokens).create("alice", "agent", "read-write").pipe(Effect.orDie)
  const res = yield* postJson(`${url}/api/auth/login/token`, { username: "alice", password: PASSWORD })
  const token = ((yield* Effect.promise(() => res.json())) as { access_token: string }).access_token
  return { irc, url, context, api, token }
})

const mcp = (url: string, token: string, name: string, args: Record<string, unknown>) =>
  Effect.flatMap(
    postJson(`${url}/mcp`, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }, {
      authorization: `Bearer ${token}`,
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-06-18"
    }),
    (r) => Effect.promise(() => r.json() as Promise<{ result: { structuredContent: Record<string, unknown> } }>)
  )

const messageText = (f: Frame) => (f.type === "message" ? (f.message as { text: string }).text : undefined)

describe(`the browser WebSocket over real actors on ${describeMode}`, () => {
  it.scopedLive("network, channel, member, topic, away and message events follow IRC and MCP writes", () =>
    Effect.gen(function*() {
      const { irc, url, context, api, token } = yield* startLive
      const tab = yield* connect(url, { headers: { authorization: `Bearer ${token}` } })
      expect((yield* tab.next()).type).toBe("hello")

      const networkId = yield* Context.get(context, Networks).add("alice", {
        name: "fake",
        host: "127.0.0.1",
        port: irc.port,
        tls: false,
        tlsInsecure: false,
        nick: "alice",
        username: Option.none(),
        realname: Option.none(),
        serverPassword: Option.none(),
        sasl: Option.none(),
        join: ["#belay"]
      }).pipe(Effect.orDie)
      const conn = yield* irc.nextConnection("10 seconds")
      yield* conn.register("alice")
      const connected = yield* tab.until((f) => f.type === "network" && (f.network as { state: string }).state === "connected")
      expect(connected.at(-1)).toEqual({ type: "network", network: {
          id: networkId,
          name: "fake",
          state: "connected",
          nick: "alice",
          features: { tags: false, redaction: false, multiline: false }
        }
      })

      yield* conn.waitFor(/^JOIN #belay/)
      yield* conn.send(
        ":alice!a@host JOIN #belay",
        ":irc.fake.test 332 alice #belay :Belay talk",
        ":irc.fake.test 333 alice #belay bob 1700000000",
        ":irc.fake.test 353 alice = #belay :@alice bob +carol",
        ":irc.fake.test 366 alice #belay :End of /NAMES list."
      )
      const drawn = yield* tab.until((f) =>
        f.type === "channel" && f.joined === true && (f.members as Array<unknown>).length === 3
      )
      expect(drawn.at(-1)).toEqual({
        type: "channel",
        networkId,
        channel: "#belay",
        joined: true,
        topic: { topic: "Belay talk", setBy: "bob", setAt: "2023-11-14T22:13:20.000Z" },
        members: [
          { nick: "alice", prefix: "@", modes: ["o"], away: false },
          { nick: "bob", prefix: "", modes: [], away: false },
          { nick: "carol", prefix: "+", modes: ["v"], away: false }
        ]
      })

      // One member at a time.
      yield* conn.send(":dave!d@host JOIN #belay")
      expect((yield* tab.until((f) => f.type === "member")).at(-1)).toEqual({
        type: "member",
        networkId,
        channel: "#belay",
        nick: "dave",
        member: { nick: "dave", prefix: "", modes: [], away: false }
      })
      yield* conn.send(":alice!a@host MODE #belay +o bob")
      expect((yield* tab.until((f) => f.type === "member")).at(-1)).toMatchObject({ nick: "bob", member: { prefix: "@", modes: ["o"] } })
      yield* conn.send(":carol!c@host PART #belay :bye")
      expect((yield* tab.until((f) => f.type === "member")).at(-1)).toMatchObject({ nick: "carol", member: null })
      yield* conn.send(":bob!b@host TOPIC #belay :New topic")
      expect((yield* tab.until((f) => f.type === "topic")).at(-1)).toMatchObject({
        type: "topic",
        networkId,
        channel: "#belay",
        topic: "New topic",
        setBy: "bob"
      })

      // A line from IRC and an MCP write both arrive as messages, with the ids history gives them.
      yield* conn.send(":bob!b@host PRIVMSG #belay :hi alice")
      const fromIrc = (yield* tab.until((f) => messageText(f) === "hi alice")).at(-1)!
      expect(fromIrc.message).toMatchObject({ networkId, target: "#belay", kind: "privmsg", nick: "bob", self: false })
      yield* mcp(url, api, "send_message", { networkId, target: "#belay", text: "hello from an agent" })
      yield* conn.waitFor("PRIVMSG #belay :hello from an agent")
      const own = (yield* tab.until((f) => messageText(f) === "hello from an agent")).at(-1)!
      expect(own.message).toMatchObject({ nick: "alice", self: true })
      const history = yield* mcp(url, api, "recent_messages", { networkId, target: "#belay" })
      const ids = (history.result.structuredContent.messages as Array<{ id: number; text: string }>).filter((m) =>
        m.text === "hi alice" || m.text === "hello from an agent"
      ).map((m) => m.id)
      expect(ids).toEqual([(fromIrc.message as { id: number }).id, (own.message as { id: number }).id])

      // Our own away state, and a new tab drawn whole including it.
      yield* mcp(url, api, "set_away", { networkId, message: "lunch" })
      yield* conn.waitFor(/^AWAY :?lunch/)
      yield* conn.send(":irc.fake.test 306 alice :You have been marked as being away")
      expect((yield* tab.until((f) => f.type === "away")).at(-1)).toEqual({ type: "away", networkId, away: true })
      const second = yield* connect(url, { headers: { authorization: `Bearer ${token}` } })
      const snapshot = yield* second.until((f) => f.type === "channel")
      expect(snapshot.map((f) => f.type)).toEqual(["hello", "network", "away", "channel"])
      expect(snapshot[2]).toEqual({ type: "away", networkId, away: true })
      expect((snapshot[3]!.members as Array<{ nick: string }>).map((m) => m.nick)).toEqual(["alice", "bob", "dave"])

      // The connection ends: the channel is left and the network goes to backoff.
      yield* conn.destroy
      const ended = yield* tab.until((f) => f.type === "channel")
      expect(ended.at(-1)).toEqual({ type: "channel", networkId, channel: "#belay", joined: false })
      expect(ended.filter((f) => f.type === "network").map((f) => (f.network as { state: string }).state)).not.toContain("connected")
      expect(ended.some((f) => f.type === "network")).toBe(true)
    }), { timeout: 60_000 })

  it.scopedLive("a tab that stops reading is closed with 1013; the member's other tab gets everything", () =>
    Effect.gen(function*() {
      const { url, context, token } = yield* startLive
      const networkId = yield* Context.get(context, Networks).add("alice", {
        name: "quiet",
        host: "127.0.0.1",
        port: 1,
        tls: false,
        tlsInsecure: false,
        nick: "alice",
        username: Option.none(),
        realname: Option.none(),
        serverPassword: Option.none(),
        sasl: Option.none(),
        join: []
      }).pipe(Effect.orDie)
      const slow = yield* connect(url, { headers: { authorization: `Bearer ${token}` } })
      const steady = yield* connect(url, { headers: { authorization: `Bearer ${token}` } })
      for (const tab of [slow, steady]) expect((yield* tab.next()).type).toBe("hello")
      slow.ws.pause()

      const writer = Context.get(context, MessageWriter)
      const text = "x".repeat(2000)
      for (let i = 0; i < 6000; i++) {
        yield* writer.append({
          networkId,
          target: "#flood",
          targetFolded: "#flood",
          bufferKind: "channel",
          time: new Date(),
          kind: "privmsg",
          nick: "bob",
          text: i === 5999 ? "the last one" : text,
          self: false
        })
      }
      yield* writer.flush
      const received = yield* steady.until((f) => messageText(f) === "the last one", "30 seconds")
      expect(received.filter((f) => f.type === "message" && (f.message as { target: string }).target === "#flood")).toHaveLength(6000)
      slow.ws.resume()
      expect((yield* slow.closed).code).toBe(1013)
    }), { timeout: 90_000 })
})
