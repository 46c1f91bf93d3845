/**
 * OAuthHttp owns what every OAuth endpoint shares on the wire: the bounded body reader
 * (16 KiB, docs/contract.md; form or JSON), the encoding of OAuth errors (interface "Errors >
 * OAuth": `{error, error_description?}`), the cache headers, the origin rule and the
 * page responses with their security headers. Pure helpers and stateless Effects.
 */
import { Data, Effect, Either, Option } from "effect"
import { parseBoundedJson } from "../../schema/BoundedJson.js"
import { InvalidClient, type OAuthError, oauthErrorHeaders, toOAuthErrorBody } from "../../schema/OAuthErrors.js"
import type { AppSettings } from "../../services/AppConfig.js"
import type { OAuthClients } from "../../services/oauth/OAuthClients.js"
import { isAllowedOrigin, resolveIssuer } from "../Issuer.js"
import { HTML_CONTENT_TYPE, securityHeaders } from "../pages/Pages.js"
import { type HttpRequest, type HttpResponse, json } from "../HttpServer.js"

/** docs/decisions/oauth.md: 16 KiB on the OAuth endpoints; beyond → 413. */
export const OAUTH_BODY_LIMIT = 16 * 1024

/** RFC 6749 §5.1 (both MUST on token responses); also on register and revoke, which answer secrets or their fate. */
export const noStore: Readonly<Record<string, string>> = { "cache-control": "no-store", "pragma": "no-cache" }

export class BodyRefused extends Data.TaggedError("BodyRefused")<{ readonly response: HttpResponse }> {}

/** 413 with the interface's malformed-body JSON. */
export const tooLarge = (headers: Readonly<Record<string, string>> = {}): HttpResponse =>
  json(413, { error: "invalid_request" }, { ...noStore, ...headers })

/**
 * A body not sent within the reader's deadline (docs/decisions/http-and-mcp.md "Slow and abandoned connections"): 408 with the
 * malformed-body JSON, since the request could not be read; the connection closes with it.
 */
export const bodyTimedOut = (headers: Readonly<Record<string, string>> = {}): HttpResponse =>
  json(408, { error: "invalid_request" }, { ...noStore, ...headers })

/** The interface's "malformed body": 400 `{"error":"invalid_request"}`, no description. */
export const malformed = (headers: Readonly<Record<string, string>> = {}): HttpResponse =>
  json(400, { error: "invalid_request" }, { ...noStore, ...headers })

export const oauthError = (error: OAuthError, headers: Readonly<Record<string, string>> = {}): HttpResponse =>
  json(error.status, toOAuthErrorBody(error), { ...noStore, ...oauthErrorHeaders(error), ...headers })

const mediaType = (request: HttpRequest): string =>
  (request.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase()

const utf8 = new TextDecoder("utf-8", { fatal: true })

/**
 * A form body, decoded strictly: a `%` not followed by two hex digits, or escapes that
 * are not UTF-8, make the body malformed instead of being passed through as
 * WHATWG's lenient parser would.
 */
export const parseForm = (body: Buffer): URLSearchParams | undefined => {
  let text: string
  try {
    text = utf8.decode(body)
  } catch {
    return undefined
  }
  if (/%(?![0-9A-Fa-f]{2})/.test(text)) return undefined
  try {
    for (const part of text.split("&")) decodeURIComponent(part.replace(/\+/g, " "))
  } catch {
    return undefined
  }
  return new URLSearchParams(text)
}

/** The body as JSON nesting at most JSON_MAX_DEPTH deep (BoundedJson); deeper is malformed like invalid JSON. */
const parseJson = (body: Buffer): { readonly ok: true; readonly value: unknown } | { readonly ok: false } => {
  let text: string
  try {
    text = utf8.decode(body)
  } catch {
    return { ok: false }
  }
  const parsed = parseBoundedJson(text)
  return Either.isRight(parsed) ? { ok: true, value: parsed.right } : { ok: false }
}

/**
 * Reads the body once, at most 16 KiB, as `application/x-www-form-urlencoded` (→
 * URLSearchParams) or `application/json` (→ the parsed value), whichever `accept`
 * allows. Anything else, or a body that does not decode — JSON nesting deeper than
 * BoundedJson's JSON_MAX_DEPTH included — is the malformed-body 400.
 */
export const readOAuthBody = (
  request: HttpRequest,
  accept: { readonly form: boolean; readonly json: boolean },
  headers: Readonly<Record<string, string>> = {}
): Effect.Effect<URLSearchParams | { readonly json: unknown }, BodyRefused> =>
  request.body(OAUTH_BODY_LIMIT).pipe(
    Effect.catchTags({
      BodyTooLarge: () => Effect.fail(new BodyRefused({ response: tooLarge(headers) })),
      BodyReadFailed: () => Effect.fail(new BodyRefused({ response: malformed(headers) })),
      BodyTimedOut: () => Effect.fail(new BodyRefused({ response: bodyTimedOut(headers) }))
    }),
    Effect.flatMap((body): Effect.Effect<URLSearchParams | { readonly json: unknown }, BodyRefused> => {
      const type = mediaType(request)
      if (accept.form && type === "application/x-www-form-urlencoded") {
        const form = parseForm(body)
        if (form !== undefined) return Effect.succeed(form)
      } else if (accept.json && type === "application/json") {
        const parsed = parseJson(body)
        if (parsed.ok) return Effect.succeed({ json: parsed.value })
      }
      return Effect.fail(new BodyRefused({ response: malformed(headers) }))
    })
  )

/** The value the token and revoke decoders take: the form itself, or the parsed JSON value. */
export const bodyValue = (body: URLSearchParams | { readonly json: unknown }): unknown =>
  body instanceof URLSearchParams ? body : body.json

/**
 * Whether an API request comes from a web page of another origin: an `Origin` that is
 * neither this server's nor in `BELAY_CORS_ORIGINS` — Issuer.isAllowedOrigin, the very
 * rule of /mcp (docs/decisions/oauth.md), DNS-rebinding defence included.
 * A form-encoded POST is a CORS "simple request" a browser sends without preflight, so
 * the refusal must happen here, not by withholding CORS headers (Fetch, "CORS protocol").
 */
export const isForeignOrigin = (request: HttpRequest, issuer: string, config: AppSettings): boolean => {
  const origin = request.header("origin")
  return origin !== undefined && !isAllowedOrigin(config, issuer, origin)
}

export const foreignOrigin = (): HttpResponse =>
  json(403, { error: "invalid_request", error_description: "cross-origin requests are not allowed" }, noStore)

/**
 * Whether a page POST (sign-in, approve, deny) is same-origin. `Origin` must be the
 * issuer. Our pages send `Referrer-Policy: no-referrer`, under which browsers serialise
 * the Origin of a form POST as `null` (Fetch, "append a request Origin header"); then the
 * browser's own `Sec-Fetch-Site: same-origin` decides, which a cross-site page cannot forge.
 */
export const isSameOriginPost = (request: HttpRequest, issuer: string): boolean => {
  if (hasSameOriginHeader(request, issuer)) return true
  const origin = request.header("origin")
  return (origin === undefined || origin === "null") && request.header("sec-fetch-site") === "same-origin"
}

/**
 * Whether the request names this server in its own `Origin` header — the strongest of the
 * signals isSameOriginPost accepts: a browser sets it and no page can forge it, so on its own
 * it proves a cookie-carried request came from this site (docs/contract.md, Credentials:
 * "a same-origin `Origin`, or the CSRF field on a form").
 */
export const hasSameOriginHeader = (request: HttpRequest, issuer: string): boolean => request.header("origin") === issuer

/** An HTML page of the flow with the security headers of docs/decisions/oauth.md "Pages". */
export const page = (status: number, body: string, headers: Readonly<Record<string, string>> = {}): HttpResponse => ({
  status,
  headers: { "content-type": HTML_CONTENT_TYPE, ...securityHeaders, ...headers },
  body
})

/** A 303 from a page (RFC 9700 §4.12: never 307), with the pages' security headers. */
export const seeOther = (location: string, headers: Readonly<Record<string, string>> = {}): HttpResponse => ({
  status: 303,
  headers: { ...securityHeaders, location, ...headers },
  body: ""
})

/** RFC 6749 §5.2: a client that tried the Authorization header gets a challenge with its 401. */
export const invalidClient = (authorizationSent: boolean) =>
  oauthError(
    new InvalidClient({ description: "unknown client_id; register the app again" }),
    authorizationSent ? { "www-authenticate": "Basic realm=\"belay\"" } : {}
  )

/**
 * The checks the client endpoints (token, revoke) make first, in docs/decisions/oauth.md order, none of
 * which touches a code or token: Host → same origin → body (form or JSON, 16 KiB) →
 * parameters (`decode`) → client_id known. Left: the response that ends the request.
 */
export const checkClientRequest = <P extends { readonly client_id: string }>(
  request: HttpRequest,
  config: AppSettings,
  clients: OAuthClients,
  decode: (body: unknown) => Either.Either<P, OAuthError>
): Effect.Effect<Either.Either<P, HttpResponse>, BodyRefused> =>
  Effect.gen(function*() {
    const issuer = resolveIssuer(request, config)
    if (Either.isLeft(issuer)) return Either.left(malformed())
    if (isForeignOrigin(request, issuer.right, config)) return Either.left(foreignOrigin())
    const body = yield* readOAuthBody(request, { form: true, json: true })
    const decoded = decode(bodyValue(body))
    if (Either.isLeft(decoded)) return Either.left(oauthError(decoded.left))
    const client = yield* clients.lookup(decoded.right.client_id)
    if (Option.isNone(client)) return Either.left(invalidClient(request.header("authorization") !== undefined))
    return Either.right(decoded.right)
  })
