/**
 * SettingsHttp owns the checks every member page and settings form shares (docs/decisions/web.md), in order:
 *   GET:  Host names this server (400) → a live session, else 303 to `/login?next=<path>`.
 *   POST (form): Host (400) → same-origin request (403; Origin, or Sec-Fetch-Site when the
 *         pages' no-referrer policy made it `null`) → a live session, else 303 to sign-in
 *         and back to the page → body ≤ 16 KiB, urlencoded (413 / 400) → the session's
 *         CSRF field (403).
 *   POST (JSON, from PasskeyScript): Host (400) → same origin (403) → session (401) →
 *         body ≤ 16 KiB of JSON (413 / 400).
 * A refusal is the response that ends the request (Left). Stateless.
 */
import { Effect, Either, Option } from "effect"
import { MemberPaths } from "../../schema/MemberApi.js"
import type { AppSettings } from "../../services/AppConfig.js"
import type { Accounts } from "../../services/identity/Accounts.js"
import type { SignInLimiter } from "../../services/identity/SignInLimiter.js"
import { rateLimitKey } from "../../net/RateLimitKey.js"
import { clientIp } from "../ClientIp.js"
import { currentSession, type MemberSession, type SessionServices, settingsCsrf, toSignIn, verifySettingsCsrf } from "../auth/Session.js"
import { type HttpRequest, type HttpResponse, json } from "../HttpServer.js"
import { resolveIssuer } from "../Issuer.js"
import { type BodyRefused, isSameOriginPost, noStore, page, readOAuthBody, seeOther } from "../oauth/OAuthHttp.js"
import { single } from "../oauth/SignIn.js"
import { errorPage, PageFields } from "../pages/Pages.js"
import type { SettingsContext } from "../pages/SettingsPages.js"

export interface PageVisit {
  readonly issuer: string
  readonly member: MemberSession
  readonly context: SettingsContext
}

export interface FormPost extends PageVisit {
  readonly form: URLSearchParams
}

export interface JsonPost extends PageVisit {
  readonly json: unknown
}

const badHost = () => page(400, errorPage({ message: "The Host header of this request is not valid." }))

const contextOf = (member: MemberSession): SettingsContext => ({
  accountName: member.accountName,
  csrf: settingsCsrf(member)
})

export const makeSettingsHttp = (config: AppSettings, services: SessionServices) => {
  /** A page request: the signed-in member, or the 303 to sign-in. */
  const visit = (request: HttpRequest): Effect.Effect<Either.Either<PageVisit, HttpResponse>> =>
    Effect.gen(function*() {
      const issuer = resolveIssuer(request, config)
      if (Either.isLeft(issuer)) return Either.left(badHost())
      const member = yield* currentSession(services, request, issuer.right)
      if (Option.isNone(member)) return Either.left(toSignIn(request))
      return Either.right({ issuer: issuer.right, member: member.value, context: contextOf(member.value) })
    })

  /** A settings form post; `pagePath` is where sign-in returns to when the session is gone. */
  const formPost = (request: HttpRequest, pagePath: string): Effect.Effect<Either.Either<FormPost, HttpResponse>, BodyRefused> =>
    Effect.gen(function*() {
      const issuer = resolveIssuer(request, config)
      if (Either.isLeft(issuer)) return Either.left(badHost())
      if (!isSameOriginPost(request, issuer.right)) {
        return Either.left(page(403, errorPage({ title: "Request refused", message: "This form did not come from this site's own page." })))
      }
      const member = yield* currentSession(services, request, issuer.right)
      if (Option.isNone(member)) return Either.left(seeOther(`${MemberPaths.login}?${new URLSearchParams({ next: pagePath })}`))
      const form = yield* readOAuthBody(request, { form: true, json: false })
      if (!(form instanceof URLSearchParams) || !verifySettingsCsrf(member.value, single(form, PageFields.csrf))) {
        return Either.left(page(403, errorPage({ title: "Request refused", message: "The form expired. Reload the page and try again." })))
      }
      return Either.right({ issuer: issuer.right, member: member.value, context: contextOf(member.value), form })
    })

  /** A JSON post from the pages' script. */
  const jsonPost = (request: HttpRequest): Effect.Effect<Either.Either<JsonPost, HttpResponse>, BodyRefused> =>
    Effect.gen(function*() {
      const issuer = resolveIssuer(request, config)
      if (Either.isLeft(issuer)) return Either.left(json(400, { error: "invalid_request" }, noStore))
      if (!isSameOriginPost(request, issuer.right)) {
        return Either.left(json(403, { error: "invalid_request", error_description: "cross-origin requests are not allowed" }, noStore))
      }
      const member = yield* currentSession(services, request, issuer.right)
      if (Option.isNone(member)) {
        return Either.left(json(401, { error: "invalid_token", message: "You are not signed in any more. Reload the page." }, noStore))
      }
      const body = yield* readOAuthBody(request, { form: false, json: true })
      if (body instanceof URLSearchParams) return Either.left(json(400, { error: "invalid_request" }, noStore))
      return Either.right({ issuer: issuer.right, member: member.value, context: contextOf(member.value), json: body.json })
    })

  return { visit, formPost, jsonPost } as const
}

/** Runs `body` with the guard's success, or answers the guard's refusal. */
export const guarded = <A, E, R>(
  checked: Effect.Effect<Either.Either<A, HttpResponse>, E, R>,
  body: (a: A) => Effect.Effect<HttpResponse, E, R>
): Effect.Effect<HttpResponse, E, R> => Effect.flatMap(checked, Either.match({ onLeft: Effect.succeed, onRight: body }))

/** A field's value when sent once, else "". */
export const field = (form: URLSearchParams, name: string): string => single(form, name) ?? ""

/** Why a settings form's password re-check refused: the status and the notice its page shows. */
export interface PasswordRefusal {
  readonly status: number
  readonly text: string
  readonly headers: Readonly<Record<string, string>>
}

/**
 * The password a settings form asks for again before a change that matters (a new password, deleting the account):
 * counted in the one sign-in limiter, as every door's guesses are (docs/decisions/oauth.md "Sign-in failures"), and
 * it must be the signed-in account's. Void, or the refusal; `wrong` is the notice for a wrong password.
 */
export const recheckPassword = (
  deps: { readonly config: AppSettings; readonly accounts: Accounts; readonly limiter: SignInLimiter },
  request: HttpRequest,
  member: { readonly accountName: string; readonly accountId: number },
  password: string,
  wrong: string
): Effect.Effect<Either.Either<void, PasswordRefusal>> =>
  Effect.gen(function*() {
    const attempt = { ipKey: rateLimitKey(clientIp(request, deps.config.trustProxy)), account: member.accountName }
    const limited = yield* Effect.either(deps.limiter.check(attempt))
    if (Either.isLeft(limited)) {
      return Either.left({
        status: 429,
        text: "Too many wrong passwords. Wait a few minutes and try again.",
        headers: { "retry-after": String(limited.left.retryAfterSeconds) }
      })
    }
    const verified = password === "" ? Option.none() : yield* deps.accounts.verifyPassword(member.accountName, password)
    if (Option.isNone(verified) || verified.value.id !== member.accountId) {
      yield* deps.limiter.recordFailure(attempt)
      return Either.left({ status: 400, text: wrong, headers: {} })
    }
    return Either.right(undefined)
  })
