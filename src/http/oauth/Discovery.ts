/**
 * Discovery owns the metadata documents: RFC 8414 authorization-server metadata at
 * `/.well-known/oauth-authorization-server`, and RFC 9728 protected-resource metadata at
 * `/.well-known/oauth-protected-resource/mcp` and `/.well-known/oauth-protected-resource`
 * (the MCP SDK probes both), each naming the issuer byte for byte.
 * Stateless.
 *
 * Never redirected (oauth4webapi does not follow redirects). A document built from
 * request headers is `no-store` and varies on them, so a shared cache cannot serve one
 * client's Host to another; with PUBLIC_BASE_URL it is the same for everyone.
 */
import { Effect, Either, Option } from "effect"
import { HTML_CONTENT_TYPE, oauthDocsPage, securityHeaders } from "../pages/Pages.js"
import { discoveryDocument, OAuthPaths, protectedResourceMetadata } from "../../schema/OAuth.js"
import { AppConfig } from "../../services/AppConfig.js"
import { type HttpRequest, json, type Route } from "../HttpServer.js"
import { resolveIssuer } from "../Issuer.js"

export const discoveryRoutes = Effect.gen(function*() {
  const config = yield* AppConfig
  const cacheHeaders: Readonly<Record<string, string>> = Option.isSome(config.publicBaseUrl)
    ? { "cache-control": "public, max-age=300" }
    : { "cache-control": "no-store", "vary": "Host, X-Forwarded-Host, X-Forwarded-Proto" }

  const serve = (build: (issuer: string) => unknown) => (request: HttpRequest) =>
    Effect.succeed(
      Either.match(resolveIssuer(request, config), {
        onLeft: () => json(400, { error: "invalid_request", error_description: "the Host header is not valid" }),
        onRight: (issuer) => json(200, build(issuer), cacheHeaders)
      })
    )

  // The resource server and the authorization server share one origin, so base = issuer.
  const resourceMetadata = serve((issuer) => protectedResourceMetadata(issuer, issuer))

  return [
    { method: "GET", path: OAuthPaths.discovery, name: "oauth.discovery", handler: serve(discoveryDocument) },
    { method: "GET", path: OAuthPaths.protectedResourceMcp, name: "oauth.resource-metadata", handler: resourceMetadata },
    { method: "GET", path: OAuthPaths.protectedResource, name: "oauth.resource-metadata", handler: resourceMetadata },
    {
      method: "GET",
      path: OAuthPaths.serviceDocumentation,
      name: "oauth.docs",
      handler: (request) =>
        Effect.succeed(
          Either.match(resolveIssuer(request, config), {
            onLeft: () => json(400, { error: "invalid_request", error_description: "the Host header is not valid" }),
            onRight: (issuer) => ({
              status: 200,
              headers: { ...securityHeaders, "content-type": HTML_CONTENT_TYPE },
              body: oauthDocsPage(issuer)
            })
          })
        )
    }
  ] satisfies ReadonlyArray<Route>
})
