/**
 * Lifetimes on Effect's Clock, through HTTP: the app is built under TestClock (set to now),
 * so `TestClock.adjust` moves time for every handler and for the prune job. Proves the
 * 10-minute code, the 1-hour pending registration (and that an approved one is kept), the
 * 15-minute approval record, unlimited tokens and the per-IP registration window.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { eventually } from "../../support/Eventually.js"
import { describeMode } from "../../support/TestDatabase.js"
import {
  approvalPage,
  approveOverHttp,
  authorizeUrl,
  CookieJar,
  decide,
  jsonOf,
  mcpStatus,
  newAuthorization,
  obtainCode,
  pkcePair,
  postJson,
  redeem,
  registerClient,
  signIn,
  startOAuthApp,
  textOf
} from "./OAuthHarness.js"

/** The app on TestClock, starting at the wall-clock time. */
const startOnTestClock = (env: Record<string, string> = {}) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(Date.now())
    return yield* startOAuthApp(env)
  })

describe(`OAuth lifetimes on TestClock, ${describeMode}`, () => {
  it.scoped("a code redeems at 9:59 and is invalid_grant at 10:01 (and then spent)", () =>
    Effect.gen(function*() {
      const app = yield* startOnTestClock()
      const early = yield* obtainCode(app)
      yield* TestClock.adjust("599 seconds")
      expect((yield* redeem(app.url, early)).status).toBe(200)

      const late = yield* obtainCode(app, { jar: early.jar })
      yield* TestClock.adjust("601 seconds")
      const expired = yield* redeem(app.url, late)
      expect(expired.status).toBe(400)
      expect((yield* jsonOf(expired)).error).toBe("invalid_grant")
    }))

  // A day of TestClock runs every prune job hundreds of times; 400 days would take minutes.
  it.scoped("a token never expires: still accepted a day later (longer than any usual expires_in)", () =>
    Effect.gen(function*() {
      const app = yield* startOnTestClock()
      const grant = yield* obtainCode(app)
      const token = (yield* jsonOf(yield* redeem(app.url, grant))).access_token as string
      yield* TestClock.adjust("25 hours")
      expect(yield* mcpStatus(app.url, token)).toBe(200)
    }))

  it.scoped("an unapproved registration is gone after an hour (invalid_client, error page); an approved one is kept", () =>
    Effect.gen(function*() {
      const app = yield* startOnTestClock()
      const pending = yield* registerClient(app.url)
      const approved = yield* obtainCode(app)
      yield* TestClock.adjust("59 minutes")
      const stillThere = yield* app.sql<{ n: number }>`
        SELECT count(*)::int AS n FROM oauth_clients WHERE client_id = ${pending.client_id}`
      expect(stillThere[0]!.n).toBe(1)

      yield* TestClock.adjust("6 minutes")
      // the prune job (every 5 minutes on the Clock) deleted the row itself
      const rows = yield* eventually(
        "the prune job deleting the expired registration",
        app.sql<{ clientId: string }>`SELECT client_id AS "clientId" FROM oauth_clients`,
        (rows) => rows.length === 1,
        "5 seconds"
      )
      expect(rows.map((r) => r.clientId)).toEqual([approved.clientId])

      for (const path of ["/api/oauth/token", "/api/oauth/revoke"]) {
        const res = yield* postJson(`${app.url}${path}`, {
          grant_type: "authorization_code",
          client_id: pending.client_id,
          code: "x",
          redirect_uri: "http://127.0.0.1/cb",
          code_verifier: "a".repeat(43),
          token: "y"
        })
        expect(res.status).toBe(401)
        expect((yield* jsonOf(res)).error).toBe("invalid_client")
      }
      const { challenge } = pkcePair()
      const page = yield* approvalPage(
        authorizeUrl(app.url, { client_id: pending.client_id, redirect_uri: "http://127.0.0.1/cb", code_challenge: challenge }),
        approved.jar
      )
      expect(page.res.status).toBe(400)
      expect(page.res.headers.get("location")).toBeNull()

      // approved at minute 0, still working at minute 125
      yield* TestClock.adjust("60 minutes")
      const again = yield* obtainCode(app, { jar: approved.jar })
      expect((yield* redeem(app.url, again)).status).toBe(200)
    }))

  it.scoped("an approval page opened at minute 59 and approved at minute 61 gives an error page, not a code", () =>
    Effect.gen(function*() {
      const app = yield* startOnTestClock()
      const { authorize } = yield* newAuthorization(app.url)
      const jar = new CookieJar()
      yield* signIn(app.url, authorize, jar)
      yield* TestClock.adjust("59 minutes")
      const page = yield* approvalPage(authorize, jar)
      expect(page.res.status).toBe(200)
      yield* TestClock.adjust("2 minutes")
      const res = yield* decide(app.url, jar, { consent: page.consent!, csrf_token: page.csrf!, decision: "approve" })
      expect(res.status).toBe(400)
      expect(res.headers.get("location")).toBeNull()
      expect(yield* textOf(res)).toContain("expired")
    }))

  it.scoped("an approval page older than 15 minutes cannot be submitted", () =>
    Effect.gen(function*() {
      const app = yield* startOnTestClock()
      const { authorize } = yield* newAuthorization(app.url)
      const jar = new CookieJar()
      yield* signIn(app.url, authorize, jar)
      const page = yield* approvalPage(authorize, jar)
      yield* TestClock.adjust("16 minutes")
      const res = yield* decide(app.url, jar, { consent: page.consent!, csrf_token: page.csrf!, decision: "approve" })
      expect(res.status).toBe(400)
      expect(res.headers.get("location")).toBeNull()
      // a fresh page works
      expect((yield* approveOverHttp(app.url, authorize, jar)).status).toBe(303)
    }))

  it.scoped("5 registrations per IP per 10 minutes; the 6th is 429 with Retry-After; the window reopens", () =>
    Effect.gen(function*() {
      const app = yield* startOnTestClock()
      const register = () => postJson(`${app.url}/api/oauth/register`, { client_name: "A", redirect_uris: ["http://127.0.0.1/cb"] })
      for (let i = 0; i < 5; i++) {
        expect((yield* register()).status).toBe(201)
        yield* TestClock.adjust("1 minute")
      }
      // refused registrations do not count, nor does an X-Forwarded-For the server does not trust
      expect((yield* postJson(`${app.url}/api/oauth/register`, { client_name: "" })).status).toBe(400)
      const sixth = yield* postJson(`${app.url}/api/oauth/register`, { client_name: "A", redirect_uris: ["http://127.0.0.1/cb"] }, {
        "x-forwarded-for": "203.0.113.9"
      })
      expect(sixth.status).toBe(429)
      expect(sixth.headers.get("retry-after")).toBe("300")
      expect(yield* jsonOf(sixth)).toEqual({ error: "too_many_requests", error_description: expect.any(String) })
      yield* TestClock.adjust("300 seconds")
      expect((yield* register()).status).toBe(201)
      expect((yield* register()).status).toBe(429)
    }))
})
