// Validation of dynamic-registration metadata (RFC 7591; the interface, "OAuth client" and
// "Redirect URI forms") and redirect-URI matching at authorization
// (RFC 8252 §7.3). Redirect URIs are judged on the raw string, because WHATWG `new URL()` hides
// what matters: it drops an empty `#`, empty userinfo and tabs, and rewrites `127.1`, `LOCALHOST`
// and `[0:0:0:0:0:0:0:1]` into loopback spellings. Pure functions; no state, safe from any fiber.
import { Either } from "effect"
import { OOB_REDIRECT_URI, type RegisterRequest } from "../../schema/OAuth.js"
import { InvalidClientMetadata, InvalidRedirectUri, type InvalidRequest, malformedBody } from "../../schema/OAuthErrors.js"

export const ClientMetadataLimits = {
  /** Unicode code points, not UTF-16 units: "😀".length is 2. */
  clientNameMaxCodePoints: 60,
  clientUriMaxCodePoints: 2000,
  /** Sum over all entries. */
  redirectUrisMaxTotalCodePoints: 2000
} as const

const codePoints = (s: string): number => {
  let n = 0
  for (const _ of s) n++
  return n
}

// ---------------------------------------------------------------------------------------------
// client_name

// \p{Cc}: U+0000–U+001F and U+007F–U+009F; \p{Bidi_Control}: the 12 text-direction marks and
// overrides behind "Trojan Source" (CVE-2021-42574). Both are rules of docs/contract.md.
const CONTROL = /\p{Cc}/u
const BIDI_CONTROL = /\p{Bidi_Control}/u
// Line and paragraph separators, and invisible characters that make one name look like another
// (Unicode TR 36 §2, visual spoofing). ZWJ and ZWNJ (U+200C, U+200D) stay allowed: emoji sequences and
// several scripts need them.
const INVISIBLE = /[\u2028\u2029\u200B\u2060\uFEFF\u00AD]/u
// A lone surrogate is not a character and cannot be stored as UTF-8.
const LONE_SURROGATE = /\p{Cs}/u
const WHITESPACE_ONLY = /^\p{White_Space}*$/u

/** client_name: a string of 1–60 code points that is not blank and holds no control (\p{Cc}),
 * text-direction (\p{Bidi_Control}), invisible or line-separator characters. Returned as sent. */
export const validateClientName = (raw: unknown): Either.Either<string, InvalidClientMetadata> => {
  const fail = (description: string) => Either.left(new InvalidClientMetadata({ description }))
  if (raw === undefined || raw === null) return fail("client_name is required")
  if (typeof raw !== "string") return fail("client_name must be a string")
  if (WHITESPACE_ONLY.test(raw)) return fail("client_name must not be empty")
  if (codePoints(raw) > ClientMetadataLimits.clientNameMaxCodePoints) {
    return fail("client_name may hold at most 60 characters")
  }
  if (LONE_SURROGATE.test(raw)) return fail("client_name must be valid Unicode")
  if (CONTROL.test(raw)) return fail("client_name must not contain control characters")
  if (BIDI_CONTROL.test(raw)) return fail("client_name must not contain text-direction characters")
  if (INVISIBLE.test(raw)) return fail("client_name must not contain invisible or line-separator characters")
  return Either.right(raw)
}

// ---------------------------------------------------------------------------------------------
// client_uri

export interface ClientUri {
  /** As sent; echoed in the registration response. */
  readonly uri: string
  /** WHATWG `host` (punycode for IDNs, port when not the default): the only part of client_uri
   * the approval page shows, as text, never as a link (RFC 7591 §5). */
  readonly host: string
}

/** client_uri: absent (undefined or null) or an http/https URL of at most 2000 code points with a
 * host and no userinfo (`https://good.example@evil.example` is really evil.example). Not
 * verified: the page labels it so. */
export const validateClientUri = (raw: unknown): Either.Either<ClientUri | undefined, InvalidClientMetadata> => {
  const fail = (description: string) => Either.left(new InvalidClientMetadata({ description }))
  if (raw === undefined || raw === null) return Either.right(undefined)
  if (typeof raw !== "string") return fail("client_uri must be a string")
  if (codePoints(raw) > ClientMetadataLimits.clientUriMaxCodePoints) {
    return fail("client_uri may hold at most 2000 characters")
  }
  if (/[\p{Cc}\p{White_Space}\p{Bidi_Control}\p{Cs}]/u.test(raw)) {
    return fail("client_uri must not contain spaces, control or text-direction characters")
  }
  const match = /^https?:\/\/([^/?#\\]*)/i.exec(raw)
  const url = match === null ? undefined : parseUrl(raw)
  if (match === null || url === undefined) return fail("client_uri must be an http or https URL")
  if ((match[1] ?? "").includes("@") || url.username !== "" || url.password !== "") {
    return fail("client_uri must not contain userinfo")
  }
  return Either.right({ uri: raw, host: url.host })
}

// ---------------------------------------------------------------------------------------------
// application_type

/** application_type (OpenID Connect Registration 1.0 §2; the MCP 2026-07-28 revision has DCR clients send it):
 * absent, `native` or `web`, stored and echoed. Belay is no OpenID provider, so it puts no extra rule on the
 * redirect URIs of either kind: they follow the interface's "Redirect URI forms" (docs/decisions/oauth.md
 * "Registration stays, with application_type"). Another value is invalid_client_metadata, as OIDC answers. */
export const validateApplicationType = (
  raw: unknown
): Either.Either<"native" | "web" | undefined, InvalidClientMetadata> =>
  raw === undefined || raw === null
    ? Either.right(undefined)
    : raw === "native" || raw === "web"
    ? Either.right(raw)
    : Either.left(new InvalidClientMetadata({ description: "application_type must be native or web" }))

/** The display host of a stored client_uri, or undefined when there is none. */
export const clientUriHost = (clientUri: string | null | undefined): string | undefined =>
  clientUri == null ? undefined : parseUrl(clientUri)?.host

// ---------------------------------------------------------------------------------------------
// redirect_uris

export type RedirectUriKind = "https" | "loopback" | "custom" | "oob"

/** The rule a refused redirect URI broke. */
export type RedirectUriRule =
  | "empty"
  | "character" // outside 0x21–0x7E, or `\` (docs/contract.md; WHATWG reads `a.example\@evil` as host a.example)
  | "rfc3986-character" // " < > ^ ` { | } are not allowed anywhere in a URI (RFC 3986 §2)
  | "fragment" // any `#`, even an empty fragment (RFC 6749 §3.1.2)
  | "scheme" // no RFC 3986 §3.1 scheme
  | "uppercase-scheme" // the canonical scheme is lowercase (RFC 3986 §6.2.2.1); HTTP:// is refused
  | "userinfo" // any `@` in the authority, even empty userinfo
  | "host" // http(s) without a host
  | "port" // not 1–65535, empty, or with a leading zero
  | "http-not-loopback" // plain http only on 127.0.0.1, [::1] or localhost, spelled exactly so
  | "custom-scheme-without-dot" // private-use schemes must be reverse-DNS (RFC 8252 §7.1, §8.4)
  | "not-a-url" // does not parse
  | "non-canonical" // `new URL()` would rewrite it, e.g. :443, /a/../b, uppercase host
  | "reserved-query-parameter" // its query already holds code, state, iss, error…

const ruleDescriptions: Record<RedirectUriRule, string> = {
  "empty": "is empty",
  "character": "may only contain printable ASCII characters other than space and backslash",
  "rfc3986-character": "contains a character that RFC 3986 does not allow in a URI",
  "fragment": "must not contain a fragment",
  "scheme": "has no valid scheme",
  "uppercase-scheme": "must have a lowercase scheme",
  "userinfo": "must not contain userinfo",
  "host": "has no host",
  "port": "has an invalid port",
  "http-not-loopback": "uses http on a host other than 127.0.0.1, [::1] or localhost",
  "custom-scheme-without-dot": "uses a custom scheme that is not reverse-DNS (it must contain a dot)",
  "not-a-url": "is not a valid URL",
  "non-canonical": "is not in canonical form (default port, dot segments, host case or encoding)",
  "reserved-query-parameter": "has a query that already holds an authorization response parameter"
}

const PRINTABLE_ASCII_NO_BACKSLASH = /^[\x21-\x5B\x5D-\x7E]+$/
const RFC3986_EXCLUDED = /["<>^`{|}]/
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/
// host (bracketed IPv6 literal, or no colon at all) and an optional port
const HOST_PORT = /^(\[[^\]]*\]|[^:[\]]*)(?::([^:]*))?$/
const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(["127.0.0.1", "[::1]", "localhost"])
// RFC 6749 §4.1.2 and §4.1.2.1 response parameters, plus RFC 9207 `iss`: oauth4webapi throws on
// a duplicated state, iss or error, so a registered query must not already hold them.
const RESERVED_QUERY_PARAMETERS: ReadonlySet<string> = new Set([
  "code",
  "state",
  "iss",
  "error",
  "error_description",
  "error_uri"
])

const isValidPort = (port: string): boolean => /^[1-9][0-9]{0,4}$/.test(port) && Number(port) <= 65535

/** Classifies one redirect URI, or names the rule it breaks. Only the byte-exact
 * `urn:ietf:wg:oauth:2.0:oob` is out-of-band. */
export const classifyRedirectUri = (raw: string): Either.Either<RedirectUriKind, RedirectUriRule> => {
  if (raw === OOB_REDIRECT_URI) return Either.right("oob")
  if (raw === "") return Either.left("empty")
  if (!PRINTABLE_ASCII_NO_BACKSLASH.test(raw)) return Either.left("character")
  if (RFC3986_EXCLUDED.test(raw)) return Either.left("rfc3986-character")
  if (raw.includes("#")) return Either.left("fragment")
  const scheme = SCHEME.exec(raw)?.[1]
  if (scheme === undefined) return Either.left("scheme")
  if (scheme !== scheme.toLowerCase()) return Either.left("uppercase-scheme")

  const afterScheme = raw.slice(scheme.length + 1)
  const authority = afterScheme.startsWith("//") ? /^\/\/([^/?]*)/.exec(afterScheme)?.[1] : undefined
  if (authority?.includes("@")) return Either.left("userinfo")

  let kind: RedirectUriKind
  let canonical = raw
  if (scheme === "https" || scheme === "http") {
    // `https:app.example/cb` parses (as https://app.example/cb) but is not the canonical spelling.
    if (authority === undefined) return Either.left("non-canonical")
    const hostPort = HOST_PORT.exec(authority)
    if (hostPort === null) return Either.left("not-a-url")
    const host = hostPort[1] ?? ""
    const port = hostPort[2]
    if (host === "") return Either.left("host")
    if (port !== undefined && !isValidPort(port)) return Either.left("port")
    if (scheme === "http" && !LOOPBACK_HOSTS.has(host)) return Either.left("http-not-loopback")
    kind = scheme === "http" ? "loopback" : "https"
    // An empty path is the same as "/" for http(s) (RFC 3986 §6.2.3): `https://app.example` is
    // accepted although `new URL()` writes `https://app.example/`.
    const origin = `${scheme}://${authority}`
    const rest = raw.slice(origin.length)
    if (rest === "" || rest.startsWith("?")) canonical = `${origin}/${rest}`
  } else {
    if (!scheme.includes(".")) return Either.left("custom-scheme-without-dot")
    kind = "custom"
  }

  const url = parseUrl(raw)
  if (url === undefined) return Either.left("not-a-url")
  if (url.href !== canonical) return Either.left("non-canonical")
  for (const name of url.searchParams.keys()) {
    if (RESERVED_QUERY_PARAMETERS.has(name)) return Either.left("reserved-query-parameter")
  }
  return Either.right(kind)
}

/** redirect_uris: a non-empty array of strings, at most 2000 code points in total, each accepted
 * by `classifyRedirectUri`. Every refusal is invalid_redirect_uri (interface "Errors"). Entries
 * are returned as sent (duplicates included: they are harmless to exact matching). */
export const validateRedirectUris = (
  raw: unknown
): Either.Either<readonly [string, ...Array<string>], InvalidRedirectUri> => {
  const fail = (description: string) => Either.left(new InvalidRedirectUri({ description }))
  if (raw === undefined || raw === null) return fail("redirect_uris is required")
  if (!Array.isArray(raw)) return fail("redirect_uris must be an array of strings")
  const uris: Array<string> = []
  for (const entry of raw) {
    if (typeof entry !== "string") return fail("redirect_uris must hold only strings")
    uris.push(entry)
  }
  const [first, ...others] = uris
  if (first === undefined) return fail("redirect_uris must not be empty")
  const total = uris.reduce((sum, uri) => sum + codePoints(uri), 0)
  if (total > ClientMetadataLimits.redirectUrisMaxTotalCodePoints) {
    return fail("redirect_uris may hold at most 2000 characters in total")
  }
  for (const [index, uri] of uris.entries()) {
    const verdict = classifyRedirectUri(uri)
    if (Either.isLeft(verdict)) return fail(`redirect_uris[${index}] ${ruleDescriptions[verdict.left]}`)
  }
  return Either.right([first, ...others])
}

/**
 * The registration body after JSON parsing. Not an object → invalid_request with no description
 * (the interface's malformed body); then client_name, client_uri and application_type
 * (invalid_client_metadata), then redirect_uris (invalid_redirect_uri). Unknown members are ignored and not returned
 * (RFC 7591 §2); so is a client-chosen client_id (RFC 7591 §3.2.1: the server issues it).
 */
export const validateRegisterRequest = (
  body: unknown
): Either.Either<RegisterRequest, InvalidRequest | InvalidClientMetadata | InvalidRedirectUri> => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return Either.left(malformedBody())
  const field = (name: string): unknown => (Object.hasOwn(body, name) ? Reflect.get(body, name) : undefined)
  return Either.gen(function*() {
    const clientName = yield* validateClientName(field("client_name"))
    const clientUri = yield* validateClientUri(field("client_uri"))
    const applicationType = yield* validateApplicationType(field("application_type"))
    const redirectUris = yield* validateRedirectUris(field("redirect_uris"))
    return {
      client_name: clientName,
      redirect_uris: redirectUris,
      ...(clientUri === undefined ? {} : { client_uri: clientUri.uri }),
      ...(applicationType === undefined ? {} : { application_type: applicationType })
    }
  })
}

// ---------------------------------------------------------------------------------------------
// Matching at authorization

const LOOPBACK_URI = /^http:\/\/(127\.0\.0\.1|\[::1\]|localhost)(?::([^/?]*))?([/?][\s\S]*)?$/

const parseLoopback = (uri: string) => {
  const m = LOOPBACK_URI.exec(uri)
  if (m === null) return undefined
  return { host: m[1] ?? "", port: m[2], rest: m[3] ?? "" }
}

/**
 * The registered URI that `presented` selects, or undefined. Exact string comparison (RFC 9700
 * §4.1.3; a case-insensitive compare was fosite CVE-2020-15234), except that a loopback http URI
 * may name any port (RFC 8252 §7.3), including none, while its host, path and query stay byte for
 * byte identical (ignoring the query was fosite CVE-2020-15233). `localhost` gets the exemption
 * too: VS Code and Claude Code register `http://localhost/callback` and listen on an ephemeral port.
 */
export const matchRedirectUri = (registered: ReadonlyArray<string>, presented: string): string | undefined => {
  if (registered.includes(presented)) return presented
  const asked = parseLoopback(presented)
  if (asked === undefined || (asked.port !== undefined && !isValidPort(asked.port))) return undefined
  return registered.find((uri) => {
    const known = parseLoopback(uri)
    return known !== undefined && known.host === asked.host && known.rest === asked.rest
  })
}

/** Where an approval goes, as the approval page states it. */
export type RedirectTarget =
  | { readonly kind: "https"; readonly host: string }
  | { readonly kind: "loopback"; readonly origin: string }
  | { readonly kind: "custom"; readonly scheme: string }
  | { readonly kind: "oob" }

/** Describes a redirect URI that was validated at registration and matched at authorization. */
export const redirectTarget = (uri: string): RedirectTarget => {
  if (uri === OOB_REDIRECT_URI) return { kind: "oob" }
  const loopback = parseLoopback(uri)
  if (loopback !== undefined) {
    const port = loopback.port === undefined ? "" : `:${loopback.port}`
    return { kind: "loopback", origin: `http://${loopback.host}${port}` }
  }
  const scheme = SCHEME.exec(uri)?.[1] ?? ""
  if (scheme === "https") return { kind: "https", host: parseUrl(uri)?.host ?? "" }
  return { kind: "custom", scheme }
}

const parseUrl = (raw: string): URL | undefined => {
  try {
    return new URL(raw)
  } catch {
    return undefined
  }
}
