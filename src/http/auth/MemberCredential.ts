/**
 * MemberCredential owns the credential rule of every `/api/*` route that acts for a member
 * (docs/decisions/web.md, Credentials): the browser session cookie, or
 * `Authorization: Bearer` with an OAuth access token or a password-sign-in token. API
 * tokens are for /mcp only: here they get 401 `{error: "invalid_token", error_description}`
 * like a token that does not exist (RFC 6750 §3.1). A request that sends an Authorization
 * header is judged by it alone, never by a cookie that happens to ride along.
 * Stateless Effects over Authenticator and BrowserSessions.
 */
import { Effect, Either, Option } from "effect"
import { AppConfig } from "../../services/AppConfig.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { Authenticator, type Principal } from "../../services/identity/Authenticator.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { type HttpRequest, type HttpResponse, json } from "../HttpServer.js"
import { type IssuerSettings, resolveIssuer } from "../Issuer.js"
import { foreignOrigin, isSameOriginPost, malformed, noStore } from "../oauth/OAuthHttp.js"
import { currentSession, type MemberSession, type SessionServices } from "./Session.js"

export type Member =
  | { readonly _tag: "Session"; readonly session: MemberSession; readonly accountId: number }
  | {
    readonly _tag: "Bearer"
    readonly credential: "oauth" | "password-token"
    readonly principal: Principal
    readonly accountId: number
  }

/** RFC 6750 §3: 401 with a Bearer challenge naming the error. */
export const invalidToken = (description: string): HttpResponse =>
  json(401, { error: "invalid_token", error_description: description }, {
    ...noStore,
    "www-authenticate": "Bearer error=\"invalid_token\""
  })

/** The member behind this request, or the 401 that ends it. */
export const memberCredential = (
  services: SessionServices & { readonly authenticator: Authenticator },
  request: HttpRequest,
  issuer: string
): Effect.Effect<Either.Either<Member, HttpResponse>> =>
  Effect.gen(function*() {
    const authorization = request.header("authorization")
    if (authorization !== undefined) {
      const principal = yield* services.authenticator.authenticate(authorization)
      if (Option.isNone(principal)) return Either.left(invalidToken("the token is not valid or was revoked"))
      if (principal.value.credential === "api-token") return Either.left(invalidToken("API tokens are accepted at /mcp only"))
      const credential = principal.value.oauthKind === "password" ? "password-token" : "oauth"
      return Either.right<Member>({ _tag: "Bearer", credential, principal: principal.value, accountId: principal.value.accountId })
    }
    const session = yield* currentSession(services, request, issuer)
    if (Option.isNone(session)) return Either.left(invalidToken("sign in, or send a Bearer token"))
    return Either.right<Member>({ _tag: "Session", session: session.value, accountId: session.value.session.accountId })
  })

/** 403 `{error: "account_paused"}`: a paused account reads but does not change anything (docs/contract.md, Credentials). */
export const accountPaused = (): HttpResponse =>
  json(403, { error: "account_paused", error_description: "the account is paused" }, noStore)

/** What `memberRequest` reads, gathered once by each route module that acts for a member. */
export const memberRequestServices = Effect.gen(function*() {
  return {
    config: yield* AppConfig,
    authenticator: yield* Authenticator,
    sessions: yield* BrowserSessions,
    accounts: yield* Accounts
  } as const
})

/**
 * The member behind a REST request of the web client, or the answer that ends it: a usable Host (400), the
 * credential (401), and for a request that `changes` something, a same-origin `Origin` when carried by the cookie
 * (403; a foreign origin was already refused by Cors.ts) and an account that is not paused (403 account_paused).
 */
export const memberRequest = (
  services: SessionServices & { readonly authenticator: Authenticator; readonly config: IssuerSettings },
  request: HttpRequest,
  changes: boolean
): Effect.Effect<Either.Either<Member, HttpResponse>> =>
  Effect.gen(function*() {
    const issuer = resolveIssuer(request, services.config)
    if (Either.isLeft(issuer)) return Either.left(malformed())
    const found = yield* memberCredential(services, request, issuer.right)
    if (Either.isLeft(found) || !changes) return found
    if (found.right._tag === "Session" && !isSameOriginPost(request, issuer.right)) return Either.left(foreignOrigin())
    const account = yield* services.accounts.findById(found.right.accountId)
    if (Option.isNone(account)) return Either.left(invalidToken("the account is gone"))
    if (account.value.status === "paused") return Either.left(accountPaused())
    return found
  })
