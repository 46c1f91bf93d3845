/**
 * Logout owns `POST /api/auth/logout`. Two callers (interface "States and transitions"):
 *   - an app, with `Authorization: Bearer <its OAuth token>`: the token is revoked and
 *     stops working at /mcp at once → 200 `{ok: true}`. A credential that is not a live
 *     token → 401 `invalid_token` with a Bearer challenge (RFC 6750 §3); on a hosted
 *     deployment that includes every API token (refused at every entry point). An API
 *     token is revoked in settings, not here → 400 invalid_request.
 *   - the browser, with its session cookie and no Authorization header: the session ends
 *     and the cookie is cleared → 200. Being cookie-authenticated, that needs a
 *     same-origin request (CSRF).
 * A foreign `Origin` is refused first, as at /mcp. The body is ignored. Stateless.
 */
import { Effect, Either, Option } from "effect"
import { OAuthPaths } from "../../schema/OAuth.js"
import { AppConfig } from "../../services/AppConfig.js"
import { Authenticator } from "../../services/Authenticator.js"
import { BrowserSessions } from "../../services/BrowserSessions.js"
import { OAuthTokens } from "../../services/OAuthTokens.js"
import { readCookie, setCookie } from "../Cookies.js"
import { json, type Route } from "../HttpServer.js"
import { isHttps, resolveIssuer } from "../Issuer.js"
import { foreignOrigin, isForeignOrigin, isSameOriginPost, malformed, noStore } from "./OAuthHttp.js"
import { SESSION_COOKIE } from "./SignIn.js"

export const logoutRoute = Effect.gen(function*() {
  const config = yield* AppConfig
  const authenticator = yield* Authenticator
  const tokens = yield* OAuthTokens
  const sessions = yield* BrowserSessions

  const unauthorized = json(401, { error: "invalid_token", error_description: "no live token or session" }, {
    ...noStore,
    "www-authenticate": "Bearer error=\"invalid_token\""
  })

  const route: Route = {
    method: "POST",
    path: OAuthPaths.logout,
    name: "auth.logout",
    handler: (request) =>
      Effect.gen(function*() {
        const issuer = resolveIssuer(request, config)
        if (Either.isLeft(issuer)) return malformed()
        if (isForeignOrigin(request, issuer.right, config)) return foreignOrigin()

        const authorization = request.header("authorization")
        if (authorization !== undefined) {
          const principal = yield* authenticator.authenticate(authorization)
          if (Option.isNone(principal)) return unauthorized
          if (principal.value.credential !== "oauth") {
            return json(400, {
              error: "invalid_request",
              error_description: "API tokens are revoked in settings, not by logout"
            }, noStore)
          }
          yield* tokens.revokeById(principal.value.tokenId)
          return json(200, { ok: true }, noStore)
        }

        const secret = readCookie(request, SESSION_COOKIE)
        if (secret === undefined) return unauthorized
        if (!isSameOriginPost(request, issuer.right)) return foreignOrigin()
        yield* sessions.end(secret)
        return json(200, { ok: true }, {
          ...noStore,
          "set-cookie": setCookie(SESSION_COOKIE, "", { secure: isHttps(issuer.right), maxAgeSeconds: 0 })
        })
      })
  }
  return [route] as ReadonlyArray<Route>
})
