/**
 * `/oauth/authorize` and `/oauth/signin`: invalid requests are shown on a 400 page and
 * never redirected; the decision is bound to a single-use
 * server-side record with a CSRF token and a same-origin check; sign-in has
 * its own CSRF and same-origin checks and a same-origin `return_to`.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { describeMode } from "../../support/TestDatabase.js"
import {
  approvalPage,
  authorizeUrl,
  CookieJar,
  decide,
  fetchP,
  field,
  fixtureLayer,
  OAuthFixture,
  pkcePair,
  postForm,
  registerClient,
  textOf
} from "./OAuthHarness.js"

const REGISTERED = ["http://127.0.0.1/cb", "https://app.example/cb", "com.example.app:/oauth2redirect", "http://localhost:8080/cb"]

/** A registered client and a valid request for it; each test varies one thing. */
const setup = Effect.gen(function*() {
  const app = yield* OAuthFixture
  const client = yield* registerClient(app.url, { redirect_uris: REGISTERED })
  const { challenge } = pkcePair()
  const base: Record<string, string> = {
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: "https://app.example/cb",
    code_challenge: challenge,
    code_challenge_method: "S256"
  }
  const url = (params: Record<string, string | undefined>, extra = "") => {
    const merged = Object.entries({ ...base, ...params }).filter((e): e is [string, string] => e[1] !== undefined)
    return `${app.url}/oauth/authorize?${new URLSearchParams(merged)}${extra}`
  }
  return { app, client, url, challenge }
})

/** An invalid request: a 400 page with the security headers and no Location. */
const expectErrorPage = (res: Response) =>
  Effect.gen(function*() {
    expect(res.status).toBe(400)
    expect(res.headers.get("location")).toBeNull()
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8")
    expect(res.headers.get("x-frame-options")).toBe("DENY")
    expect(res.headers.get("content-security-policy")).toMatch(/(^|; )frame-ancestors 'none'(;|$)/)
    expect(res.headers.get("content-security-policy")).not.toContain("form-action")
    const html = yield* textOf(res)
    expect(html).toContain("Nothing was sent to the app")
    return html
  })

const invalid: ReadonlyArray<readonly [string, Record<string, string | undefined>, string?]> = [
  ["client_id missing", { client_id: undefined }],
  ["client_id unknown", { client_id: "no-such-client" }],
  ["redirect_uri missing", { redirect_uri: undefined }],
  ["redirect_uri not registered", { redirect_uri: "https://evil.example/cb" }],
  ["https host case differs", { redirect_uri: "https://APP.example/cb" }],
  ["explicit default port", { redirect_uri: "https://app.example:443/cb" }],
  ["trailing slash", { redirect_uri: "https://app.example/cb/" }],
  ["path case differs", { redirect_uri: "https://app.example/CB" }],
  ["empty query added", { redirect_uri: "https://app.example/cb?" }],
  ["percent-encoded path", { redirect_uri: "https://app.example/%63b" }],
  ["https on another port", { redirect_uri: "https://app.example:8443/cb" }],
  ["loopback host swapped", { redirect_uri: "http://[::1]:5/cb" }],
  ["loopback path differs", { redirect_uri: "http://127.0.0.1:5/cb/" }],
  ["loopback query added", { redirect_uri: "http://127.0.0.1:5/cb?x=1" }],
  ["loopback fragment", { redirect_uri: "http://127.0.0.1:5/cb#f" }],
  ["loopback uppercase scheme", { redirect_uri: "HTTP://127.0.0.1:5/cb" }],
  ["loopback zero-padded address", { redirect_uri: "http://127.000.000.001:5/cb" }],
  ["loopback dot segments", { redirect_uri: "http://127.0.0.1:5/x/../cb" }],
  ["loopback userinfo", { redirect_uri: "http://u@127.0.0.1:5/cb" }],
  ["custom scheme on another path", { redirect_uri: "com.example.app:/other" }],
  ["response_type missing", { response_type: undefined }],
  ["response_type token", { response_type: "token" }],
  ["response_type code id_token", { response_type: "code id_token" }],
  ["response_type CODE", { response_type: "CODE" }],
  ["code_challenge missing", { code_challenge: undefined }],
  ["code_challenge of 42 characters (P-01)", { code_challenge: "a".repeat(42) }],
  ["code_challenge of 44 characters", { code_challenge: "a".repeat(44) }],
  ["code_challenge with padding", { code_challenge: "a".repeat(42) + "=" }],
  ["code_challenge with a dot", { code_challenge: "a".repeat(42) + "." }],
  ["method plain (P-02)", { code_challenge_method: "plain" }],
  ["method s256", { code_challenge_method: "s256" }],
  ["method missing (defaults to plain)", { code_challenge_method: undefined }],
  ["state of 1025 characters", { state: "s".repeat(1025) }],
  ["redirect_uri repeated", {}, "&redirect_uri=https%3A%2F%2Fapp.example%2Fcb"],
  ["state repeated", { state: "a" }, "&state=b"],
  ["client_id repeated", {}, "&client_id=x"]
]

layer(fixtureLayer(), { excludeTestServices: true, timeout: "120 seconds" })(`authorization on ${describeMode}`, (it) => {
  for (const [name, params, extra] of invalid) {
    it.effect(`${name} → 400 error page, not redirected`, () =>
      Effect.gen(function*() {
        const { app, url } = yield* setup
        // signed in and signed out alike
        yield* expectErrorPage(yield* fetchP(url(params, extra), { headers: app.jar.header() }))
        yield* expectErrorPage(yield* fetchP(url(params, extra)))
      }))
  }

  it.effect("valid variants reach the approval page: any loopback port, localhost, custom scheme, 1024-char state, extra parameters", () =>
    Effect.gen(function*() {
      const { app, url } = yield* setup
      for (const params of [
        { redirect_uri: "http://127.0.0.1:51234/cb" },
        { redirect_uri: "http://127.0.0.1/cb" },
        { redirect_uri: "http://localhost:9999/cb" },
        { redirect_uri: "com.example.app:/oauth2redirect" },
        { state: "s".repeat(1024) },
        { state: "" }
      ]) {
        const page = yield* approvalPage(url(params, `&scope=x&resource=${encodeURIComponent(`${app.url}/mcp`)}&prompt=none&nonce=n&foo=1`), app.jar)
        expect(page.res.status).toBe(200)
        expect(page.consent).toBeDefined()
      }
    }))

  it.effect("signed out: the sign-in page (200, no Location), then back to the approval page", () =>
    Effect.gen(function*() {
      const { app, url } = yield* setup
      const jar = new CookieJar()
      const res = jar.take(yield* fetchP(url({ state: "xyz" }), { headers: jar.header() }))
      expect(res.status).toBe(200)
      expect(res.headers.get("location")).toBeNull()
      const html = yield* textOf(res)
      expect(html).toContain("Sign in to Belay")
      expect(res.headers.get("set-cookie")).toMatch(/^belay_signin=[^;]+; Path=\/; HttpOnly; SameSite=Lax$/)
      const returnTo = field(html, "return_to")!
      expect(returnTo.startsWith("/oauth/authorize?")).toBe(true)
      const signed = jar.take(yield* postForm(`${app.url}/oauth/signin`, {
        csrf_token: field(html, "csrf_token")!,
        return_to: returnTo,
        username: "alice",
        password: "correct horse battery staple"
      }, { origin: app.url, ...jar.header() }))
      expect(signed.status).toBe(303)
      expect(signed.headers.get("location")).toBe(returnTo)
      const page = yield* approvalPage(`${app.url}${returnTo}`, jar)
      expect(page.res.status).toBe(200)
      expect(page.consent).toBeDefined()
    }))

  it.effect("sign-in refusals: foreign origin, missing or wrong CSRF, an off-site return_to", () =>
    Effect.gen(function*() {
      const { app, url } = yield* setup
      const jar = new CookieJar()
      const html = yield* textOf(jar.take(yield* fetchP(url({}))))
      const good = {
        csrf_token: field(html, "csrf_token")!,
        return_to: field(html, "return_to")!,
        username: "alice",
        password: "correct horse battery staple"
      }
      const post = (form: Record<string, string>, headers: Record<string, string>) =>
        postForm(`${app.url}/oauth/signin`, form, headers)
      const tries: ReadonlyArray<readonly [Record<string, string>, Record<string, string>, number]> = [
        [good, { ...jar.header(), origin: "https://evil.example" }, 403],
        [good, { ...jar.header() }, 403], // no Origin, no Sec-Fetch-Site
        [good, { origin: app.url }, 403], // no CSRF cookie
        [{ ...good, csrf_token: "forged" }, { ...jar.header(), origin: app.url }, 403],
        [{ ...good, return_to: "//evil.example/oauth/authorize?x" }, { ...jar.header(), origin: app.url }, 400],
        [{ ...good, return_to: "https://evil.example/" }, { ...jar.header(), origin: app.url }, 400],
        [{ ...good, return_to: "/\\evil.example" }, { ...jar.header(), origin: app.url }, 400],
        [{ ...good, return_to: "/settings" }, { ...jar.header(), origin: app.url }, 400]
      ]
      for (const [form, headers, status] of tries) {
        const res = yield* post(form, headers)
        expect(res.status).toBe(status)
        expect(res.headers.get("location")).toBeNull()
        expect(res.headers.get("set-cookie")).toBeNull()
      }
      // a browser whose Origin is null under no-referrer: Sec-Fetch-Site decides
      const ok = yield* post(good, { ...jar.header(), origin: "null", "sec-fetch-site": "same-origin" })
      expect(ok.status).toBe(303)
    }))

  it.effect("the decision needs the session, the record's CSRF token and a same-origin request; refusals keep the record", () =>
    Effect.gen(function*() {
      const { app, url } = yield* setup
      const page = yield* approvalPage(url({ redirect_uri: "http://127.0.0.1:4000/cb" }), app.jar)
      const form = { consent: page.consent!, csrf_token: page.csrf!, decision: "approve" }
      const refusals: ReadonlyArray<readonly [Record<string, string>, Record<string, string> | undefined, CookieJar, number]> = [
        [{ ...form, csrf_token: "wrong" }, undefined, app.jar, 403],
        [{ consent: form.consent, decision: "approve" }, undefined, app.jar, 403],
        [form, { origin: "https://evil.example" }, app.jar, 403],
        [form, {}, app.jar, 403],
        [form, { origin: "null", "sec-fetch-site": "cross-site" }, app.jar, 403],
        [form, undefined, new CookieJar(), 403], // signed out
        [{ ...form, decision: "maybe" }, undefined, app.jar, 400],
        [{ ...form, decision: "approve&decision=deny" }, undefined, app.jar, 400]
      ]
      for (const [body, headers, jar, status] of refusals) {
        const res = yield* decide(app.url, jar, body, headers ?? { origin: app.url })
        expect(res.status).toBe(status)
        expect(res.headers.get("location")).toBeNull()
      }
      const codes = yield* app.sql<{ n: number }>`SELECT count(*)::int AS n FROM oauth_codes`
      // the record survived every refusal: the genuine submission still works
      const ok = yield* decide(app.url, app.jar, { ...form, redirect_uri: "https://evil.example/cb" })
      expect(ok.status).toBe(303)
      // a redirect_uri in the POST is ignored: the code goes where the validated request said
      expect(ok.headers.get("location")!.startsWith("http://127.0.0.1:4000/cb?code=")).toBe(true)
      const after = yield* app.sql<{ n: number }>`SELECT count(*)::int AS n FROM oauth_codes`
      expect(after[0]!.n).toBe(codes[0]!.n + 1)
      // single use: the same submission again is an error page, no second code
      const again = yield* decide(app.url, app.jar, form)
      expect(again.status).toBe(400)
      expect(again.headers.get("location")).toBeNull()
    }))

  it.effect("five parallel submissions of one approval page mint exactly one code (C-03)", () =>
    Effect.gen(function*() {
      const { app, url } = yield* setup
      const page = yield* approvalPage(url({}), app.jar)
      const form = { consent: page.consent!, csrf_token: page.csrf!, decision: "approve" }
      const results = yield* Effect.all(Array.from({ length: 5 }, () => decide(app.url, app.jar, form)), {
        concurrency: "unbounded"
      })
      expect(results.map((r) => r.status).sort()).toEqual([303, 400, 400, 400, 400])
    }))

  it.effect("a CSRF token of one approval page does not approve another, nor in another session", () =>
    Effect.gen(function*() {
      const { app, url } = yield* setup
      const a = yield* approvalPage(url({}), app.jar)
      const b = yield* approvalPage(url({}), app.jar)
      const crossed = yield* decide(app.url, app.jar, { consent: b.consent!, csrf_token: a.csrf!, decision: "approve" })
      expect(crossed.status).toBe(403)
      expect((yield* decide(app.url, app.jar, { consent: b.consent!, csrf_token: b.csrf!, decision: "approve" })).status).toBe(303)
    }))

  it.effect("GET never approves; a custom scheme receives a 303 with code, iss and no state", () =>
    Effect.gen(function*() {
      const { app, url } = yield* setup
      const page = yield* approvalPage(url({ redirect_uri: "com.example.app:/oauth2redirect" }, "&decision=approve&approve=1"), app.jar)
      expect(page.res.status).toBe(200)
      expect(page.html).toContain("<strong>com.example.app:</strong>")
      const res = yield* decide(app.url, app.jar, { consent: page.consent!, csrf_token: page.csrf!, decision: "approve" })
      expect(res.status).toBe(303)
      const location = res.headers.get("location")!
      expect(location.startsWith("com.example.app:/oauth2redirect?code=")).toBe(true)
      expect([...new URL(location).searchParams.keys()]).toEqual(["code", "iss"])
    }))

  it.effect("the host in the Host header never reaches the page when malformed", () =>
    Effect.gen(function*() {
      const { url } = yield* setup
      const { rawRequest } = yield* Effect.promise(() => import("./OAuthHarness.js"))
      const target = new URL(url({}))
      const res = yield* rawRequest(target.origin, { path: target.pathname + target.search, headers: { host: "a.example@evil.example" } })
      expect(res.status).toBe(400)
      expect(res.body).not.toContain("evil.example")
    }))
})
