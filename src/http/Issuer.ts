/**
 * Issuer owns the one answer to "what is this server's public origin?": the OAuth issuer
 * (RFC 8414 §2), the base of every endpoint in discovery, of the protected-resource
 * metadata and of the /mcp `WWW-Authenticate` challenge, and the origin that page POSTs
 * must come from — and so the same-origin rule of /mcp and the pages. Pure functions of the request and two settings; safe from any fiber.
 *
 * docs/decisions/oauth.md: `PUBLIC_BASE_URL` wins over every header (D-05); without
 * it the issuer comes from `Host`, and from `X-Forwarded-Host`/`-Proto` only when
 * `BELAY_TRUST_PROXY=true` (D-07, RFC 9700 §4.13: an untrusted client could otherwise
 * point discovery at an attacker, CWE-644). A malformed host is refused, never reflected
 * (D-08). The issuer never ends with `/` and is used byte for byte everywhere, because
 * clients compare `iss` and `authorization_servers[0]` with it exactly (RFC 9207 §2).
 */
import { Either, Option } from "effect"
import type { AppSettings } from "../services/AppConfig.js"
import type { HttpRequest } from "./HttpServer.js"

export type IssuerSettings = Pick<AppSettings, "publicBaseUrl" | "trustProxy">

/** The request's host cannot name this server (bad syntax, several values, missing). */
export interface InvalidHost {
  readonly _tag: "InvalidHost"
}
const invalidHost: InvalidHost = { _tag: "InvalidHost" }

// A DNS name (letters, digits, `-`, `_`, dots), an IPv4 address, or a bracketed IPv6
// literal, then an optional port. No userinfo, path, comma, backslash or whitespace.
const HOST = /^(?:\[[0-9a-f:.]+\]|[a-z0-9_](?:[a-z0-9_.-]{0,251}[a-z0-9_])?)(?::[0-9]{1,5})?$/

/** The first value of a possibly comma-joined header (a proxy chain appends; the first is the client's view). */
const firstValue = (value: string | undefined): string | undefined => {
  if (value === undefined) return undefined
  const first = value.split(",")[0]?.trim()
  return first === undefined || first === "" ? undefined : first
}

/**
 * The issuer for this request, or InvalidHost. `http` unless a trusted proxy says
 * `X-Forwarded-Proto: https`: the listener itself never terminates TLS.
 */
export const resolveIssuer = (request: HttpRequest, settings: IssuerSettings): Either.Either<string, InvalidHost> => {
  if (Option.isSome(settings.publicBaseUrl)) return Either.right(settings.publicBaseUrl.value)
  const forwardedHost = settings.trustProxy ? firstValue(request.header("x-forwarded-host")) : undefined
  const host = (forwardedHost ?? request.header("host"))?.trim().toLowerCase()
  if (host === undefined || !HOST.test(host)) return Either.left(invalidHost)
  const forwardedProto = settings.trustProxy ? firstValue(request.header("x-forwarded-proto"))?.toLowerCase() : undefined
  const scheme = forwardedProto === "https" ? "https" : "http"
  let url: URL
  try {
    url = new URL(`${scheme}://${host}`)
  } catch {
    return Either.left(invalidHost)
  }
  // `origin` drops a default port and never ends with `/`; "null" only for opaque origins.
  return url.origin === "null" ? Either.left(invalidHost) : Either.right(url.origin)
}

/**
 * The issuer (and base URL) for this request, for callers that must answer anyway (the
 * /mcp 401 challenge): an unusable Host yields `http://localhost`, which reflects nothing
 * the client sent. OAuth endpoints use `resolveIssuer` and answer 400 instead.
 */
export const issuerFor = (request: HttpRequest, settings: IssuerSettings): string =>
  Either.getOrElse(resolveIssuer(request, settings), () => "http://localhost")

/** Whether pages and cookies of this issuer are served over TLS (cookies get `Secure`). */
export const isHttps = (issuer: string): boolean => issuer.startsWith("https:")

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "[::1]", "::1"])

const isLoopbackBase = (base: string): boolean => {
  try {
    return LOOPBACK_NAMES.has(new URL(base).hostname)
  } catch {
    return false
  }
}

/**
 * Same-origin or explicitly allowed (BELAY_CORS_ORIGINS) — never a third-party app's
 * origin. DNS rebinding: a page on evil.example whose name now
 * resolves to 127.0.0.1 sends `Host: evil.example` and a matching Origin, so "Origin
 * equals the Host-derived base" alone proves nothing. Without PUBLIC_BASE_URL a
 * loopback-bound server therefore trusts only loopback host names.
 */
export const isAllowedOrigin = (config: Pick<AppSettings, "corsOrigins" | "publicBaseUrl" | "host">, base: string, origin: string): boolean => {
  if (config.corsOrigins.includes(origin)) return true
  if (origin !== base) return false
  if (config.publicBaseUrl._tag === "Some") return true
  return isLoopbackBase(base) || !LOOPBACK_NAMES.has(config.host)
}
