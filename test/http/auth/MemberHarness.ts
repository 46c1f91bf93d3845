/**
 * Test support for the member's pages and REST routes, over plain HTTP the way a browser
 * would drive them: sign in at /login (login-CSRF cookie and field), read a settings page's
 * CSRF field, post settings forms with a same-origin Origin, call the JSON routes of the
 * passkey script, and mint tokens of each kind. Builds on OAuthHarness (the app, the
 * cookie jar). Each helper returns what the tests assert on.
 */
import { Effect } from "effect"
import { ApiTokens } from "../../../src/services/identity/ApiTokens.js"
import { CookieJar, fetchP, field, jsonOf, obtainCode, type OAuthApp, PASSWORD, postForm, postJson, redeem, textOf } from "../oauth/OAuthHarness.js"

/** Signs `alice` in at /login; returns the jar holding the session and the sign-in's response. */
export const signInAtLogin = (
  url: string,
  options: { readonly jar?: CookieJar; readonly next?: string; readonly password?: string; readonly headers?: Record<string, string> } = {}
) =>
  Effect.gen(function*() {
    const jar = options.jar ?? new CookieJar()
    const page = jar.take(yield* fetchP(`${url}/login${options.next === undefined ? "" : `?next=${encodeURIComponent(options.next)}`}`, {
      headers: { ...options.headers, ...jar.header() }
    }))
    const html = yield* textOf(page)
    const csrf = field(html, "csrf_token")
    const returnTo = field(html, "return_to")
    if (page.status !== 200 || csrf === undefined || returnTo === undefined) {
      return yield* Effect.dieMessage(`expected the sign-in page, got ${page.status}: ${html.slice(0, 300)}`)
    }
    const res = jar.take(yield* postForm(`${url}/login`, {
      csrf_token: csrf,
      return_to: returnTo,
      username: "alice",
      password: options.password ?? PASSWORD
    }, { origin: url, ...options.headers, ...jar.header() }))
    return { jar, res, body: yield* textOf(res) }
  })

/** A signed-in jar; fails the test unless sign-in answered 303. */
export const signedIn = (url: string) =>
  Effect.gen(function*() {
    const { jar, res } = yield* signInAtLogin(url)
    if (res.status !== 303) return yield* Effect.dieMessage(`sign-in failed: ${res.status}`)
    return jar
  })

/** GET a member page with the jar; returns the response, its HTML and the page's CSRF token. */
export const getPage = (url: string, jar: CookieJar, path: string) =>
  Effect.gen(function*() {
    const res = jar.take(yield* fetchP(`${url}${path}`, { headers: jar.header() }))
    const html = yield* textOf(res)
    return { res, html, csrf: field(html, "csrf_token") }
  })

/** POSTs a settings form (with the page's CSRF token unless `fields` sets one) from the same origin. */
export const postSettings = (
  url: string,
  jar: CookieJar,
  path: string,
  fields: Record<string, string>,
  options: { readonly csrfFrom?: string; readonly headers?: Record<string, string> } = {}
) =>
  Effect.gen(function*() {
    const csrf = fields.csrf_token ?? (yield* getPage(url, jar, options.csrfFrom ?? "/settings/api-tokens")).csrf ?? ""
    const res = jar.take(yield* postForm(`${url}${path}`, { csrf_token: csrf, ...fields }, { origin: url, ...jar.header(), ...options.headers }))
    return { res, html: yield* textOf(res), location: res.headers.get("location") }
  })

/** POSTs JSON from the same origin with the jar's cookies; returns status and parsed body. */
export const postJsonAs = (url: string, jar: CookieJar, path: string, body: unknown, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const res = jar.take(yield* postJson(`${url}${path}`, body, { origin: url, ...jar.header(), ...headers }))
    const text = yield* textOf(res)
    let json: Record<string, unknown> = {}
    try {
      json = JSON.parse(text) as Record<string, unknown>
    } catch {
      // not JSON: left empty
    }
    return { res, status: res.status, json }
  })

/** `POST /api/auth/login/token` for alice. */
export const passwordToken = (url: string, password = PASSWORD) =>
  Effect.gen(function*() {
    const res = yield* postJson(`${url}/api/auth/login/token`, { username: "alice", password })
    if (res.status !== 200) return yield* Effect.dieMessage(`login/token failed: ${res.status}`)
    return (yield* jsonOf(res)).access_token as string
  })

/** An OAuth access token of a freshly approved app; returns it and the app's client_id. */
export const appToken = (app: { readonly url: string }) =>
  Effect.gen(function*() {
    const grant = yield* obtainCode(app)
    const res = yield* redeem(app.url, grant)
    if (res.status !== 200) return yield* Effect.dieMessage(`token exchange failed: ${res.status}`)
    return { token: (yield* jsonOf(res)).access_token as string, clientId: grant.clientId }
  })

/** An API token of alice's. */
export const apiToken = (app: OAuthApp, name = "cli", scope: "read" | "read-write" = "read-write") =>
  Effect.orDie(app.service(ApiTokens).create("alice", name, scope))

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
