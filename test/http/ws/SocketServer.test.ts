/**
 * The browser WebSocket `GET /api/ws` over Node clients on the `ws` package, against the whole app (fake network
 * actors, real database): who may open it (before the upgrade), hello first, events delivered to every socket of
 * their member and to no one else, tool calls through the one path of /mcp, resume with `since`, and the 4001 close
 * for every way a credential ends (CONTRACT "The member's browser surface", WebSocket; the interface "Events").
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Accounts } from "../../../src/services/Accounts.js"
import { ApiTokens } from "../../../src/services/ApiTokens.js"
import { MessageWriter } from "../../../src/services/MessageWriter.js"
import { Networks } from "../../../src/services/Networks.js"
import { describeMode } from "../../support/TestDatabase.js"
import { apiToken, appToken, bearer, passwordToken, postJsonAs, postSettings, signedIn } from "../auth/MemberHarness.js"
import { CookieJar, type OAuthApp, PASSWORD, postForm, postJson, startOAuthApp } from "../oauth/OAuthHarness.js"
import { connect, type Frame, refusal } from "./SocketClient.js"

const networkOf = (app: OAuthApp, account: string) =>
  app.service(Networks).add(account, {
    name: `${account}net`,
    host: "irc.test",
    port: 6667,
    tls: false,
    tlsInsecure: false,
    nick: account,
    username: Option.none(),
    realname: Option.none(),
    serverPassword: Option.none(),
    sasl: Option.none(),
    join: []
  }).pipe(Effect.orDie)

/** tools/call at /mcp with an API token; the payload. */
const mcpCall = (url: string, token: string, name: string, args: Record<string, unknown>) =>
  Effect.gen(function*() {
    const res = yield* postJson(`${url}/mcp`, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }, {
      ...bearer(token),
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-06-18"
    })
    const body = (yield* Effect.promise(() => res.json())) as { result: { structuredContent: unknown; isError?: boolean } }
    return body.result
  })

/** Stores messages through the real writer, as the actors do; returns their ids once stored. */
const store = (app: OAuthApp, networkId: number, texts: ReadonlyArray<string>, target = "#belay") =>
  Effect.gen(function*() {
    const writer = app.service(MessageWriter)
    for (const text of texts) {
      yield* writer.append({
        networkId,
        target,
        targetFolded: target.toLowerCase(),
        bufferKind: target.startsWith("#") ? "channel" : "dm",
        time: new Date(),
        kind: "privmsg",
        nick: "bob",
        text,
        self: false
      })
    }
    yield* writer.flush
  })

const isMessage = (f: Frame) => f.type === "message"
const textOf = (f: Frame) => (f.message as { text: string }).text
const idOf = (f: Frame) => (f.message as { id: number }).id

describe(`the browser WebSocket on ${describeMode}`, () => {
  it.scopedLive("refuses before the upgrade: API token 401, foreign Origin 403, no credential 401, a cookie without same-origin 403, a bad since 400", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const api = yield* apiToken(app)
      const api401 = yield* refusal(app.url, { headers: bearer(api) })
      expect(api401.status).toBe(401)
      expect(JSON.parse(api401.body)).toMatchObject({ error: "invalid_token" })
      expect((yield* refusal(app.url)).status).toBe(401)
      expect((yield* refusal(app.url, { headers: bearer("not-a-token-at-all-1234") })).status).toBe(401)

      const token = yield* passwordToken(app.url)
      expect((yield* refusal(app.url, { headers: { ...bearer(token), origin: "https://evil.example" } })).status).toBe(403)
      // The foreign origin is refused before the credential is looked at.
      expect((yield* refusal(app.url, { headers: { ...bearer(api), origin: "https://evil.example" } })).status).toBe(403)

      const jar = yield* signedIn(app.url)
      expect((yield* refusal(app.url, { headers: jar.header() })).status).toBe(403)
      expect((yield* refusal(app.url, { headers: { ...jar.header(), origin: "https://evil.example" } })).status).toBe(403)
      expect((yield* refusal(app.url, { headers: bearer(token), query: "?since=abc" })).status).toBe(400)

      const bySession = yield* connect(app.url, { headers: { ...jar.header(), origin: app.url } })
      expect(yield* bySession.next()).toMatchObject({ type: "hello", account: { name: "alice", paused: false }, lastMessageId: null })
      const byToken = yield* connect(app.url, { headers: bearer(token) })
      expect((yield* byToken.next()).type).toBe("hello")
    }))

  it.scopedLive("a nick note set through MCP reaches both sockets of its member, and another member's socket sees nothing", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const networkId = yield* networkOf(app, "alice")
      yield* app.service(Accounts).create("bob", PASSWORD).pipe(Effect.orDie)
      const bobNetwork = yield* networkOf(app, "bob")
      const jar = yield* signedIn(app.url)
      const first = yield* connect(app.url, { headers: { ...jar.header(), origin: app.url } })
      const second = yield* connect(app.url, { headers: bearer(yield* passwordToken(app.url)) })
      const bobSignIn = yield* postJson(`${app.url}/api/auth/login/token`, { username: "bob", password: PASSWORD })
      const bobBearer = ((yield* Effect.promise(() => bobSignIn.json())) as { access_token: string }).access_token
      const bob = yield* connect(app.url, { headers: bearer(bobBearer) })
      for (const socket of [first, second, bob]) expect((yield* socket.next()).type).toBe("hello")
      // Each socket draws its own networks only.
      expect((yield* first.until((f) => f.type === "network")).at(-1)).toMatchObject({ network: { id: networkId } })
      expect((yield* bob.until((f) => f.type === "network")).at(-1)).toMatchObject({ network: { id: bobNetwork } })

      const api = yield* apiToken(app)
      const set = yield* mcpCall(app.url, api, "set_nick_note", { networkId, nick: "Carol", note: "met at FOSDEM\nlikes tea" })
      expect(set.isError).toBeUndefined()
      for (const socket of [first, second]) {
        const frames = yield* socket.until((f) => f.type === "nick-note")
        expect(frames.at(-1)).toEqual({ type: "nick-note", networkId, nick: "Carol", note: "met at FOSDEM\nlikes tea" })
      }
      const mark = yield* mcpCall(app.url, api, "set_relay_bot", { networkId, nick: "Bridge", marked: true })
      expect(mark.structuredContent).toMatchObject({ marked: true })
      for (const socket of [first, second]) {
        expect((yield* socket.until((f) => f.type === "relay-bot")).at(-1)).toEqual({
          type: "relay-bot",
          networkId,
          nick: "Bridge",
          marked: true,
          pattern: null
        })
      }
      // Bob's next event is his own note: alice's two changes never reached him.
      const bobApi = yield* Effect.orDie(app.service(ApiTokens).create("bob", "cli", "read-write"))
      yield* mcpCall(app.url, bobApi, "set_nick_note", { networkId: bobNetwork, nick: "dave", note: "bob's" })
      const bobFrames = yield* bob.until((f) => f.type === "nick-note")
      expect(bobFrames.filter((f) => f.type === "nick-note" || f.type === "relay-bot")).toEqual([
        { type: "nick-note", networkId: bobNetwork, nick: "dave", note: "bob's" }
      ])
    }))
})

