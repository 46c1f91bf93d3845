import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import {
  decodeRevokeRequest,
  decodeTokenRequest,
  DiscoveryDocument,
  discoveryDocument,
  mcpWwwAuthenticate,
  protectedResourceMetadata,
  RegisterRequest,
  RegisterResponse,
  registerResponse,
  TokenResponse
} from "../../src/schema/OAuth.js"

const VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
const ISSUER = "https://b.example"

describe("discoveryDocument", () => {
  it("has every field of the interface plus the RFC 9207 and Client ID Metadata Document flags", () => {
    expect(discoveryDocument(ISSUER)).toStrictEqual({
      issuer: "https://b.example",
      authorization_endpoint: "https://b.example/oauth/authorize",
      token_endpoint: "https://b.example/api/oauth/token",
      revocation_endpoint: "https://b.example/api/oauth/revoke",
      registration_endpoint: "https://b.example/api/oauth/register",
      response_types_supported: ["code"],
      grant_types_supported: ["authorization_code"],
      token_endpoint_auth_methods_supported: ["none"],
      revocation_endpoint_auth_methods_supported: ["none"],
      code_challenge_methods_supported: ["S256"],
      service_documentation: "https://b.example/docs/oauth",
      authorization_response_iss_parameter_supported: true,
      client_id_metadata_document_supported: true
    })
  })

  it("keeps the issuer byte for byte, with a port, and never advertises plain", () => {
    const doc = discoveryDocument("http://127.0.0.1:8080")
    expect(doc.issuer).toBe("http://127.0.0.1:8080")
    expect(doc.token_endpoint).toBe("http://127.0.0.1:8080/api/oauth/token")
    expect(JSON.stringify(doc)).not.toContain("plain")
    expect(Schema.is(DiscoveryDocument)(doc)).toBe(true)
  })

  it("every URL is absolute (the MCP SDK refuses relative ones)", () => {
    const doc = discoveryDocument(ISSUER)
    for (const value of Object.values(doc)) {
      if (typeof value === "string") expect(new URL(value).origin).toBe(ISSUER)
    }
  })
})

describe("protectedResourceMetadata", () => {
  it("names <base>/mcp and the issuer (RFC 9728, docs/decisions/oauth.md)", () => {
    expect(protectedResourceMetadata("https://b.example", ISSUER)).toStrictEqual({
      resource: "https://b.example/mcp",
      authorization_servers: [ISSUER],
      bearer_methods_supported: ["header"]
    })
  })

  it("the 401 challenge points at the path-inserted document", () => {
    expect(mcpWwwAuthenticate("https://b.example")).toBe(
      "Bearer resource_metadata=\"https://b.example/.well-known/oauth-protected-resource/mcp\""
    )
  })
})

describe("registration schemas", () => {
  it("RegisterRequest decoding ignores unknown members", () => {
    const decoded = Schema.decodeUnknownSync(RegisterRequest)({
      client_name: "A",
      redirect_uris: ["http://127.0.0.1/cb"],
      logo_uri: "x",
      grant_types: ["implicit"]
    })
    expect(decoded).toStrictEqual({ client_name: "A", redirect_uris: ["http://127.0.0.1/cb"] })
  })

  const base = { clientId: "id1", clientIdIssuedAt: 1_700_000_000, clientName: "CLI", redirectUris: ["http://127.0.0.1/cb"] as const }

  it.each([
    { name: "absent", clientUri: undefined },
    { name: "null from the database", clientUri: null }
  ])("registerResponse omits client_uri when $name", ({ clientUri }) => {
    const body = registerResponse({ ...base, clientUri })
    expect(body).toStrictEqual({
      client_id: "id1",
      client_id_issued_at: 1_700_000_000,
      client_name: "CLI",
      redirect_uris: ["http://127.0.0.1/cb"],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none"
    })
    expect(JSON.stringify(Schema.encodeSync(RegisterResponse)(body))).not.toContain("client_uri")
  })

  it("registerResponse carries client_uri when given, and never a client_secret", () => {
    const body = registerResponse({ ...base, clientUri: "https://cli.example" })
    expect(body.client_uri).toBe("https://cli.example")
    expect(Object.keys(body)).toStrictEqual([
      "client_id",
      "client_id_issued_at",
      "client_name",
      "client_uri",
      "redirect_uris",
      "grant_types",
      "response_types",
      "token_endpoint_auth_method"
    ])
    expect(Schema.is(RegisterResponse)(body)).toBe(true)
  })
})

describe("decodeTokenRequest", () => {
  const fields = {
    grant_type: "authorization_code",
    client_id: "c1",
    code: "srv1~code",
    redirect_uri: "http://127.0.0.1:5555/cb",
    code_verifier: VERIFIER
  }
  const form = (changes: Readonly<Record<string, string | undefined>> = {}) => {
    const params = new URLSearchParams()
    for (const [name, value] of Object.entries({ ...fields, ...changes })) if (value !== undefined) params.append(name, value)
    return params
  }

  it.each([
    { name: "form-encoded", body: form() },
    { name: "JSON", body: { ...fields } },
    { name: "form with scope and resource", body: form({ scope: "x", resource: "https://b.example/mcp" }) },
    { name: "JSON with extra members", body: { ...fields, resource: ["a", "b"], client_secret: 1 } }
  ])("accepts $name", ({ body }) => {
    expect(decodeTokenRequest(body)).toStrictEqual(Either.right(fields))
  })

  const refusals: ReadonlyArray<{ readonly name: string; readonly body: unknown; readonly error: string; readonly description?: string | undefined }> = [
    ...Object.keys(fields).map((name) => ({
      name: `form without ${name}`,
      body: form({ [name]: undefined }),
      error: "invalid_request",
      description: `missing parameter ${name}`
    })),
    { name: "form with an empty code (RFC 6749 §3.1)", body: form({ code: "" }), error: "invalid_request", description: "missing parameter code" },
    { name: "JSON without code_verifier", body: { ...fields, code_verifier: undefined }, error: "invalid_request", description: "missing parameter code_verifier" },
    { name: "JSON with a null code", body: { ...fields, code: null }, error: "invalid_request", description: "missing parameter code" },
    { name: "code repeated", body: (() => { const p = form(); p.append("code", "b"); return p })(), error: "invalid_request", description: "parameter code is repeated" },
    { name: "JSON code as an array", body: { ...fields, code: ["a"] }, error: "invalid_request", description: "parameter code must be a string" },
    { name: "JSON client_id as a number", body: { ...fields, client_id: 1 }, error: "invalid_request", description: "parameter client_id must be a string" },
    { name: "JSON array body", body: [fields], error: "invalid_request", description: undefined },
    { name: "JSON string body", body: "grant_type=authorization_code", error: "invalid_request", description: undefined },
    { name: "JSON null body", body: null, error: "invalid_request", description: undefined },
    { name: "verifier of 42 characters", body: form({ code_verifier: VERIFIER.slice(1) }), error: "invalid_request" },
    { name: "verifier of 129 characters", body: form({ code_verifier: "a".repeat(129) }), error: "invalid_request" },
    { name: "verifier with a plus sign", body: form({ code_verifier: VERIFIER.slice(1) + "+" }), error: "invalid_request" },
    { name: "grant_type refresh_token", body: form({ grant_type: "refresh_token" }), error: "unsupported_grant_type" },
    { name: "grant_type in another case", body: form({ grant_type: "Authorization_Code" }), error: "unsupported_grant_type" },
    { name: "grant_type repeated", body: (() => { const p = form(); p.append("grant_type", "authorization_code"); return p })(), error: "invalid_request", description: "parameter grant_type is repeated" },
    { name: "JSON grant_type as a number", body: { ...fields, grant_type: 1 }, error: "invalid_request", description: "parameter grant_type must be a string" },
    // docs/decisions/oauth.md order: grant_type is judged before the grant's own parameters
    {
      name: "grant_type refresh_token with a refresh_token and no code",
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: "r", client_id: "c1" }),
      error: "unsupported_grant_type"
    },
    {
      name: "grant_type password with username and password",
      body: { grant_type: "password", username: "alice", password: "secret" },
      error: "unsupported_grant_type"
    },
    { name: "a bad grant_type and a repeated code", body: (() => { const p = form({ grant_type: "refresh_token" }); p.append("code", "b"); return p })(), error: "unsupported_grant_type" },
    { name: "a bad grant_type and a malformed verifier", body: form({ grant_type: "client_credentials", code_verifier: "short" }), error: "unsupported_grant_type" },
    { name: "no grant_type and no code: grant_type is named", body: form({ grant_type: undefined, code: undefined }), error: "invalid_request", description: "missing parameter grant_type" }
  ]

  it.each(refusals)("refuses $name with $error", ({ body, error, ...rest }) => {
    const result = decodeTokenRequest(body)
    if (Either.isRight(result)) throw new Error("expected a refusal")
    expect(result.left.error).toBe(error)
    if ("description" in rest) expect(result.left.description).toBe(rest.description)
  })
})

describe("decodeRevokeRequest", () => {
  it.each([
    { name: "form", body: new URLSearchParams({ client_id: "c1", token: "t" }) },
    { name: "JSON", body: { client_id: "c1", token: "t" } },
    { name: "token_type_hint ignored", body: new URLSearchParams({ client_id: "c1", token: "t", token_type_hint: "refresh_token" }) }
  ])("accepts $name", ({ body }) => {
    expect(decodeRevokeRequest(body)).toStrictEqual(Either.right({ client_id: "c1", token: "t" }))
  })

  it.each([
    { name: "missing client_id", body: new URLSearchParams({ token: "t" }) },
    { name: "missing token", body: { client_id: "c1" } },
    { name: "token repeated", body: new URLSearchParams([["client_id", "c1"], ["token", "a"], ["token", "b"]]) },
    { name: "not an object", body: 42 }
  ])("refuses $name with invalid_request", ({ body }) => {
    const result = decodeRevokeRequest(body)
    expect(Either.isLeft(result) && result.left.error).toBe("invalid_request")
  })
})

describe("TokenResponse", () => {
  it("is exactly {access_token, token_type: Bearer, created_at}", () => {
    const body = Schema.encodeSync(TokenResponse)({ access_token: "srv1~t", token_type: "Bearer", created_at: 1_700_000_000 })
    expect(body).toStrictEqual({ access_token: "srv1~t", token_type: "Bearer", created_at: 1_700_000_000 })
    expect(Schema.is(TokenResponse)({ ...body, token_type: "bearer" })).toBe(false)
  })
})
