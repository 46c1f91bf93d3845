/**
 * `/api/networks` against the whole app over HTTP (docs/decisions/web.md "The web client's server surface"): add, edit
 * and remove with the validation of `belay network add`, another member's network answered 404, the credential and
 * origin rules of every /api route, and — over real network actors and the scripted fake IRC server — an edit of
 * the connection settings reconnecting the network with them, while a rename keeps the connection.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, FiberRef, Layer, LogLevel, Option } from "effect"
import { HttpAddress } from "../../../src/http/HttpServer.js"
import { makeAppLayer, NetworkActorsLive } from "../../../src/main.js"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import * as FakeIrcServer from "../../support/FakeIrcServer.js"
import { describeMode, settingsFrom, testEnvironment } from "../../support/TestDatabase.js"
import { apiToken, bearer, passwordToken, signedIn } from "../auth/MemberHarness.js"
import { fetchP, jsonOf, PASSWORD, postJson, startOAuthApp, textOf } from "../oauth/OAuthHarness.js"
import { connect } from "../ws/SocketClient.js"

/** The fake upstream offers no capabilities: the browser is told the network carries none of the IRCv3 features. */
const NONE = { tags: false, redaction: false, multiline: false }

const NETWORKS = "/api/networks"

/** A JSON request; the status and the parsed body (empty when none). */
const send = (url: string, method: string, path: string, body: unknown, headers: Record<string, string>) =>
  Effect.gen(function*() {
    const res = yield* fetchP(`${url}${path}`, {
      method,
      headers: { "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) })
    })
    const text = yield* textOf(res)
    return { status: res.status, json: (text === "" ? {} : JSON.parse(text)) as Record<string, unknown> }
  })

const libera = {
  name: "libera",
  host: "irc.libera.chat",
  port: 6697,
  tls: true,
  nick: "alice",
  password: "s3cret-pass",
  channels: ["#belay", "#effect"]
}

describe(`/api/networks on ${describeMode}`, () => {
  it.scopedLive("adds, lists, edits and removes a network; bad input is refused naming the field and changes nothing", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const auth = bearer(yield* passwordToken(app.url))
      const tab = yield* connect(app.url, { headers: auth })
      expect((yield* tab.next()).type).toBe("hello")

      const created = yield* send(app.url, "POST", NETWORKS, libera, auth)
      expect(created.status).toBe(201)
      const id = created.json.id as number
      expect(created.json).toEqual({
        id,
        name: "libera",
        host: "irc.libera.chat",
        port: 6697,
        tls: true,
        nick: "alice",
        username: null,
        realname: null,
        channels: ["#belay", "#effect"],
        hasPassword: true,
        state: "offline",
        currentNick: null,
        lastError: null,
        nextRetryAt: null
      })
      // Sealed at rest, never echoed.
      const [stored] = yield* app.sql<{ enc: Uint8Array }>`
        SELECT server_password_enc AS enc FROM networks WHERE id = ${id}`.pipe(Effect.orDie)
      expect(Buffer.from(stored!.enc).includes(Buffer.from("s3cret-pass"))).toBe(false)
      const config = yield* app.service(Networks).config(id)
      expect(Option.map(config, (c) => c.serverPassword)).toEqual(Option.some("s3cret-pass"))

      const refusals: ReadonlyArray<readonly [unknown, string]> = [
        [{ ...libera, name: "other", port: 70000 }, "port"],
        [{ ...libera, name: "other", nick: "two words" }, "nick"],
        [{ ...libera, name: "other", host: "evil.example/path" }, "host"],
        [{ ...libera, name: "other", channels: ["#a,#b"] }, "channels"],
        [{ ...libera, name: "other", password: "line\r\nQUIT" }, "password"],
        [{ ...libera, name: "other", tlsInsecure: true }, "tlsInsecure"],
        [{ ...libera, name: "" }, "name"],
        [{ name: "other", host: "irc.example" }, "port"]
      ]
      for (const [body, field] of refusals) {
        const res = yield* send(app.url, "POST", NETWORKS, body, auth)
        expect(res.status).toBe(400)
        expect(res.json.error).toBe("invalid_request")
        expect(res.json.error_description).toContain(field)
      }
      expect((yield* send(app.url, "POST", NETWORKS, "{not json", auth)).status).toBe(400)
      const taken = yield* send(app.url, "POST", NETWORKS, libera, auth)
      expect(taken).toMatchObject({ status: 409, json: { error: "network_exists" } })
      const listed = yield* send(app.url, "GET", NETWORKS, undefined, auth)
      expect(listed.status).toBe(200)
      expect((listed.json.networks as ReadonlyArray<unknown>)).toEqual([created.json])

      const second = yield* send(app.url, "POST", NETWORKS, { name: "oftc", host: "irc.oftc.net", port: 6667, tls: false, nick: "al" }, auth)
      expect(second.json).toMatchObject({ hasPassword: false, channels: [], username: null })

      const edited = yield* send(app.url, "PATCH", `${NETWORKS}/${id}`, {
        name: "Libera",
        username: "ali",
        realname: "Alice Liddell",
        password: null,
        channels: ["#effect", "#new"]
      }, auth)
      expect(edited.status).toBe(200)
      expect(edited.json).toMatchObject({
        id,
        name: "Libera",
        host: "irc.libera.chat",
        username: "ali",
        realname: "Alice Liddell",
        hasPassword: false,
        channels: ["#effect", "#new"]
      })
      const unchanged = edited.json
      for (const [body, field] of [[{ port: 0 }, "port"], [{ name: "x".repeat(65) }, "name"], [{ username: "a b" }, "username"], [{ bogus: 1 }, "bogus"]] as const) {
        const res = yield* send(app.url, "PATCH", `${NETWORKS}/${id}`, body, auth)
        expect(res.status).toBe(400)
        expect(res.json.error_description).toContain(field)
      }
      expect(yield* send(app.url, "PATCH", `${NETWORKS}/${id}`, { name: "oftc" }, auth)).toMatchObject({
        status: 409,
        json: { error: "network_exists" }
      })
      const now = (yield* send(app.url, "GET", NETWORKS, undefined, auth)).json.networks as ReadonlyArray<Record<string, unknown>>
      expect(now.find((n) => n.id === id)).toEqual(unchanged)

      expect((yield* send(app.url, "DELETE", `${NETWORKS}/${id}`, undefined, auth)).status).toBe(204)
      expect((yield* tab.until((f) => f.type === "network-removed")).at(-1)).toEqual({ type: "network-removed", networkId: id })
      const after = (yield* send(app.url, "GET", NETWORKS, undefined, auth)).json.networks as ReadonlyArray<{ id: number }>
      expect(after.map((n) => n.id)).toEqual([second.json.id])
      expect((yield* send(app.url, "DELETE", `${NETWORKS}/${id}`, undefined, auth)).status).toBe(404)
      expect((yield* send(app.url, "PATCH", `${NETWORKS}/${id}`, { name: "back" }, auth)).status).toBe(404)
      expect((yield* send(app.url, "PATCH", `${NETWORKS}/abc`, { name: "back" }, auth)).status).toBe(404)
    }))

  it.scopedLive("another member's network is 404 and stays as it was; API tokens 401; foreign origins and paused accounts 403", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      yield* app.service(Accounts).create("bob", PASSWORD).pipe(Effect.orDie)
      const bobLogin = yield* postJson(`${app.url}/api/auth/login/token`, { username: "bob", password: PASSWORD })
      const bob = bearer((yield* jsonOf(bobLogin)).access_token as string)
      const bobs = yield* send(app.url, "POST", NETWORKS, libera, bob)
      expect(bobs.status).toBe(201)
      const alice = bearer(yield* passwordToken(app.url))

      const path = `${NETWORKS}/${bobs.json.id as number}`
      expect((yield* send(app.url, "PATCH", path, { name: "mine now" }, alice)).status).toBe(404)
      expect((yield* send(app.url, "DELETE", path, undefined, alice)).status).toBe(404)
      expect((yield* send(app.url, "GET", NETWORKS, undefined, alice)).json).toEqual({ networks: [] })
      expect((yield* send(app.url, "GET", NETWORKS, undefined, bob)).json.networks).toEqual([bobs.json])

      const api = bearer(yield* apiToken(app))
      for (const [method, target] of [["GET", NETWORKS], ["POST", NETWORKS], ["PATCH", path], ["DELETE", path]] as const) {
        const res = yield* send(app.url, method, target, method === "GET" || method === "DELETE" ? undefined : libera, api)
        expect(res).toMatchObject({ status: 401, json: { error: "invalid_token" } })
      }
      expect((yield* send(app.url, "GET", NETWORKS, undefined, {})).status).toBe(401)

      // The session cookie: writes need the service's own Origin; a foreign one is refused whatever the credential.
      const jar = yield* signedIn(app.url)
      const noOrigin = yield* send(app.url, "POST", NETWORKS, libera, jar.header())
      expect(noOrigin.status).toBe(403)
      const foreign = yield* send(app.url, "POST", NETWORKS, libera, { ...jar.header(), origin: "https://evil.example" })
      expect(foreign.status).toBe(403)
      expect((yield* send(app.url, "POST", NETWORKS, libera, { ...alice, origin: "https://evil.example" })).status).toBe(403)
      const bySession = yield* send(app.url, "POST", NETWORKS, libera, { ...jar.header(), origin: app.url })
      expect(bySession.status).toBe(201)

      yield* app.service(Accounts).setStatus("alice", "paused").pipe(Effect.orDie)
      const mine = `${NETWORKS}/${bySession.json.id as number}`
      for (const [method, target, body] of [["POST", NETWORKS, { ...libera, name: "more" }], ["PATCH", mine, { name: "x" }], ["DELETE", mine, undefined]] as const) {
        expect(yield* send(app.url, method, target, body, alice)).toMatchObject({ status: 403, json: { error: "account_paused" } })
      }
      const still = yield* send(app.url, "GET", NETWORKS, undefined, alice)
      expect(still.status).toBe(200)
      expect(still.json.networks).toEqual([bySession.json])
    }))
})

describe(`/api/networks over real network actors on ${describeMode}`, () => {
  it.scopedLive("an edit of the connection settings reconnects with them; a rename keeps the connection and reaches the tabs", () =>
    Effect.gen(function*() {
      yield* Effect.locallyScoped(FiberRef.currentMinimumLogLevel, LogLevel.Warning)
      const first = yield* FakeIrcServer.make()
      const second = yield* FakeIrcServer.make()
      const settings = yield* settingsFrom(yield* testEnvironment({ HOST: "127.0.0.1" }))
      const context = yield* Layer.build(makeAppLayer(settings, NetworkActorsLive).pipe(Layer.orDie))
      const url = Context.get(context, HttpAddress).url
      yield* Context.get(context, Accounts).create("alice", PASSWORD).pipe(Effect.orDie)
      const auth = bearer(yield* passwordToken(url))
      const tab = yield* connect(url, { headers: auth })
      expect((yield* tab.next()).type).toBe("hello")

      const created = yield* send(url, "POST", NETWORKS, { name: "fake", host: "127.0.0.1", port: first.port, tls: false, nick: "alice" }, auth)
      expect(created.status).toBe(201)
      const id = created.json.id as number
      const conn = yield* first.nextConnection("10 seconds")
      expect((yield* conn.register("alice")).nick).toBe("alice")
      yield* tab.until((f) => f.type === "network" && (f.network as { state: string }).state === "connected")

      // A rename: the same connection, and the tabs hear the new name.
      const renamed = yield* send(url, "PATCH", `${NETWORKS}/${id}`, { name: "renamed" }, auth)
      expect(renamed.json).toMatchObject({ name: "renamed", state: "connected", currentNick: "alice" })
      expect((yield* tab.until((f) => f.type === "network")).at(-1)).toEqual({
        type: "network",
        network: { id, name: "renamed", state: "connected", nick: "alice", features: NONE }
      })
      expect(yield* conn.isOpen).toBe(true)
      expect((yield* first.stats).accepted).toBe(1)

      // New port, nick and password: the old connection quits, a new one registers with them.
      const moved = yield* send(url, "PATCH", `${NETWORKS}/${id}`, { port: second.port, nick: "alice2", password: "pw-2" }, auth)
      expect(moved.status).toBe(200)
      yield* conn.waitClosed("10 seconds")
      const again = yield* second.nextConnection("10 seconds")
      const registration = yield* again.register()
      expect(registration).toMatchObject({ clientNick: "alice2", pass: "pw-2" })
      const back = yield* tab.until((f) => f.type === "network" && (f.network as { state: string }).state === "connected")
      expect(back.at(-1)).toEqual({
        type: "network",
        network: { id, name: "renamed", state: "connected", nick: "alice2", features: NONE }
      })
      const listed = (yield* send(url, "GET", NETWORKS, undefined, auth)).json.networks as ReadonlyArray<Record<string, unknown>>
      expect(listed).toEqual([expect.objectContaining({ id, port: second.port, nick: "alice2", currentNick: "alice2", hasPassword: true })])
      expect((yield* first.stats).accepted).toBe(1)
    }))
})
