/**
 * The REST face of per-account limits (docs/contract.md "Account limits"), through the real HTTP stack: one past each
 * limit is 409 `{error: "quota_exceeded", limit, max, error_description}` and nothing is created — a network, an
 * autojoin list, a push subscription, a password-sign-in token.
 */
import * as Crypto from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { AccountLimits } from "../../src/services/identity/AccountLimits.js"
import { describeMode } from "../support/TestDatabase.js"
import { bearer, passwordToken } from "./auth/MemberHarness.js"
import { fetchP, PASSWORD, postJson, startOAuthApp, textOf } from "./oauth/OAuthHarness.js"

const send = (url: string, method: string, path: string, body: unknown, headers: Record<string, string>) =>
  Effect.gen(function*() {
    const res = yield* fetchP(`${url}${path}`, {
      method,
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body)
    })
    const text = yield* textOf(res)
    return { status: res.status, json: (text === "" ? {} : JSON.parse(text)) as Record<string, unknown> }
  })

const network = (name: string, channels: ReadonlyArray<string> = []) => ({
  name,
  host: "irc.libera.chat",
  port: 6697,
  tls: true,
  nick: "alice",
  channels
})

const count = (app: { readonly sql: Effect.Effect.Success<ReturnType<typeof startOAuthApp>>["sql"] }, table: string) =>
  Effect.map(app.sql<{ n: number }>`SELECT count(*)::int AS n FROM ${app.sql(table)}`.pipe(Effect.orDie), (r) => r[0]!.n)

describe(`409 quota_exceeded on ${describeMode}`, () => {
  it.scopedLive("networks, channels, push subscriptions and password sign-in tokens, one past the limit", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({ BELAY_ACCOUNT_MAX_NETWORKS: "1", BELAY_NETWORK_MAX_CHANNELS: "2" })
      const auth = bearer(yield* passwordToken(app.url))

      const first = yield* send(app.url, "POST", "/api/networks", network("one", ["#a", "#b"]), auth)
      expect(first.status).toBe(201)
      const second = yield* send(app.url, "POST", "/api/networks", network("two"), auth)
      expect(second).toEqual({
        status: 409,
        json: { error: "quota_exceeded", limit: "networks", max: 1, error_description: expect.stringContaining(`limit "networks"`) }
      })
      expect(yield* count(app, "networks")).toBe(1)

      const longer = yield* send(app.url, "PATCH", `/api/networks/${first.json.id}`, { channels: ["#a", "#b", "#c"] }, auth)
      expect(longer).toMatchObject({ status: 409, json: { error: "quota_exceeded", limit: "channels", max: 2 } })
      expect(yield* count(app, "channels")).toBe(2)

      const limits = app.service(AccountLimits)
      yield* limits.set(app.accountId, { "push-subscriptions": 0 })
      const subscription = {
        endpoint: "https://push.example.org/send/abc",
        // A real P-256 point: one off the curve is refused 400 before the limit is looked at (PushEndpoint.ts).
        keys: { p256dh: Crypto.createECDH("prime256v1").generateKeys().toString("base64url"), auth: Buffer.alloc(16, 1).toString("base64url") }
      }
      const push = yield* send(app.url, "POST", "/api/push/subscriptions", subscription, auth)
      expect(push).toMatchObject({ status: 409, json: { error: "quota_exceeded", limit: "push-subscriptions", max: 0 } })
      expect(yield* count(app, "push_subscriptions")).toBe(0)

      // One live token (the one signed in with above): at an `apps` limit of 1 the next sign-in is refused.
      yield* limits.set(app.accountId, { apps: 1 })
      const login = yield* postJson(`${app.url}/api/auth/login/token`, { username: "alice", password: PASSWORD })
      expect(login.status).toBe(409)
      expect(JSON.parse(yield* textOf(login))).toMatchObject({ error: "quota_exceeded", limit: "apps", max: 1 })
      expect(yield* count(app, "oauth_tokens")).toBe(1)
    }))
})
