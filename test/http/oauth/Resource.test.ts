/**
 * RFC 8707 `resource` at `/oauth/authorize` and `/api/oauth/token` (docs/decisions/oauth.md "`resource` names this
 * server's /mcp, and the token remembers it"): another server's resource is invalid_target at both (on the error page
 * at authorize, never redirected; as JSON at token, the code still usable); the token's resource must be the
 * authorization's (else invalid_target, the code spent); the token row keeps it; absent stays allowed. And
 * `application_type` at registration (docs/decisions/oauth.md "Registration stays, with application_type").
 */
import * as Crypto from "node:crypto"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { describeMode } from "../../support/TestDatabase.js"
import {
  approvalPage,
  approveOverHttp,
  authorizeUrl,
  fetchP,
  fixtureLayer,
  jsonOf,
  OAuthFixture,
  pkcePair,
  postJson,
  randomIp,
  registerClient,
  textOf,
  tokenRequest
} from "./OAuthHarness.js"

const OTHER = "https://other-mcp.example/mcp"

/** Approves an authorization naming `resourceOf(base)` (or none) and returns what the token request needs. */
const grantFor = (resourceOf: (base: string) => string | undefined) =>
  Effect.gen(function*() {
    const app = yield* OAuthFixture
    const resource = resourceOf(app.url)
    const client = yield* registerClient(app.url)
    const { verifier, challenge } = pkcePair()
    const redirectUri = "http://127.0.0.1:5555/cb"
    const authorize = authorizeUrl(app.url, {
      client_id: client.client_id,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      ...(resource === undefined ? {} : { resource })
    })
    const decision = yield* approveOverHttp(app.url, authorize, app.jar)
    expect(decision.status).toBe(303)
    const code = new URL(decision.headers.get("location")!).searchParams.get("code")!
    const params = { grant_type: "authorization_code", client_id: client.client_id, code, redirect_uri: redirectUri, code_verifier: verifier }
    return { app, params }
  })

const tokenResource = (accessToken: string) =>
  Effect.gen(function*() {
    const app = yield* OAuthFixture
    const hash = Crypto.createHash("sha256").update(accessToken).digest()
    const rows = yield* app.sql<{ resource: string | null }>`SELECT resource FROM oauth_tokens WHERE token_hash = ${hash}`
    return rows[0]?.resource
  })

layer(fixtureLayer(), { excludeTestServices: true, timeout: "120 seconds" })(`resource indicators on ${describeMode}`, (it) => {
  it.effect("authorize: another server's resource, a trailing slash or a fragment → 400 page naming invalid_target, no redirect", () =>
    Effect.gen(function*() {
      const app = yield* OAuthFixture
      const client = yield* registerClient(app.url)
      const { challenge } = pkcePair()
      for (const resource of [OTHER, `${app.url}/mcp/`, `${app.url}/mcp#x`, `${app.url}/`, "mcp"]) {
        const url = authorizeUrl(app.url, { client_id: client.client_id, redirect_uri: "http://127.0.0.1/cb", code_challenge: challenge, resource })
        for (const headers of [app.jar.header(), {}]) {
          const res = yield* fetchP(url, { headers })
          expect(res.status).toBe(400)
          expect(res.headers.get("location")).toBeNull()
          const html = yield* textOf(res)
          expect(html).toContain("<code>invalid_target</code>")
          expect(html).toContain("Nothing was sent to the app")
        }
      }
      // one of two resource values naming another server is enough to refuse
      const both = authorizeUrl(app.url, { client_id: client.client_id, redirect_uri: "http://127.0.0.1/cb", code_challenge: challenge, resource: `${app.url}/mcp` })
      expect((yield* fetchP(`${both}&resource=${encodeURIComponent(OTHER)}`, { headers: app.jar.header() })).status).toBe(400)
      // this server's /mcp, also repeated, reaches the approval page
      const page = yield* approvalPage(`${both}&resource=${encodeURIComponent(`${app.url}/mcp`)}`, app.jar)
      expect(page.res.status).toBe(200)
      expect(page.consent).toBeDefined()
    }))

  it.effect("token: another server's resource → 400 invalid_target and the code stays usable; the token remembers this server's", () =>
    Effect.gen(function*() {
      const { app, params } = yield* grantFor((base) => `${base}/mcp`)
      const refused = yield* tokenRequest(app.url, { ...params, resource: OTHER })
      expect(refused.status).toBe(400)
      expect(refused.headers.get("cache-control")).toBe("no-store")
      expect(yield* jsonOf(refused)).toEqual({ error: "invalid_target", error_description: expect.any(String) })
      const json = yield* postJson(`${app.url}/api/oauth/token`, { ...params, resource: [OTHER] })
      expect(json.status).toBe(400)
      expect((yield* jsonOf(json)).error).toBe("invalid_target")

      const ok = yield* tokenRequest(app.url, { ...params, resource: `${app.url}/mcp` })
      expect(ok.status).toBe(200)
      const token = (yield* jsonOf(ok)).access_token as string
      expect(yield* tokenResource(token)).toBe(`${app.url}/mcp`)
    }))

  it.effect("token: a resource other than the authorization's → invalid_target and the code is spent", () =>
    Effect.gen(function*() {
      // authorized for http://127.0.0.1:P/mcp; redeemed through the name localhost, whose /mcp is another resource
      const { app, params } = yield* grantFor((base) => `${base}/mcp`)
      const viaLocalhost = app.url.replace("127.0.0.1", "localhost")
      const refused = yield* tokenRequest(viaLocalhost, { ...params, resource: `${viaLocalhost}/mcp` })
      expect(refused.status).toBe(400)
      expect((yield* jsonOf(refused)).error).toBe("invalid_target")
      const again = yield* tokenRequest(app.url, { ...params, resource: `${app.url}/mcp` })
      expect(again.status).toBe(400)
      expect((yield* jsonOf(again)).error).toBe("invalid_grant")
    }))

  it.effect("absent stays allowed (2025-era clients); a token request may name this server when the authorization did not", () =>
    Effect.gen(function*() {
      const none = yield* grantFor(() => undefined)
      const plain = yield* tokenRequest(none.app.url, none.params)
      expect(plain.status).toBe(200)
      expect(yield* tokenResource((yield* jsonOf(plain)).access_token as string)).toBeNull()

      const later = yield* grantFor(() => undefined)
      const named = yield* tokenRequest(later.app.url, { ...later.params, resource: `${later.app.url}/mcp` })
      expect(named.status).toBe(200)
      expect(yield* tokenResource((yield* jsonOf(named)).access_token as string)).toBe(`${later.app.url}/mcp`)

      // authorized with a resource, redeemed without one: the authorization's is kept
      const authorized = yield* grantFor((base) => `${base}/mcp`)
      const bare = yield* tokenRequest(authorized.app.url, authorized.params)
      expect(bare.status).toBe(200)
      expect(yield* tokenResource((yield* jsonOf(bare)).access_token as string)).toBe(`${later.app.url}/mcp`)
    }))

  it.effect("registration: application_type native or web is accepted and echoed; another value is invalid_client_metadata", () =>
    Effect.gen(function*() {
      const app = yield* OAuthFixture
      const register = (body: Record<string, unknown>) =>
        postJson(`${app.url}/api/oauth/register`, { client_name: "Cursor", ...body }, { "x-forwarded-for": randomIp() })
      const native = yield* register({ application_type: "native", redirect_uris: ["com.example.app:/oauth2redirect"] })
      expect(native.status).toBe(201)
      expect((yield* jsonOf(native)).application_type).toBe("native")
      const web = yield* register({ application_type: "web", redirect_uris: ["https://claude.ai/api/mcp/auth_callback"] })
      expect(web.status).toBe(201)
      expect((yield* jsonOf(web)).application_type).toBe("web")
      // no extra OIDC rule: a "web" client may still use a loopback redirect (the interface's forms decide)
      expect((yield* register({ application_type: "web", redirect_uris: ["http://127.0.0.1:33418"] })).status).toBe(201)
      const absent = yield* jsonOf(yield* register({ redirect_uris: ["http://127.0.0.1/cb"] }))
      expect(Object.hasOwn(absent, "application_type")).toBe(false)
      for (const value of ["desktop", "NATIVE", 1, ["native"]]) {
        const res = yield* register({ application_type: value, redirect_uris: ["http://127.0.0.1/cb"] })
        expect(res.status).toBe(400)
        expect((yield* jsonOf(res)).error).toBe("invalid_client_metadata")
      }
    }))
})
