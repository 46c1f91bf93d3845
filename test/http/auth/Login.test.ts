/**
 * Sign-in and sign-out pages over HTTP (docs/decisions/web.md):
 * `GET /login` (`?next=` same-origin paths only), `POST /login` and its refusals, the one
 * failure limit shared with the authorization page's sign-in, and `POST /logout`.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { PASSKEY_SCRIPT_PATH } from "../../../src/http/pages/PasskeyScript.js"
import { describeMode } from "../../support/TestDatabase.js"
import {
  CookieJar,
  fetchP,
  field,
  fixtureLayer,
  newAuthorization,
  OAuthFixture,
  PASSWORD,
  postForm,
  randomIp,
  signIn,
  startOAuthApp,
  textOf
} from "../oauth/OAuthHarness.js"
import { getPage, postSettings, signedIn, signInAtLogin } from "./MemberHarness.js"

layer(fixtureLayer(), { excludeTestServices: true, timeout: "120 seconds" })(`/login and /logout on ${describeMode}`, (it) => {
  it.effect("GET /login: the form (username, password, CSRF), passkey sign-in with its script, the pages' headers", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const res = yield* fetchP(`${url}/login?next=/settings/passkeys`)
      expect(res.status).toBe(200)
      expect(res.headers.get("x-frame-options")).toBe("DENY")
      expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
      expect(res.headers.get("set-cookie")).toMatch(/^belay_signin=/)
      const html = yield* textOf(res)
      expect(html).toContain("<form method=\"post\" action=\"/login\">")
      expect(field(html, "return_to")).toBe("/settings/passkeys")
      expect(html).toContain("data-passkey-sign-in data-options=\"/login/passkey/options\" data-submit=\"/login/passkey\"")
      expect(html).toContain("data-next=\"/settings/passkeys\"")
      const script = yield* fetchP(`${url}${PASSKEY_SCRIPT_PATH}`)
      expect(script.status).toBe(200)
      expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
      expect(script.headers.get("cache-control")).toContain("immutable")
      expect(yield* textOf(script)).toContain("navigator.credentials.get")
      expect((yield* fetchP(`${url}/assets/passkeys.nope.js`)).status).toBe(404)
    }))

  it.effect("?next= must be a same-origin path: absolute, protocol-relative and backslash forms fall back to /", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      for (const next of ["https://evil.example/", "//evil.example/x", "/\\evil.example", "settings", "/a b"]) {
        const html = yield* textOf(yield* fetchP(`${url}/login?next=${encodeURIComponent(next)}`))
        expect(field(html, "return_to")).toBe("/")
      }
      const posted = yield* signInAtLogin(url, { next: "/settings/password?x=1" })
      expect(posted.res.status).toBe(303)
      expect(posted.res.headers.get("location")).toBe("/settings/password?x=1")
    }))

  it.effect("POST /login: 303 to next with a session cookie; a signed-in GET /login goes straight on", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const { jar, res } = yield* signInAtLogin(url)
      expect(res.status).toBe(303)
      expect(res.headers.get("location")).toBe("/")
      expect(res.headers.get("set-cookie")).toMatch(/^belay_session=[^;]+; Max-Age=2592000; Path=\/; HttpOnly; SameSite=Lax$/)
      const again = yield* fetchP(`${url}/login?next=/settings/api-tokens`, { headers: jar.header() })
      expect(again.status).toBe(303)
      expect(again.headers.get("location")).toBe("/settings/api-tokens")
      const home = yield* getPage(url, jar, "/")
      expect(home.res.status).toBe(200)
      expect(home.html).toContain("<div id=\"app\"></div>")
    }))

  it.effect("POST /login refusals: wrong password 401 (form again, no session), cross-origin 403, CSRF 403, unsafe return_to 400", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const wrong = yield* signInAtLogin(url, { password: "wrong password", headers: { "x-forwarded-for": randomIp() } })
      expect(wrong.res.status).toBe(401)
      expect(wrong.body).toContain("Wrong username or password.")
      expect(wrong.jar.cookies.has("belay_session")).toBe(false)

      const jar = new CookieJar()
      const html = yield* textOf(jar.take(yield* fetchP(`${url}/login`)))
      const good = { csrf_token: field(html, "csrf_token")!, return_to: "/", username: "alice", password: PASSWORD }
      const post = (fields: Record<string, string>, headers: Record<string, string>) =>
        Effect.map(postForm(`${url}/login`, fields, { ...jar.header(), ...headers }), (r) => r.status)
      expect(yield* post(good, { origin: "https://evil.example" })).toBe(403)
      expect(yield* post(good, {})).toBe(403)
      expect(yield* post({ ...good, csrf_token: "forged" }, { origin: url })).toBe(403)
      expect(yield* post({ ...good, return_to: "https://evil.example/" }, { origin: url })).toBe(400)
      expect(yield* post({ ...good, return_to: "//evil.example" }, { origin: url })).toBe(400)
      expect(yield* post(good, { origin: url })).toBe(303)
    }))

  it.effect("POST /logout with a same-origin Origin and no CSRF field ends the session: 303 /login, the old cookie no longer authenticates", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const requests = [
        (cookie: Record<string, string>) => fetchP(`${url}/logout`, { method: "POST", headers: { ...cookie, origin: url } }),
        (cookie: Record<string, string>) => postForm(`${url}/logout`, {}, { ...cookie, origin: url })
      ]
      for (const send of requests) {
        const oldCookie = (yield* signedIn(url)).header()
        expect((yield* fetchP(`${url}/api/auth/me`, { headers: oldCookie })).status).toBe(200)
        const out = yield* send(oldCookie)
        expect(out.status).toBe(303)
        expect(out.headers.get("location")).toBe("/login")
        expect(out.headers.get("set-cookie")).toMatch(/^belay_session=; Max-Age=0/)
        expect((yield* fetchP(`${url}/api/auth/me`, { headers: oldCookie })).status).toBe(401)
        expect((yield* fetchP(`${url}/settings/api-tokens`, { headers: oldCookie })).status).toBe(303)
      }
    }))

  it.effect("POST /logout refusals change nothing: a foreign Origin (even with the CSRF field), no Origin and no field, a forged field", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const jar = yield* signedIn(url)
      const csrf = (yield* getPage(url, jar, "/settings/api-tokens")).csrf ?? ""
      expect(csrf).not.toBe("")
      const refusals: ReadonlyArray<{ readonly headers: Record<string, string>; readonly body: Record<string, string> }> = [
        { headers: { origin: "https://evil.example" }, body: {} },
        { headers: { origin: "https://evil.example" }, body: { csrf_token: csrf } },
        { headers: { origin: "https://evil.example", "sec-fetch-site": "cross-site" }, body: { csrf_token: csrf } },
        { headers: {}, body: {} },
        { headers: { origin: "null", "sec-fetch-site": "same-origin" }, body: {} },
        { headers: { origin: "null", "sec-fetch-site": "same-origin" }, body: { csrf_token: "forged" } },
        { headers: { "sec-fetch-site": "same-origin" }, body: { csrf_token: "forged" } }
      ]
      for (const refusal of refusals) {
        const res = yield* postForm(`${url}/logout`, refusal.body, { ...jar.header(), ...refusal.headers })
        expect(res.status).toBe(403)
        expect(yield* textOf(res)).toContain("Sign-out refused")
        expect(res.headers.get("set-cookie")).toBeNull()
        expect((yield* fetchP(`${url}/api/auth/me`, { headers: jar.header() })).status).toBe(200)
      }
    }))

  it.effect("POST /logout from the settings pages' form (Origin null under no-referrer, Sec-Fetch-Site, the CSRF field) ends the session", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const jar = yield* signedIn(url)
      const oldCookie = jar.header()
      const out = yield* postSettings(url, jar, "/logout", {}, { headers: { origin: "null", "sec-fetch-site": "same-origin" } })
      expect(out.res.status).toBe(303)
      expect(out.location).toBe("/login")
      expect((yield* fetchP(`${url}/api/auth/me`, { headers: oldCookie })).status).toBe(401)
    }))
})

describe(`sign-in failure limit on ${describeMode}`, () => {
  it.scopedLive("failures at /login and on the authorization page count together: the 11th attempt for alice is 429 everywhere", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({ BELAY_TRUST_PROXY: "true" })
      const { authorize } = yield* newAuthorization(app.url)
      for (let i = 0; i < 5; i++) {
        const headers = { "x-forwarded-for": randomIp() }
        expect((yield* signInAtLogin(app.url, { password: "nope nope", headers })).res.status).toBe(401)
        expect((yield* signIn(app.url, authorize, new CookieJar(), { username: "ALICE", password: "nope nope" })).status).toBe(401)
      }
      const limited = yield* signInAtLogin(app.url, { headers: { "x-forwarded-for": randomIp() } })
      expect(limited.res.status).toBe(429)
      expect(Number(limited.res.headers.get("retry-after"))).toBeGreaterThan(0)
      const onAuthorize = yield* signIn(app.url, authorize, new CookieJar())
      expect(onAuthorize.status).toBe(429)
    }))
})
