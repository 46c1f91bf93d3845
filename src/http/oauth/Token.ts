/**
 * Token owns `POST /api/oauth/token` (RFC 6749 §4.1.3 with PKCE, RFC 7636). The check
 * order is docs/contract.md "Token endpoint check order", and only the last step touches the code:
 *   1. Host and Origin: an unusable Host → 400; a web page of another origin → 403 (a form
 *      POST is a CORS simple request, sent without preflight, so refusing it is ours to do);
 *   2. a readable body: ≤ 16 KiB (else 413), form (with or without charset) or JSON, that
 *      decodes → else the malformed-body 400 invalid_request;
 *   3. grant_type present (400 invalid_request) and equal to `authorization_code` (400
 *      unsupported_grant_type), before any other parameter is looked at;
 *   4. the grant's parameters: repeated, non-string, missing or empty, or a malformed
 *      code_verifier (43–128 of [A-Za-z0-9._~-]) → 400 invalid_request;
 *   5. client_id unknown (or a pending registration past its hour) → 401 invalid_client;
 *   6. each `resource` (RFC 8707) names this server's /mcp → else 400 invalid_target, the code untouched
 *      (ResourceIndicator; docs/decisions/oauth.md "`resource` names this server's /mcp, and the token remembers it");
 *   7. the code, claimed atomically and then checked (OAuthCodes.redeem) → 400
 *      invalid_grant, the code spent; a replayed code also revokes its token (RFC 6749 §4.1.2); a resource
 *      other than the authorization's → 400 invalid_target, the code spent as well.
 * Steps 3–4 are OAuth.decodeTokenRequest; 1, 2 and 5 are OAuthHttp.checkClientRequest.
 * Success: 200 `{access_token, token_type: "Bearer", created_at}` — no expires_in, no
 * refresh_token (interface "OAuth access token"). Every answer is no-store + no-cache.
 * Stateless itself; safe under concurrency (the claim is a single UPDATE).
 */
import { Effect, Either } from "effect"
import { checkResources } from "../../services/oauth/ResourceIndicator.js"
import { decodeTokenRequest, OAuthPaths, readResources, type TokenResponse } from "../../schema/OAuth.js"
import { AppConfig } from "../../services/AppConfig.js"
import { OAuthClients } from "../../services/oauth/OAuthClients.js"
import { OAuthCodes } from "../../services/oauth/OAuthCodes.js"
import { json, type Route } from "../HttpServer.js"
import { issuerFor } from "../Issuer.js"
import { checkClientRequest, noStore, oauthError } from "./OAuthHttp.js"

/** The grant's parameters, then the RFC 8707 resources of the same body (steps 3–4, and the input of 6). */
const decodeWithResources = (body: unknown) =>
  Either.flatMap(decodeTokenRequest(body), (grant) =>
    Either.map(readResources(body), (resources) => ({ client_id: grant.client_id, grant, resources })))

export const tokenRoute = Effect.gen(function*() {
  const config = yield* AppConfig
  const clients = yield* OAuthClients
  const codes = yield* OAuthCodes

  const route: Route = {
    method: "POST",
    path: OAuthPaths.token,
    name: "oauth.token",
    handler: (request) =>
      Effect.gen(function*() {
        const checked = yield* checkClientRequest(request, config, clients, decodeWithResources)
        if (Either.isLeft(checked)) return checked.left
        // checkClientRequest refused an unusable Host, so the issuer is the request's own.
        const resource = checkResources(checked.right.resources, issuerFor(request, config))
        if (Either.isLeft(resource)) return oauthError(resource.left)
        // Only now is the code examined: claimed atomically, spent on any later mismatch.
        const issued = yield* codes.redeem(checked.right.grant, resource.right)
        const response: TokenResponse = {
          access_token: issued.accessToken,
          token_type: "Bearer",
          created_at: Math.floor(issued.createdAt / 1000)
        }
        return json(200, response, noStore)
      }).pipe(
        Effect.catchTags({
          BodyRefused: (refused) => Effect.succeed(refused.response),
          InvalidGrant: (e) => Effect.succeed(oauthError(e)),
          InvalidTarget: (e) => Effect.succeed(oauthError(e))
        })
      )
  }
  return [route] as ReadonlyArray<Route>
})
