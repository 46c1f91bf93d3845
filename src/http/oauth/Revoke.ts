/**
 * Revoke owns `POST /api/oauth/revoke` (RFC 7009). Checks, in order:
 *   1. Origin: a foreign web page → 403;
 *   2. body: ≤ 16 KiB (413), form or JSON → else malformed 400 invalid_request;
 *   3. `client_id` and `token` present, single, non-empty → else 400 invalid_request;
 *      `token_type_hint` is ignored (§2.1 allows it);
 *   4. client_id unknown → 401 invalid_client;
 *   5. 200 with an empty body (RFC 7009 §2.2; oauth4webapi requires exactly 200) whether
 *      or not anything was revoked: an unknown token, another app's token (left alone), an
 *      already revoked one (idempotent), or an authorization code (codes are not tokens; it
 *      stays as it was). A live token of this app stops working at once.
 * Stateless itself.
 */
import { Effect, Either } from "effect"
import { decodeRevokeRequest, OAuthPaths } from "../../schema/OAuth.js"
import { AppConfig } from "../../services/AppConfig.js"
import { OAuthClients } from "../../services/oauth/OAuthClients.js"
import { OAuthTokens } from "../../services/identity/OAuthTokens.js"
import type { Route } from "../HttpServer.js"
import { checkClientRequest, noStore } from "./OAuthHttp.js"

export const revokeRoute = Effect.gen(function*() {
  const config = yield* AppConfig
  const clients = yield* OAuthClients
  const tokens = yield* OAuthTokens

  const route: Route = {
    method: "POST",
    path: OAuthPaths.revoke,
    name: "oauth.revoke",
    handler: (request) =>
      Effect.gen(function*() {
        const checked = yield* checkClientRequest(request, config, clients, decodeRevokeRequest)
        if (Either.isLeft(checked)) return checked.left
        yield* tokens.revokeForApp(checked.right.token, checked.right.client_id)
        return { status: 200, headers: noStore, body: "" }
      }).pipe(Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)))
  }
  return [route] as ReadonlyArray<Route>
})
