// The OAuth 2 errors that travel over the wire (the interface, "Errors > OAuth"): one
// Schema.TaggedError per wire code, with the code and HTTP status held on the class (as
// node-oidc-provider's lib/helpers/errors.js does), and the one encoding of the JSON body. Only
// access_denied is ever sent to a redirect_uri (AuthorizeRequest.authorizationResponse); every
// other error is answered directly. Pure data; no state, safe from any fiber.
import { Schema } from "effect"

/** `{error, error_description?}` (RFC 6749 §5.2). `error_description` is omitted, never null:
 * the MCP SDK's OAuthErrorResponseSchema rejects null. */
export const OAuthErrorBody = Schema.Struct({
  error: Schema.String,
  error_description: Schema.optional(Schema.String)
})
export type OAuthErrorBody = typeof OAuthErrorBody.Type

// A description is ours, never an echo of input, and stays inside the characters RFC 6749 §5.2
// allows (%x20-21 / %x23-5B / %x5D-7E: no `"`, no `\`, no non-ASCII).
const Description = { description: Schema.optional(Schema.String) }

/** 400, token and revoke: a parameter is missing, repeated or not a string. With no
 * description it is the "malformed body" answer of the interface (see `malformedBody`). */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", Description) {
  static readonly error = "invalid_request"
  static readonly status = 400
  get error(): "invalid_request" { return "invalid_request" }
  get status(): 400 { return 400 }
  override get message(): string { return describe(this.error, this.description) }
}

/** 400, register: client_name missing or invalid, or client_uri invalid. */
export class InvalidClientMetadata
  extends Schema.TaggedError<InvalidClientMetadata>()("InvalidClientMetadata", Description)
{
  static readonly error = "invalid_client_metadata"
  static readonly status = 400
  get error(): "invalid_client_metadata" { return "invalid_client_metadata" }
  get status(): 400 { return 400 }
  override get message(): string { return describe(this.error, this.description) }
}

/** 400, register: redirect_uris missing, empty, too long, or holding a disallowed URI. */
export class InvalidRedirectUri extends Schema.TaggedError<InvalidRedirectUri>()("InvalidRedirectUri", Description) {
  static readonly error = "invalid_redirect_uri"
  static readonly status = 400
  get error(): "invalid_redirect_uri" { return "invalid_redirect_uri" }
  get status(): 400 { return 400 }
  override get message(): string { return describe(this.error, this.description) }
}

/** 400, token: grant_type is present but not `authorization_code`. */
export class UnsupportedGrantType
  extends Schema.TaggedError<UnsupportedGrantType>()("UnsupportedGrantType", Description)
{
  static readonly error = "unsupported_grant_type"
  static readonly status = 400
  get error(): "unsupported_grant_type" { return "unsupported_grant_type" }
  get status(): 400 { return 400 }
  override get message(): string { return describe(this.error, this.description) }
}

/** 400, token: the code is unknown, expired or used, or client_id, redirect_uri or
 * code_verifier does not match; the code is spent (interface "States and transitions"). */
export class InvalidGrant extends Schema.TaggedError<InvalidGrant>()("InvalidGrant", Description) {
  static readonly error = "invalid_grant"
  static readonly status = 400
  get error(): "invalid_grant" { return "invalid_grant" }
  get status(): 400 { return 400 }
  override get message(): string { return describe(this.error, this.description) }
}

/** 401, token and revoke: unknown client_id ("register again"). No WWW-Authenticate unless the
 * request carried an Authorization header (RFC 6749 §5.2). */
export class InvalidClient extends Schema.TaggedError<InvalidClient>()("InvalidClient", Description) {
  static readonly error = "invalid_client"
  static readonly status = 401
  get error(): "invalid_client" { return "invalid_client" }
  get status(): 401 { return 401 }
  override get message(): string { return describe(this.error, this.description) }
}

/** 429, register: the pending-registration cap (1,000) is reached. `retryAfterSeconds`, when
 * known, is when the oldest pending registration expires (a 429 says when to come back,
 * RFC 6585 §4). */
export class TemporarilyUnavailable extends Schema.TaggedError<TemporarilyUnavailable>()("TemporarilyUnavailable", {
  ...Description,
  retryAfterSeconds: Schema.optional(Schema.Int.pipe(Schema.positive()))
}) {
  static readonly error = "temporarily_unavailable"
  static readonly status = 429
  get error(): "temporarily_unavailable" { return "temporarily_unavailable" }
  get status(): 429 { return 429 }
  override get message(): string { return describe(this.error, this.description) }
}

/** 429, register: more than 5 registrations per IP in 10 minutes. `Retry-After` is
 * delta-seconds (RFC 6585 §4, RFC 9110 §10.2.3); see `oauthErrorHeaders`. */
export class TooManyRequests extends Schema.TaggedError<TooManyRequests>()("TooManyRequests", {
  ...Description,
  retryAfterSeconds: Schema.Int.pipe(Schema.positive())
}) {
  static readonly error = "too_many_requests"
  static readonly status = 429
  get error(): "too_many_requests" { return "too_many_requests" }
  get status(): 429 { return 429 }
  override get message(): string { return describe(this.error, this.description) }
}

/** 400, token (and the authorization error page): a `resource` (RFC 8707 §2) that does not name this server's
 * `/mcp`, or, at the token endpoint, one other than the authorization's (docs/decisions/oauth.md "`resource` names
 * this server's /mcp, and the token remembers it"). */
export class InvalidTarget extends Schema.TaggedError<InvalidTarget>()("InvalidTarget", Description) {
  static readonly error = "invalid_target"
  static readonly status = 400
  get error(): "invalid_target" { return "invalid_target" }
  get status(): 400 { return 400 }
  override get message(): string { return describe(this.error, this.description) }
}

/** The member denied the app. The only error ever sent to a redirect_uri (interface "Errors >
 * OAuth": every other authorization error is shown on the page). */
export class AccessDenied extends Schema.TaggedError<AccessDenied>()("AccessDenied", Description) {
  static readonly error = "access_denied"
  static readonly status = 400
  get error(): "access_denied" { return "access_denied" }
  get status(): 400 { return 400 }
  override get message(): string { return describe(this.error, this.description) }
}

export const OAuthError = Schema.Union(
  InvalidRequest,
  InvalidClientMetadata,
  InvalidRedirectUri,
  UnsupportedGrantType,
  InvalidGrant,
  InvalidClient,
  TemporarilyUnavailable,
  TooManyRequests,
  InvalidTarget,
  AccessDenied
)
export type OAuthError = typeof OAuthError.Type

/** The interface's "malformed body" answer: 400 `{"error":"invalid_request"}` with no
 * error_description (JSON that does not parse or is not an object, a form body that does not
 * decode). */
export const malformedBody = (): InvalidRequest => new InvalidRequest({})

/** The JSON body of an OAuth error response. */
export const toOAuthErrorBody = (e: OAuthError): OAuthErrorBody =>
  e.description === undefined ? { error: e.error } : { error: e.error, error_description: e.description }

/** Headers an OAuth error adds to its response beyond Content-Type: `Retry-After` on the
 * per-IP 429, and on the pending-cap 429 when it is known. */
export const oauthErrorHeaders = (e: OAuthError): Readonly<Record<string, string>> =>
  e._tag === "TooManyRequests" || (e._tag === "TemporarilyUnavailable" && e.retryAfterSeconds !== undefined)
    ? { "Retry-After": String(e.retryAfterSeconds) }
    : {}

const describe = (error: string, description: string | undefined): string =>
  description === undefined ? error : `${error}: ${description}`
