/**
 * AuthApi owns the REST routes of member sign-in (docs/decisions/web.md,
 * REST; interface "Other routes"), JSON in and out, every answer `no-store`:
 *
 * `POST /api/auth/login/token` `{username, password}`, in order:
 *   1. Host → 400 invalid_request; a foreign Origin → 403 (also Cors.ts);
 *   2. body ≤ 16 KiB of JSON → else 400 `{error: "invalid_request"}` (413 beyond);
 *   3. `username` and `password` strings → else 400 invalid_request;
 *   4. SignInLimiter: more than 10 failures for the account or from the address in 10
 *      minutes → 429 `too_many_requests` with Retry-After;
 *   5. the password → else 401 `{error: "invalid_credentials"}`, whatever the cause;
 *   6. 200 `{access_token, token_type: "Bearer", created_at}`: a password-sign-in token,
 *      read-write, no expiry, listed in Settings > Authorized apps.
 *
 * `GET /api/auth/me` → `{account: {name, paused}, credential, client}` for the session
 * cookie or a Bearer OAuth / password-sign-in token (MemberCredential).
 *
 * `POST /api/auth/logout` (interface "States and transitions"): with a Bearer OAuth or
 * password-sign-in token, that token is revoked and stops working at once → 200
 * `{ok: true}`; with the session cookie alone the session ends and the cookie is cleared,
 * which — being cookie-carried — needs a same-origin request (CSRF). An API token, a dead
 * token or no credential → 401 invalid_token (MemberCredential).
 * Stateless; the limiter and the token store are safe under concurrency.
 */
import { Effect, Either, Option, Schema } from "effect"
import { type LoginTokenResponse, LoginTokenRequest, MemberPaths, type MeResponse } from "../../schema/MemberApi.js"
import { OAuthPaths } from "../../schema/OAuth.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { Authenticator } from "../../services/identity/Authenticator.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { OAuthClients } from "../../services/oauth/OAuthClients.js"
import { OAuthTokens } from "../../services/identity/OAuthTokens.js"
import { SignInLimiter } from "../../services/identity/SignInLimiter.js"
import { rateLimitKey } from "../../net/RateLimitKey.js"
import { clientIp } from "../ClientIp.js"
import { json, type Route } from "../HttpServer.js"
import { resolveIssuer } from "../Issuer.js"
import { foreignOrigin, isForeignOrigin, isSameOriginPost, malformed, noStore, oauthError, readOAuthBody } from "../oauth/OAuthHttp.js"
import { quotaExceeded } from "../QuotaResponse.js"
import { memberCredential } from "./MemberCredential.js"
import { clearedSessionCookie } from "./Session.js"

const decodeLogin = Schema.decodeUnknownEither(LoginTokenRequest)

export const authApiRoutes = Effect.gen(function*() {
  const config = yield* AppConfig
  const accounts = yield* Accounts
  const authenticator = yield* Authenticator
  const sessions = yield* BrowserSessions
  const tokens = yield* OAuthTokens
  const clients = yield* OAuthClients
  const limiter = yield* SignInLimiter
  const services = { authenticator, sessions, accounts }

  const invalidCredentials = json(401, { error: "invalid_credentials" }, noStore)

  const loginToken: Route = {
    method: "POST",
    path: MemberPaths.loginToken,
    name: "auth.login-token",
    handler: (request) =>
      Effect.gen(function*() {
        const issuer = resolveIssuer(request, config)
        if (Either.isLeft(issuer)) return malformed()
        if (isForeignOrigin(request, issuer.right, config)) return foreignOrigin()
        const body = yield* readOAuthBody(request, { form: false, json: true })
        const decoded = decodeLogin(body instanceof URLSearchParams ? undefined : body.json)
        if (Either.isLeft(decoded)) {
          return json(400, { error: "invalid_request", error_description: "send JSON {username, password}" }, noStore)
        }
        const { username, password } = decoded.right
        const attempt = { ipKey: rateLimitKey(clientIp(request, config.trustProxy)), account: username }
        const limited = yield* Effect.either(limiter.check(attempt))
        if (Either.isLeft(limited)) return oauthError(limited.left)

        const account = username === "" || password === "" ? Option.none() : yield* accounts.verifyPassword(username, password)
        if (Option.isNone(account)) {
          yield* limiter.recordFailure(attempt)
          yield* Effect.logInfo("password token sign-in failed")
          return invalidCredentials
        }
        const issued = yield* tokens.issueForPassword(account.value.id)
        yield* Effect.logInfo("password sign-in token issued").pipe(
          Effect.annotateLogs({ accountId: account.value.id, tokenId: issued.tokenId })
        )
        const response: LoginTokenResponse = {
          access_token: issued.accessToken,
          token_type: "Bearer",
          created_at: Math.floor(issued.createdAt / 1000)
        }
        return json(200, response, noStore)
      }).pipe(
        Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)),
        // docs/contract.md "Account limits": the account holds as many live tokens as it may (`apps`); none issued.
        Effect.catchTag("QuotaExceeded", (error) => Effect.succeed(quotaExceeded(error)))
      )
  }

  const me: Route = {
    method: "GET",
    path: MemberPaths.me,
    name: "auth.me",
    handler: (request) =>
      Effect.gen(function*() {
        const issuer = resolveIssuer(request, config)
        if (Either.isLeft(issuer)) return malformed()
        const member = yield* memberCredential(services, request, issuer.right)
        if (Either.isLeft(member)) return member.left
        const account = yield* accounts.findById(member.right.accountId)
        if (Option.isNone(account)) return json(401, { error: "invalid_token", error_description: "the account is gone" }, noStore)
        const credential = member.right._tag === "Session" ? "session" : member.right.credential
        const clientId = member.right._tag === "Bearer" ? member.right.principal.clientId : null
        const client = clientId === null ? Option.none() : yield* clients.lookup(clientId)
        const response: MeResponse = {
          account: { name: account.value.name, paused: account.value.status === "paused" },
          credential,
          client: Option.match(client, {
            onNone: () => null,
            onSome: (c) => ({ client_id: c.clientId, client_name: c.clientName })
          })
        }
        return json(200, response, noStore)
      })
  }

  const logout: Route = {
    method: "POST",
    path: OAuthPaths.logout,
    name: "auth.logout",
    handler: (request) =>
      Effect.gen(function*() {
        const issuer = resolveIssuer(request, config)
        if (Either.isLeft(issuer)) return malformed()
        if (isForeignOrigin(request, issuer.right, config)) return foreignOrigin()
        const member = yield* memberCredential(services, request, issuer.right)
        if (Either.isLeft(member)) return member.left
        if (member.right._tag === "Bearer") {
          yield* tokens.revokeById(member.right.principal.tokenId)
          return json(200, { ok: true }, noStore)
        }
        if (!isSameOriginPost(request, issuer.right)) return foreignOrigin()
        yield* sessions.end(member.right.session.secret)
        return json(200, { ok: true }, { ...noStore, "set-cookie": clearedSessionCookie(issuer.right) })
      })
  }

  return [loginToken, me, logout] as ReadonlyArray<Route>
})
