/**
 * ResourceIndicator: which `resource` values (RFC 8707) name this server's `/mcp` — the normalisations WHATWG
 * makes are the same resource, every other spelling another one — and the resource an authorization request
 * carries into its approval (docs/decisions/oauth.md "`resource` names this server's /mcp, and the token remembers it").
 */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { validateAuthorizeRequest } from "../../../src/services/oauth/AuthorizeRequest.js"
import { checkResources, RESOURCE_MAX_VALUES } from "../../../src/services/oauth/ResourceIndicator.js"

const ISSUER = "https://belay.example"

describe("checkResources", () => {
  it.each([
    { name: "none", values: [], expected: undefined },
    { name: "empty values count as absent (RFC 6749 §3.1)", values: [""], expected: undefined },
    { name: "this server's /mcp", values: [`${ISSUER}/mcp`], expected: `${ISSUER}/mcp` },
    { name: "the same, repeated", values: [`${ISSUER}/mcp`, `${ISSUER}/mcp`], expected: `${ISSUER}/mcp` },
    { name: "the host in capitals and the default port", values: ["HTTPS://BELAY.example:443/mcp"], expected: `${ISSUER}/mcp` }
  ])("accepts $name", ({ values, expected }) => {
    expect(checkResources(values, ISSUER)).toStrictEqual(Either.right(expected))
  })

  it.each([
    { name: "another server", values: ["https://other-mcp.example/mcp"] },
    { name: "one of two naming another server", values: [`${ISSUER}/mcp`, "https://other-mcp.example/mcp"] },
    { name: "a trailing slash", values: [`${ISSUER}/mcp/`] },
    { name: "the origin alone", values: [ISSUER] },
    { name: "another port", values: ["https://belay.example:8443/mcp"] },
    { name: "http instead of https", values: ["http://belay.example/mcp"] },
    { name: "a fragment (RFC 8707 §2)", values: [`${ISSUER}/mcp#x`] },
    { name: "an empty fragment", values: [`${ISSUER}/mcp#`] },
    { name: "a query", values: [`${ISSUER}/mcp?x=1`] },
    { name: "a relative reference", values: ["/mcp"] },
    { name: "userinfo", values: ["https://u@belay.example/mcp"] },
    { name: "too many values", values: Array.from({ length: RESOURCE_MAX_VALUES + 1 }, () => `${ISSUER}/mcp`) }
  ])("refuses $name with invalid_target", ({ values }) => {
    const result = checkResources(values, ISSUER)
    if (Either.isRight(result)) throw new Error("expected a refusal")
    expect(result.left.error).toBe("invalid_target")
    expect(result.left.status).toBe(400)
  })
})

describe("validateAuthorizeRequest with an issuer", () => {
  const client = { clientId: "c1", redirectUris: ["https://app.example/cb"] }
  const query = (extra: ReadonlyArray<[string, string]>) =>
    new URLSearchParams([
      ["client_id", "c1"],
      ["redirect_uri", "https://app.example/cb"],
      ["response_type", "code"],
      ["code_challenge", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"],
      ["code_challenge_method", "S256"],
      ...extra
    ])

  it("carries this server's resource into the validated request, and none when absent", () => {
    const named = validateAuthorizeRequest(query([["resource", `${ISSUER}/mcp`]]), client, { issuer: ISSUER })
    expect(Either.isRight(named) && named.right.resource).toBe(`${ISSUER}/mcp`)
    const bare = validateAuthorizeRequest(query([]), client, { issuer: ISSUER })
    expect(Either.isRight(bare) && Object.hasOwn(bare.right, "resource")).toBe(false)
  })

  it("refuses another server's resource with the check `resource`, after every other check", () => {
    const other = validateAuthorizeRequest(query([["resource", "https://other-mcp.example/mcp"]]), client, { issuer: ISSUER })
    expect(Either.isLeft(other) && other.left.check).toBe("resource")
    const alsoUnknown = validateAuthorizeRequest(
      query([["resource", "https://other-mcp.example/mcp"], ["client_id", "x"]]),
      client,
      { issuer: ISSUER }
    )
    expect(Either.isLeft(alsoUnknown) && alsoUnknown.left.check).toBe("single-valued")
  })
})
