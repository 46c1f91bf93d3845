/**
 * soju.im/webpush end to end (real actor, fake IRC server, real database, a local push service): Goguma's connect
 * sequence as it sends it (CAP LS 302, NICK, USER, one CAP REQ per capability, SASL PLAIN without waiting for `+`,
 * BOUNCER BIND, CAP END), the web's VAPID key in ISUPPORT, `WEBPUSH REGISTER` with Dart's padded base64url keys; then
 * a direct message and a highlight reach the push service as one IRC line each, encrypted to the subscription
 * (opened here by the test's own RFC 8291 decoder) in a body of exactly RECORD_BYTES, under a valid VAPID signature;
 * nothing for a plain channel message or for a buffer marked read within the grace, and `MARKREAD` once a pushed
 * buffer is read. Every FAIL of the extension, the account's limit, UNREGISTER; a private endpoint refused at
 * registration and a refused stored one removed at sending; and the subscriptions of a revoked API or OAuth token and
 * of a password sign-in ended by a recovery deleted.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Accounts } from "../../src/services/identity/Accounts.js"
import { AccountLimits } from "../../src/services/identity/AccountLimits.js"
import { ApiTokens } from "../../src/services/identity/ApiTokens.js"
import { RECORD_BYTES } from "../../src/services/push/IrcPush.js"
import { WebPush } from "../../src/services/push/WebPush.js"
import * as LocalPushService from "../http/push/LocalPushService.js"
import { eventually } from "../support/Eventually.js"
import { type ClientLine, connectClient, parseClientLine, saslPlain } from "../support/IrcTestClient.js"
import { CAPS, PASSWORD, saslClient, startListenerApp, welcomedClient } from "../support/IrcListenerApp.js"
import { describeMode } from "../support/TestDatabase.js"

/** The capabilities Goguma requests (lib/client.dart `_getDefaultCaps`, a network connection: no -notify). */
const GOGUMA_CAPS = [
  "away-notify",
  "batch",
  "echo-message",
  "extended-monitor",
  "labeled-response",
  "message-tags",
  "multi-prefix",
  "sasl",
  "server-time",
  "setname",
  "draft/chathistory",
  "draft/extended-monitor",
  "draft/pre-away",
  "draft/read-marker",
  "soju.im/bouncer-networks",
  "soju.im/no-implicit-names",
  "soju.im/webpush"
]

/** Dart's `base64Url.encode`: the URL-safe alphabet, padded. */
const dartBase64Url = (bytes: Buffer) => bytes.toString("base64").replace(/\+/g, "-").replace(/\//g, "_")

type Phone = ReturnType<Effect.Effect.Success<typeof LocalPushService.make>["subscription"]>

const keysOf = (phone: Phone) =>
  `p256dh=${dartBase64Url(phone.keys.publicKey)};auth=${dartBase64Url(phone.keys.auth)}`

const WEBPUSH_CAPS = `${CAPS} soju.im/webpush`

/** The reply to the client's last command: a WEBPUSH echo, a FAIL or a numeric. */
const answer = (c: { readonly next: (m: (l: ClientLine) => boolean) => Effect.Effect<ClientLine, Error> }) =>
  c.next((l) => l.command === "WEBPUSH" || l.command === "FAIL" || l.command === "421")

const rows = (sql: SqlClient.SqlClient) =>
  sql<{ endpoint: string; kind: string; networkId: number | null; apiTokenId: number | null; passwordOwner: boolean; caps: string | null }>`
    SELECT endpoint, kind, network_id AS "networkId", api_token_id AS "apiTokenId", password_owner AS "passwordOwner",
           irc_caps AS caps
    FROM push_subscriptions ORDER BY id`.pipe(Effect.orDie)

describe(`soju.im/webpush on ${describeMode}`, () => {
  it.scopedLive("Goguma's sequence, VAPID, REGISTER; a DM and a highlight pushed as IRC lines, nothing once read, MARKREAD", () =>
    Effect.gen(function*() {
      const pushService = yield* LocalPushService.make
      const app = yield* startListenerApp({ env: { BELAY_PUSH_INSECURE_ENDPOINTS: "true" } })
      const publicKey = app.get(WebPush).publicKey

      // Goguma sends its whole registration at once (lib/client.dart `_register`, soju's contrib/clients.md).
      const c = yield* connectClient(app.port)
      yield* c.send(
        "CAP LS 302",
        "NICK alice",
        "USER alice 0 * alice",
        ...GOGUMA_CAPS.map((cap) => `CAP REQ ${cap}`),
        "AUTHENTICATE PLAIN",
        `AUTHENTICATE ${saslPlain("alice", PASSWORD)}`,
        `BOUNCER BIND ${app.networkId}`,
        "CAP END"
      )
      const welcome = yield* c.until("422", "10 seconds")
      expect(welcome.some((l) => l.command === "903")).toBe(true)
      expect(welcome.some((l) => l.command === "CAP" && l.params[1] === "ACK" && l.params[2] === "soju.im/webpush")).toBe(true)
      expect(welcome.find((l) => l.command === "001")).toBeDefined()
      // soju's VAPID token: the web's key, base64url of the uncompressed P-256 point.
      const tokens = welcome.filter((l) => l.command === "005").flatMap((l) => l.params)
      expect(tokens).toContain(`VAPID=${publicKey}`)
      expect(Buffer.from(publicKey, "base64url")).toHaveLength(65)
      yield* c.until("366")
      // ISUPPORT again says the same (the key never changes during a connection).
      yield* c.send("ISUPPORT", "PING isupport")
      const again = yield* c.until((l) => l.command === "PONG" && l.params.at(-1) === "isupport")
      expect(again.filter((l) => l.command === "005").flatMap((l) => l.params)).toContain(`VAPID=${publicKey}`)

      const phone = pushService.subscription("goguma")
      yield* c.send(`WEBPUSH REGISTER ${phone.json.endpoint} ${keysOf(phone)}`)
      expect((yield* answer(c)).params).toEqual(["REGISTER", phone.json.endpoint])
      const sql = app.get(SqlClient.SqlClient)
      expect(yield* rows(sql)).toEqual([{
        endpoint: phone.json.endpoint,
        kind: "irc",
        networkId: app.networkId,
        apiTokenId: null,
        passwordOwner: true,
        caps: "server-time message-tags"
      }])

      // A direct message: pushed after the grace, as the line a client with these capabilities reads.
      yield* app.upstream.send(":bob!b@bob.host PRIVMSG alice :are you there?")
      const live = yield* c.next((l) => l.command === "PRIVMSG" && l.params[1] === "are you there?")
      const pushed = yield* pushService.next
      expect(pushed.path).toBe(phone.path)
      expect(pushed.headers["content-encoding"]).toBe("aes128gcm")
      expect(pushed.headers["urgency"]).toBe("high")
      expect(pushed.body.length).toBe(RECORD_BYTES)
      expect(pushed.body.readUInt32BE(16)).toBe(RECORD_BYTES)
      expect(LocalPushService.verifyVapid(pushed.headers["authorization"] as string)).toMatchObject({
        valid: true,
        key: publicKey,
        claims: { aud: pushService.base }
      })
      const line = parseClientLine(LocalPushService.decrypt(phone.keys, pushed.body))
      expect(line).toMatchObject({ source: "bob", command: "PRIVMSG", params: ["alice", "are you there?"] })
      expect(line.tags.msgid).toBe(live.tags.msgid)
      expect(line.tags.time).toBe(live.tags.time)

      // A highlight in a channel.
      yield* app.upstream.send(":carol!c@carol.host PRIVMSG #belay :alice: a word?")
      const highlight = parseClientLine(LocalPushService.decrypt(phone.keys, (yield* pushService.next).body))
      expect(highlight).toMatchObject({ source: "carol", command: "PRIVMSG", params: ["#belay", "alice: a word?"] })

      // Nothing for a plain channel message, nor for a DM a client marks read within the grace; the next push is
      // the message after them.
      yield* app.upstream.send(":carol!c@carol.host PRIVMSG #belay :just chatting")
      yield* app.upstream.send(":bob!b@bob.host PRIVMSG alice :seen on the screen")
      const seen = yield* c.next((l) => l.command === "PRIVMSG" && l.params[1] === "seen on the screen")
      yield* c.send(`MARKREAD bob timestamp=${seen.tags.time}`)
      yield* c.next((l) => l.command === "MARKREAD" && l.params[0] === "bob")
      // The read marker passed a pushed DM: the phone is told, as soju tells it, to take that notification down.
      const read = parseClientLine(LocalPushService.decrypt(phone.keys, (yield* pushService.next).body))
      expect(read).toMatchObject({ command: "MARKREAD", params: ["bob", `timestamp=${seen.tags.time}`] })
      yield* app.upstream.send(":bob!b@bob.host PRIVMSG alice :\u0001ACTION knocks\u0001")
      const after = parseClientLine(LocalPushService.decrypt(phone.keys, (yield* pushService.next).body))
      expect(after.params).toEqual(["alice", "\u0001ACTION knocks\u0001"])
    }), { timeout: 60_000 })

  it.scopedLive("every FAIL, the account's limit, UNREGISTER, case-insensitive subcommands, 421 without the capability", () =>
    Effect.gen(function*() {
      const pushService = yield* LocalPushService.make
      const app = yield* startListenerApp()
      const account = Option.getOrThrow(yield* app.get(Accounts).findByName("alice"))
      const sql = app.get(SqlClient.SqlClient)
      const c = yield* welcomedClient(app.port, "alice/fake@phone", PASSWORD, WEBPUSH_CAPS)
      const phone = pushService.subscription("a")
      const keys = keysOf(phone)
      const expectFail = (line: string, code: string, context: ReadonlyArray<string>, why: RegExp) =>
        Effect.gen(function*() {
          yield* c.send(line)
          const got = yield* answer(c)
          expect(got.command, got.raw).toBe("FAIL")
          expect(got.params.slice(0, 2 + context.length)).toEqual(["WEBPUSH", code, ...context])
          expect(got.params.at(-1)).toMatch(why)
        })

      yield* expectFail("WEBPUSH REGISTER", "INVALID_PARAMS", ["REGISTER", "*"], /Expected/)
      yield* expectFail("WEBPUSH REGISTER https://push.example/a", "INVALID_PARAMS", ["REGISTER", "https://push.example/a"], /Expected/)
      yield* expectFail(`WEBPUSH REGISTER https://push.example/a ${keys} extra`, "INVALID_PARAMS", ["REGISTER"], /Too many/)
      // http without BELAY_PUSH_INSECURE_ENDPOINTS, another scheme, no URL at all.
      yield* expectFail(`WEBPUSH REGISTER ${phone.json.endpoint} ${keys}`, "INVALID_PARAMS", ["REGISTER", phone.json.endpoint], /Invalid endpoint: .*https/)
      yield* expectFail(`WEBPUSH REGISTER ftp://push.example/a ${keys}`, "INVALID_PARAMS", ["REGISTER"], /Invalid endpoint/)
      yield* expectFail(`WEBPUSH REGISTER nowhere ${keys}`, "INVALID_PARAMS", ["REGISTER", "nowhere"], /Invalid endpoint/)
      // Keys: missing, not a point, a short secret.
      yield* expectFail("WEBPUSH REGISTER https://push.example/a auth=AAAA", "INVALID_PARAMS", ["REGISTER"], /Missing auth or p256dh/)
      yield* expectFail(`WEBPUSH REGISTER https://push.example/a p256dh=AAAA;auth=${dartBase64Url(phone.keys.auth)}`, "INVALID_PARAMS", ["REGISTER"], /Invalid keys: p256dh/)
      yield* expectFail(`WEBPUSH REGISTER https://push.example/a p256dh=${dartBase64Url(phone.keys.publicKey)};auth=c2hvcnQ`, "INVALID_PARAMS", ["REGISTER"], /Invalid keys: auth/)
      yield* expectFail("WEBPUSH FROB https://push.example/a", "INVALID_PARAMS", ["FROB", "https://push.example/a"], /Unknown subcommand/)
      yield* expectFail("WEBPUSH", "INVALID_PARAMS", ["*"], /Unknown subcommand/)
      yield* expectFail("WEBPUSH UNREGISTER", "INVALID_PARAMS", ["UNREGISTER", "*"], /Expected/)
      expect(yield* rows(sql)).toEqual([])

      // The account's push-subscriptions limit, browsers and IRC clients together; the same endpoint again is no
      // new one (it replaces the old, as the extension requires).
      yield* app.get(AccountLimits).set(account.id, { "push-subscriptions": 2 }).pipe(Effect.orDie)
      for (const name of ["a", "b"]) {
        yield* c.send(`webpush register https://push.example/${name} ${keys}`)
        expect((yield* answer(c)).params).toEqual(["REGISTER", `https://push.example/${name}`])
      }
      yield* expectFail(`WEBPUSH REGISTER https://push.example/c ${keys}`, "INTERNAL_ERROR", ["REGISTER", "https://push.example/c"], /Too many subscriptions \(at most 2\)/)
      yield* c.send(`WEBPUSH REGISTER https://push.example/a ${keys}`)
      expect((yield* answer(c)).params).toEqual(["REGISTER", "https://push.example/a"])
      expect((yield* rows(sql)).map((r) => r.endpoint)).toEqual(["https://push.example/a", "https://push.example/b"])

      // UNREGISTER echoes, also for an endpoint the account does not have.
      yield* c.send("WEBPUSH UNREGISTER https://push.example/a")
      expect((yield* answer(c)).params).toEqual(["UNREGISTER", "https://push.example/a"])
      yield* c.send("WEBPUSH UNREGISTER https://push.example/a")
      expect((yield* answer(c)).params).toEqual(["UNREGISTER", "https://push.example/a"])
      expect((yield* rows(sql)).map((r) => r.endpoint)).toEqual(["https://push.example/b"])

      // A control connection registers too, kept with no network: it is pushed nothing, as soju does.
      const control = yield* saslClient(app.port, "alice@control", PASSWORD, WEBPUSH_CAPS)
      yield* control.next("903")
      yield* control.send("CAP END")
      yield* control.until("422")
      yield* control.send(`WEBPUSH REGISTER https://push.example/control ${keys}`)
      expect((yield* answer(control)).params).toEqual(["REGISTER", "https://push.example/control"])
      expect((yield* rows(sql)).map((r) => [r.endpoint, r.networkId])).toEqual([
        ["https://push.example/b", app.networkId],
        ["https://push.example/control", null]
      ])
      yield* control.send("WEBPUSH UNREGISTER https://push.example/control")
      yield* answer(control)

      // Without the capability the command is unknown, as soju answers.
      const plain = yield* welcomedClient(app.port, "alice/fake@plain", PASSWORD)
      yield* plain.send(`WEBPUSH REGISTER https://push.example/z ${keys}`)
      const unknown = yield* answer(plain)
      expect(unknown.command).toBe("421")
      expect(unknown.params.slice(1)).toEqual(["WEBPUSH", "Unknown command"])
      expect((yield* rows(sql)).map((r) => r.endpoint)).toEqual(["https://push.example/b"])
    }), { timeout: 60_000 })

  it.scopedLive("deny: a private endpoint is refused at REGISTER; a refused stored one is removed at sending, an opened one pushed", () =>
    Effect.gen(function*() {
      const pushService = yield* LocalPushService.make
      // Loopback opened (the fake IRC server and the push service live there); 10.0.0.0/8 stays private.
      const app = yield* startListenerApp({
        env: { BELAY_PUSH_INSECURE_ENDPOINTS: "true", BELAY_PRIVATE_DESTINATIONS: "deny", BELAY_DESTINATION_EXCEPTIONS: "127.0.0.1/32" }
      })
      const sql = app.get(SqlClient.SqlClient)
      const c = yield* welcomedClient(app.port, "alice/fake@phone", PASSWORD, WEBPUSH_CAPS)
      const phone = pushService.subscription("phone")
      yield* c.send(`WEBPUSH REGISTER http://10.1.2.3/push ${keysOf(phone)}`)
      const refused = yield* answer(c)
      expect(refused.params.slice(0, 4)).toEqual(["WEBPUSH", "INVALID_PARAMS", "REGISTER", "http://10.1.2.3/push"])
      expect(refused.params.at(-1)).toMatch(/Invalid endpoint: .*private/)
      expect(yield* rows(sql)).toEqual([])

      yield* c.send(`WEBPUSH REGISTER ${phone.json.endpoint} ${keysOf(phone)}`)
      expect((yield* answer(c)).params).toEqual(["REGISTER", phone.json.endpoint])
      // One stored before the instance was locked down: the guard refuses it at sending, and it goes.
      const account = Option.getOrThrow(yield* app.get(Accounts).findByName("alice"))
      const stale = "http://10.1.2.3/push/stale"
      yield* sql`
        INSERT INTO push_subscriptions (account_id, password_owner, kind, network_id, irc_caps, endpoint, p256dh, auth, created_at)
        VALUES (${account.id}, true, 'irc', ${app.networkId}, '', ${stale}, ${phone.json.keys.p256dh}, ${phone.json.keys.auth},
                now())`.pipe(Effect.orDie)
      yield* app.upstream.send(":bob!b@bob.host PRIVMSG alice :through the guard")
      const pushed = yield* pushService.next
      expect(pushed.path).toBe(phone.path)
      expect(LocalPushService.decrypt(phone.keys, pushed.body)).toMatch(/ :bob PRIVMSG alice :through the guard$/)
      yield* eventually("the refused subscription removed", rows(sql), (all) => all.every((r) => r.endpoint !== stale), "10 seconds")
    }), { timeout: 60_000 })

  it.scopedLive("a revoked API or OAuth token's subscriptions go; a recovery ends the password sign-in's, not the token's", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp()
      const sql = app.get(SqlClient.SqlClient)
      const keys = keysOf((yield* LocalPushService.make).subscription("k"))
      const revoked = yield* app.get(ApiTokens).create("alice", "phone", "read-write").pipe(Effect.orDie)
      const kept = yield* app.get(ApiTokens).create("alice", "tablet", "read-write").pipe(Effect.orDie)
      const register = (user: string, secret: string, endpoint: string) =>
        Effect.gen(function*() {
          const c = yield* welcomedClient(app.port, user, secret, WEBPUSH_CAPS)
          yield* c.send(`WEBPUSH REGISTER ${endpoint} ${keys}`)
          expect((yield* answer(c)).params).toEqual(["REGISTER", endpoint])
        })
      yield* register("alice/fake@phone", revoked, "https://push.example/phone")
      yield* register("alice/fake@tablet", kept, "https://push.example/tablet")
      yield* register("alice/fake@laptop", PASSWORD, "https://push.example/laptop")
      // An OAuth access token (the web's password sign-in) as the secret.
      const login = yield* Effect.promise(() =>
        fetch(`${app.httpUrl}/api/auth/login/token`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ username: "alice", password: PASSWORD })
        }).then((r) => r.json() as Promise<{ access_token: string }>)
      )
      yield* register("alice/fake@watch", login.access_token, "https://push.example/watch")
      const endpoints = Effect.map(rows(sql), (all) => all.map((r) => r.endpoint))
      expect(yield* endpoints).toEqual([
        "https://push.example/phone",
        "https://push.example/tablet",
        "https://push.example/laptop",
        "https://push.example/watch"
      ])
      expect((yield* rows(sql)).map((r) => [r.apiTokenId !== null, r.passwordOwner])).toEqual([
        [true, false],
        [true, false],
        [false, true],
        [false, false]
      ])

      // Logout revokes the OAuth token.
      yield* Effect.promise(() =>
        fetch(`${app.httpUrl}/api/auth/logout`, { method: "POST", headers: { authorization: `Bearer ${login.access_token}` } })
      )
      yield* eventually("the OAuth token's subscription deleted", endpoints, (all) => !all.includes("https://push.example/watch"), "10 seconds")

      yield* app.get(ApiTokens).revoke("alice", "phone").pipe(Effect.orDie)
      yield* eventually("the revoked token's subscription deleted", endpoints, (all) => !all.includes("https://push.example/phone"), "10 seconds")
      expect(yield* endpoints).toEqual(["https://push.example/tablet", "https://push.example/laptop"])

      yield* app.get(Accounts).recover("alice", "a brand new password").pipe(Effect.orDie)
      yield* eventually("the password sign-in's subscription deleted", endpoints, (all) => all.length === 1, "10 seconds")
      expect(yield* endpoints).toEqual(["https://push.example/tablet"])
    }), { timeout: 60_000 })
})
