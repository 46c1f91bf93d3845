/**
 * Cors owns cross-origin access to `/mcp` and `/api/*` (docs/decisions/web.md, CORS; Fetch Standard §3.2 "CORS protocol"):
 *
 *   - an `Origin` listed in `BELAY_CORS_ORIGINS` gets `Access-Control-Allow-Origin: <it>`
 *     and `Vary: Origin` on every response, and its preflight (`OPTIONS`) answers 204 with
 *     the route's methods and the request headers CORS_ALLOWED_HEADERS names;
 *     `Access-Control-Allow-Credentials` is never sent, so no
 *     cookie-carried request of another origin can read an answer;
 *   - any other foreign origin (Issuer.isAllowedOrigin, DNS-rebinding defence included)
 *     gets no CORS header, and every POST, PUT, PATCH and DELETE from it — sign-in
 *     included — is refused 403 here, before the route runs: a form POST is a "simple
 *     request" that needs no preflight, so withholding headers alone would not stop it;
 *   - same-origin requests need none of this and pass through untouched.
 *
 * A request without `Origin` (every non-browser client, and /mcp under load) costs one
 * header lookup. Applied once to the assembled routes (`withCors`); stateless.
 * docs/decisions/web.md, "CORS".
 */
import { Effect } from "effect"
import { InvalidRequest, jsonRpcErrorResponse } from "../schema/JsonRpc.js"
import { OAuthPaths } from "../schema/OAuth.js"
import type { AppSettings } from "../services/AppConfig.js"
import type { HttpResponse, Route } from "./HttpServer.js"
import { isAllowedOrigin, issuerFor } from "./Issuer.js"
import { foreignOrigin } from "./oauth/OAuthHttp.js"

/**
 * Request headers a cross-origin client may send (docs/decisions/web.md): its credential and body type; MCP's
 * version header and the 2026-07-28 revision's `Mcp-Method` and `Mcp-Name` (docs/contract.md "MCP 2026-07-28"); and
 * `Content-Disposition`, which names the file of an upload (a web IRC client on another origin using
 * `soju.im/FILEHOST`, docs/contract.md "Uploads").
 */
export const CORS_ALLOWED_HEADERS = "authorization, content-type, mcp-protocol-version, mcp-method, mcp-name, content-disposition"
/** Response headers a cross-origin client may read besides the safelisted ones: challenges, back-off, and an upload's `Location`. */
export const CORS_EXPOSED_HEADERS = "www-authenticate, retry-after, location"
/** How long a browser may cache a preflight answer, in seconds. */
const PREFLIGHT_MAX_AGE = "600"

const STATE_CHANGING: ReadonlySet<string> = new Set(["POST", "PUT", "PATCH", "DELETE"])

export const isCorsPath = (path: string): boolean => path === OAuthPaths.mcp || path.startsWith("/api/")

type CorsSettings = Pick<AppSettings, "corsOrigins" | "publicBaseUrl" | "host" | "trustProxy">

const withHeaders = (response: HttpResponse, headers: Readonly<Record<string, string>>): HttpResponse => {
  const vary = response.headers?.["vary"]
  return {
    ...response,
    // Object.assign, not spread: see send in HttpServer.ts (a spread given new keys is promoted garbage on Node 20).
    headers: Object.assign({}, response.headers, headers, vary === undefined ? undefined : { vary: `${vary}, Origin` })
  }
}

/** The 403 of a foreign origin, in the body format of the endpoint it was sent to. */
const forbidden = (path: string): HttpResponse =>
  path === OAuthPaths.mcp
    ? {
      status: 403,
      headers: { "content-type": "application/json", vary: "Origin" },
      body: JSON.stringify(jsonRpcErrorResponse(null, new InvalidRequest({ message: "Forbidden: origin not allowed" })))
    }
    : withHeaders(foreignOrigin(), { vary: "Origin" })

const wrap = (config: CorsSettings, route: Route): Route => ({
  ...route,
  handler: (request) => {
    const origin = request.header("origin")
    if (origin === undefined) return route.handler(request)
    if (config.corsOrigins.includes(origin)) {
      return Effect.map(route.handler(request), (response) =>
        withHeaders(response, {
          "access-control-allow-origin": origin,
          "access-control-expose-headers": CORS_EXPOSED_HEADERS,
          vary: "Origin"
        }))
    }
    if (!isAllowedOrigin(config, issuerFor(request, config), origin) && STATE_CHANGING.has(request.method)) {
      return Effect.succeed(forbidden(route.path))
    }
    return Effect.map(route.handler(request), (response) => withHeaders(response, { vary: "Origin" }))
  }
})

const preflight = (config: CorsSettings, path: string, methods: ReadonlyArray<string>): Route => ({
  method: "OPTIONS",
  path,
  name: "cors.preflight",
  handler: (request) => {
    const origin = request.header("origin")
    const allow = methods.join(", ")
    const base = { allow, vary: "Origin", "cache-control": "no-store" }
    if (origin === undefined || !config.corsOrigins.includes(origin)) {
      return Effect.succeed({ status: 204, headers: base })
    }
    return Effect.succeed({
      status: 204,
      headers: {
        ...base,
        "access-control-allow-origin": origin,
        "access-control-allow-methods": allow,
        "access-control-allow-headers": CORS_ALLOWED_HEADERS,
        "access-control-max-age": PREFLIGHT_MAX_AGE
      }
    })
  }
})

/** `routes` with the CORS rules on `/mcp` and `/api/*`, and a preflight route for each such path. */
export const withCors = (config: CorsSettings, routes: ReadonlyArray<Route>): ReadonlyArray<Route> => {
  const methodsByPath = new Map<string, Array<string>>()
  for (const route of routes) {
    if (!isCorsPath(route.path) || route.method === "OPTIONS") continue
    methodsByPath.set(route.path, [...(methodsByPath.get(route.path) ?? []), route.method])
  }
  const explicitOptions = new Set(routes.filter((r) => r.method === "OPTIONS").map((r) => r.path))
  return [
    ...routes.map((route) => (isCorsPath(route.path) ? wrap(config, route) : route)),
    ...[...methodsByPath].filter(([path]) => !explicitOptions.has(path)).map(([path, methods]) => preflight(config, path, methods))
  ]
}
