/**
 * Web Push end to end against a local push service (docs/decisions/web.md): the
 * VAPID key, registering and deleting subscriptions with every refusal, a direct message delivered as an aes128gcm
 * message the test opens with the subscription's own keys (RFC 8291) under a valid VAPID signature (RFC 8292),
 * nothing while a tab is focused, a subscription deleted when its credential is revoked and when the push service
 * answers 410; and the pure rule of which messages notify.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import type { MessageRecord } from "../../../src/schema/SocketFrame.js"
import { MessageWriter } from "../../../src/services/history/MessageWriter.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import { highlights, notifies } from "../../../src/services/push/WebPush.js"
import { eventually } from "../../support/Eventually.js"
import { describeMode } from "../../support/TestDatabase.js"
import { apiToken, bearer, passwordToken, postJsonAs, signedIn } from "../auth/MemberHarness.js"
import { fetchP, jsonOf, type OAuthApp, postJson, startOAuthApp } from "../oauth/OAuthHarness.js"
import { connect } from "../ws/SocketClient.js"
import * as LocalPushService from "./LocalPushService.js"

const network = (app: OAuthApp) =>
  app.service(Networks).add("alice", {
    name: "testnet",
    host: "irc.test",
    port: 6667,
    tls: false,
    tlsInsecure: false,
    nick: "alice",
    username: Option.none(),
    realname: Option.none(),
    serverPassword: Option.none(),
    sasl: Option.none(),
    join: []
  }).pipe(Effect.orDie)

/** A direct message from bob, stored as the actors store one. */
const dm = (app: OAuthApp, networkId: number, text: string) =>
  Effect.gen(function*() {
    const writer = app.service(MessageWriter)
    yield* writer.append({
      networkId,
      target: "bob",
      targetFolded: "bob",
      bufferKind: "dm",
      time: new Date(),
      kind: "privmsg",
      nick: "bob",
      text,
      self: false
    })
    yield* writer.flush
  })

const subscriptionCount = (app: OAuthApp, id: number) =>
  Effect.map(app.sql<{ n: number }>`SELECT count(*)::int AS n FROM push_subscriptions WHERE id = ${id}`, (rows) => rows[0]!.n).pipe(
    Effect.orDie
  )

describe(`Web Push on ${describeMode}`, () => {
  it.scopedLive("a direct message reaches the push service encrypted to the subscription, not while a tab is focused; revocation and 410 delete", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({ BELAY_PUSH_INSECURE_ENDPOINTS: "true" })
      const pushService = yield* LocalPushService.make
      const networkId = yield* network(app)
      const token = yield* passwordToken(app.url)

      const key = yield* jsonOf(yield* fetchP(`${app.url}/api/push/vapid-public-key`, { headers: bearer(token) }))
      const publicKey = key.publicKey as string
      expect(Buffer.from(publicKey, "base64url")).toHaveLength(65)
      expect(Buffer.from(publicKey, "base64url")[0]).toBe(4)

      const browser = pushService.subscription("tab")
      const created = yield* postJson(`${app.url}/api/push/subscriptions`, browser.json, bearer(token))
      expect(created.status).toBe(201)
      const { id } = (yield* jsonOf(created)) as { id: number }

      yield* dm(app, networkId, "psst, are you there?")
      const pushed = yield* pushService.next
      expect(pushed.path).toBe(browser.path)
      expect(pushed.headers["content-encoding"]).toBe("aes128gcm")
      expect(Number(pushed.headers["ttl"])).toBeGreaterThan(0)
      const vapid = LocalPushService.verifyVapid(pushed.headers["authorization"] as string)
      expect(vapid).toMatchObject({ valid: true, key: publicKey, claims: { aud: pushService.base } })
      const payload = JSON.parse(LocalPushService.decrypt(browser.keys, pushed.body)) as Record<string, unknown>
      expect(payload).toMatchObject({ type: "message", title: "bob", body: "psst, are you there?", networkId, target: "bob" })

      // A focused tab holds notifications back; once it reports it lost focus they flow again.
      const tab = yield* connect(app.url, { headers: bearer(token) })
      expect((yield* tab.next()).type).toBe("hello")
      yield* tab.send({ type: "focus", focused: true })
      // The call is answered after the focus frame was read: frames of one socket are read in order.
      yield* tab.call("list_networks")
      yield* dm(app, networkId, "while you watch")
      yield* tab.until((f) => f.type === "message" && (f.message as MessageRecord).text === "while you watch")
      yield* tab.send({ type: "focus", focused: false })
      yield* tab.call("list_networks")
      yield* dm(app, networkId, "now you are away")
      const second = yield* pushService.next
      expect(JSON.parse(LocalPushService.decrypt(browser.keys, second.body))).toMatchObject({ body: "now you are away" })

      // Revoking the credential that registered it deletes it.
      expect((yield* postJson(`${app.url}/api/auth/logout`, {}, bearer(token))).status).toBe(200)
      yield* eventually("the subscription is deleted", subscriptionCount(app, id), (n) => n === 0)

      // A push service answering 410 Gone: deleted too (RFC 8030 §7.3).
      const other = yield* passwordToken(app.url)
      const gone = pushService.subscription("gone")
      pushService.answer(gone.path, 410)
      const goneId = ((yield* jsonOf(yield* postJson(`${app.url}/api/push/subscriptions`, gone.json, bearer(other))))) as { id: number }
      yield* dm(app, networkId, "anyone?")
      expect((yield* pushService.next).path).toBe(gone.path)
      yield* eventually("the gone subscription is deleted", subscriptionCount(app, goneId.id), (n) => n === 0)
    }), { timeout: 60_000 })

  it.scopedLive("deny: an endpoint on a refused address is refused at registration and removed at sending; an opened one gets its push", () =>
    Effect.gen(function*() {
      const pushService = yield* LocalPushService.make
      const port = new URL(pushService.base).port
      const app = yield* startOAuthApp({
        BELAY_PUSH_INSECURE_ENDPOINTS: "true",
        BELAY_PRIVATE_DESTINATIONS: "deny",
        BELAY_DESTINATION_EXCEPTIONS: `127.0.0.1:${port}`
      })
      const networkId = yield* network(app)
      const token = yield* passwordToken(app.url)

      // The same push service by a name no exception opens (the exception names its address): refused, naming the class.
      const hidden = pushService.subscription("hidden")
      const refused = yield* postJson(
        `${app.url}/api/push/subscriptions`,
        { ...hidden.json, endpoint: hidden.json.endpoint.replace("127.0.0.1", "localhost") },
        bearer(token)
      )
      expect(refused.status).toBe(400)
      expect(String((yield* jsonOf(refused)).error_description)).toMatch(/^endpoint: .*loopback/)

      const browser = pushService.subscription("tab")
      expect((yield* postJson(`${app.url}/api/push/subscriptions`, browser.json, bearer(token))).status).toBe(201)
      // A subscription stored before the instance was locked down, on a port no exception opens.
      const tokenId = (yield* app.sql<{ id: number }>`SELECT id FROM oauth_tokens WHERE account_id = ${app.accountId}`.pipe(Effect.orDie))[0]!.id
      const stale = `http://127.0.0.1:${Number(port) + 1}/push/stale`
      yield* app.sql`
        INSERT INTO push_subscriptions (account_id, oauth_token_id, endpoint, p256dh, auth, created_at)
        VALUES (${app.accountId}, ${tokenId}, ${stale}, ${browser.json.keys.p256dh}, ${browser.json.keys.auth}, now())`.pipe(Effect.orDie)

      yield* dm(app, networkId, "through the guard")
      const pushed = yield* pushService.next
      expect(pushed.path).toBe(browser.path)
      expect(JSON.parse(LocalPushService.decrypt(browser.keys, pushed.body))).toMatchObject({ body: "through the guard" })
      yield* eventually(
        "the refused subscription removed",
        app.sql<{ n: number }>`SELECT count(*)::int AS n FROM push_subscriptions WHERE endpoint = ${stale}`.pipe(Effect.orDie),
        (rows) => rows[0]!.n === 0,
        "10 seconds"
      )
    }))

  it.scopedLive("registration: https only unless allowed, keys checked, API tokens 401, cookie from the same origin, delete 204 then 404; a session's subscriptions end with it", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const pushService = yield* LocalPushService.make
      const token = yield* passwordToken(app.url)
      const browser = pushService.subscription("tab")
      const post = (body: unknown, headers: Record<string, string> = bearer(token)) =>
        Effect.map(postJson(`${app.url}/api/push/subscriptions`, body, headers), (res) => res.status)

      expect(yield* post(browser.json)).toBe(400)
      const https = { ...browser.json, endpoint: "https://push.example/abc" }
      expect(yield* post({ ...https, keys: { ...https.keys, p256dh: "AAAA" } })).toBe(400)
      expect(yield* post({ ...https, keys: { ...https.keys, auth: "not base64url!" } })).toBe(400)
      expect(yield* post({ endpoint: "https://push.example/abc" })).toBe(400)
      expect(yield* post(https, bearer(yield* apiToken(app)))).toBe(401)
      expect((yield* fetchP(`${app.url}/api/push/vapid-public-key`, { headers: bearer(yield* apiToken(app, "other")) })).status).toBe(401)
      expect((yield* fetchP(`${app.url}/api/push/vapid-public-key`)).status).toBe(401)

      const created = yield* postJson(`${app.url}/api/push/subscriptions`, https, bearer(token))
      expect(created.status).toBe(201)
      const { id } = (yield* jsonOf(created)) as { id: number }
      const del = (subscription: number) =>
        Effect.map(fetchP(`${app.url}/api/push/subscriptions/${subscription}`, { method: "DELETE", headers: bearer(token) }), (r) => r.status)
      expect(yield* del(id)).toBe(204)
      expect(yield* del(id)).toBe(404)

      // With the session cookie: same origin only; signing out deletes what the session registered.
      const jar = yield* signedIn(app.url)
      expect((yield* postJsonAs(app.url, jar, "/api/push/subscriptions", https, { origin: "https://evil.example" })).status).toBe(403)
      const bySession = yield* postJsonAs(app.url, jar, "/api/push/subscriptions", { ...https, endpoint: "https://push.example/session" })
      expect(bySession.status).toBe(201)
      expect((yield* postJsonAs(app.url, jar, "/api/auth/logout", {})).status).toBe(200)
      expect(yield* subscriptionCount(app, bySession.json.id as number)).toBe(0)
    }))

  describe("which messages notify", () => {
    const heard = (record: Partial<MessageRecord>, bufferKind: "channel" | "dm" | "server" = "channel", selfNick: string | null = "alice") => ({
      accountId: 1,
      bufferKind,
      selfNick,
      storedHere: true,
      record: {
        id: 1,
        networkId: 1,
        target: bufferKind === "dm" ? "bob" : "#belay",
        time: "2025-01-01T00:00:00.000Z",
        kind: "privmsg",
        nick: "bob",
        text: "hello",
        self: false,
        ...record
      } as MessageRecord
    })
    const cases: ReadonlyArray<readonly [string, ReturnType<typeof heard>, boolean]> = [
      ["a direct message", heard({}, "dm"), true],
      ["a direct action", heard({ kind: "action", text: "waves" }, "dm"), true],
      ["a direct notice (services and bots)", heard({ kind: "notice" }, "dm"), false],
      ["our own direct message", heard({ self: true }, "dm"), false],
      ["a channel line naming us", heard({ text: "alice: lunch?" }), true],
      ["naming us in other case", heard({ text: "hey ALICE" }), true],
      ["a longer nick that starts with ours", heard({ text: "alice_ said so" }), false],
      ["a channel line not naming us", heard({ text: "lunch?" }), false],
      ["naming us while not connected", heard({ text: "alice?" }, "channel", null), false],
      ["a join", heard({ kind: "join", text: "" }), false],
      ["the server buffer", heard({ text: "alice" }, "server"), false]
    ]
    for (const [name, message, expected] of cases) {
      it(name, () => expect(notifies(message)).toBe(expected))
    }
    it("highlights are whole nicks with IRC nick characters", () => {
      expect(highlights("@alice hi", "alice")).toBe(true)
      expect(highlights("[alice] hi", "alice")).toBe(false)
      expect(highlights("alice", "alice")).toBe(true)
      expect(highlights("malice", "alice")).toBe(false)
      expect(highlights("a|ice", "a|ice")).toBe(true)
      expect(highlights("anything", "")).toBe(false)
    })
  })
})
