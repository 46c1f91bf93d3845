/**
 * The authorization-code flow end to end against the real server in-process, driven by
 * oauth4webapi 3.8.8 — a strict, certified client: discovery,
 * dynamic registration, the approval over HTTP (sign-in, approval page, decision), the
 * RFC 9207 `iss` check, the token exchange, /mcp with the token, revocation. Then the
 * lifecycle rules: concurrent redemption, reuse, logout, recovery, out-of-band, deny,
 * loopback ports, state, hosted prefixes.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as oauth from "oauth4webapi"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { sha256 } from "../../../src/services/identity/Tokens.js"
import { runCli } from "../../support/BelayProcess.js"
import { describeMode } from "../../support/TestDatabase.js"
import {
  approveOverHttp,
  authorizeUrl,
  CookieJar,
  decide,
  approvalPage,
  fetchP,
  jsonOf,
  mcpStatus,
  newAuthorization,
  obtainCode,
  pkcePair,
  postForm,
  redeem,
  registerClient,
  signIn,
  startOAuthApp,
  textOf
} from "./OAuthHarness.js"

const insecure = { [oauth.allowInsecureRequests]: true } as const

describe(`OAuth flow with oauth4webapi on ${describeMode}`, () => {
  it.scopedLive("discovery → registration → approval → iss → token → /mcp → revocation → 401", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const issuer = new URL(app.url)
      const as = yield* Effect.promise(async () =>
        oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...insecure, algorithm: "oauth2" }))
      )
      expect(as.issuer).toBe(app.url)
      expect(as.authorization_response_iss_parameter_supported).toBe(true)
      expect(as.code_challenge_methods_supported).toEqual(["S256"])

      const registered = yield* Effect.promise(async () =>
        oauth.processDynamicClientRegistrationResponse(
          await oauth.dynamicClientRegistrationRequest(as, { client_name: "Strict CLI", redirect_uris: ["http://127.0.0.1/cb"] }, insecure)
        )
      )
      const client: oauth.Client = { client_id: registered.client_id }
      expect(registered).not.toHaveProperty("client_secret")

      const verifier = oauth.generateRandomCodeVerifier()
      const challenge = yield* Effect.promise(() => oauth.calculatePKCECodeChallenge(verifier))
      const state = oauth.generateRandomState()
      // RFC 8252 §7.3: the app listens on an ephemeral port the registration did not name.
      const redirectUri = "http://127.0.0.1:49152/cb"
      const authorize = new URL(as.authorization_endpoint!)
      authorize.search = new URLSearchParams({
        response_type: "code",
        client_id: client.client_id,
        redirect_uri: redirectUri,
        code_challenge: challenge,
        code_challenge_method: "S256",
        state,
        scope: "ignored",
        resource: `${app.url}/mcp`
      }).toString()

      const decision = yield* approveOverHttp(app.url, authorize.href, new CookieJar())
      expect(decision.status).toBe(303)
      const location = decision.headers.get("location")!
      expect(location.startsWith(`${redirectUri}?`)).toBe(true)
      expect([...new URL(location).searchParams.keys()].sort()).toEqual(["code", "iss", "state"])

      const params = oauth.validateAuthResponse(as, client, new URL(location), state)
      const tokens = yield* Effect.promise(async () =>
        oauth.processAuthorizationCodeResponse(
          as,
          client,
          await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, verifier, insecure)
        )
      )
      expect(tokens.token_type).toBe("bearer")
      expect(tokens.expires_in).toBeUndefined()
      expect(tokens.refresh_token).toBeUndefined()
      expect(Math.abs(Number(tokens.created_at) - Date.now() / 1000)).toBeLessThan(30)
      expect(yield* mcpStatus(app.url, tokens.access_token)).toBe(200)

      // Only the hash is stored (Authenticator looks tokens up by SHA-256).
      const stored = yield* app.sql<{ n: number }>`
        SELECT count(*)::int AS n FROM oauth_tokens WHERE token_hash = ${sha256(tokens.access_token)}`
      expect(stored[0]!.n).toBe(1)

      yield* Effect.promise(async () =>
        oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), tokens.access_token, insecure))
      )
      expect(yield* mcpStatus(app.url, tokens.access_token)).toBe(401)
    }))

  it.scopedLive("exactly one of 20 concurrent redemptions of one code succeeds; the replays revoke its token", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const grant = yield* obtainCode(app)
      const responses = yield* Effect.all(Array.from({ length: 20 }, () => redeem(app.url, grant)), { concurrency: "unbounded" })
      const statuses = responses.map((r) => r.status)
      expect(statuses.filter((s) => s === 200)).toHaveLength(1)
      expect(statuses.filter((s) => s === 400)).toHaveLength(19)
      const bodies = yield* Effect.all(responses.map(jsonOf))
      const winner = bodies.find((b) => typeof b.access_token === "string")!
      expect(bodies.filter((b) => b.error === "invalid_grant")).toHaveLength(19)
      const rows = yield* app.sql<{ n: number }>`SELECT count(*)::int AS n FROM oauth_tokens`
      expect(rows[0]!.n).toBe(1)
      // RFC 6749 §4.1.2: a replayed code revokes what it issued.
      expect(yield* mcpStatus(app.url, winner.access_token as string)).toBe(401)
    }))

  it.scopedLive("a code works once; presenting it again is invalid_grant and revokes the token it issued", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const grant = yield* obtainCode(app)
      const first = yield* redeem(app.url, grant)
      expect(first.status).toBe(200)
      expect(first.headers.get("cache-control")).toBe("no-store")
      expect(first.headers.get("pragma")).toBe("no-cache")
      const body = yield* jsonOf(first)
      expect(Object.keys(body).sort()).toEqual(["access_token", "created_at", "token_type"])
      expect(body.token_type).toBe("Bearer")
      expect(Number.isInteger(body.created_at)).toBe(true)
      const token = body.access_token as string
      expect(yield* mcpStatus(app.url, token)).toBe(200)

      const again = yield* redeem(app.url, grant)
      expect(again.status).toBe(400)
      expect((yield* jsonOf(again)).error).toBe("invalid_grant")
      expect(yield* mcpStatus(app.url, token)).toBe(401)
    }))

  it.scopedLive("logout with the token revokes it at once; logout with nothing valid is 401", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const grant = yield* obtainCode(app)
      const token = (yield* jsonOf(yield* redeem(app.url, grant))).access_token as string
      expect(yield* mcpStatus(app.url, token)).toBe(200)
      const out = yield* fetchP(`${app.url}/api/auth/logout`, { method: "POST", headers: { authorization: `Bearer ${token}` } })
      expect(out.status).toBe(200)
      expect(yield* mcpStatus(app.url, token)).toBe(401)
      const again = yield* fetchP(`${app.url}/api/auth/logout`, { method: "POST", headers: { authorization: `Bearer ${token}` } })
      expect(again.status).toBe(401)
      expect(again.headers.get("www-authenticate")).toContain("Bearer")
      const none = yield* fetchP(`${app.url}/api/auth/logout`, { method: "POST" })
      expect(none.status).toBe(401)
    }))

  it.scopedLive("logout with a browser session ends it (same origin only) and clears the cookie", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const grant = yield* obtainCode(app)
      const cookie = grant.jar.header()
      const foreign = yield* fetchP(`${app.url}/api/auth/logout`, { method: "POST", headers: { ...cookie, origin: "https://evil.example" } })
      expect(foreign.status).toBe(403)
      const out = yield* fetchP(`${app.url}/api/auth/logout`, { method: "POST", headers: { ...cookie, origin: app.url } })
      expect(out.status).toBe(200)
      expect(out.headers.get("set-cookie")).toMatch(/^belay_session=; .*Max-Age=0/)
      const rows = yield* app.sql<{ n: number }>`SELECT count(*)::int AS n FROM browser_sessions`
      expect(rows[0]!.n).toBe(0)
    }))

  it.scopedLive("`belay account recover` revokes every app; a plain password change revokes none", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const tokenOf = Effect.gen(function*() {
        const grant = yield* obtainCode(app)
        return (yield* jsonOf(yield* redeem(app.url, grant))).access_token as string
      })
      const first = yield* tokenOf
      const second = yield* tokenOf
      yield* app.service(Accounts).changePassword("alice", "a brand new password").pipe(Effect.orDie)
      expect(yield* mcpStatus(app.url, first)).toBe(200)
      expect(yield* mcpStatus(app.url, second)).toBe(200)

      const env = { BELAY_DATA_DIR: app.settings.dataDir, BELAY_ADMIN_SOCKET: app.settings.adminSocket }
      const recovered = yield* runCli(env, ["account", "recover", "alice"], "recovered password 1\n")
      expect(recovered.code).toBe(0)
      expect(yield* mcpStatus(app.url, first)).toBe(401)
      expect(yield* mcpStatus(app.url, second)).toBe(401)
    }))

  it.scopedLive("out-of-band: approval shows the code on the page (no redirect); it redeems once", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const oob = "urn:ietf:wg:oauth:2.0:oob"
      const client = yield* registerClient(app.url, { client_name: "Terminal", redirect_uris: [oob] })
      const { verifier, challenge } = pkcePair()
      const authorize = authorizeUrl(app.url, { client_id: client.client_id, redirect_uri: oob, code_challenge: challenge })
      const jar = new CookieJar()
      const res = yield* approveOverHttp(app.url, authorize, jar)
      expect(res.status).toBe(200)
      expect(res.headers.get("location")).toBeNull()
      expect(res.headers.get("cache-control")).toBe("no-store")
      const html = yield* textOf(res)
      const code = /<output class="code"[^>]*>([^<]+)<\/output>/.exec(html)?.[1]
      expect(code).toBeDefined()
      const token = yield* redeem(app.url, { clientId: client.client_id, code: code!, redirectUri: oob, verifier })
      expect(token.status).toBe(200)

      // Deny out-of-band: a page, no redirect.
      const denied = yield* approveOverHttp(app.url, authorize, jar, "deny")
      expect(denied.status).toBe(200)
      expect(denied.headers.get("location")).toBeNull()
      expect(yield* textOf(denied)).toContain("Access denied")
    }))

  it.scopedLive("deny → 303 with error=access_denied, state and iss; no code; the registration stays pending", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const client = yield* registerClient(app.url)
      const { challenge } = pkcePair()
      const state = "a b+c&d=e#f%g é/?"
      const authorize = authorizeUrl(app.url, {
        client_id: client.client_id,
        redirect_uri: "http://127.0.0.1:7777/cb",
        code_challenge: challenge,
        state
      })
      const res = yield* approveOverHttp(app.url, authorize, new CookieJar(), "deny")
      expect(res.status).toBe(303)
      const location = new URL(res.headers.get("location")!)
      expect(Object.fromEntries(location.searchParams)).toEqual({ error: "access_denied", state, iss: app.url })
      const rows = yield* app.sql<{ approved: boolean }>`
        SELECT approved_at IS NOT NULL AS approved FROM oauth_clients WHERE client_id = ${client.client_id}`
      expect(rows[0]!.approved).toBe(false)
    }))

  it.scopedLive("state: absent → no state key at all; 1024 characters echoed byte for byte", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const none = yield* obtainCode(app)
      expect(new URL(none.location).searchParams.has("state")).toBe(false)
      const long = "s".repeat(1023) + "~"
      const withState = yield* obtainCode(app, { state: long, jar: none.jar })
      expect(new URL(withState.location).searchParams.get("state")).toBe(long)
    }))

  it.scopedLive("the approval page names the app, its website host, full access and where the approval goes — every time", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const client = yield* registerClient(app.url, {
        client_name: "<img src=x onerror=alert(1)>",
        client_uri: "https://аpple.example/about",
        redirect_uris: ["http://127.0.0.1/cb", "https://app.example/cb"]
      })
      const { challenge } = pkcePair()
      const jar = new CookieJar()
      const loopback = authorizeUrl(app.url, { client_id: client.client_id, redirect_uri: "http://127.0.0.1:5000/cb", code_challenge: challenge })
      yield* approveOverHttp(app.url, loopback, jar)
      // approved once: the page still shows, every time (RFC 8252 §8.6)
      const page = yield* approvalPage(loopback, jar)
      expect(page.res.status).toBe(200)
      expect(page.html).toContain("&lt;img src=x onerror=alert(1)&gt;")
      expect(page.html).not.toContain("<img")
      expect(page.html).toContain("xn--pple-43d.example")
      expect(page.html).not.toContain("href=\"https://")
      expect(page.html).toContain("Full access")
      expect(page.html).toContain("http://127.0.0.1:5000")
      const https = yield* approvalPage(
        authorizeUrl(app.url, { client_id: client.client_id, redirect_uri: "https://app.example/cb", code_challenge: challenge }),
        jar
      )
      expect(https.html).toContain("<strong>app.example</strong>")
      expect(page.res.headers.get("content-security-policy")).toMatch(/(^|; )frame-ancestors 'none'(;|$)/)
      for (const [name, value] of Object.entries({
        "x-frame-options": "DENY",
        "referrer-policy": "no-referrer",
        "cache-control": "no-store"
      })) expect(page.res.headers.get(name)).toBe(value)
    }))

  it.scopedLive("the session cookie is HttpOnly and SameSite=Lax, without Secure on http; with Secure behind https", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const grant = yield* obtainCode(app)
      const session = grant.jar.raw.find((c) => c.startsWith("belay_session="))!
      expect(session).toMatch(/; HttpOnly/)
      expect(session).toMatch(/; SameSite=Lax/)
      expect(session).not.toMatch(/Secure/)

      const https = yield* startOAuthApp({ BELAY_TRUST_PROXY: "true" })
      const { authorize } = yield* newAuthorization(https.url)
      const jar = new CookieJar()
      const proxied = { "x-forwarded-proto": "https", "x-forwarded-host": "belay.example" }
      const first = jar.take(yield* fetchP(authorize, { headers: proxied }))
      const html = yield* textOf(first)
      const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)![1]!
      const returnTo = /name="return_to" value="([^"]+)"/.exec(html)![1]!.replaceAll("&amp;", "&")
      const signed = yield* postForm(`${https.url}/oauth/signin`, {
        csrf_token: csrf, return_to: returnTo, username: "alice", password: "correct horse battery staple"
      }, { ...proxied, ...jar.header(), origin: "https://belay.example" })
      expect(signed.status).toBe(303)
      // docs/contract.md: on https the session cookie carries the __Host- prefix (Secure, Path=/, no Domain).
      const cookie = signed.headers.get("set-cookie")!
      expect(cookie).toMatch(/^__Host-belay_session=[^;]+;/)
      for (const attribute of ["Path=/", "HttpOnly", "SameSite=Lax", "Secure"]) expect(cookie.split("; ")).toContain(attribute)
      expect(cookie).toMatch(/; Max-Age=\d+(;|$)/)
      expect(cookie).not.toMatch(/Domain=/i)
    }))

  it.scopedLive("hosted: codes and tokens begin with `<server>~`; API tokens are refused at /mcp and logout", () =>
    Effect.gen(function*() {
      const publicBase = "https://belay.example"
      const hosted = yield* startOAuthApp({ BELAY_HOSTED: "true", BELAY_SERVER_NAME: "srv1", PUBLIC_BASE_URL: publicBase })
      // The public origin is a proxy's; the requests reach this listener directly.
      const url = hosted.url
      const client = yield* registerClient(url)
      const { verifier, challenge } = pkcePair()
      const authorize = authorizeUrl(url, { client_id: client.client_id, redirect_uri: "http://127.0.0.1:5555/cb", code_challenge: challenge })
      const jar = new CookieJar()
      const signInPage = jar.take(yield* fetchP(authorize))
      const html = yield* textOf(signInPage)
      const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)![1]!
      const returnTo = /name="return_to" value="([^"]+)"/.exec(html)![1]!.replaceAll("&amp;", "&")
      const signed = yield* postForm(`${url}/oauth/signin`, {
        csrf_token: csrf, return_to: returnTo, username: "alice", password: "correct horse battery staple"
      }, { ...jar.header(), origin: publicBase })
      jar.take(signed)
      expect(signed.status).toBe(303)
      const page = yield* approvalPage(`${url}${signed.headers.get("location")}`, jar)
      const decision = yield* decide(url, jar, { consent: page.consent!, csrf_token: page.csrf!, decision: "approve" }, { origin: publicBase })
      const location = new URL(decision.headers.get("location")!)
      expect(location.searchParams.get("iss")).toBe(publicBase)
      const code = location.searchParams.get("code")!
      expect(code).toMatch(/^srv1~[A-Za-z0-9_-]{43}$/)
      const tokenRes = yield* redeem(url, { clientId: client.client_id, code, redirectUri: "http://127.0.0.1:5555/cb", verifier })
      const token = (yield* jsonOf(tokenRes)).access_token as string
      expect(token).toMatch(/^srv1~[A-Za-z0-9_-]{43}$/)
      expect(yield* mcpStatus(url, token)).toBe(200)

      // An API token minted before the deployment became hosted: refused everywhere.
      const apiToken = "belay_" + "A".repeat(43)
      yield* hosted.sql`INSERT INTO api_tokens (account_id, name, scope, token_hash)
        VALUES (${hosted.accountId}, 'legacy', 'read-write', ${sha256(apiToken)})`
      expect(yield* mcpStatus(url, apiToken)).toBe(401)
      const logout = yield* fetchP(`${url}/api/auth/logout`, { method: "POST", headers: { authorization: `Bearer ${apiToken}` } })
      expect(logout.status).toBe(401)
    }))

  it.scopedLive("a loopback redirect may use any port but nothing else may differ; the token needs the same port", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const grant = yield* obtainCode(app, { registered: ["http://localhost/callback"], redirectUri: "http://localhost:61234/callback" })
      expect(grant.location.startsWith("http://localhost:61234/callback?")).toBe(true)
      const wrongPort = yield* redeem(app.url, { ...grant, redirectUri: "http://localhost:61235/callback" })
      expect(wrongPort.status).toBe(400)
      expect((yield* jsonOf(wrongPort)).error).toBe("invalid_grant")
      // the failed check spent the code
      expect((yield* redeem(app.url, grant)).status).toBe(400)
    }))

  it.scopedLive("sign-in with a wrong password shows the form again with 401 and starts no session", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const { authorize } = yield* newAuthorization(app.url)
      const jar = new CookieJar()
      const wrong = yield* signIn(app.url, authorize, jar, { username: "alice", password: "not the password" })
      expect(wrong.status).toBe(401)
      expect(wrong.body).toContain("Wrong username or password.")
      expect(jar.cookies.has("belay_session")).toBe(false)
      const rows = yield* app.sql<{ n: number }>`SELECT count(*)::int AS n FROM browser_sessions`
      expect(rows[0]!.n).toBe(0)
      const sql = app.service(SqlClient.SqlClient)
      expect(sql).toBeDefined()
    }))
})
