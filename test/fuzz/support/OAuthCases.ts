/**
 * Fuzzed requests to the OAuth endpoints (interface "OAuth and related endpoints": register, token, revoke) and the
 * judge of their answers. Every generated request is invalid by construction, so none may change anything:
 * - register: at least one member surely refused (client_name missing, not a string, empty, over 60 code points or
 *   with a control or text-direction character; or redirect_uris not a non-empty array of allowed URIs), the others
 *   hostile; or not JSON at all;
 * - token: never the real code (the one the test keeps unspent), so at best a random code of the real client;
 * - revoke: never the live token itself, at best a near miss of it for the real client.
 * Each endpoint also gets deep nesting (at every depth up to the 16 KiB limit) in each of its members. Around them:
 * form and JSON encodings, repeated parameters, wrong content types and raw byte mutations. The judge
 * holds every answer to the interface's "Errors > OAuth": JSON `{error, error_description?}` with a known code and a
 * description of RFC 6749 §5.2 characters, at most 4 KiB, `Cache-Control: no-store`, never a 5xx, never a success but
 * revoke's 200.
 */
import fc from "fast-check"
import { byteMutation, deepNesting, edgeString, encodeJson, hostileJson, hostileString, mutateBytes, oneTimeIn } from "./HostileValues.js"
import type { RawOutcome, RawRequest } from "./RawHttp.js"

export type OAuthEndpoint = "register" | "token" | "revoke"

export const OAUTH_PATHS: { readonly [E in OAuthEndpoint]: string } = {
  register: "/api/oauth/register",
  token: "/api/oauth/token",
  revoke: "/api/oauth/revoke"
}

export interface OAuthCase extends RawRequest {
  readonly endpoint: OAuthEndpoint
  readonly label: string
}

/** What the storm knows of the server's real OAuth state, so that it can come near it without touching it. */
export interface OAuthTarget {
  readonly clientId: string
  readonly redirectUri: string
  /** The live access token of `clientId`: never sent as is. */
  readonly liveToken: string
  /** The unspent code of `codeClientId`: never sent. */
  readonly code: string
}

const VALID_REDIRECTS = ["https://app.example/cb", "http://127.0.0.1/cb", "com.example.app:/cb", "urn:ietf:wg:oauth:2.0:oob"]

/** client_name values the interface refuses: not a string, empty, over 60 code points, control or direction characters. */
const refusedName: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(undefined, null, 0, true, [], {}, ["App"], ""),
  fc.integer({ min: 61, max: 5_000 }).map((n) => "a".repeat(n)),
  fc.tuple(edgeString, fc.constantFrom("\u0000", "\u0007", "\u001b", "\r", "\n", "\u007f", "\u0085", "\u202e", "\u2066", "\u200f", "\u061c"), edgeString)
    .map(([a, bad, b]) => `${a.slice(0, 20)}${bad}${b.slice(0, 20)}`)
)

/** redirect_uris values the interface refuses. */
const refusedRedirects: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(undefined, null, "https://app.example/cb", [], [null], [1], {}, [[]]),
  fc.constantFrom(
    "https://app.example/cb#frag", "https://user:pw@app.example/cb", "http://app.example/cb", "javascript:alert(1)",
    "https://app.example/c b", "https://app.example/\u00e9", "https://app.example/\\", "noscheme", "", "https://app.example/\u0000",
    "https://app.example/\uD800"
  ).map((uri) => [uri]),
  fc.integer({ min: 2_001, max: 20_000 }).map((n) => [`https://app.example/${"a".repeat(n)}`]),
  fc.tuple(edgeString, hostileString).map(([a, b]) => [`https://app.example/${a}`, `http://evil.example/${b}`])
)

const maybeMember = (arb: fc.Arbitrary<unknown>) => fc.option(arb, { nil: undefined, freq: 3 })

/** Deep nesting in one member of a registration (a known one, one the server ignores, or one of the URIs), the name refused. */
const deepRegister: fc.Arbitrary<{ readonly label: string; readonly value: unknown }> = fc
  .tuple(
    fc.constantFrom("client_name", "redirect_uris", "redirect_uris[0]", "client_uri", "scope", "grant_types", "software_statement"),
    deepNesting,
    refusedName
  )
  .map(([member, deep, name]) => {
    const value: Record<string, unknown> = { client_name: name, redirect_uris: VALID_REDIRECTS }
    if (member === "redirect_uris[0]") value["redirect_uris"] = [deep, ...VALID_REDIRECTS]
    else value[member] = deep
    return { label: `register: deep ${member} (${deep.kind} ${deep.depth})`, value }
  })

const registerBody: fc.Arbitrary<{ readonly label: string; readonly value: unknown }> = fc.oneof(
  deepRegister,
  fc.record({
    client_name: refusedName,
    redirect_uris: fc.oneof(fc.constant(VALID_REDIRECTS), refusedRedirects, hostileJson),
    client_uri: maybeMember(fc.oneof(hostileString, fc.constant("https://app.example")))
  }).map((value) => ({ label: "register: refused client_name", value })),
  fc.record({
    client_name: fc.oneof(fc.constant("App"), hostileString),
    redirect_uris: refusedRedirects,
    client_uri: maybeMember(fc.oneof(hostileString, fc.constant("https://app.example"))),
    scope: maybeMember(hostileJson),
    grant_types: maybeMember(hostileJson),
    application_type: maybeMember(fc.oneof(fc.constantFrom("native", "web", "NATIVE", "desktop", ""), hostileJson))
  }).map((value) => ({ label: "register: refused redirect_uris", value })),
  hostileJson.filter((v) => typeof v !== "object" || v === null || Array.isArray(v)).map((value) => ({ label: "register: not an object", value }))
)

const b64url = fc.string({ unit: fc.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"), minLength: 43, maxLength: 43 })
const verifier = fc.string({ unit: fc.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-"), minLength: 43, maxLength: 128 })

/** A parameter value: right-looking or hostile; `exclude` is never produced. */
const param = (right: fc.Arbitrary<string>, exclude: string) =>
  fc.oneof({ weight: 3, arbitrary: right }, { weight: 2, arbitrary: hostileString }, { weight: 1, arbitrary: hostileJson })
    .filter((v) => v !== exclude)

/** One character of `value` changed: as near the real secret as a guess gets. */
const nearMiss = (value: string) =>
  fc.tuple(fc.nat({ max: value.length - 1 }), fc.constantFrom("A", "b", "0", "-", "_")).map(([i, c]) =>
    value.slice(0, i) + (value[i] === c ? (c === "A" ? "B" : "A") : c) + value.slice(i + 1)
  )

const tokenParams = (target: OAuthTarget) =>
  fc.record({
    grant_type: maybeMember(param(fc.constantFrom("authorization_code", "refresh_token", "password", "client_credentials"), "\u0000never")),
    client_id: maybeMember(param(fc.constant(target.clientId), "\u0000never")),
    code: maybeMember(param(fc.oneof(b64url, nearMiss(target.code)), target.code)),
    redirect_uri: maybeMember(param(fc.constant(target.redirectUri), "\u0000never")),
    code_verifier: maybeMember(param(verifier, "\u0000never")),
    scope: maybeMember(hostileString),
    // RFC 8707: another server's, a near spelling of this one's, several, or hostile (docs/decisions/oauth.md)
    resource: maybeMember(fc.oneof(
      fc.constantFrom("https://other-mcp.example/mcp", "http://127.0.0.1/mcp/", "/mcp", "https://a.example/mcp#f"),
      fc.array(fc.oneof(hostileString, fc.constant("https://other-mcp.example/mcp")), { maxLength: 6 }),
      hostileString,
      hostileJson
    ))
  }, { requiredKeys: [] })

const revokeParams = (target: OAuthTarget) =>
  fc.record({
    client_id: maybeMember(param(fc.constant(target.clientId), "\u0000never")),
    token: maybeMember(param(fc.oneof(b64url, nearMiss(target.liveToken), fc.constant(target.code)), target.liveToken)),
    token_type_hint: maybeMember(fc.oneof(fc.constantFrom("access_token", "refresh_token"), hostileString))
  }, { requiredKeys: [] })

const asFormValue = (value: unknown): string => (typeof value === "string" ? value : encodeJson(value).toString("utf8"))

/** A form body; a parameter is sometimes repeated. */
const formBody = (params: Record<string, unknown>, repeat: boolean): Buffer => {
  const form = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined) continue
    form.append(name, asFormValue(value))
    if (repeat) form.append(name, "again")
  }
  return Buffer.from(form.toString())
}

const CONTENT_TYPES = [
  "application/x-www-form-urlencoded", "application/json", "application/json; charset=utf-8",
  "application/x-www-form-urlencoded; charset=ISO-8859-1", "text/plain", "multipart/form-data; boundary=x", ""
]

const clientParamsCase = (endpoint: "token" | "revoke", params: fc.Arbitrary<Record<string, unknown>>): fc.Arbitrary<OAuthCase> =>
  fc.tuple(params, fc.constantFrom("form", "json", "other"), fc.boolean(), oneTimeIn(6, byteMutation), fc.constantFrom(...CONTENT_TYPES))
    .map(([values, encoding, repeat, mutation, otherType]) => {
      const encoded = encoding === "json" ? encodeJson(values) : formBody(values, repeat && encoding === "form")
      const contentType = encoding === "form" ? CONTENT_TYPES[0]! : encoding === "json" ? CONTENT_TYPES[1]! : otherType
      return {
        endpoint,
        path: OAUTH_PATHS[endpoint],
        headers: contentType === "" ? {} : { "content-type": contentType },
        body: mutation === undefined ? encoded : mutateBytes(encoded, mutation),
        label: `${endpoint}: ${encoding}${repeat ? " repeated" : ""}${mutation === undefined ? "" : `, bytes ${mutation.kind}`}`
      }
    })

export const registerCase: fc.Arbitrary<OAuthCase> = fc
  .tuple(registerBody, oneTimeIn(6, byteMutation), fc.constantFrom(...CONTENT_TYPES))
  .map(([{ label, value }, mutation, otherType]) => {
    const encoded = encodeJson(value)
    const contentType = mutation === undefined ? "application/json" : otherType
    return {
      endpoint: "register",
      path: OAUTH_PATHS.register,
      headers: contentType === "" ? {} : { "content-type": contentType },
      body: mutation === undefined ? encoded : mutateBytes(encoded, mutation),
      label: mutation === undefined ? label : `${label}, bytes ${mutation.kind}`
    }
  })

/** `params`, and one time in five the same with deep nesting in one of `members` (or in a member no endpoint reads). */
const sometimesDeep = (params: fc.Arbitrary<Record<string, unknown>>, members: ReadonlyArray<string>) =>
  fc.oneof(
    { weight: 4, arbitrary: params },
    { weight: 1, arbitrary: fc.tuple(params, fc.constantFrom(...members, "extra"), deepNesting).map(([values, member, deep]) => ({ ...values, [member]: deep })) }
  )

export const tokenCase = (target: OAuthTarget) =>
  clientParamsCase("token", sometimesDeep(tokenParams(target), ["grant_type", "client_id", "code", "redirect_uri", "code_verifier", "scope", "resource"]))
export const revokeCase = (target: OAuthTarget) =>
  clientParamsCase("revoke", sometimesDeep(revokeParams(target), ["client_id", "token", "token_type_hint"]))

// --- The judge ---

const ALLOWED: { readonly [E in OAuthEndpoint]: { readonly statuses: ReadonlySet<number>; readonly errors: ReadonlySet<string> } } = {
  register: { statuses: new Set([400, 413]), errors: new Set(["invalid_request", "invalid_client_metadata", "invalid_redirect_uri"]) },
  token: { statuses: new Set([400, 401, 413]), errors: new Set(["invalid_request", "unsupported_grant_type", "invalid_grant", "invalid_client", "invalid_target"]) },
  revoke: { statuses: new Set([200, 400, 401, 413]), errors: new Set(["invalid_request", "invalid_client"]) }
}

/** RFC 6749 §5.2: error_description is %x20-21 / %x23-5B / %x5D-7E. */
const DESCRIPTION = /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/

/** What is wrong with the answer, or undefined when the interface allows it. */
export const judgeOAuth = (request: OAuthCase, outcome: RawOutcome): string | undefined => {
  if (outcome._tag === "Transport") return `no answer: ${outcome.message}`
  const { status, body, headers } = outcome
  const allowed = ALLOWED[request.endpoint]
  if (status >= 500) return `status ${status}: ${body.toString("utf8").slice(0, 200)}`
  if (!allowed.statuses.has(status)) return `status ${status}: ${body.toString("utf8").slice(0, 200)}`
  if (headers["cache-control"] !== "no-store") return `status ${status} without Cache-Control: no-store`
  if (status === 200) return body.length === 0 ? undefined : "revoke's 200 with a body"
  if (body.length > 4096) return `an error of ${body.length} bytes`
  if (!String(headers["content-type"] ?? "").startsWith("application/json")) return `status ${status} without JSON`
  let json: unknown
  try {
    json = JSON.parse(body.toString("utf8"))
  } catch {
    return `status ${status}: the body is not JSON`
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return "the error is not a JSON object"
  const { error, error_description, ...rest } = json as Record<string, unknown>
  if (Object.keys(rest).length > 0) return `unexpected members ${Object.keys(rest).join(", ")}`
  if (typeof error !== "string" || !allowed.errors.has(error)) return `error ${JSON.stringify(error)}`
  if (error_description !== undefined && (typeof error_description !== "string" || !DESCRIPTION.test(error_description))) {
    return `error_description ${JSON.stringify(error_description)}`
  }
  if (status === 413 && request.body.length <= 16 * 1024) return "413 for a body within 16 KiB"
  return undefined
}
