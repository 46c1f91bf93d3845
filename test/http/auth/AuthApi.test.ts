/**
 * The REST routes of member sign-in (docs/decisions/web.md) over
 * HTTP against the whole app: `POST /api/auth/login/token`, `GET /api/auth/me`,
 * `POST /api/auth/logout` — every success shape and every refusal, for each credential
 * (session cookie, OAuth token, password-sign-in token, API token, none).
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { describeMode } from "../../support/TestDatabase.js"
import { fetchP, fixtureLayer, jsonOf, mcpStatus, OAuthFixture, PASSWORD, postForm, postJson, randomIp, startOAuthApp } from "../oauth/OAuthHarness.js"
import { apiToken, appToken, bearer, passwordToken, signedIn } from "./MemberHarness.js"

const me = (url: string, headers: Record<string, string>) => fetchP(`${url}/api/auth/me`, { headers })
const logout = (url: string, headers: Record<string, string>) => fetchP(`${url}/api/auth/logout`, { method: "POST", headers })

layer(fixtureLayer(), { excludeTestServices: true, timeout: "120 seconds" })(`/api/auth on ${describeMode}`, (it) => {
  it.effect("login/token: 200 {access_token, token_type, created_at}, no-store; the token works at /mcp and /api/auth/me", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const before = Math.floor(Date.now() / 1000)
      const res = yield* postJson(`${url}/api/auth/login/token`, { username: "alice", password: PASSWORD }, { "x-forwarded-for": randomIp() })
      expect(res.status).toBe(200)
      expect(res.headers.get("cache-control")).toBe("no-store")
      const body = yield* jsonOf(res)
      expect(Object.keys(body).sort()).toEqual(["access_token", "created_at", "token_type"])
      expect(body.token_type).toBe("Bearer")
      expect(body.created_at).toBeGreaterThanOrEqual(before - 1)
      const token = body.access_token as string
      expect(yield* mcpStatus(url, token)).toBe(200)
      expect(yield* jsonOf(yield* me(url, bearer(token)))).toEqual({
        account: { name: "alice", paused: false },
        credential: "password-token",
        client: null
      })
    }))

  it.effect("login/token: a wrong password, an unknown name, an empty password — one 401 invalid_credentials", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      for (const credentials of [
        { username: "alice", password: "not it at all" },
        { username: "nobody", password: PASSWORD },
        { username: "alice", password: "" }
      ]) {
        const res = yield* postJson(`${url}/api/auth/login/token`, credentials, { "x-forwarded-for": randomIp() })
        expect(res.status).toBe(401)
        expect(yield* jsonOf(res)).toEqual({ error: "invalid_credentials" })
      }
    }))

  it.effect("login/token: not JSON, missing fields, wrong types → 400 invalid_request; over 16 KiB → 413", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const target = `${url}/api/auth/login/token`
      const form = yield* postForm(target, { username: "alice", password: PASSWORD })
      expect(form.status).toBe(400)
      expect((yield* jsonOf(form)).error).toBe("invalid_request")
      for (const body of [{ username: "alice" }, { username: "alice", password: 7 }, ["alice", PASSWORD]]) {
        const res = yield* postJson(target, body)
        expect(res.status).toBe(400)
        expect((yield* jsonOf(res)).error).toBe("invalid_request")
      }
      const broken = yield* fetchP(target, { method: "POST", headers: { "content-type": "application/json" }, body: "{" })
      expect(broken.status).toBe(400)
      const huge = yield* postJson(target, { username: "alice", password: "x".repeat(17 * 1024) })
      expect(huge.status).toBe(413)
    }))

  it.effect("me: the session → credential session; an app's token → oauth with its client", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const jar = yield* signedIn(url)
      expect(yield* jsonOf(yield* me(url, jar.header()))).toEqual({
        account: { name: "alice", paused: false },
        credential: "session",
        client: null
      })
      const { token, clientId } = yield* appToken({ url })
      const res = yield* me(url, bearer(token))
      expect(res.status).toBe(200)
      expect(yield* jsonOf(res)).toEqual({
        account: { name: "alice", paused: false },
        credential: "oauth",
        client: { client_id: clientId, client_name: "Test App" }
      })
    }))

  it.effect("me and logout: an API token, a made-up token and no credential → 401 invalid_token with a Bearer challenge", () =>
    Effect.gen(function*() {
      const fixture = yield* OAuthFixture
      const api = yield* apiToken(fixture, "me-probe")
      expect(yield* mcpStatus(fixture.url, api)).toBe(200)
      for (const headers of [bearer(api), bearer("x".repeat(43)), {}]) {
        for (const res of [yield* me(fixture.url, headers), yield* logout(fixture.url, headers)]) {
          expect(res.status).toBe(401)
          expect(res.headers.get("www-authenticate")).toBe("Bearer error=\"invalid_token\"")
          const body = yield* jsonOf(res)
          expect(body.error).toBe("invalid_token")
          expect(typeof body.error_description).toBe("string")
        }
      }
      // The API token was refused, not revoked.
      expect(yield* mcpStatus(fixture.url, api)).toBe(200)
    }))

  it.effect("an Authorization header is judged alone: a bad bearer with a good session cookie is 401", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const jar = yield* signedIn(url)
      expect((yield* me(url, { ...jar.header(), ...bearer("y".repeat(43)) })).status).toBe(401)
    }))

  it.effect("logout with a password-sign-in token or an app's token revokes that token at once", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const password = yield* passwordToken(url)
      const { token } = yield* appToken({ url })
      for (const t of [password, token]) {
        const out = yield* logout(url, bearer(t))
        expect(out.status).toBe(200)
        expect(yield* jsonOf(out)).toEqual({ ok: true })
        expect(yield* mcpStatus(url, t)).toBe(401)
        expect((yield* me(url, bearer(t))).status).toBe(401)
      }
    }))

  it.effect("logout with the session: same origin only; ends the session and clears the cookie", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const jar = yield* signedIn(url)
      const foreign = yield* logout(url, { ...jar.header(), origin: "https://evil.example" })
      expect(foreign.status).toBe(403)
      const noOrigin = yield* logout(url, jar.header())
      expect(noOrigin.status).toBe(403)
      expect((yield* me(url, jar.header())).status).toBe(200)
      const out = yield* logout(url, { ...jar.header(), origin: url })
      expect(out.status).toBe(200)
      expect(out.headers.get("set-cookie")).toMatch(/^belay_session=; Max-Age=0/)
      expect((yield* me(url, jar.header())).status).toBe(401)
    }))

  it.effect("a paused account: me says paused", () =>
    Effect.gen(function*() {
      const fixture = yield* OAuthFixture
      const token = yield* passwordToken(fixture.url)
      const accounts = fixture.service(Accounts)
      yield* Effect.orDie(accounts.setStatus("alice", "paused"))
      const body = yield* jsonOf(yield* me(fixture.url, bearer(token)))
      yield* Effect.orDie(accounts.setStatus("alice", "active"))
      expect(body.account).toEqual({ name: "alice", paused: true })
    }))
})

describe(`/api/auth/login/token limits on ${describeMode}`, () => {
  it.scopedLive("more than 10 failures for one account (from many addresses) → 429 with Retry-After, even for the right password", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({ BELAY_TRUST_PROXY: "true" })
      const attempt = (password: string) =>
        postJson(`${app.url}/api/auth/login/token`, { username: "Alice", password }, { "x-forwarded-for": randomIp() })
      for (let i = 0; i < 10; i++) expect((yield* attempt("wrong password")).status).toBe(401)
      const limited = yield* attempt(PASSWORD)
      expect(limited.status).toBe(429)
      expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0)
      expect(Number(limited.headers.get("retry-after"))).toBeLessThanOrEqual(600)
      expect((yield* jsonOf(limited)).error).toBe("too_many_requests")
    }))

  it.scopedLive("more than 10 failures from one address (for many names) → 429; another address still signs in", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({ BELAY_TRUST_PROXY: "true" })
      const ip = "203.0.113.7"
      for (let i = 0; i < 10; i++) {
        const res = yield* postJson(`${app.url}/api/auth/login/token`, { username: `user${i}`, password: "wrong" }, { "x-forwarded-for": ip })
        expect(res.status).toBe(401)
      }
      const limited = yield* postJson(`${app.url}/api/auth/login/token`, { username: "alice", password: PASSWORD }, { "x-forwarded-for": ip })
      expect(limited.status).toBe(429)
      expect(limited.headers.get("retry-after")).not.toBeNull()
      const elsewhere = yield* postJson(`${app.url}/api/auth/login/token`, { username: "alice", password: PASSWORD }, { "x-forwarded-for": "203.0.113.8" })
      expect(elsewhere.status).toBe(200)
    }))
})
