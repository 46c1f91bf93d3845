/**
 * The member's pages over HTTP (docs/decisions/web.md): the 303 to
 * sign-in without a session, and each settings section — API tokens (mint once, list,
 * revoke; hosted), Authorized apps (apps and password sign-ins, revoke and its event),
 * Password (revokes nothing) — with every refusal of their forms.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Option, Queue } from "effect"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { OAuthClients } from "../../../src/services/oauth/OAuthClients.js"
import { CredentialRevocations } from "../../../src/services/identity/CredentialRevocations.js"
import { describeMode } from "../../support/TestDatabase.js"
import { CookieJar, fetchP, fixtureLayer, jsonOf, mcpStatus, OAuthFixture, PASSWORD, postForm, postJson, startOAuthApp } from "../oauth/OAuthHarness.js"
import { apiToken, appToken, bearer, getPage, passwordToken, postSettings, signedIn, signInAtLogin } from "../auth/MemberHarness.js"

const PAGES = ["/settings/api-tokens", "/settings/authorized-apps", "/settings/passkeys", "/settings/password"]

/** tools/list as a token: the tool names it may call. */
const toolNames = (url: string, token: string) =>
  Effect.gen(function*() {
    const res = yield* postJson(`${url}/mcp`, { jsonrpc: "2.0", id: 1, method: "tools/list" }, {
      ...bearer(token),
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-06-18"
    })
    const body = yield* jsonOf(res)
    return ((body.result as { tools: Array<{ name: string }> }).tools).map((t) => t.name)
  })

const createdToken = (html: string) => /<output class="code" id="created-token"[^>]*>([^<]+)<\/output>/.exec(html)?.[1]

layer(fixtureLayer(), { excludeTestServices: true, timeout: "120 seconds" })(`settings pages on ${describeMode}`, (it) => {
  it.effect("without a session, / and every /settings page answer 303 to /login?next=<that path>", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      for (const path of ["/", "/settings", ...PAGES]) {
        const res = yield* fetchP(`${url}${path}`)
        expect(res.status).toBe(303)
        expect(res.headers.get("location")).toBe(`/login?${new URLSearchParams({ next: path })}`)
      }
      // A form posted without a session goes to sign in and back to its page.
      const post = yield* postForm(`${url}/settings/api-tokens/revoke`, { name: "x" }, { origin: url })
      expect(post.status).toBe(303)
      expect(post.headers.get("location")).toBe("/login?next=%2Fsettings%2Fapi-tokens")
    }))

  it.effect("signed in: each page is 200 with the pages' headers, the nav marks it, every form has the CSRF field", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const jar = yield* signedIn(url)
      const settings = yield* fetchP(`${url}/settings`, { headers: jar.header() })
      expect(settings.status).toBe(303)
      expect(settings.headers.get("location")).toBe("/settings/api-tokens")
      for (const path of PAGES) {
        const page = yield* getPage(url, jar, path)
        expect(page.res.status).toBe(200)
        expect(page.res.headers.get("x-frame-options")).toBe("DENY")
        expect(page.res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
        expect(page.res.headers.get("cache-control")).toBe("no-store")
        expect(page.html).toContain(`<a href="${path}" aria-current="page">`)
        const forms = page.html.split("<form ").length - 1
        const csrfFields = page.html.split("name=\"csrf_token\"").length - 1
        // The passkeys page's add form posts JSON through the script, guarded by the same-origin rule.
        expect(csrfFields).toBe(path === "/settings/passkeys" ? forms - 1 : forms)
        expect(page.html).not.toMatch(/(src|href)="(https?:)?\/\//)
      }
    }))

  it.effect("API tokens: mint shows the raw value once; it works at /mcp with its scope; listed; revoke → marker and 401", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const jar = yield* signedIn(url)
      const minted = yield* postSettings(url, jar, "/settings/api-tokens", { name: "reader", scope: "read" })
      expect(minted.res.status).toBe(200)
      const token = createdToken(minted.html)!
      expect(token).toMatch(/^belay_[A-Za-z0-9_-]{43}$/)
      const tools = yield* toolNames(url, token)
      expect(tools).toContain("list_networks")
      expect(tools).not.toContain("send_message")

      const list = yield* getPage(url, jar, "/settings/api-tokens")
      expect(list.html).not.toContain(token)
      expect(list.html).toContain("<th scope=\"row\">reader</th>\n<td>Read</td>")
      expect(list.html).toContain("aria-label=\"Revoke token reader\"")

      const revoked = yield* postSettings(url, jar, "/settings/api-tokens/revoke", { name: "reader" })
      expect(revoked.res.status).toBe(303)
      expect(revoked.location).toBe("/settings/api-tokens?done=revoked")
      expect(yield* mcpStatus(url, token)).toBe(401)
      const after = yield* getPage(url, jar, revoked.location!)
      expect(after.html).toContain("The token was revoked.")
      expect(after.html).toMatch(/<th scope="row">reader<\/th>[\s\S]*?<strong class="warn">Revoked<\/strong>/)
      expect(after.html).not.toContain("aria-label=\"Revoke token reader\"")
    }))

  it.effect("API tokens: refusals — a taken name 409, a bad name or scope 400, unknown token 404, CSRF and foreign origin 403", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const jar = yield* signedIn(url)
      expect((yield* postSettings(url, jar, "/settings/api-tokens", { name: "dup", scope: "read-write" })).res.status).toBe(200)
      const taken = yield* postSettings(url, jar, "/settings/api-tokens", { name: "dup", scope: "read" })
      expect(taken.res.status).toBe(409)
      expect(taken.html).toContain("already have a token with that name")
      expect(createdToken(taken.html)).toBeUndefined()
      expect((yield* postSettings(url, jar, "/settings/api-tokens", { name: "", scope: "read" })).res.status).toBe(400)
      expect((yield* postSettings(url, jar, "/settings/api-tokens", { name: "tab\there", scope: "read" })).res.status).toBe(400)
      expect((yield* postSettings(url, jar, "/settings/api-tokens", { name: "ok", scope: "admin" })).res.status).toBe(400)
      expect((yield* postSettings(url, jar, "/settings/api-tokens/revoke", { name: "never-minted" })).res.status).toBe(404)
      const forged = yield* postSettings(url, jar, "/settings/api-tokens", { name: "f", scope: "read", csrf_token: "forged" })
      expect(forged.res.status).toBe(403)
      const foreign = yield* postSettings(url, jar, "/settings/api-tokens", { name: "f", scope: "read" }, {
        headers: { origin: "https://evil.example" }
      })
      expect(foreign.res.status).toBe(403)
      // Another session's CSRF token is not this one's.
      const other = yield* signedIn(url)
      const crossed = yield* postSettings(url, jar, "/settings/api-tokens", {
        name: "g",
        scope: "read",
        csrf_token: (yield* getPage(url, other, "/settings/api-tokens")).csrf!
      })
      expect(crossed.res.status).toBe(403)
    }))

  it.scoped("Authorized apps: apps and password sign-ins, with last use; Revoke stops the app's tokens at once, publishes the revocation, keeps the registration", () =>
    Effect.gen(function*() {
      const fixture = yield* OAuthFixture
      const url = fixture.url
      const jar = yield* signedIn(url)
      const { token, clientId } = yield* appToken({ url })
      const second = yield* appToken({ url })
      const password = yield* passwordToken(url)
      expect(yield* mcpStatus(url, token)).toBe(200)

      const page = yield* getPage(url, jar, "/settings/authorized-apps")
      expect(page.html).toContain(`action="/settings/authorized-apps/${clientId}/revoke"`)
      expect(page.html).toMatch(/<th scope="row">Password sign-in<\/th>/)
      const appRow = page.html.split("<tr>").find((row) => row.includes(`/settings/authorized-apps/${clientId}/revoke`))!
      expect(appRow).toContain("<th scope=\"row\">Test App</th>")
      expect(appRow).toContain("none given")
      expect(appRow.match(/<time /g)).toHaveLength(2) // approved, and last used by the /mcp call

      // The revocation is announced for its consumers (the credential cache, which the /mcp
      // call above filled and the 401 below proves emptied).
      const events = yield* fixture.service(CredentialRevocations).subscribe
      const appTokenIds = (yield* fixture.sql<{ id: number }>`SELECT id FROM oauth_tokens WHERE client_id = ${clientId}`).map((r) => r.id)
      const revoked = yield* postSettings(url, jar, `/settings/authorized-apps/${clientId}/revoke`, {}, { csrfFrom: "/settings/authorized-apps" })
      expect(revoked.location).toBe("/settings/authorized-apps?done=app-revoked")
      expect(yield* mcpStatus(url, token)).toBe(401)
      expect(yield* Queue.takeAll(events).pipe(Effect.map((c) => [...c]))).toEqual(
        appTokenIds.map((tokenId) => ({ credential: "oauth", tokenId, accountId: fixture.accountId }))
      )
      // Only that app: the other app and the password sign-in go on.
      expect(yield* mcpStatus(url, second.token)).toBe(200)
      expect(yield* mcpStatus(url, password)).toBe(200)
      const client = yield* fixture.service(OAuthClients).lookup(clientId)
      expect(Option.map(client, (c) => c.approvedAt !== null)).toEqual(Option.some(true))
      const after = yield* getPage(url, jar, revoked.location!)
      expect(after.html).not.toContain(`/settings/authorized-apps/${clientId}/revoke`)

      // A password sign-in, by its row.
      const tokenId = /\/settings\/authorized-apps\/password-sign-in\/(\d+)\/revoke/.exec(after.html)![1]!
      const signInRevoked = yield* postSettings(url, jar, `/settings/authorized-apps/password-sign-in/${tokenId}/revoke`, {})
      expect(signInRevoked.location).toBe("/settings/authorized-apps?done=sign-in-revoked")
      expect(yield* mcpStatus(url, password)).toBe(401)
      expect(yield* Queue.take(events)).toEqual({ credential: "oauth", tokenId: Number(tokenId), accountId: fixture.accountId })

      // Nothing left to revoke, and a forged form.
      const again = yield* postSettings(url, jar, `/settings/authorized-apps/${clientId}/revoke`, {})
      expect(again.location).toBe("/settings/authorized-apps?done=nothing-revoked")
      const forged = yield* postSettings(url, jar, `/settings/authorized-apps/${second.clientId}/revoke`, { csrf_token: "forged" })
      expect(forged.res.status).toBe(403)
      expect(yield* mcpStatus(url, second.token)).toBe(200)
    }))

  it.effect("Password: wrong current 400, too short 400, forged 403; a change keeps every credential and the session", () =>
    Effect.gen(function*() {
      const fixture = yield* OAuthFixture
      const url = fixture.url
      const jar = yield* signedIn(url)
      const { token } = yield* appToken({ url })
      const password = yield* passwordToken(url)
      const api = yield* apiToken(fixture, "survives-password-change")

      const wrong = yield* postSettings(url, jar, "/settings/password", { current_password: "not it", new_password: "a new long password" })
      expect(wrong.res.status).toBe(400)
      expect(wrong.html).toContain("The current password is not correct.")
      const short = yield* postSettings(url, jar, "/settings/password", { current_password: PASSWORD, new_password: "short" })
      expect(short.res.status).toBe(400)
      expect(short.html).toContain("8 to 1024 characters")
      const forged = yield* postSettings(url, jar, "/settings/password", { current_password: PASSWORD, new_password: "a new long password", csrf_token: "x" })
      expect(forged.res.status).toBe(403)

      const changed = yield* postSettings(url, jar, "/settings/password", { current_password: PASSWORD, new_password: "a new long password" })
      expect(changed.location).toBe("/settings/password?done=changed")
      for (const t of [token, password, api]) expect(yield* mcpStatus(url, t)).toBe(200)
      expect((yield* getPage(url, jar, "/settings/password")).res.status).toBe(200)
      expect((yield* signInAtLogin(url, { password: PASSWORD })).res.status).toBe(401)
      expect((yield* signInAtLogin(url, { password: "a new long password" })).res.status).toBe(303)
      yield* Effect.orDie(fixture.service(Accounts).changePassword("alice", PASSWORD))
    }))
})

describe(`hosted settings on ${describeMode}`, () => {
  it.scopedLive("BELAY_HOSTED=true: the API tokens page shows only the notice, and minting is refused", () =>
    Effect.gen(function*() {
      const publicBase = "https://belay.example"
      const app = yield* startOAuthApp({ BELAY_HOSTED: "true", BELAY_SERVER_NAME: "srv1", PUBLIC_BASE_URL: publicBase })
      const { jar, res } = yield* signInAtLogin(app.url, { headers: { origin: publicBase } })
      expect(res.status).toBe(303)
      expect([...jar.cookies.keys()]).toContain("__Host-belay_session")
      const page = yield* getPage(app.url, jar, "/settings/api-tokens")
      expect(page.html).toContain("API tokens are not offered on this server.")
      expect(page.html).not.toContain("Create token")
      const mint = yield* postSettings(app.url, jar, "/settings/api-tokens", { name: "nope", scope: "read" }, { headers: { origin: publicBase } })
      expect(mint.res.status).toBe(403)
      expect(createdToken(mint.html)).toBeUndefined()
      const rows = yield* app.sql<{ n: number }>`SELECT count(*)::int AS n FROM api_tokens`
      expect(rows[0]!.n).toBe(0)
      // The other sections are offered as usual.
      expect((yield* getPage(app.url, jar, "/settings/authorized-apps")).res.status).toBe(200)
      const jarless = yield* fetchP(`${app.url}/settings/api-tokens`, { headers: new CookieJar().header() })
      expect(jarless.status).toBe(303)
    }))
})
