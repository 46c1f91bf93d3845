/**
 * SignIn owns member sign-in with username and password on the authorization flow: the
 * sign-in page (shown by Authorize when no session is open) and `POST /oauth/signin`.
 * Checks of the POST, in order:
 *   1. same-origin request (Origin, or Sec-Fetch-Site when Origin is null) → else 403;
 *   2. body ≤ 16 KiB form (413 / 400);
 *   3. login CSRF: the form's token equals the `belay_signin` cookie set with the page
 *      (double submit; a cross-site page can neither read nor set it) → else 403;
 *   4. `return_to` is a same-origin authorization URL (`/oauth/authorize?…`), never an
 *      absolute or protocol-relative one (an open redirect, RFC 9700 §4.11) → else 400;
 *   5. at most 10 failed sign-ins per address and username in 10 minutes → 429;
 *   6. the password (argon2id; the same work whether or not the name exists) → 401 with
 *      the form again;
 *   7. a session: cookie `belay_session`, HttpOnly, SameSite=Lax, Secure on https,
 *      Path=/, 30 days; then 303 back to the authorization, which shows the approval page.
 * Stateless apart from the failure limiter (in memory, atomic per attempt).
 */
import { Duration, Effect, Either, Option } from "effect"
import { Accounts } from "../../services/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { BrowserSessionLimits, BrowserSessions } from "../../services/BrowserSessions.js"
import { makeSlidingWindow } from "../../services/RegistrationLimiter.js"
import { constantTimeEqual, randomSecret } from "../../services/Tokens.js"
import { clientIp, rateLimitKey } from "../ClientIp.js"
import { readCookie, setCookie } from "../Cookies.js"
import type { HttpRequest, HttpResponse, Route } from "../HttpServer.js"
import { errorPage, PageFields, signInPage } from "../pages/Pages.js"
import { isHttps, resolveIssuer } from "../Issuer.js"
import { isSameOriginPost, page, readOAuthBody, seeOther } from "./OAuthHttp.js"

export const SIGN_IN_PATH = "/oauth/signin"
export const SESSION_COOKIE = "belay_session"
export const SIGN_IN_CSRF_COOKIE = "belay_signin"
export const RETURN_TO_FIELD = "return_to"

export const SignInLimits = { failuresPerWindow: 10, window: Duration.minutes(10) } as const

/** Only the authorization endpoint of this server, as a path: no scheme, host, `//` or `\`. */
export const isSafeReturnTo = (value: string): boolean =>
  /^\/oauth\/authorize\?[\x21-\x7e]*$/.test(value) && !value.includes("\\")

export interface SignInForm {
  readonly issuer: string
  readonly returnTo: string
  readonly clientName?: string | undefined
  readonly username?: string | undefined
  readonly error?: string | undefined
  readonly status?: number
}

/**
 * The sign-in page, with the login-CSRF cookie: the browser's existing one is reused (so
 * two tabs both work), else a fresh one is set for the browser session.
 */
export const signInResponse = (request: HttpRequest, form: SignInForm): HttpResponse => {
  const existing = readCookie(request, SIGN_IN_CSRF_COOKIE)
  const csrf = existing ?? randomSecret()
  return page(
    form.status ?? 200,
    signInPage({
      action: SIGN_IN_PATH,
      csrfToken: csrf,
      hidden: { [RETURN_TO_FIELD]: form.returnTo },
      ...(form.clientName === undefined ? {} : { clientName: form.clientName }),
      ...(form.username === undefined ? {} : { username: form.username }),
      ...(form.error === undefined ? {} : { error: form.error })
    }),
    existing === undefined ? { "set-cookie": setCookie(SIGN_IN_CSRF_COOKIE, csrf, { secure: isHttps(form.issuer) }) } : {}
  )
}

/** One value of a form field; undefined when absent or repeated (RFC 6749 §3.1 spirit). */
export const single = (form: URLSearchParams, name: string): string | undefined => {
  const all = form.getAll(name)
  return all.length === 1 ? all[0] : undefined
}

export const signInRoute = Effect.gen(function*() {
  const config = yield* AppConfig
  const accounts = yield* Accounts
  const sessions = yield* BrowserSessions
  const failures = yield* makeSlidingWindow({ limit: SignInLimits.failuresPerWindow, window: SignInLimits.window })

  const refused = (status: number, message: string, title?: string) =>
    page(status, errorPage({ message, ...(title === undefined ? {} : { title }) }))

  const route: Route = {
    method: "POST",
    path: SIGN_IN_PATH,
    name: "oauth.signin",
    handler: (request) =>
      Effect.gen(function*() {
        const resolved = resolveIssuer(request, config)
        if (Either.isLeft(resolved)) return refused(400, "The Host header of this request is not valid.")
        const issuer = resolved.right
        if (!isSameOriginPost(request, issuer)) {
          return refused(403, "This sign-in did not come from this site's own page.", "Sign-in refused")
        }
        const form = yield* readOAuthBody(request, { form: true, json: false })
        if (!(form instanceof URLSearchParams)) return refused(400, "The sign-in form could not be read.")

        const cookie = readCookie(request, SIGN_IN_CSRF_COOKIE)
        const csrf = single(form, PageFields.csrf)
        if (cookie === undefined || csrf === undefined || !constantTimeEqual(cookie, csrf)) {
          return refused(403, "The sign-in form expired. Go back, reload the page and sign in again.", "Sign-in refused")
        }
        const returnTo = single(form, RETURN_TO_FIELD)
        if (returnTo === undefined || !isSafeReturnTo(returnTo)) {
          return refused(400, "The sign-in form does not say where to continue. Start again from the app.")
        }
        const username = single(form, PageFields.username) ?? ""
        const password = single(form, PageFields.password) ?? ""

        const limitKey = `${rateLimitKey(clientIp(request, config.trustProxy))} ${username.toLowerCase()}`
        const limited = yield* Effect.either(failures.check(limitKey))
        if (Either.isLeft(limited)) {
          return page(
            429,
            errorPage({ title: "Too many attempts", message: "Too many failed sign-ins. Wait a few minutes and try again." }),
            { "retry-after": String(limited.left.retryAfterSeconds) }
          )
        }

        const account = username === "" || password === ""
          ? Option.none()
          : yield* accounts.verifyPassword(username, password)
        if (Option.isNone(account)) {
          yield* Effect.ignore(failures.take(limitKey))
          yield* Effect.logInfo("sign-in failed")
          return signInResponse(request, {
            issuer,
            returnTo,
            username,
            error: "Wrong username or password.",
            status: 401
          })
        }

        const secret = yield* sessions.create(account.value.id)
        return seeOther(returnTo, {
          "set-cookie": setCookie(SESSION_COOKIE, secret, {
            secure: isHttps(issuer),
            maxAgeSeconds: Math.floor(Duration.toSeconds(BrowserSessionLimits.lifetime))
          })
        })
      }).pipe(Effect.catchTag("BodyRefused", (e) => Effect.succeed(e.response)))
  }
  return [route] as ReadonlyArray<Route>
})
