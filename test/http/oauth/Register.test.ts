/**
 * `POST /api/oauth/register` over HTTP (RFC 7591): the
 * 201 body, every refusal with its status and error, the per-IP limit keyed by the right
 * address, and the cap of 1,000 pending registrations, which parallel requests cannot
 * overshoot. The rules themselves are table-tested in test/services/oauth/ClientMetadata.test.ts;
 * here each form of refusal is proved to reach the wire.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { describeMode } from "../../support/TestDatabase.js"
import { fetchP, fixtureLayer, jsonOf, OAuthFixture, postJson, randomIp, startOAuthApp } from "./OAuthHarness.js"

const register = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  postJson(`${url}/api/oauth/register`, body, { "x-forwarded-for": randomIp(), ...headers })

const refusals: ReadonlyArray<readonly [string, unknown, string]> = [
  ["client_name missing", { redirect_uris: ["http://127.0.0.1/cb"] }, "invalid_client_metadata"],
  ["client_name a number", { client_name: 123, redirect_uris: ["http://127.0.0.1/cb"] }, "invalid_client_metadata"],
  ["client_name blank", { client_name: "   ", redirect_uris: ["http://127.0.0.1/cb"] }, "invalid_client_metadata"],
  ["client_name of 61 characters", { client_name: "a".repeat(61), redirect_uris: ["http://127.0.0.1/cb"] }, "invalid_client_metadata"],
  ["client_name with a control character", { client_name: "App\u0007", redirect_uris: ["http://127.0.0.1/cb"] }, "invalid_client_metadata"],
  ["client_name with a right-to-left override", { client_name: "Good App\u202Eppa.exe", redirect_uris: ["http://127.0.0.1/cb"] }, "invalid_client_metadata"],
  ["client_uri javascript:", { client_name: "A", client_uri: "javascript:alert(1)", redirect_uris: ["http://127.0.0.1/cb"] }, "invalid_client_metadata"],
  ["client_uri with userinfo", { client_name: "A", client_uri: "https://good.example@evil.example", redirect_uris: ["http://127.0.0.1/cb"] }, "invalid_client_metadata"],
  ["client_uri of 2001 characters", { client_name: "A", client_uri: "https://x.example/" + "a".repeat(1983), redirect_uris: ["http://127.0.0.1/cb"] }, "invalid_client_metadata"],
  ["redirect_uris missing", { client_name: "A" }, "invalid_redirect_uri"],
  ["redirect_uris empty", { client_name: "A", redirect_uris: [] }, "invalid_redirect_uri"],
  ["redirect_uris a string", { client_name: "A", redirect_uris: "http://127.0.0.1/cb" }, "invalid_redirect_uri"],
  ["redirect_uris holding a number", { client_name: "A", redirect_uris: [1] }, "invalid_redirect_uri"],
  ["redirect_uris over 2000 characters in total", { client_name: "A", redirect_uris: ["https://a.example/" + "a".repeat(1000), "https://a.example/" + "b".repeat(1000)] }, "invalid_redirect_uri"],
  ["empty fragment", { client_name: "A", redirect_uris: ["https://app.example/cb#"] }, "invalid_redirect_uri"],
  ["empty userinfo", { client_name: "A", redirect_uris: ["http://:@127.0.0.1/cb"] }, "invalid_redirect_uri"],
  ["non-ASCII", { client_name: "A", redirect_uris: ["https://app.example/é"] }, "invalid_redirect_uri"],
  ["backslash", { client_name: "A", redirect_uris: ["https://a.example\\@evil.example/cb"] }, "invalid_redirect_uri"],
  ["http on a public host", { client_name: "A", redirect_uris: ["http://app.example/cb"] }, "invalid_redirect_uri"],
  ["loopback spelled 127.1", { client_name: "A", redirect_uris: ["http://127.1/cb"] }, "invalid_redirect_uri"],
  ["LOCALHOST", { client_name: "A", redirect_uris: ["http://LOCALHOST/cb"] }, "invalid_redirect_uri"],
  ["custom scheme without a dot", { client_name: "A", redirect_uris: ["myapp://cb"] }, "invalid_redirect_uri"],
  ["OOB variant", { client_name: "A", redirect_uris: ["urn:ietf:wg:oauth:2.0:oob:auto"] }, "invalid_redirect_uri"],
  ["https without a host", { client_name: "A", redirect_uris: ["https:///cb"] }, "invalid_redirect_uri"],
  ["a query holding state", { client_name: "A", redirect_uris: ["https://app.example/cb?state=1"] }, "invalid_redirect_uri"]
]

layer(fixtureLayer(), { excludeTestServices: true, timeout: "120 seconds" })(`registration on ${describeMode}`, (it) => {
  it.effect("201 with exactly the registered metadata; no client_uri when none; unknown fields ignored (R-01…R-05)", () =>
    Effect.gen(function*() {
      const app = yield* OAuthFixture
      const uris = ["http://127.0.0.1/cb", "https://app.example/cb?x=1", "com.example.app:/oauth2redirect", "urn:ietf:wg:oauth:2.0:oob"]
      const res = yield* register(app.url, {
        client_name: "CLI 😀",
        redirect_uris: uris,
        grant_types: ["client_credentials"],
        response_types: ["token"],
        token_endpoint_auth_method: "client_secret_basic",
        scope: "x",
        client_id: "admin",
        logo_uri: "https://x.example/logo.png",
        software_id: "s",
        foo: 1
      })
      expect(res.status).toBe(201)
      expect(res.headers.get("content-type")).toBe("application/json")
      expect(res.headers.get("cache-control")).toBe("no-store")
      const body = yield* jsonOf(res)
      expect(Object.keys(body).sort()).toEqual([
        "client_id", "client_id_issued_at", "client_name", "grant_types", "redirect_uris", "response_types", "token_endpoint_auth_method"
      ])
      expect(body).toMatchObject({
        client_name: "CLI 😀",
        redirect_uris: uris,
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "none"
      })
      expect(body.client_id).not.toBe("admin")
      expect(Math.abs((body.client_id_issued_at as number) - Date.now() / 1000)).toBeLessThan(30)

      const withUri = yield* jsonOf(yield* register(app.url, {
        client_name: "a".repeat(60),
        client_uri: "https://x.example",
        redirect_uris: ["https://a.example/" + "a".repeat(1982)]
      }))
      expect(withUri.client_uri).toBe("https://x.example")
    }))

  for (const [name, body, error] of refusals) {
    it.effect(`${name} → 400 ${error}`, () =>
      Effect.gen(function*() {
        const app = yield* OAuthFixture
        const res = yield* register(app.url, body)
        expect(res.status).toBe(400)
        const json = yield* jsonOf(res)
        expect(json.error).toBe(error)
        expect(json.error_description).toMatch(/^[\x20\x21\x23-\x5B\x5D-\x7E]+$/)
      }))
  }

  it.effect("malformed bodies → 400 {error: invalid_request} without description; 413 past 16 KiB", () =>
    Effect.gen(function*() {
      const app = yield* OAuthFixture
      const send = (body: string, contentType: string) =>
        fetchP(`${app.url}/api/oauth/register`, { method: "POST", headers: { "content-type": contentType }, body })
      for (const [body, type] of [["{", "application/json"], ["[1]", "application/json"], ["null", "application/json"], ["{}", "text/plain"], ["client_name=A", "application/x-www-form-urlencoded"]] as const) {
        const res = yield* send(body, type)
        expect(res.status).toBe(400)
        expect(yield* jsonOf(res)).toStrictEqual({ error: "invalid_request" })
      }
      const big = yield* send(JSON.stringify({ client_name: "A", redirect_uris: ["http://127.0.0.1/cb"], pad: "x".repeat(17 * 1024) }), "application/json")
      expect(big.status).toBe(413)
      expect(yield* jsonOf(big)).toStrictEqual({ error: "invalid_request" })
    }))

  it.effect("a foreign Origin is 403 and GET is 405", () =>
    Effect.gen(function*() {
      const app = yield* OAuthFixture
      const res = yield* register(app.url, { client_name: "A", redirect_uris: ["http://127.0.0.1/cb"] }, { origin: "https://evil.example" })
      expect(res.status).toBe(403)
      expect(res.headers.get("access-control-allow-origin")).toBeNull()
      expect((yield* fetchP(`${app.url}/api/oauth/register`)).status).toBe(405)
    }))

  it.effect("behind a trusted proxy the limit counts the address the proxy appended, not the client's own claim", () =>
    Effect.gen(function*() {
      const app = yield* OAuthFixture
      const body = { client_name: "A", redirect_uris: ["http://127.0.0.1/cb"] }
      for (let i = 0; i < 5; i++) {
        const res = yield* register(app.url, body, { "x-forwarded-for": `10.0.0.${i}, 203.0.113.50` })
        expect(res.status).toBe(201)
      }
      const sixth = yield* register(app.url, body, { "x-forwarded-for": "10.9.9.9, 203.0.113.50" })
      expect(sixth.status).toBe(429)
      expect(sixth.headers.get("retry-after")).toMatch(/^[1-9]\d*$/)
      expect((yield* jsonOf(sixth)).error).toBe("too_many_requests")
      // another client of the proxy is not affected
      expect((yield* register(app.url, body, { "x-forwarded-for": "203.0.113.51" })).status).toBe(201)
    }))
})

describe(`registration limits on ${describeMode}`, () => {
  it.scopedLive("untrusted proxy headers: everyone behind the socket address shares one bucket", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({}, { member: false })
      const body = { client_name: "A", redirect_uris: ["http://127.0.0.1/cb"] }
      for (let i = 0; i < 5; i++) expect((yield* register(app.url, body, { "x-forwarded-for": `203.0.113.${i}` })).status).toBe(201)
      expect((yield* register(app.url, body, { "x-forwarded-for": "203.0.113.99" })).status).toBe(429)
    }))

  it.scopedLive("1,000 pending registrations: every registration is 429 temporarily_unavailable until one is approved; parallel requests cannot overshoot", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({ BELAY_TRUST_PROXY: "true" }, { member: false })
      const now = new Date()
      yield* app.sql`
        INSERT INTO oauth_clients (client_id, client_name, redirect_uris, created_at)
        SELECT 'seed-' || g, 'Seed', ARRAY['http://127.0.0.1/cb'], ${now} FROM generate_series(1, 998) g`
      const body = { client_name: "A", redirect_uris: ["http://127.0.0.1/cb"] }
      const parallel = yield* Effect.all(Array.from({ length: 10 }, () => register(app.url, body)), { concurrency: "unbounded" })
      expect(parallel.map((r) => r.status).sort()).toEqual([201, 201, 429, 429, 429, 429, 429, 429, 429, 429])
      const pending = yield* app.sql<{ n: number }>`SELECT count(*)::int AS n FROM oauth_clients WHERE approved_at IS NULL`
      expect(pending[0]!.n).toBe(1000)

      const full = yield* register(app.url, body)
      expect(full.status).toBe(429)
      expect(yield* jsonOf(full)).toEqual({ error: "temporarily_unavailable", error_description: expect.any(String) })
      // the oldest pending registration expires in an hour: that is when to come back
      expect(Number(full.headers.get("retry-after"))).toBeGreaterThan(3500)

      yield* app.sql`UPDATE oauth_clients SET approved_at = ${now} WHERE client_id = 'seed-1'`
      expect((yield* register(app.url, body)).status).toBe(201)
      expect((yield* register(app.url, body)).status).toBe(429)
    }))
})
