/**
 * Register owns `POST /api/oauth/register` (RFC 7591). Checks, in order:
 *   1. Origin: a foreign web page → 403;
 *   2. body: at most 16 KiB (413), `application/json` (which also forces a CORS preflight
 *      on cross-site posts), JSON that parses → else malformed 400 invalid_request;
 *   3. metadata (ClientMetadata.validateRegisterRequest, on the raw strings):
 *      client_name and client_uri → invalid_client_metadata, then redirect_uris →
 *      invalid_redirect_uri;
 *   4. per-IP limit: 5 accepted registrations per 10 minutes → 429 too_many_requests
 *      with Retry-After (the slot is handed back if a later step refuses);
 *   5. pending cap: 1,000 awaiting approval → 429 temporarily_unavailable (Retry-After:
 *      when the oldest expires);
 *   6. 201 with exactly the registered metadata (RFC 7591 §3.2.1), no-store.
 * Stateless itself; the limiter and the client store are safe under concurrency.
 */
import { Effect, Either } from "effect"
import { OAuthPaths, registerResponse } from "../../schema/OAuth.js"
import { AppConfig } from "../../services/AppConfig.js"
import { OAuthClients } from "../../services/oauth/OAuthClients.js"
import { validateRegisterRequest } from "../../services/oauth/ClientMetadata.js"
import { RegistrationLimiter } from "../../services/identity/RegistrationLimiter.js"
import { rateLimitKey } from "../../net/RateLimitKey.js"
import { clientIp } from "../ClientIp.js"
import { json, type Route } from "../HttpServer.js"
import { resolveIssuer } from "../Issuer.js"
import { foreignOrigin, isForeignOrigin, malformed, noStore, oauthError, readOAuthBody } from "./OAuthHttp.js"

export const registerRoute = Effect.gen(function*() {
  const config = yield* AppConfig
  const clients = yield* OAuthClients
  const limiter = yield* RegistrationLimiter

  const route: Route = {
    method: "POST",
    path: OAuthPaths.register,
    name: "oauth.register",
    handler: (request) =>
      Effect.gen(function*() {
        const issuer = resolveIssuer(request, config)
        if (Either.isLeft(issuer)) return malformed()
        if (isForeignOrigin(request, issuer.right, config)) return foreignOrigin()

        const body = yield* readOAuthBody(request, { form: false, json: true })
        if (body instanceof URLSearchParams) return malformed()
        const metadata = validateRegisterRequest(body.json)
        if (Either.isLeft(metadata)) return oauthError(metadata.left)

        const ip = clientIp(request, config.trustProxy)
        const client = yield* limiter.withSlot(rateLimitKey(ip), clients.register(metadata.right, ip))
        return json(
          201,
          registerResponse({
            clientId: client.clientId,
            clientIdIssuedAt: Math.floor(client.createdAt.getTime() / 1000),
            clientName: client.clientName,
            clientUri: client.clientUri,
            redirectUris: client.redirectUris,
            applicationType: client.applicationType
          }),
          noStore
        )
      }).pipe(
        Effect.catchTags({
          BodyRefused: (refused) => Effect.succeed(refused.response),
          TooManyRequests: (e) => Effect.succeed(oauthError(e)),
          TemporarilyUnavailable: (e) => Effect.succeed(oauthError(e))
        })
      )
  }
  return [route] as ReadonlyArray<Route>
})
