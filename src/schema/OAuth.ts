// The OAuth 2 wire contracts (spec/interface.md "OAuth and related endpoints"): registration,
// token and revocation requests and responses, the RFC 8414 discovery document and the RFC 9728
// protected-resource metadata, plus the pure decoders of token and revoke bodies (form or JSON)
// in the interface's check order. Pure; no state, safe from any fiber.
import { Either, Schema } from "effect"
import { InvalidRequest, malformedBody, UnsupportedGrantType } from "./OAuthErrors.js"

/** Fixed paths of the authorization server and the resource metadata (interface table, docs/contract.md
 * "HTTP routes beyond the interface document"). */
export const OAuthPaths = {
  discovery: "/.well-known/oauth-authorization-server",
  protectedResource: "/.well-known/oauth-protected-resource",
  protectedResourceMcp: "/.well-known/oauth-protected-resource/mcp",
  authorize: "/oauth/authorize",
  token: "/api/oauth/token",
  revoke: "/api/oauth/revoke",
  register: "/api/oauth/register",
  logout: "/api/auth/logout",
  mcp: "/mcp",
  /** Where `service_documentation` points; the lead routes a page there. */
  serviceDocumentation: "/docs/oauth"
} as const

/** The out-of-band redirect URI: the approval page shows the code for the member to paste. */
export const OOB_REDIRECT_URI = "urn:ietf:wg:oauth:2.0:oob"

/** RFC 7636 §4.1: 43–128 characters of unreserved [A-Za-z0-9._~-]. */
export const CodeVerifier = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9._~-]{43,128}$/))

/** RFC 7636 §4.2: BASE64URL(SHA-256(verifier)) without padding is always 43 characters. */
export const CodeChallenge = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{43}$/))

// ---------------------------------------------------------------------------------------------
// Registration (RFC 7591)

/** A registration request after `ClientMetadata.validateRegisterRequest` accepted it. Decoding
 * ignores unknown members (RFC 7591 §2: scope, grant_types, response_types,
 * token_endpoint_auth_method, logo_uri … are ignored and never echoed). */
export const RegisterRequest = Schema.Struct({
  client_name: Schema.String,
  redirect_uris: Schema.NonEmptyArray(Schema.String),
  client_uri: Schema.optional(Schema.String),
  /** OpenID Connect Registration §2, sent by 2026-era DCR clients; echoed when given. */
  application_type: Schema.optional(Schema.Literal("native", "web"))
})
export type RegisterRequest = typeof RegisterRequest.Type

/** 201 body. `client_uri` is omitted when none was registered, never null or "" (docs/contract.md; the
 * MCP SDK's OAuthClientInformationFullSchema rejects both). */
export const RegisterResponse = Schema.Struct({
  client_id: Schema.String,
  client_id_issued_at: Schema.Int,
  client_name: Schema.String,
  client_uri: Schema.optional(Schema.String),
  redirect_uris: Schema.NonEmptyArray(Schema.String),
  application_type: Schema.optional(Schema.Literal("native", "web")),
  grant_types: Schema.Tuple(Schema.Literal("authorization_code")),
  response_types: Schema.Tuple(Schema.Literal("code")),
  token_endpoint_auth_method: Schema.Literal("none")
})
export type RegisterResponse = typeof RegisterResponse.Type

export const registerResponse = (client: {
  readonly clientId: string
  /** Unix seconds. */
  readonly clientIdIssuedAt: number
  readonly clientName: string
  readonly clientUri?: string | null | undefined
  readonly redirectUris: readonly [string, ...Array<string>]
  readonly applicationType?: "native" | "web" | null | undefined
}): RegisterResponse => ({
  client_id: client.clientId,
  client_id_issued_at: client.clientIdIssuedAt,
  client_name: client.clientName,
  ...(client.clientUri == null ? {} : { client_uri: client.clientUri }),
  redirect_uris: client.redirectUris,
  ...(client.applicationType == null ? {} : { application_type: client.applicationType }),
  grant_types: ["authorization_code"],
  response_types: ["code"],
  token_endpoint_auth_method: "none"
})

// ---------------------------------------------------------------------------------------------
// Token and revocation

/** Token request after `decodeTokenRequest`: every parameter present and non-empty, grant_type
 * `authorization_code`, code_verifier well-formed. `resource` (RFC 8707) is read apart by `readResources`, for the
 * endpoint to check against this server's /mcp; `scope` and other parameters are ignored (RFC 6749 §3.1). */
export const TokenRequest = Schema.Struct({
  grant_type: Schema.Literal("authorization_code"),
  client_id: Schema.NonEmptyString,
  code: Schema.NonEmptyString,
  redirect_uri: Schema.NonEmptyString,
  code_verifier: CodeVerifier
})
export type TokenRequest = typeof TokenRequest.Type

/** 200 body; no expires_in, no refresh_token, no scope (interface "OAuth access token"). */
export const TokenResponse = Schema.Struct({
  access_token: Schema.String,
  token_type: Schema.Literal("Bearer"),
  /** Unix seconds. */
  created_at: Schema.Int
})
export type TokenResponse = typeof TokenResponse.Type

/** RFC 7009 request; `token_type_hint` is ignored (§2.1 lets the server ignore it). */
export const RevokeRequest = Schema.Struct({
  client_id: Schema.NonEmptyString,
  token: Schema.NonEmptyString
})
export type RevokeRequest = typeof RevokeRequest.Type

export type TokenRequestError = InvalidRequest | UnsupportedGrantType

const GrantType = Schema.Struct({ grant_type: Schema.NonEmptyString })

// The authorization_code grant's own parameters (RFC 6749 §4.1.3 with RFC 7636 §4.5).
const CodeGrantParameters = Schema.Struct({
  client_id: Schema.NonEmptyString,
  code: Schema.NonEmptyString,
  redirect_uri: Schema.NonEmptyString,
  code_verifier: Schema.NonEmptyString
})

/**
 * Decodes a token request body: a `URLSearchParams` (application/x-www-form-urlencoded) or an
 * already-parsed JSON value (application/json). Order, per docs/decisions/oauth.md,
 * none of it touching the code:
 *   1. body shape: JSON that is not an object → invalid_request without description;
 *   2. grant_type repeated, not a string, missing or empty → invalid_request; any value other than
 *      `authorization_code` → unsupported_grant_type, before the grant's parameters are read, so a
 *      `refresh_token` or `password` request learns that the grant is unsupported rather than
 *      that `code` is missing;
 *   3. the grant's parameters: repeated (RFC 6749 §3.1), in JSON not a string, missing or empty
 *      (RFC 6749 §3.1: an empty value counts as omitted) → invalid_request;
 *   4. code_verifier malformed (RFC 7636 §4.1) → invalid_request, so the code stays usable, as in
 *      node-oidc-provider; a verifier that does not match is the caller's invalid_grant.
 * The caller then checks that client_id is known (invalid_client) before claiming the code.
 */
export const decodeTokenRequest = (body: unknown): Either.Either<TokenRequest, TokenRequestError> =>
  Either.flatMap(readParameters(body, GrantType), ({ grant_type }): Either.Either<TokenRequest, TokenRequestError> => {
    if (grant_type !== "authorization_code") {
      return Either.left(new UnsupportedGrantType({ description: "only authorization_code is supported" }))
    }
    return Either.flatMap(readParameters(body, CodeGrantParameters), (p): Either.Either<TokenRequest, TokenRequestError> =>
      Schema.is(CodeVerifier)(p.code_verifier)
        ? Either.right({ grant_type: "authorization_code", ...p })
        : Either.left(
          new InvalidRequest({ description: "code_verifier must be 43-128 characters of A-Z a-z 0-9 . _ ~ -" })
        ))
  })

/** RFC 8707 `resource` values of a token body (form or parsed JSON): a form may repeat the parameter, JSON may give a
 * string or an array of strings; empty values count as absent (RFC 6749 §3.1). Anything else → invalid_request. */
export const readResources = (body: unknown): Either.Either<ReadonlyArray<string>, InvalidRequest> => {
  const raw: unknown = body instanceof URLSearchParams
    ? body.getAll("resource")
    : typeof body === "object" && body !== null && Object.hasOwn(body, "resource")
    ? Reflect.get(body, "resource")
    : []
  const list: ReadonlyArray<unknown> = Array.isArray(raw) ? raw : raw === undefined || raw === null ? [] : [raw]
  if (!list.every((value): value is string => typeof value === "string")) {
    return Either.left(new InvalidRequest({ description: "parameter resource must be a string" }))
  }
  return Either.right(list.filter((value) => value !== ""))
}

/** Decodes a revocation body (form or parsed JSON) with the same reading rules as
 * `decodeTokenRequest`. The caller answers 401 invalid_client for an unknown client_id and 200
 * otherwise, revoking only a token issued to that client (RFC 7009 §2.2). */
export const decodeRevokeRequest = (body: unknown): Either.Either<RevokeRequest, InvalidRequest> =>
  readParameters(body, RevokeRequest)

/** Reads exactly the schema's fields from a form or a JSON object: a field repeated, in JSON not
 * a string, missing or empty → invalid_request; a body that is neither → the malformed-body error. */
const readParameters = <A, I>(
  body: unknown,
  schema: Schema.Schema<A, I> & { readonly fields: Readonly<Record<string, unknown>> }
): Either.Either<A, InvalidRequest> => {
  const names = Object.keys(schema.fields)
  const values: Record<string, string> = {}
  if (body instanceof URLSearchParams) {
    for (const name of names) {
      const all = body.getAll(name)
      if (all.length > 1) return Either.left(new InvalidRequest({ description: `parameter ${name} is repeated` }))
      if (all[0] !== undefined && all[0] !== "") values[name] = all[0]
    }
  } else if (typeof body === "object" && body !== null && !Array.isArray(body)) {
    for (const name of names) {
      const value: unknown = Object.hasOwn(body, name) ? Reflect.get(body, name) : undefined
      if (value === undefined || value === null || value === "") continue
      if (typeof value !== "string") {
        return Either.left(new InvalidRequest({ description: `parameter ${name} must be a string` }))
      }
      values[name] = value
    }
  } else {
    return Either.left(malformedBody())
  }
  const missing = names.find((name) => values[name] === undefined)
  if (missing !== undefined) return Either.left(new InvalidRequest({ description: `missing parameter ${missing}` }))
  return Either.mapLeft(Schema.decodeUnknownEither(schema)(values), () => malformedBody())
}

// ---------------------------------------------------------------------------------------------
// Discovery (RFC 8414) and protected-resource metadata (RFC 9728)

/** Every field of the interface's discovery response, each non-empty (RFC 8414 §2: an omitted
 * grant_types_supported would default to code+implicit), plus RFC 9207's flag: every approve and
 * deny redirect carries `iss`, and oauth4webapi then requires it; and the Client ID Metadata
 * Document flag (draft-ietf-oauth-client-id-metadata-document §5), which clients such as Claude
 * heed only beside `none` in token_endpoint_auth_methods_supported (docs/decisions/oauth.md). */
export const DiscoveryDocument = Schema.Struct({
  issuer: Schema.String,
  authorization_endpoint: Schema.String,
  token_endpoint: Schema.String,
  revocation_endpoint: Schema.String,
  registration_endpoint: Schema.String,
  response_types_supported: Schema.Tuple(Schema.Literal("code")),
  grant_types_supported: Schema.Tuple(Schema.Literal("authorization_code")),
  token_endpoint_auth_methods_supported: Schema.Tuple(Schema.Literal("none")),
  revocation_endpoint_auth_methods_supported: Schema.Tuple(Schema.Literal("none")),
  code_challenge_methods_supported: Schema.Tuple(Schema.Literal("S256")),
  service_documentation: Schema.String,
  authorization_response_iss_parameter_supported: Schema.Literal(true),
  client_id_metadata_document_supported: Schema.Literal(true)
})
export type DiscoveryDocument = typeof DiscoveryDocument.Type

/** The discovery document for `issuer`, an origin with no trailing slash (docs/decisions/oauth.md: the issuer
 * never ends with `/`); it is used byte for byte, never re-normalised, because clients compare
 * `iss` and `authorization_servers[0]` with it exactly. All URLs are absolute (the MCP SDK's
 * OAuthMetadataSchema fails on a relative service_documentation). */
export const discoveryDocument = (issuer: string): DiscoveryDocument => ({
  issuer,
  authorization_endpoint: issuer + OAuthPaths.authorize,
  token_endpoint: issuer + OAuthPaths.token,
  revocation_endpoint: issuer + OAuthPaths.revoke,
  registration_endpoint: issuer + OAuthPaths.register,
  response_types_supported: ["code"],
  grant_types_supported: ["authorization_code"],
  token_endpoint_auth_methods_supported: ["none"],
  revocation_endpoint_auth_methods_supported: ["none"],
  code_challenge_methods_supported: ["S256"],
  service_documentation: issuer + OAuthPaths.serviceDocumentation,
  authorization_response_iss_parameter_supported: true,
  client_id_metadata_document_supported: true
})

/** RFC 9728 §2, served at both `/.well-known/oauth-protected-resource/mcp` and
 * `/.well-known/oauth-protected-resource` (docs/decisions/oauth.md). */
export const ProtectedResourceMetadata = Schema.Struct({
  resource: Schema.String,
  authorization_servers: Schema.Tuple(Schema.String),
  bearer_methods_supported: Schema.Tuple(Schema.Literal("header"))
})
export type ProtectedResourceMetadata = typeof ProtectedResourceMetadata.Type

/** `resource` is `<base>/mcp` and `authorization_servers` is `[issuer]`, the issuer byte-identical
 * to discovery's. The token goes only in the Authorization header (MCP authorization spec). */
export const protectedResourceMetadata = (base: string, issuer: string): ProtectedResourceMetadata => ({
  resource: base + OAuthPaths.mcp,
  authorization_servers: [issuer],
  bearer_methods_supported: ["header"]
})

/** The `WWW-Authenticate` value of a 401 from /mcp (docs/decisions/oauth.md). */
export const mcpWwwAuthenticate = (base: string): string =>
  `Bearer resource_metadata="${base}${OAuthPaths.protectedResourceMcp}"`
