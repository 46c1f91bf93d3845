/**
 * The service's own public base URL for a request — the OAuth issuer, the MCP
 * resource, and the origin that same-origin checks compare against (CONTRACT.md:
 * `PUBLIC_BASE_URL`, else `Host`, and `X-Forwarded-Host`/`-Proto` only when
 * `BELAY_TRUST_PROXY=true`). Never ends with `/`. Pure.
 */
import type { AppSettings } from "../services/AppConfig.js"
import type { HttpRequest } from "./HttpServer.js"

// A Host header is a host name or address with an optional port; anything else (paths,
// userinfo, spaces) is refused so it can never be reflected into the issuer.
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/

const first = (value: string | undefined) => value?.split(",")[0]?.trim()

export const requestBaseUrl = (config: AppSettings, request: HttpRequest): string => {
  if (config.publicBaseUrl._tag === "Some") return config.publicBaseUrl.value
  const forwardedHost = config.trustProxy ? first(request.header("x-forwarded-host")) : undefined
  const forwardedProto = config.trustProxy ? first(request.header("x-forwarded-proto")) : undefined
  const hostHeader = forwardedHost ?? request.header("host")
  const host = hostHeader && HOST.test(hostHeader) ? hostHeader.toLowerCase() : `${config.host.includes(":") ? `[${config.host}]` : config.host}:${config.port}`
  const proto = forwardedProto === "https" || forwardedProto === "http" ? forwardedProto : "http"
  return `${proto}://${host}`
}

/** Same-origin or explicitly allowed (BELAY_CORS_ORIGINS) — never a third-party app's origin. */
export const isAllowedOrigin = (config: AppSettings, base: string, origin: string): boolean =>
  origin === base || config.corsOrigins.includes(origin)
