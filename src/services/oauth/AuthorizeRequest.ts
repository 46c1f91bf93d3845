// Validation of `GET /oauth/authorize` as an ordered list of named checks (in the manner of
// node-oidc-provider's lib/actions), and the authorization response that follows the member's
// decision. Pure: the client record is an input. No state, safe from any fiber.
//
// What may be redirected: only the outcome of the member's decision, a code or
// `error=access_denied` (the interface, "Errors > OAuth"). Every invalid request, including
// those RFC 6749 §4.1.2.1 would let a server redirect (bad response_type, missing PKCE), is shown
// on an error page with status 400 and nothing is sent to the client: RFC 9700 §4.11.2 (phishing
// through error redirects) and docs/contract.md.
import { Data, Either, Schema } from "effect"
import { CodeChallenge, OOB_REDIRECT_URI } from "../../schema/OAuth.js"
import { matchRedirectUri, redirectTarget, type RedirectTarget } from "./ClientMetadata.js"
import { checkResources } from "./ResourceIndicator.js"

/** The part of a registered client that authorization needs. The lookup returns undefined for
 * unknown clients and for pending registrations past their one-hour lifetime. */
export interface AuthorizeClient {
  readonly clientId: string
  readonly redirectUris: ReadonlyArray<string>
}

/** The checks in the order they run; the first that fails names the error. */
export type AuthorizeCheck =
  | "single-valued" // RFC 6749 §3.1: a parameter we read appears at most once
  | "client-id-present"
  | "client-known"
  | "redirect-uri-present" // required even with one registered URI (OAuth 2.1 §4.1.1)
  | "redirect-uri-registered"
  | "response-type" // exactly `code`
  | "code-challenge" // present, 43 characters of base64url (RFC 7636 §4.2)
  | "code-challenge-method" // exactly `S256`; absent means plain (RFC 7636 §4.3), so it is refused
  | "state-length" // at most 1024 code points (the interface)
  | "resource" // RFC 8707: when present, this server's /mcp (docs/decisions/oauth.md)

/** The OAuth error each check stands for, shown on the error page (never sent to the app): the client's
 * checks are invalid_client, a resource invalid_target (RFC 8707 §2), the rest invalid_request. */
export const authorizeCheckError = (check: AuthorizeCheck): "invalid_client" | "invalid_target" | "invalid_request" =>
  check === "client-id-present" || check === "client-known"
    ? "invalid_client"
    : check === "resource"
    ? "invalid_target"
    : "invalid_request"

/** An authorization request that cannot continue: shown on the error page, never redirected. */
export class InvalidAuthorizeRequest extends Data.TaggedError("InvalidAuthorizeRequest")<{
  readonly status: 400
  readonly check: AuthorizeCheck
  /** For the page; names parameters, never echoes their values. */
  readonly message: string
}> {}

export interface ValidatedAuthorizeRequest<C extends AuthorizeClient = AuthorizeClient> {
  readonly client: C
  readonly clientId: string
  /** As presented (a loopback URI may differ from the registered one in its port); the code is
   * bound to this exact string and the token request must repeat it (RFC 6749 §4.1.3). */
  readonly redirectUri: string
  /** The registered entry it matched. */
  readonly registeredRedirectUri: string
  readonly redirectTarget: RedirectTarget
  readonly responseType: "code"
  readonly codeChallenge: string
  readonly codeChallengeMethod: "S256"
  /** Present only when the request carried a non-empty state; returned byte for byte. */
  readonly state?: string
  /** `<issuer>/mcp` when the request named it (RFC 8707); absent when it named none. */
  readonly resource?: string
}

export const AuthorizeLimits = { stateMaxCodePoints: 1024 } as const

// The parameters we read once. Others (scope, prompt, nonce…) are ignored and never echoed (RFC 6749 §3.1,
// docs/decisions/oauth.md); `resource` may legitimately repeat (RFC 8707 §2) and is read apart.
const parameters = [
  "client_id",
  "redirect_uri",
  "response_type",
  "code_challenge",
  "code_challenge_method",
  "state"
] as const
type Parameter = (typeof parameters)[number]

/**
 * Runs the checks in order. `client` is either the record already looked up for the request's
 * client_id, or a lookup function; a record whose clientId differs from the request's counts as
 * unknown. Empty values count as absent (RFC 6749 §3.1), so `state=` yields no state in the
 * redirect. With `options.issuer`, every `resource` must name that issuer's `/mcp` (ResourceIndicator); without
 * it (pure callers that check no resource) `resource` is ignored.
 */
export const validateAuthorizeRequest = <C extends AuthorizeClient>(
  query: URLSearchParams | Readonly<Record<string, string>>,
  client: C | undefined | ((clientId: string) => C | undefined),
  options: { readonly issuer?: string } = {}
): Either.Either<ValidatedAuthorizeRequest<C>, InvalidAuthorizeRequest> => {
  const fail = (check: AuthorizeCheck, message: string) =>
    Either.left(new InvalidAuthorizeRequest({ status: 400, check, message }))

  const values: Partial<Record<Parameter, string>> = {}
  for (const name of parameters) {
    const all = query instanceof URLSearchParams
      ? query.getAll(name)
      : Object.hasOwn(query, name) ? [query[name]] : []
    if (all.length > 1) return fail("single-valued", `The parameter ${name} appears more than once.`)
    const value = all[0]
    if (value !== undefined && value !== "") values[name] = value
  }

  const clientId = values.client_id
  if (clientId === undefined) {
    return fail("client-id-present", "The request does not name an app (client_id is missing).")
  }
  const found = typeof client === "function" ? client(clientId) : client
  if (found === undefined || found.clientId !== clientId) {
    return fail("client-known", "This app is not registered, or its registration expired. Start again from the app.")
  }

  const redirectUri = values.redirect_uri
  if (redirectUri === undefined) return fail("redirect-uri-present", "The request has no redirect_uri.")
  const registered = matchRedirectUri(found.redirectUris, redirectUri)
  if (registered === undefined) {
    return fail("redirect-uri-registered", "The redirect_uri is not one the app registered.")
  }

  if (values.response_type !== "code") return fail("response-type", "The response_type must be code.")

  const codeChallenge = values.code_challenge
  if (codeChallenge === undefined || !Schema.is(CodeChallenge)(codeChallenge)) {
    return fail("code-challenge", "The request needs a PKCE code_challenge of 43 base64url characters.")
  }
  if (values.code_challenge_method !== "S256") {
    return fail("code-challenge-method", "The code_challenge_method must be S256.")
  }

  const state = values.state
  if (state !== undefined && [...state].length > AuthorizeLimits.stateMaxCodePoints) {
    return fail("state-length", "The state parameter is longer than 1024 characters.")
  }

  let resource: string | undefined
  if (options.issuer !== undefined) {
    const presented = query instanceof URLSearchParams
      ? query.getAll("resource")
      : Object.hasOwn(query, "resource") ? [query["resource"] ?? ""] : []
    const checked = checkResources(presented, options.issuer)
    if (Either.isLeft(checked)) {
      return fail("resource", "The app asked for access to another server (resource), not this one's MCP endpoint.")
    }
    resource = checked.right
  }

  return Either.right({
    client: found,
    clientId,
    redirectUri,
    registeredRedirectUri: registered,
    redirectTarget: redirectTarget(redirectUri),
    responseType: "code",
    codeChallenge,
    codeChallengeMethod: "S256",
    ...(state === undefined ? {} : { state }),
    ...(resource === undefined ? {} : { resource })
  })
}

/** The member's decision on the approval page. */
export type AuthorizationOutcome =
  | { readonly _tag: "Approved"; readonly code: string }
  | { readonly _tag: "Denied" }

/** What the approve/deny POST answers. */
export type AuthorizationResponse =
  /** 303 with this Location (RFC 9700 §4.12: never 307). Never log it: it carries the code. */
  | { readonly _tag: "Redirect"; readonly location: string }
  /** Out-of-band approval: show the code on the page (Cache-Control: no-store). */
  | { readonly _tag: "ShowCode"; readonly code: string }
  /** Out-of-band denial: the page says access was denied. */
  | { readonly _tag: "ShowDenied" }

/**
 * The authorization response for a validated request. The redirect keeps the registered query and
 * appends `code` (or `error=access_denied`), `state` only when the request had one, and `iss`
 * (RFC 9207 §2; discovery advertises it, so oauth4webapi requires it on both outcomes). The URI is
 * extended as a string, not through `new URL()`, so it stays byte for byte what the client sent.
 */
export const authorizationResponse = (
  request: { readonly redirectUri: string; readonly state?: string | undefined },
  outcome: AuthorizationOutcome,
  issuer: string
): AuthorizationResponse => {
  if (request.redirectUri === OOB_REDIRECT_URI) {
    return outcome._tag === "Approved" ? { _tag: "ShowCode", code: outcome.code } : { _tag: "ShowDenied" }
  }
  const params = new URLSearchParams()
  if (outcome._tag === "Approved") params.set("code", outcome.code)
  else params.set("error", "access_denied")
  if (request.state !== undefined) params.set("state", request.state)
  params.set("iss", issuer)
  const uri = request.redirectUri
  const separator = !uri.includes("?") ? "?" : uri.endsWith("?") || uri.endsWith("&") ? "" : "&"
  return { _tag: "Redirect", location: uri + separator + params.toString() }
}
