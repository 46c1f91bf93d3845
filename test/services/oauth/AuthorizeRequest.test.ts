import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import {
  type AuthorizeCheck,
  authorizationResponse,
  type AuthorizeClient,
  validateAuthorizeRequest
} from "../../../src/services/oauth/AuthorizeRequest.js"

const CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
const ISSUER = "https://b.example"

interface Client extends AuthorizeClient {
  readonly clientName: string
}

const client: Client = {
  clientId: "c1",
  clientName: "CLI",
  redirectUris: ["http://127.0.0.1/cb", "https://app.example/cb", "urn:ietf:wg:oauth:2.0:oob"]
}
const lookup = (id: string): Client | undefined => (id === client.clientId ? client : undefined)

const valid: ReadonlyArray<readonly [string, string]> = [
  ["client_id", "c1"],
  ["redirect_uri", "https://app.example/cb"],
  ["response_type", "code"],
  ["code_challenge", CHALLENGE],
  ["code_challenge_method", "S256"]
]

/** The valid request with parameters replaced (undefined removes one) or appended. */
const query = (
  changes: Readonly<Record<string, string | undefined>> = {},
  extra: ReadonlyArray<readonly [string, string]> = []
): URLSearchParams => {
  const params = new URLSearchParams()
  for (const [name, value] of valid) {
    const changed = Object.hasOwn(changes, name) ? changes[name] : value
    if (changed !== undefined) params.append(name, changed)
  }
  for (const [name, value] of Object.entries(changes)) {
    if (!valid.some(([known]) => known === name) && value !== undefined) params.append(name, value)
  }
  for (const [name, value] of extra) params.append(name, value)
  return params
}

describe("validateAuthorizeRequest", () => {
  it("accepts a valid request and returns what the approval needs", () => {
    const result = validateAuthorizeRequest(query({ state: "xyz" }), lookup)
    expect(result).toStrictEqual(
      Either.right({
        client,
        clientId: "c1",
        redirectUri: "https://app.example/cb",
        registeredRedirectUri: "https://app.example/cb",
        redirectTarget: { kind: "https", host: "app.example" },
        responseType: "code",
        codeChallenge: CHALLENGE,
        codeChallengeMethod: "S256",
        state: "xyz"
      })
    )
  })

  const accepted: ReadonlyArray<{
    readonly name: string
    readonly params: URLSearchParams | Readonly<Record<string, string>>
    readonly redirectUri?: string
    readonly state?: string | undefined
  }> = [
    { name: "no state: none in the result", params: query(), state: undefined },
    { name: "empty state counts as absent (RFC 6749 §3.1)", params: query({ state: "" }), state: undefined },
    { name: "state of 1024 characters", params: query({ state: "s".repeat(1024) }), state: "s".repeat(1024) },
    { name: "state of 1024 emoji (code points)", params: query({ state: "😀".repeat(1024) }), state: "😀".repeat(1024) },
    { name: "state kept byte for byte", params: query({ state: "a b+c&d=e#f%g é/?" }), state: "a b+c&d=e#f%g é/?" },
    {
      name: "scope, resource, prompt and unknown parameters ignored",
      params: query({ scope: "x", resource: "https://b.example/mcp", prompt: "none", nonce: "n", foo: "1" })
    },
    { name: "resource repeated (RFC 8707)", params: query({}, [["resource", "a"], ["resource", "b"]]) },
    {
      name: "loopback with another port (RFC 8252 §7.3)",
      params: query({ redirect_uri: "http://127.0.0.1:51234/cb" }),
      redirectUri: "http://127.0.0.1:51234/cb"
    },
    { name: "out-of-band", params: query({ redirect_uri: "urn:ietf:wg:oauth:2.0:oob" }), redirectUri: "urn:ietf:wg:oauth:2.0:oob" },
    { name: "a plain record instead of URLSearchParams", params: Object.fromEntries(query({ state: "s" })), state: "s" }
  ]

  it.each(accepted)("accepts: $name", ({ params, redirectUri, ...expected }) => {
    const result = validateAuthorizeRequest(params, lookup)
    if (Either.isLeft(result)) throw new Error(result.left.message)
    if (redirectUri !== undefined) expect(result.right.redirectUri).toBe(redirectUri)
    if ("state" in expected) {
      expect(result.right.state).toBe(expected.state)
      expect(Object.hasOwn(result.right, "state")).toBe(expected.state !== undefined)
    }
  })

  const refused: ReadonlyArray<{
    readonly name: string
    readonly params: URLSearchParams
    readonly check: AuthorizeCheck
    readonly client?: Client | undefined
  }> = [
    { name: "client_id missing", params: query({ client_id: undefined }), check: "client-id-present" },
    { name: "client_id empty", params: query({ client_id: "" }), check: "client-id-present" },
    { name: "client_id unknown (or expired)", params: query({ client_id: "nope" }), check: "client-known" },
    { name: "a record given for another client", params: query({ client_id: "c2" }), check: "client-known", client },
    { name: "redirect_uri missing", params: query({ redirect_uri: undefined }), check: "redirect-uri-present" },
    { name: "redirect_uri not registered", params: query({ redirect_uri: "https://evil.example/cb" }), check: "redirect-uri-registered" },
    { name: "redirect_uri with a trailing slash", params: query({ redirect_uri: "https://app.example/cb/" }), check: "redirect-uri-registered" },
    { name: "redirect_uri https with a port", params: query({ redirect_uri: "https://app.example:8443/cb" }), check: "redirect-uri-registered" },
    { name: "loopback with another path", params: query({ redirect_uri: "http://127.0.0.1:5/cb/" }), check: "redirect-uri-registered" },
    { name: "loopback with a query added", params: query({ redirect_uri: "http://127.0.0.1:5/cb?x=1" }), check: "redirect-uri-registered" },
    { name: "loopback host swapped", params: query({ redirect_uri: "http://localhost:5/cb" }), check: "redirect-uri-registered" },
    { name: "response_type missing", params: query({ response_type: undefined }), check: "response-type" },
    { name: "response_type token", params: query({ response_type: "token" }), check: "response-type" },
    { name: "response_type code id_token", params: query({ response_type: "code id_token" }), check: "response-type" },
    { name: "response_type CODE", params: query({ response_type: "CODE" }), check: "response-type" },
    { name: "code_challenge missing", params: query({ code_challenge: undefined }), check: "code-challenge" },
    { name: "code_challenge of 42 (P-01)", params: query({ code_challenge: CHALLENGE.slice(1) }), check: "code-challenge" },
    { name: "code_challenge of 44", params: query({ code_challenge: CHALLENGE + "A" }), check: "code-challenge" },
    { name: "code_challenge padded", params: query({ code_challenge: CHALLENGE.slice(1) + "=" }), check: "code-challenge" },
    { name: "code_challenge with a dot", params: query({ code_challenge: CHALLENGE.slice(1) + "." }), check: "code-challenge" },
    { name: "method plain (P-02)", params: query({ code_challenge_method: "plain" }), check: "code-challenge-method" },
    { name: "method s256 (case-sensitive)", params: query({ code_challenge_method: "s256" }), check: "code-challenge-method" },
    { name: "method absent (defaults to plain, RFC 7636 §4.3)", params: query({ code_challenge_method: undefined }), check: "code-challenge-method" },
    { name: "state of 1025 characters", params: query({ state: "s".repeat(1025) }), check: "state-length" },
    { name: "redirect_uri repeated", params: query({}, [["redirect_uri", "https://app.example/cb"]]), check: "single-valued" },
    { name: "state repeated", params: query({ state: "a" }, [["state", "b"]]), check: "single-valued" },
    { name: "client_id repeated", params: query({}, [["client_id", "c1"]]), check: "single-valued" },
    // Order: nothing is judged against the redirect_uri before the client and the URI are trusted.
    { name: "unknown client and bad response_type: client first", params: query({ client_id: "x", response_type: "token" }), check: "client-known" },
    { name: "bad redirect_uri and bad PKCE: redirect_uri first", params: query({ redirect_uri: "https://evil.example/", code_challenge: undefined }), check: "redirect-uri-registered" }
  ]

  it.each(refused)("refuses on the page: $name", ({ params, check, ...rest }) => {
    const result = validateAuthorizeRequest(params, "client" in rest ? rest.client : lookup)
    if (Either.isRight(result)) throw new Error("expected a refusal")
    expect(result.left._tag).toBe("InvalidAuthorizeRequest")
    expect(result.left.check).toBe(check)
    expect(result.left.status).toBe(400)
    expect(result.left.message).not.toContain("evil")
  })

  it("accepts the client record as a value", () => {
    expect(Either.isRight(validateAuthorizeRequest(query(), client))).toBe(true)
    expect(Either.isLeft(validateAuthorizeRequest(query(), undefined))).toBe(true)
  })
})

describe("authorizationResponse", () => {
  const location = (r: ReturnType<typeof authorizationResponse>): URL => {
    if (r._tag !== "Redirect") throw new Error(`expected a redirect, got ${r._tag}`)
    return new URL(r.location)
  }

  it("approve: code, state and iss appended to the redirect URI (RFC 9207)", () => {
    const r = authorizationResponse({ redirectUri: "https://app.example/cb", state: "xyz" }, { _tag: "Approved", code: "c0de" }, ISSUER)
    expect(r).toStrictEqual({ _tag: "Redirect", location: "https://app.example/cb?code=c0de&state=xyz&iss=https%3A%2F%2Fb.example" })
  })

  it("deny: error=access_denied with state and iss, no code", () => {
    const url = location(authorizationResponse({ redirectUri: "https://app.example/cb", state: "xyz" }, { _tag: "Denied" }, ISSUER))
    expect([...url.searchParams]).toStrictEqual([["error", "access_denied"], ["state", "xyz"], ["iss", ISSUER]])
  })

  it.each([
    { name: "approve", outcome: { _tag: "Approved", code: "c" } as const },
    { name: "deny", outcome: { _tag: "Denied" } as const }
  ])("$name without state: no state key at all", ({ outcome }) => {
    const url = location(authorizationResponse({ redirectUri: "https://app.example/cb" }, outcome, ISSUER))
    expect(url.searchParams.has("state")).toBe(false)
    expect(url.searchParams.get("iss")).toBe(ISSUER)
  })

  it("state survives encoding byte for byte", () => {
    const state = "a b+c&d=e#f%g é/?"
    const url = location(authorizationResponse({ redirectUri: "http://127.0.0.1:5555/cb", state }, { _tag: "Approved", code: "srv1~abc" }, ISSUER))
    expect(url.searchParams.get("state")).toBe(state)
    expect(url.searchParams.get("code")).toBe("srv1~abc")
    expect(url.origin + url.pathname).toBe("http://127.0.0.1:5555/cb")
  })

  it.each([
    { name: "existing query kept", uri: "https://app.example/cb?x=1", expected: "https://app.example/cb?x=1&code=c&iss=https%3A%2F%2Fb.example" },
    { name: "empty query", uri: "https://app.example/cb?", expected: "https://app.example/cb?code=c&iss=https%3A%2F%2Fb.example" },
    { name: "custom scheme", uri: "com.example.app:/cb", expected: "com.example.app:/cb?code=c&iss=https%3A%2F%2Fb.example" },
    { name: "loopback with the presented port", uri: "http://[::1]:4000/cb", expected: "http://[::1]:4000/cb?code=c&iss=https%3A%2F%2Fb.example" }
  ])("Location: $name", ({ uri, expected }) => {
    expect(authorizationResponse({ redirectUri: uri }, { _tag: "Approved", code: "c" }, ISSUER)).toStrictEqual({ _tag: "Redirect", location: expected })
  })

  it("out-of-band: the code is shown, never redirected", () => {
    const oob = { redirectUri: "urn:ietf:wg:oauth:2.0:oob", state: "s" }
    expect(authorizationResponse(oob, { _tag: "Approved", code: "c" }, ISSUER)).toStrictEqual({ _tag: "ShowCode", code: "c" })
    expect(authorizationResponse(oob, { _tag: "Denied" }, ISSUER)).toStrictEqual({ _tag: "ShowDenied" })
  })
})
