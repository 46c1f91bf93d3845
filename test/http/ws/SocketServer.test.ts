/**
 * The browser WebSocket `GET /api/ws` over Node clients on the `ws` package, against the whole app (fake network
 * actors, real database): who may open it (before the upgrade), hello first, events delivered to every socket of
 * their member and to no one else, tool calls through the one path of /mcp, resume with `since`, and the 4001 close
 * for every way a credential ends (docs/decisions/web.md; the interface "Events").
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { ApiTokens } from "../../../src/services/identity/ApiTokens.js"
import { MessageWriter } from "../../../src/services/history/MessageWriter.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import { sha256 } from "../../../src/services/identity/Tokens.js"
import { eventually } from "../../support/Eventually.js"
import { describeMode } from "../../support/TestDatabase.js"
import { apiToken, appToken, bearer, passwordToken, postJsonAs, postSettings, signedIn } from "../auth/MemberHarness.js"
import { type OAuthApp, PASSWORD, postForm, postJson, startOAuthApp } from "../oauth/OAuthHarness.js"
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

  it.scopedLive("tool calls over the socket take the path of /mcp: same payloads, scope and pause rules, unknown tools and bad frames answered", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const networkId = yield* networkOf(app, "alice")
      const socket = yield* connect(app.url, { headers: bearer(yield* passwordToken(app.url)) })
      expect((yield* socket.next()).type).toBe("hello")
      const api = yield* apiToken(app)

      const listed = yield* socket.call("list_networks")
      expect(listed).toMatchObject({ type: "result", isError: false })
      expect(listed.payload).toEqual((yield* mcpCall(app.url, api, "list_networks", {})).structuredContent)

      const set = yield* socket.call("set_nick_note", { networkId, nick: "carol", note: "from the socket" })
      expect(set).toEqual({ type: "result", id: set.id, isError: false, payload: { ok: true, networkId, nick: "carol", note: "from the socket" } })
      expect((yield* socket.until((f) => f.type === "nick-note")).at(-1)).toMatchObject({ nick: "carol", note: "from the socket" })
      expect((yield* mcpCall(app.url, api, "get_nick_note", { networkId, nick: "CAROL" })).structuredContent).toMatchObject({
        note: "from the socket"
      })

      // The write gate of the port, as at /mcp.
      const offline = yield* socket.call("send_message", { networkId, target: "#belay", text: "hi" })
      expect(offline).toMatchObject({ isError: true, payload: { ok: false, error: "not-connected" } })
      const invalid = yield* socket.call("recent_messages", { networkId, target: "#belay", limit: 501 })
      expect(invalid).toMatchObject({ isError: true, payload: { ok: false, error: "invalid-arguments" } })
      const unknownNetwork = yield* socket.call("get_topic", { networkId: networkId + 1000, channel: "#x" })
      expect(unknownNetwork).toMatchObject({ isError: true, payload: { ok: false, error: "unknown-network" } })

      // A paused account gets the read tools only, from the next call on.
      yield* app.service(Accounts).setStatus("alice", "paused").pipe(Effect.orDie)
      expect(yield* socket.call("set_nick_note", { networkId, nick: "carol", note: "" })).toMatchObject({
        isError: true,
        payload: { ok: false, error: "account-paused" }
      })
      expect(yield* socket.call("get_nick_note", { networkId, nick: "carol" })).toMatchObject({ isError: false })
      yield* app.service(Accounts).setStatus("alice", "active").pipe(Effect.orDie)
      expect(yield* socket.call("set_nick_note", { networkId, nick: "carol", note: "" })).toMatchObject({ isError: false })

      expect(yield* socket.call("no_such_tool")).toMatchObject({ type: "error", message: "unknown tool: no_such_tool" })
      yield* socket.send("{not json")
      expect((yield* socket.until((f) => f.type === "error")).at(-1)).toMatchObject({ id: null })
      yield* socket.send({ type: "call", id: 7 })
      expect((yield* socket.until((f) => f.type === "error")).at(-1)).toMatchObject({ id: 7 })
    }))

  it.scopedLive("since: a tab that comes back gets every message it missed, in order, once; then the live ones; too many → resync", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const networkId = yield* networkOf(app, "alice")
      const token = yield* passwordToken(app.url)
      yield* store(app, networkId, ["one", "two", "three"])

      const first = yield* connect(app.url, { headers: bearer(token) })
      const hello = yield* first.next()
      const lastId = hello.lastMessageId as number
      expect(lastId).toBeGreaterThan(0)
      // Live from hello's lastMessageId on: stored messages are not sent again.
      yield* store(app, networkId, ["four"])
      const live = (yield* first.until(isMessage)).filter(isMessage)
      expect(live.map(textOf)).toEqual(["four"])
      const seen = idOf(live[0]!)
      yield* first.close
      yield* first.closed

      // A gap: two messages while no tab is open, in two buffers.
      yield* store(app, networkId, ["five"])
      yield* store(app, networkId, ["six"], "bob")
      const back = yield* connect(app.url, { headers: bearer(token), query: `?since=${seen}` })
      expect((yield* back.next()).type).toBe("hello")
      const replayed = (yield* back.until((f) => isMessage(f) && textOf(f) === "six")).filter(isMessage)
      expect(replayed.map(textOf)).toEqual(["five", "six"])
      expect(replayed.map((f) => (f.message as { target: string }).target)).toEqual(["#belay", "bob"])
      yield* store(app, networkId, ["seven"])
      const after = (yield* back.until((f) => isMessage(f) && textOf(f) === "seven")).filter(isMessage)
      expect(after.map(textOf)).toEqual(["seven"])
      const ids = [...replayed, ...after].map(idOf)
      expect(ids).toEqual([...ids].sort((a, b) => a - b))

      // From the start: everything, oldest first.
      const all = yield* connect(app.url, { headers: bearer(token), query: "?since=0" })
      const everything = (yield* all.until((f) => isMessage(f) && textOf(f) === "seven")).filter(isMessage)
      expect(everything.map(textOf)).toEqual(["one", "two", "three", "four", "five", "six", "seven"])

      // More than 10,000 missed: one resync instead, then live messages only.
      yield* store(app, networkId, Array.from({ length: 10_001 }, (_, i) => `bulk ${i}`))
      const behind = yield* connect(app.url, { headers: bearer(token), query: `?since=${idOf(after[0]!)}` })
      expect((yield* behind.next()).type).toBe("hello")
      const resynced = yield* behind.until((f) => f.type === "resync" || isMessage(f))
      expect(resynced.at(-1)).toEqual({ type: "resync" })
      yield* store(app, networkId, ["after the resync"])
      expect((yield* behind.until(isMessage)).filter(isMessage).map(textOf)).toEqual(["after the resync"])
      // Exactly 10,000 is replayed: bulk 2 … bulk 10000 and the one after the resync.
      const bulkOne = yield* app.sql<{ id: number }>`SELECT id FROM messages WHERE text = 'bulk 1'`.pipe(Effect.orDie)
      const exactly = yield* connect(app.url, { headers: bearer(token), query: `?since=${bulkOne[0]!.id}` })
      const bulk = (yield* exactly.until((f) => isMessage(f) && textOf(f) === "after the resync")).filter(isMessage)
      expect(bulk.length).toBe(10_000)
      expect(bulk[0]!.message).toMatchObject({ text: "bulk 2" })
    }), { timeout: 90_000 })

  it.scopedLive("since: a message redacted while the tab was away is redacted again on resume; one already seen is not", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const networkId = yield* networkOf(app, "alice")
      const token = yield* passwordToken(app.url)
      const writer = app.service(MessageWriter)
      for (const [text, msgid] of [["old news", "up-old"], ["seen gone", "up-seen"], ["kept", "up-kept"]] as const) {
        yield* writer.append({
          networkId,
          target: "#belay",
          targetFolded: "#belay",
          bufferKind: "channel",
          time: new Date(),
          kind: "privmsg",
          nick: "bob",
          text,
          self: false,
          msgid
        })
      }
      yield* writer.flush
      const ids = yield* app.sql<{ id: number; text: string }>`SELECT id, text FROM messages ORDER BY id`.pipe(Effect.orDie)
      const idOfText = (text: string) => Number(ids.find((r) => r.text === text)!.id)

      // Redacted while the tab is open: it hears it live, so its resume does not repeat it.
      const first = yield* connect(app.url, { headers: bearer(token) })
      const seen = (yield* first.next()).lastMessageId as number
      expect(seen).toBe(idOfText("kept"))
      yield* writer.redact({ networkId, target: "#belay", targetFolded: "#belay", msgid: "up-seen" })
      expect((yield* first.until((f) => f.type === "redaction")).at(-1)).toMatchObject({ messageId: idOfText("seen gone") })
      yield* store(app, networkId, ["one more"])
      const latest = idOf((yield* first.until(isMessage)).filter(isMessage).at(-1)!)
      yield* first.close
      yield* first.closed

      // Away: an old message (its id long before the tab's since) is redacted.
      yield* writer.redact({ networkId, target: "#belay", targetFolded: "#belay", msgid: "up-old" })
      yield* eventually(
        "the redaction stored",
        app.sql<{ redacted: boolean }>`SELECT redacted FROM messages WHERE msgid = 'up-old'`.pipe(Effect.orDie),
        (rows) => rows[0]?.redacted === true
      )
      yield* store(app, networkId, ["while away"])

      const back = yield* connect(app.url, { headers: bearer(token), query: `?since=${latest}` })
      expect((yield* back.next()).type).toBe("hello")
      const replayed = yield* back.until((f) => f.type === "redaction")
      expect(replayed.filter(isMessage).map(textOf)).toEqual(["while away"])
      expect(replayed.at(-1)).toEqual({ type: "redaction", networkId, target: "#belay", messageId: idOfText("old news") })
      // The live path goes on: nothing else was redacted, and the next message comes once.
      yield* store(app, networkId, ["after"])
      const next = yield* back.until(isMessage)
      expect(next.filter((f) => f.type === "redaction")).toEqual([])
      expect(next.filter(isMessage).map(textOf)).toEqual(["after"])
    }), { timeout: 60_000 })

  it.scopedLive("every way a credential ends closes the sockets opened with it with 4001, and only those", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const opened = (headers: Record<string, string>) =>
        Effect.tap(connect(app.url, { headers }), (socket) => Effect.map(socket.next(), (f) => expect(f.type).toBe("hello")))
      const revokedWith4001 = (socket: { readonly closed: Effect.Effect<{ code: number; reason: string }> }) =>
        Effect.map(socket.closed, (end) => expect(end).toEqual({ code: 4001, reason: "credential revoked" }))

      // POST /api/oauth/revoke by the app.
      const byApp = yield* appToken(app)
      const appSocket = yield* opened(bearer(byApp.token))
      const bystander = yield* opened(bearer(yield* passwordToken(app.url)))
      expect((yield* postForm(`${app.url}/api/oauth/revoke`, { client_id: byApp.clientId, token: byApp.token })).status).toBe(200)
      yield* revokedWith4001(appSocket)

      // POST /api/auth/logout with the token.
      const loggedOut = yield* passwordToken(app.url)
      const logoutSocket = yield* opened(bearer(loggedOut))
      expect((yield* postJson(`${app.url}/api/auth/logout`, {}, bearer(loggedOut))).status).toBe(200)
      yield* revokedWith4001(logoutSocket)

      // Settings > Authorized apps: an app, and a password sign-in.
      const jar = yield* signedIn(app.url)
      const inSettings = yield* appToken(app)
      const settingsSocket = yield* opened(bearer(inSettings.token))
      const revokedApp = yield* postSettings(app.url, jar, `/settings/authorized-apps/${inSettings.clientId}/revoke`, {}, {
        csrfFrom: "/settings/authorized-apps"
      })
      expect(revokedApp.location).toBe("/settings/authorized-apps?done=app-revoked")
      yield* revokedWith4001(settingsSocket)
      const signInToken = yield* passwordToken(app.url)
      const signInSocket = yield* opened(bearer(signInToken))
      const rows = (yield* Effect.promise(() =>
        fetch(`${app.url}/settings/authorized-apps`, { headers: jar.header() }).then((r) => r.text())
      )).match(/\/settings\/authorized-apps\/password-sign-in\/(\d+)\/revoke/g) ?? []
      const live = yield* socketTokenIds(app, signInToken)
      const row = rows.find((r) => r.includes(`/${live}/`))!
      expect((yield* postSettings(app.url, jar, row, {}, { csrfFrom: "/settings/authorized-apps" })).location).toBe(
        "/settings/authorized-apps?done=sign-in-revoked"
      )
      yield* revokedWith4001(signInSocket)

      // Until its own credential ends, another socket of the member goes on.
      expect(yield* bystander.call("list_networks")).toMatchObject({ type: "result", isError: false })

      // Session sign-out: POST /api/auth/logout with the cookie, from the same origin.
      const sessionSocket = yield* opened({ ...jar.header(), origin: app.url })
      const out = yield* postJsonAs(app.url, jar, "/api/auth/logout", {})
      expect(out.status).toBe(200)
      const sessionEnd = yield* sessionSocket.closed
      expect(sessionEnd.code).toBe(4001)

      // Account recovery: every app token and every session at once.
      const again = yield* signedIn(app.url)
      const recoveredSession = yield* opened({ ...again.header(), origin: app.url })
      const recoveredApp = yield* opened(bearer((yield* appToken(app)).token))
      yield* app.service(Accounts).recover("alice", "a recovered password").pipe(Effect.orDie)
      expect((yield* recoveredSession.closed).code).toBe(4001)
      yield* revokedWith4001(recoveredApp)

      // The bystander's password-sign-in token went with every other at recovery.
      yield* revokedWith4001(bystander)
    }), { timeout: 60_000 })
})

/** The oauth_tokens id of a raw token (the Settings row names it). */
const socketTokenIds = (app: OAuthApp, raw: string) =>
  Effect.map(
    app.sql<{ id: number }>`SELECT id FROM oauth_tokens WHERE token_hash = ${sha256(raw)}`,
    (rows) => rows[0]!.id
  ).pipe(Effect.orDie)

describe(`the browser WebSocket's keepalive on ${describeMode}`, () => {
  it.scoped("the server pings every 30 s and cuts a peer silent for 60 s; a peer that answers stays (TestClock)", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const token = yield* passwordToken(app.url)
      const silent = yield* connect(app.url, { headers: bearer(token), autoPong: false })
      const alive = yield* connect(app.url, { headers: bearer(token) })
      for (const socket of [silent, alive]) expect((yield* socket.next()).type).toBe("hello")

      yield* TestClock.adjust("29 seconds")
      expect(yield* silent.pings).toBe(0)
      yield* TestClock.adjust("2 seconds")
      yield* eventually("the first ping", silent.pings, (n) => n === 1)
      yield* eventually("the first ping", alive.pings, (n) => n === 1)
      // The peer that answered was heard from at its pong; the silent one not since it opened.
      yield* TestClock.adjust("30 seconds")
      expect((yield* silent.closed).code).toBe(1006)
      expect(yield* alive.isClosed).toBe(false)
      expect(yield* alive.call("list_networks")).toMatchObject({ type: "result", isError: false })
    }))
})
