/**
 * OAuthRoutes gathers the routes of the OAuth 2 authorization server and its sign-in, for
 * `RoutesLive` in main.ts: discovery and protected-resource metadata, registration,
 * authorization (page and decision), sign-in, token, revocation. Logout, shared with the
 * member's other credentials, is AuthApi's.
 * Stateless; each route's own module states its checks.
 */
import { Effect } from "effect"
import type { Route } from "../HttpServer.js"
import { authorizeRoutes } from "./Authorize.js"
import { discoveryRoutes } from "./Discovery.js"
import { registerRoute } from "./Register.js"
import { revokeRoute } from "./Revoke.js"
import { signInRoute } from "./SignIn.js"
import { tokenRoute } from "./Token.js"

export const oauthRoutes = Effect.map(
  Effect.all([discoveryRoutes, registerRoute, authorizeRoutes, signInRoute, tokenRoute, revokeRoute]),
  (groups): ReadonlyArray<Route> => groups.flat()
)
