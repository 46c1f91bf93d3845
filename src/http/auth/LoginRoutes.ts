/**
 * LoginRoutes owns signing in and out in the browser outside an authorization
 * (docs/decisions/web.md, Pages):
 *
 *   - `GET /login?next=<same-origin path>`: the sign-in page (password and passkey), whose
 *     `Link` header preloads the web client's bundle; a member already signed in goes straight
 *     on (303). `next` defaults to `/` and is
 *     ignored unless it is a same-origin path (Session.isSafeNext).
 *   - `POST /login`: the password form (SignIn.loginPostRoute: same checks as the
 *     authorization page's sign-in).
 *   - `POST /login/passkey/options` → the WebAuthn request options (a fresh, single-use
 *     challenge); `POST /login/passkey` `{credential, next}` → verifies the assertion
 *     (PasskeyCeremonies.signIn), starts a session and answers 200 `{redirect}`. Both need
 *     a same-origin request (login CSRF), and the second counts failures with the
 *     password's SignInLimiter (by address, and by account once the credential names
 *     one): every failure is the same 401 `{error: "invalid_credentials", message}`,
 *     429 with Retry-After past the limit.
 *   - `POST /logout`: the session ends, the cookie is cleared, 303 to /login. Like every
 *     cookie-carried change (docs/contract.md, Credentials) it needs a same-origin `Origin`
 *     — enough on its own, no body needed — or, when the browser sent `Origin: null` or none
 *     (our pages' no-referrer policy makes a form POST do that), `Sec-Fetch-Site:
 *     same-origin` and the CSRF field of the session's forms. Anything else is 403 and the
 *     session stays.
 * Stateless; the stores it uses are safe under concurrency.
 */
import { Effect, Either, Option, Schema } from "effect"
import { MemberPaths, PasskeySignInRequest } from "../../schema/MemberApi.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { PasskeyCeremonies } from "../../services/identity/PasskeyCeremonies.js"
import { SignInLimiter } from "../../services/identity/SignInLimiter.js"
import { rateLimitKey } from "../../net/RateLimitKey.js"
import { clientIp } from "../ClientIp.js"
import { json, type HttpRequest, type Route } from "../HttpServer.js"
import { resolveIssuer } from "../Issuer.js"
import { hasSameOriginHeader, isSameOriginPost, noStore, oauthError, page, readOAuthBody, seeOther } from "../oauth/OAuthHttp.js"
import { loginPostRoute, signInResponse, single } from "../oauth/SignIn.js"
import { builtManifest, clientPreloadLink } from "../pages/ClientAssets.js"
import { errorPage, PageFields } from "../pages/Pages.js"
import { clearedSessionCookie, currentSession, isSafeNext, sessionCookie, verifySettingsCsrf } from "./Session.js"

const decodePasskeySignIn = Schema.decodeUnknownEither(PasskeySignInRequest)

/** The message of every failed passkey sign-in. */
export const PASSKEY_SIGN_IN_FAILED = "That passkey was not accepted."

export const loginRoutes = Effect.gen(function*() {
  const config = yield* AppConfig
  const sessions = yield* BrowserSessions
  const ceremonies = yield* PasskeyCeremonies
  const limiter = yield* SignInLimiter
  const accounts = yield* Accounts
  const passwordPost = yield* loginPostRoute
  // The web client's bundle, fetched while the member types (ClientAssets.clientPreloadLink).
  const preload = clientPreloadLink(builtManifest())
  const preloadHeaders: Readonly<Record<string, string>> = preload === "" ? {} : { link: preload }

  const badHost = page(400, errorPage({ message: "The Host header of this request is not valid." }))
  const notSameOrigin = json(403, { error: "invalid_request", error_description: "cross-origin requests are not allowed" }, noStore)

  const nextOf = (request: HttpRequest): string => {
    const next = request.query.getAll("next")
    return next.length === 1 && isSafeNext(next[0]!) ? next[0]! : MemberPaths.home
  }

  const show: Route = {
    method: "GET",
    path: MemberPaths.login,
    name: "login.page",
    handler: (request) =>
      Effect.gen(function*() {
        const issuer = resolveIssuer(request, config)
        if (Either.isLeft(issuer)) return badHost
        const next = nextOf(request)
        const member = yield* currentSession({ sessions, accounts }, request, issuer.right)
        if (Option.isSome(member)) return seeOther(next)
        return signInResponse(request, { issuer: issuer.right, returnTo: next, action: MemberPaths.login, headers: preloadHeaders })
      })
  }

  const passkeyOptions: Route = {
    method: "POST",
    path: MemberPaths.loginPasskeyOptions,
    name: "login.passkey-options",
    handler: (request) =>
      Effect.gen(function*() {
        const issuer = resolveIssuer(request, config)
        if (Either.isLeft(issuer)) return json(400, { error: "invalid_request" }, noStore)
        if (!isSameOriginPost(request, issuer.right)) return notSameOrigin
        return json(200, yield* ceremonies.signInOptions(issuer.right), noStore)
      })
  }

  const passkeySignIn: Route = {
    method: "POST",
    path: MemberPaths.loginPasskey,
    name: "login.passkey",
    handler: (request) =>
      Effect.gen(function*() {
        const issuer = resolveIssuer(request, config)
        if (Either.isLeft(issuer)) return json(400, { error: "invalid_request" }, noStore)
        if (!isSameOriginPost(request, issuer.right)) return notSameOrigin
        const body = yield* readOAuthBody(request, { form: false, json: true })
        const decoded = decodePasskeySignIn(body instanceof URLSearchParams ? undefined : body.json)
        if (Either.isLeft(decoded)) {
          return json(400, { error: "invalid_request", message: "The passkey answer could not be read." }, noStore)
        }
        const next = decoded.right.next !== undefined && isSafeNext(decoded.right.next) ? decoded.right.next : MemberPaths.home

        const ipKey = rateLimitKey(clientIp(request, config.trustProxy))
        const limited = yield* Effect.either(limiter.check({ ipKey }))
        if (Either.isLeft(limited)) return oauthError(limited.left)

        const outcome = yield* ceremonies.signIn(issuer.right, decoded.right.credential)
        // Once the credential names an account, that account's limit applies too — the same
        // bucket as password attempts for its name.
        const account = outcome.accountId === undefined ? Option.none() : yield* accounts.findById(outcome.accountId)
        const attempt = { ipKey, account: Option.getOrUndefined(Option.map(account, (a) => a.name)) }
        const accountLimited = yield* Effect.either(limiter.check(attempt))
        if (Either.isLeft(accountLimited)) return oauthError(accountLimited.left)
        if (Option.isNone(outcome.result)) {
          yield* limiter.recordFailure(attempt)
          return json(401, { error: "invalid_credentials", message: PASSKEY_SIGN_IN_FAILED }, noStore)
        }
        const secret = yield* sessions.create(outcome.result.value.accountId)
        return json(200, { redirect: next }, { ...noStore, "set-cookie": sessionCookie(issuer.right, secret) })
      }).pipe(Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)))
  }

  const logout: Route = {
    method: "POST",
    path: MemberPaths.logout,
    name: "logout",
    handler: (request) =>
      Effect.gen(function*() {
        const issuer = resolveIssuer(request, config)
        if (Either.isLeft(issuer)) return badHost
        if (!isSameOriginPost(request, issuer.right)) {
          return page(403, errorPage({ title: "Sign-out refused", message: "This sign-out did not come from this site's own page." }))
        }
        const member = yield* currentSession({ sessions, accounts }, request, issuer.right)
        if (Option.isNone(member)) return seeOther(MemberPaths.login, { "set-cookie": clearedSessionCookie(issuer.right) })
        if (!hasSameOriginHeader(request, issuer.right)) {
          const form = yield* readOAuthBody(request, { form: true, json: false })
          if (!(form instanceof URLSearchParams) || !verifySettingsCsrf(member.value, single(form, PageFields.csrf))) {
            return page(403, errorPage({ title: "Sign-out refused", message: "The sign-out form expired. Reload the page and try again." }))
          }
        }
        yield* sessions.end(member.value.secret)
        return seeOther(MemberPaths.login, { "set-cookie": clearedSessionCookie(issuer.right) })
      }).pipe(Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)))
  }

  return [show, ...passwordPost, passkeyOptions, passkeySignIn, logout] as ReadonlyArray<Route>
})
