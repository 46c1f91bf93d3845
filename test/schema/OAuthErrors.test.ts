import { describe, expect, it } from "@effect/vitest"
import {
  AccessDenied,
  InvalidClient,
  InvalidClientMetadata,
  InvalidGrant,
  InvalidRedirectUri,
  InvalidRequest,
  malformedBody,
  type OAuthError,
  oauthErrorHeaders,
  TemporarilyUnavailable,
  toOAuthErrorBody,
  TooManyRequests,
  UnsupportedGrantType
} from "../../src/schema/OAuthErrors.js"

describe("OAuthErrors", () => {
  const cases: ReadonlyArray<{
    readonly name: string
    readonly make: (description?: string) => OAuthError
    readonly error: string
    readonly status: number
    readonly staticError: string
    readonly staticStatus: number
  }> = [
    { name: "invalid_request", make: (d) => new InvalidRequest(d === undefined ? {} : { description: d }), error: "invalid_request", status: 400, staticError: InvalidRequest.error, staticStatus: InvalidRequest.status },
    { name: "invalid_client_metadata", make: (d) => new InvalidClientMetadata(d === undefined ? {} : { description: d }), error: "invalid_client_metadata", status: 400, staticError: InvalidClientMetadata.error, staticStatus: InvalidClientMetadata.status },
    { name: "invalid_redirect_uri", make: (d) => new InvalidRedirectUri(d === undefined ? {} : { description: d }), error: "invalid_redirect_uri", status: 400, staticError: InvalidRedirectUri.error, staticStatus: InvalidRedirectUri.status },
    { name: "unsupported_grant_type", make: (d) => new UnsupportedGrantType(d === undefined ? {} : { description: d }), error: "unsupported_grant_type", status: 400, staticError: UnsupportedGrantType.error, staticStatus: UnsupportedGrantType.status },
    { name: "invalid_grant", make: (d) => new InvalidGrant(d === undefined ? {} : { description: d }), error: "invalid_grant", status: 400, staticError: InvalidGrant.error, staticStatus: InvalidGrant.status },
    { name: "invalid_client", make: (d) => new InvalidClient(d === undefined ? {} : { description: d }), error: "invalid_client", status: 401, staticError: InvalidClient.error, staticStatus: InvalidClient.status },
    { name: "temporarily_unavailable", make: (d) => new TemporarilyUnavailable(d === undefined ? {} : { description: d }), error: "temporarily_unavailable", status: 429, staticError: TemporarilyUnavailable.error, staticStatus: TemporarilyUnavailable.status },
    { name: "too_many_requests", make: (d) => new TooManyRequests(d === undefined ? { retryAfterSeconds: 60 } : { description: d, retryAfterSeconds: 60 }), error: "too_many_requests", status: 429, staticError: TooManyRequests.error, staticStatus: TooManyRequests.status },
    { name: "access_denied", make: (d) => new AccessDenied(d === undefined ? {} : { description: d }), error: "access_denied", status: 400, staticError: AccessDenied.error, staticStatus: AccessDenied.status }
  ]

  it.each(cases)("$name carries its wire code and status", (c) => {
    const e = c.make("why")
    expect(e.error).toBe(c.error)
    expect(e.status).toBe(c.status)
    expect(c.staticError).toBe(c.error)
    expect(c.staticStatus).toBe(c.status)
    expect(toOAuthErrorBody(e)).toStrictEqual({ error: c.error, error_description: "why" })
  })

  it.each(cases)("$name without a description omits error_description (never null)", (c) => {
    const body = toOAuthErrorBody(c.make())
    expect(body).toStrictEqual({ error: c.error })
    expect(Object.hasOwn(body, "error_description")).toBe(false)
  })

  it("the malformed-body answer is exactly {\"error\":\"invalid_request\"}", () => {
    expect(JSON.stringify(toOAuthErrorBody(malformedBody()))).toBe("{\"error\":\"invalid_request\"}")
  })

  it("too_many_requests adds Retry-After in delta-seconds; others add nothing", () => {
    expect(oauthErrorHeaders(new TooManyRequests({ retryAfterSeconds: 42 }))).toStrictEqual({ "Retry-After": "42" })
    expect(oauthErrorHeaders(new TemporarilyUnavailable({}))).toStrictEqual({})
    expect(oauthErrorHeaders(new InvalidClient({}))).toStrictEqual({})
  })

  it("message names the wire code for logs", () => {
    expect(new InvalidGrant({ description: "code expired" }).message).toBe("invalid_grant: code expired")
    expect(malformedBody().message).toBe("invalid_request")
  })
})
