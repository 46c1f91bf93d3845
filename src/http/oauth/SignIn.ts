/**
 * SignIn owns member sign-in with username and password: the sign-in page (shown by
 * Authorize when no session is open, and at `/login`) and its two POST endpoints —
 * `/oauth/signin`, which may only continue to the authorization it came from, and `/login`
 * (LoginRoutes), which may continue to any same-origin path. The page also offers passkey
 * sign-in (LoginRoutes' JSON endpoints, PasskeyScript.ts). Checks of the POST, in order:
 *   1. same-origin request (Origin, or Sec-Fetch-Site when Origin is null) → else 403;
 *   2. body ≤ 16 KiB form (413 / 400);
 *   3. login CSRF: the form's token equals the `belay_signin` cookie set with the page
 *      (double submit; a cross-site page can neither read nor set it) → else 403;
 *   4. `return_to` is a path this endpoint may continue to — `/oauth/authorize?…` here, a
 *      same-origin path at /login; never an absolute or protocol-relative URL (an open
 *      redirect, RFC 9700 §4.11) → else 400;
 *   5. SignInLimiter: more than 10 failures for the account or from the address in 10
 *      minutes → 429 with Retry-After;
 *   6. the password (argon2id; the same work whether or not the name exists) → 401 with
 *      the form again and one message for every cause;
 *   7. a session (Session.sessionCookie: HttpOnly, SameSite=Lax, `__Host-` and Secure on
 *      https, 30 days); then 303 to `return_to`.
 * Stateless; the limiter is safe under concurrency.
 */
import { Effect, Either, Option } from "effect"
import { MemberPaths } from "../../schema/MemberApi.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { SignInLimiter } from "../../services/identity/SignInLimiter.js"
import { constantTimeEqual, randomSecret } from "../../services/identity/Tokens.js"
import { isSafeNext, sessionCookie } from "../auth/Session.js"
import { rateLimitKey } from "../../net/RateLimitKey.js"
import { clientIp } from "../ClientIp.js"
import { readCookie, setCookie } from "../Cookies.js"
import type { HttpRequest, HttpResponse, Route } from "../HttpServer.js"
import { isHttps, resolveIssuer } from "../Issuer.js"
import { errorPage, PageFields, signInPage } from "../pages/Pages.js"
import { isSameOriginPost, page, readOAuthBody, seeOther } from "./OAuthHttp.js"

export const SIGN_IN_PATH = "/oauth/signin"
export const SIGN_IN_CSRF_COOKIE = "belay_signin"
export const RETURN_TO_FIELD = "return_to"

/** One message for every failed password sign-in: the client learns nothing about why. */
export const SIGN_IN_FAILED = "Wrong username or password."

/** Only the authorization endpoint of this server, as a path: no scheme, host, `//` or `\`. */
export const isSafeReturnTo = (value: string): boolean =>
  /^\/oauth\/authorize\?[\x21-\x7e]*$/.test(value) && !value.includes("\\")

export interface SignInForm {
  readonly issuer: string
  readonly returnTo: string
  /** Where the form posts: `/oauth/signin` (default) or `/login`. */
  readonly action?: string
  readonly clientName?: string | undefined
  readonly username?: string | undefined
  readonly error?: string | undefined
  readonly status?: number
  readonly headers?: Readonly<Record<string, string>>
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
      action: form.action ?? SIGN_IN_PATH,
      csrfToken: csrf,
      hidden: { [RETURN_TO_FIELD]: form.returnTo },
      passkey: { optionsUrl: MemberPaths.loginPasskeyOptions, submitUrl: MemberPaths.loginPasskey, next: form.returnTo },
      ...(form.clientName === undefined ? {} : { clientName: form.clientName }),
      ...(form.username === undefined ? {} : { username: form.username }),
      ...(form.error === undefined ? {} : { error: form.error })
    }),
    {
      ...(existing === undefined ? { "set-cookie": setCookie(SIGN_IN_CSRF_COOKIE, csrf, { secure: isHttps(form.issuer) }) } : {}),
      ...form.headers
    }
  )
}

/** One value of a form field; undefined when absent or repeated (RFC 6749 §3.1 spirit). */
export const single = (form: URLSearchParams, name: string): string | undefined => {
  const all = form.getAll(name)
  return all.length === 1 ? all[0] : undefined
}

/** The POST handler of a sign-in form at `path`, continuing only to what `mayContinueTo` accepts. */
const passwordSignIn = (path: string, mayContinueTo: (returnTo: string) => boolean) =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    const accounts = yield* Accounts
    const sessions = yield* BrowserSessions
    const limiter = yield* SignInLimiter

    const refused = (status: number, message: string, title?: string) =>
      page(status, errorPage({ message, ...(title === undefined ? {} : { title }) }))

    return (request: HttpRequest) =>
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
        if (returnTo === undefined || !mayContinueTo(returnTo)) {
          return refused(400, "The sign-in form does not say where to continue. Start again.")
        }
        const username = single(form, PageFields.username) ?? ""
        const password = single(form, PageFields.password) ?? ""

        const attempt = { ipKey: rateLimitKey(clientIp(request, config.trustProxy)), account: username }
        const limited = yield* Effect.either(limiter.check(attempt))
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
          yield* limiter.recordFailure(attempt)
          yield* Effect.logInfo("sign-in failed")
          return signInResponse(request, { issuer, returnTo, action: path, username, error: SIGN_IN_FAILED, status: 401 })
        }

        const secret = yield* sessions.create(account.value.id)
        return seeOther(returnTo, { "set-cookie": sessionCookie(issuer, secret) })
      }).pipe(Effect.catchTag("BodyRefused", (e) => Effect.succeed(e.response)))
  })

export const signInRoute = Effect.map(passwordSignIn(SIGN_IN_PATH, isSafeReturnTo), (handler): ReadonlyArray<Route> => [
  { method: "POST", path: SIGN_IN_PATH, name: "oauth.signin", handler }
])

/** `POST /login`: the same sign-in, continuing to any same-origin path (`?next=`). */
export const loginPostRoute = Effect.map(passwordSignIn(MemberPaths.login, isSafeNext), (handler): ReadonlyArray<Route> => [
  { method: "POST", path: MemberPaths.login, name: "login.password", handler }
])
