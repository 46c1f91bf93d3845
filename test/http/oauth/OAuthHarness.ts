/**
 * Test support for the OAuth endpoints: the whole app in-process (TestApp), a member to
 * sign in as, a cookie jar, and the approval driven over plain HTTP the way a browser
 * would. Each helper returns what the tests assert on.
 */
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import { SqlClient } from "@effect/sql"
import { Context, Effect, FiberRef, Layer, LogLevel } from "effect"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { startTestApp } from "../../support/TestApp.js"

export const PASSWORD = "correct horse battery staple"

/** The app on a free port with one member, `alice`. */
export const startOAuthApp = (env: Record<string, string> = {}, options: { readonly member?: boolean } = {}) =>
  Effect.gen(function*() {
    // The app's handlers inherit this fiber's log level: keep test output to warnings.
    yield* Effect.locallyScoped(FiberRef.currentMinimumLogLevel, LogLevel.Warning)
    const app = yield* startTestApp(env)
    const service = <I, S>(tag: Context.Tag<I, S>): S => Context.unsafeGet(app.context as Context.Context<never>, tag)
    const accounts = service(Accounts)
    const sql = service(SqlClient.SqlClient)
    const account = options.member === false ? undefined : yield* accounts.create("alice", PASSWORD).pipe(Effect.orDie)
    return { url: app.url, service, sql, accountId: account?.id ?? 0, settings: app.settings, fake: app.fake } as const
  })

export type OAuthApp = Effect.Effect.Success<ReturnType<typeof startOAuthApp>>

// -------------------------------------------------------------------------------------------
// HTTP

export const fetchP = (url: string, init: RequestInit = {}) =>
  Effect.promise(() => fetch(url, { redirect: "manual", ...init }))

export const textOf = (res: Response) => Effect.promise(() => res.text())
export const jsonOf = (res: Response) => Effect.promise(() => res.json() as Promise<Record<string, unknown>>)

export const postJson = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetchP(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) })

export const postForm = (url: string, body: Record<string, string> | string, headers: Record<string, string> = {}) =>
  fetchP(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: typeof body === "string" ? body : new URLSearchParams(body).toString()
  })

/** A documentation-range address (RFC 3849) in a random /56: with BELAY_TRUST_PROXY=true each
 * registration then counts against its own bucket; without it the header is ignored. */
export const randomIp = () => `2001:db8:${Crypto.randomBytes(2).toString("hex")}::1`

/** Registers an app; fails the test unless the answer is 201. */
export const registerClient = (
  url: string,
  metadata: Record<string, unknown> = {},
  headers: Record<string, string> = {}
) =>
  Effect.gen(function*() {
    const res = yield* postJson(`${url}/api/oauth/register`, {
      client_name: "Test App",
      redirect_uris: ["http://127.0.0.1/cb"],
      ...metadata
    }, { "x-forwarded-for": randomIp(), ...headers })
    const body = yield* jsonOf(res)
    if (res.status !== 201) return yield* Effect.dieMessage(`registration failed: ${res.status} ${JSON.stringify(body)}`)
    return body as { client_id: string; redirect_uris: Array<string> } & Record<string, unknown>
  })

// -------------------------------------------------------------------------------------------
// PKCE

export const pkcePair = () => {
  const verifier = Crypto.randomBytes(32).toString("base64url")
  const challenge = Crypto.createHash("sha256").update(verifier).digest("base64url")
  return { verifier, challenge }
}

export const authorizeUrl = (url: string, params: Record<string, string>) =>
  `${url}/oauth/authorize?${new URLSearchParams({ response_type: "code", code_challenge_method: "S256", ...params })}`

/** Registers an app (redirect_uris: http://127.0.0.1/cb) and returns its authorize URL with a fresh PKCE pair. */
export const newAuthorization = (url: string) =>
  Effect.gen(function*() {
    const client = yield* registerClient(url)
    const { verifier, challenge } = pkcePair()
    const authorize = authorizeUrl(url, { client_id: client.client_id, redirect_uri: "http://127.0.0.1/cb", code_challenge: challenge })
    return { client, verifier, authorize }
  })

// -------------------------------------------------------------------------------------------
// Browser-like approval

const entities: Record<string, string> = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": "\"", "&#39;": "'" }
export const unescapeHtml = (s: string) => s.replace(/&(?:amp|lt|gt|quot|#39);/g, (e) => entities[e] ?? e)

/** The value of hidden/text input `name` in a page, or undefined. */
export const field = (html: string, name: string): string | undefined => {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html)
  return m?.[1] === undefined ? undefined : unescapeHtml(m[1])
}

/** A minimal cookie jar: name → value, from Set-Cookie headers. */
export class CookieJar {
  readonly cookies = new Map<string, string>()
  readonly raw: Array<string> = []
  take(res: Response) {
    for (const c of res.headers.getSetCookie()) {
      this.raw.push(c)
      const [pair = ""] = c.split(";")
      const eq = pair.indexOf("=")
      const name = pair.slice(0, eq)
      const value = pair.slice(eq + 1)
      if (/Max-Age=0/i.test(c) || value === "") this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
    return res
  }
  header(): Record<string, string> {
    return this.cookies.size === 0 ? {} : { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ") }
  }
}

/** Signs in through the sign-in page shown at `authorize`; returns the approval page. */
export const signIn = (url: string, authorize: string, jar: CookieJar, credentials = { username: "alice", password: PASSWORD }) =>
  Effect.gen(function*() {
    const first = jar.take(yield* fetchP(authorize, { headers: jar.header() }))
    const signInHtml = yield* textOf(first)
    if (first.status !== 200 || field(signInHtml, "return_to") === undefined) {
      return yield* Effect.dieMessage(`expected the sign-in page, got ${first.status}: ${signInHtml.slice(0, 400)}`)
    }
    const posted = jar.take(yield* postForm(`${url}/oauth/signin`, {
      csrf_token: field(signInHtml, "csrf_token")!,
      return_to: field(signInHtml, "return_to")!,
      username: credentials.username,
      password: credentials.password
    }, { origin: url, ...jar.header() }))
    return { status: posted.status, location: posted.headers.get("location"), body: yield* textOf(posted) }
  })

/** GETs the approval page with the jar's session; returns the page and its form fields. */
export const approvalPage = (authorize: string, jar: CookieJar) =>
  Effect.gen(function*() {
    const res = jar.take(yield* fetchP(authorize, { headers: jar.header() }))
    const html = yield* textOf(res)
    return { res, html, consent: field(html, "consent"), csrf: field(html, "csrf_token") }
  })

export const decide = (
  url: string,
  jar: CookieJar,
  form: Record<string, string>,
  headers: Record<string, string> = { origin: url }
) => Effect.map(postForm(`${url}/oauth/authorize`, form, { ...headers, ...jar.header() }), (res) => jar.take(res))

/**
 * The whole approval over HTTP: sign in (when the jar has no session), the approval
 * page, then the decision. Returns the decision's response.
 */
export const approveOverHttp = (url: string, authorize: string, jar: CookieJar, decision: "approve" | "deny" = "approve") =>
  Effect.gen(function*() {
    if (!jar.cookies.has("belay_session")) {
      const signed = yield* signIn(url, authorize, jar)
      if (signed.status !== 303) return yield* Effect.dieMessage(`sign-in failed: ${signed.status} ${signed.body.slice(0, 300)}`)
    }
    const page = yield* approvalPage(authorize, jar)
    if (page.consent === undefined || page.csrf === undefined) {
      return yield* Effect.dieMessage(`expected the approval page, got ${page.res.status}: ${page.html.slice(0, 600)}`)
    }
    return yield* decide(url, jar, { consent: page.consent, csrf_token: page.csrf, decision })
  })

/** Registers, approves over HTTP, and returns the code and everything bound to it. */
export const obtainCode = (
  app: { readonly url: string },
  options: { readonly redirectUri?: string; readonly registered?: ReadonlyArray<string>; readonly state?: string; readonly jar?: CookieJar } = {}
) =>
  Effect.gen(function*() {
    const redirectUri = options.redirectUri ?? "http://127.0.0.1:5555/cb"
    const client = yield* registerClient(app.url, { redirect_uris: options.registered ?? ["http://127.0.0.1/cb"] })
    const { verifier, challenge } = pkcePair()
    const authorize = authorizeUrl(app.url, {
      client_id: client.client_id,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      ...(options.state === undefined ? {} : { state: options.state })
    })
    const jar = options.jar ?? new CookieJar()
    const res = yield* approveOverHttp(app.url, authorize, jar)
    const location = res.headers.get("location")
    if (res.status !== 303 || location === null) return yield* Effect.dieMessage(`approve failed: ${res.status}`)
    const code = new URL(location).searchParams.get("code")!
    return { clientId: client.client_id, verifier, challenge, redirectUri, code, location, jar } as const
  })

export const tokenRequest = (url: string, params: Record<string, string>, headers: Record<string, string> = {}) =>
  postForm(`${url}/api/oauth/token`, params, headers)

export const redeem = (
  url: string,
  grant: { readonly clientId: string; readonly code: string; readonly redirectUri: string; readonly verifier: string }
) =>
  tokenRequest(url, {
    grant_type: "authorization_code",
    client_id: grant.clientId,
    code: grant.code,
    redirect_uri: grant.redirectUri,
    code_verifier: grant.verifier
  })

/** POST /mcp tools/list with a bearer token; returns the status. */
export const mcpStatus = (url: string, token: string) =>
  Effect.map(
    postJson(`${url}/mcp`, { jsonrpc: "2.0", id: 1, method: "tools/list" }, {
      authorization: `Bearer ${token}`,
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-06-18"
    }),
    (res) => res.status
  )

// -------------------------------------------------------------------------------------------
// A shared app per test file (layer), signed in once

export interface Fixture extends OAuthApp {
  /** Holds alice's browser session. */
  readonly jar: CookieJar
}

export class OAuthFixture extends Context.Tag("test/OAuthFixture")<OAuthFixture, Fixture>() {}

/**
 * The app with BELAY_TRUST_PROXY=true (so each registration of `registerClient` counts
 * against its own random address) and a signed-in session.
 */
export const fixtureLayer = (env: Record<string, string> = {}) =>
  Layer.scoped(
    OAuthFixture,
    Effect.gen(function*() {
      const app = yield* startOAuthApp({ BELAY_TRUST_PROXY: "true", ...env })
      const jar = new CookieJar()
      const { authorize } = yield* newAuthorization(app.url)
      const signed = yield* signIn(app.url, authorize, jar)
      if (signed.status !== 303) return yield* Effect.dieMessage(`fixture sign-in failed: ${signed.status}`)
      return { ...app, jar }
    })
  )

/** A request with headers fetch will not let us set (Host), over node:http. */
export const rawRequest = (
  url: string,
  options: { readonly method?: string; readonly path: string; readonly headers?: Record<string, string>; readonly body?: string | Buffer }
) =>
  Effect.async<{ status: number; headers: Http.IncomingHttpHeaders; body: string }>((resume) => {
    const target = new URL(url)
    const req = Http.request({
      host: target.hostname,
      port: target.port,
      method: options.method ?? "GET",
      path: options.path,
      headers: options.headers ?? {}
    }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (c) => (body += c))
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, body })))
    })
    req.on("error", (e) => resume(Effect.die(e)))
    req.end(options.body)
  })
