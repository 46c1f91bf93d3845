// The rules of a Client ID Metadata Document (draft-ietf-oauth-client-id-metadata-document-02, which the MCP
// 2025-11-25 and 2026-07-28 revisions adopt; docs/decisions/oauth.md "Client ID Metadata Documents: a client row
// keyed by the URL"): which client_id is such a URL, what a fetched answer must be, and how long it may be kept
// (Cache-Control within bounds). The metadata itself follows the registration rules of ClientMetadata: the same
// client_name, client_uri and redirect URI forms, so an app is judged alike whichever way it introduces itself.
// Pure; no state, safe from any fiber.
import { Duration, Either } from "effect"
import { parseBoundedJson } from "../../schema/BoundedJson.js"
import { validateClientName, validateClientUri, validateRedirectUris } from "./ClientMetadata.js"

export const ClientDocumentLimits = {
  /** The URL itself, as client_uri. */
  urlMaxCodePoints: 2000,
  /** The draft (§8.6) suggests 5 kilobytes; redirect_uris alone may hold 2000 characters. */
  maxBytes: 5 * 1024,
  /** The whole fetch, lookup to last byte. */
  timeout: Duration.seconds(3),
  /** Cache-Control max-age is honoured between these; without one, `defaultTtl`. */
  minTtl: Duration.minutes(1),
  maxTtl: Duration.hours(24),
  defaultTtl: Duration.minutes(5),
  /** A failed fetch is not repeated for this long (a reloading approval page must not hammer a host). */
  failureTtl: Duration.seconds(30)
} as const

/** Whether a client_id is meant as a metadata document URL (a registered id never holds `:`). */
export const isDocumentClientId = (clientId: string): boolean => clientId.startsWith("https://")

/**
 * A client_id that may be fetched (draft §3): https, a path beyond `/`, no fragment, no userinfo, no `.` or `..`
 * segment, printable ASCII, and already in the form WHATWG writes it, so "equal to the URL exactly" means one string.
 */
export const validateDocumentUrl = (clientId: string): Either.Either<URL, string> => {
  if ([...clientId].length > ClientDocumentLimits.urlMaxCodePoints) return Either.left("the client_id URL is too long")
  if (!/^[\x21-\x7E]+$/.test(clientId) || clientId.includes("\\")) return Either.left("the client_id URL has characters a URL may not")
  let url: URL
  try {
    url = new URL(clientId)
  } catch {
    return Either.left("the client_id is not a URL")
  }
  if (url.protocol !== "https:") return Either.left("the client_id URL is not https")
  if (clientId.includes("#")) return Either.left("the client_id URL has a fragment")
  if (/^https:\/\/[^/?]*@/.test(clientId)) return Either.left("the client_id URL has userinfo")
  if (/\/\.\.?(\/|\?|$)/.test(clientId.slice("https://".length))) return Either.left("the client_id URL has a dot segment")
  if (url.pathname === "/" ) return Either.left("the client_id URL has no path")
  if (url.href !== clientId) return Either.left("the client_id URL is not in canonical form")
  return Either.right(url)
}

/** What a document says, once accepted. */
export interface ClientDocument {
  readonly clientId: string
  readonly clientName: string
  readonly clientUri?: string
  readonly logoUri?: string
  readonly redirectUris: readonly [string, ...Array<string>]
}

const field = (body: object, name: string): unknown => (Object.hasOwn(body, name) ? Reflect.get(body, name) : undefined)

/**
 * The answer to the GET of `clientId`: status 200 (a redirect is never followed: its target is not the client_id),
 * a JSON media type, a JSON object whose `client_id` is the URL exactly (draft §4.1), no client secret and no token
 * endpoint authentication other than `none` (Belay's clients are public), and metadata that registration would
 * accept. Left: why not, for the logs and the error page (never echoing the document).
 */
export const validateClientDocument = (
  clientId: string,
  answer: { readonly status: number; readonly contentType: string | undefined; readonly body: Buffer }
): Either.Either<ClientDocument, string> => {
  if (answer.status !== 200) return Either.left(`the document answered HTTP ${answer.status}, not 200`)
  const mediaType = (answer.contentType ?? "").split(";")[0]!.trim().toLowerCase()
  if (mediaType !== "application/json" && !/^application\/[a-z0-9.+-]+\+json$/.test(mediaType)) {
    return Either.left("the document is not served as JSON")
  }
  let text: string
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(answer.body)
  } catch {
    return Either.left("the document is not UTF-8")
  }
  const parsed = parseBoundedJson(text)
  if (Either.isLeft(parsed)) return Either.left("the document is not JSON")
  const body = parsed.right
  if (typeof body !== "object" || body === null || Array.isArray(body)) return Either.left("the document is not a JSON object")
  if (field(body, "client_id") !== clientId) return Either.left("the document's client_id is not its URL")
  if (field(body, "client_secret") !== undefined || field(body, "client_secret_expires_at") !== undefined) {
    return Either.left("the document holds a client secret")
  }
  const authMethod = field(body, "token_endpoint_auth_method")
  if (authMethod !== undefined && authMethod !== "none") {
    return Either.left("the document asks for token endpoint authentication other than none")
  }
  return Either.gen(function*() {
    const clientName = yield* Either.mapLeft(validateClientName(field(body, "client_name")), (e) => e.description ?? "")
    const clientUri = yield* Either.mapLeft(validateClientUri(field(body, "client_uri")), (e) => e.description ?? "")
    const logo = yield* Either.mapLeft(validateClientUri(field(body, "logo_uri")), (e) =>
      (e.description ?? "").replace("client_uri", "logo_uri"))
    if (logo !== undefined && !logo.uri.startsWith("https://")) yield* Either.left("logo_uri must be an https URL")
    const redirectUris = yield* Either.mapLeft(validateRedirectUris(field(body, "redirect_uris")), (e) => e.description ?? "")
    return {
      clientId,
      clientName,
      redirectUris,
      ...(clientUri === undefined ? {} : { clientUri: clientUri.uri }),
      ...(logo === undefined ? {} : { logoUri: logo.uri })
    }
  })
}

/**
 * How long an accepted document may be used without fetching it again: its Cache-Control `max-age` (or `s-maxage`,
 * as a shared cache would) held between `minTtl` and `maxTtl`; `no-store`, `no-cache` or `max-age=0` the minimum, so
 * a reloaded approval page does not fetch again at once; none at all, `defaultTtl`.
 */
export const documentTtl = (cacheControl: string | undefined): Duration.Duration => {
  const clamp = (d: Duration.Duration) =>
    Duration.max(ClientDocumentLimits.minTtl, Duration.min(ClientDocumentLimits.maxTtl, d))
  if (cacheControl === undefined) return ClientDocumentLimits.defaultTtl
  const directives = cacheControl.toLowerCase().split(",").map((d) => d.trim())
  if (directives.some((d) => d === "no-store" || d === "no-cache")) return ClientDocumentLimits.minTtl
  const age = directives
    .map((d) => /^(?:s-maxage|max-age)\s*=\s*"?(\d{1,10})"?$/.exec(d)?.[1])
    .find((v) => v !== undefined)
  return age === undefined ? ClientDocumentLimits.defaultTtl : clamp(Duration.seconds(Number(age)))
}
