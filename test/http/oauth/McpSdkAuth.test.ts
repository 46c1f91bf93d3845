/**
 * The MCP TypeScript SDK's own client authorization (@modelcontextprotocol/sdk 1.32.2,
 * `auth()` from client/auth.js) against the real server: the 401 from /mcp names the
 * protected-resource metadata, the SDK discovers the authorization server through it
 * (RFC 9728, then RFC 8414), registers (RFC 7591), sends the member to the approval
 * page, exchanges the code, and the same SDK's Streamable HTTP client then lists the
 * tools with the token.
 */
import { describe, expect, it } from "@effect/vitest"
import { auth, type OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js"
import { Effect } from "effect"
import { describeMode } from "../../support/TestDatabase.js"
import { approveOverHttp, CookieJar, fetchP, startOAuthApp } from "./OAuthHarness.js"

/** An in-memory OAuthClientProvider, as a native app would keep it. */
class MemoryProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined
  saved: OAuthTokens | undefined
  verifier = ""
  authorizationUrl: URL | undefined
  constructor(readonly redirect: string) {}
  get redirectUrl() {
    return this.redirect
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "MCP SDK test client",
      redirect_uris: [this.redirect],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none"
    }
  }
  state() {
    return "sdk-state-1"
  }
  clientInformation() {
    return this.client
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info
  }
  tokens() {
    return this.saved
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier
  }
  codeVerifier() {
    return this.verifier
  }
}

describe(`MCP SDK client authorization on ${describeMode}`, () => {
  it.scopedLive("401 → resource metadata → discovery → registration → approval → token → tools/list", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const serverUrl = `${app.url}/mcp`

      // What the SDK is told by the resource server when it has no token.
      const challenge = yield* fetchP(serverUrl, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} })
      })
      expect(challenge.status).toBe(401)
      const resourceMetadata = /resource_metadata="([^"]+)"/.exec(challenge.headers.get("www-authenticate") ?? "")?.[1]
      expect(resourceMetadata).toBe(`${app.url}/.well-known/oauth-protected-resource/mcp`)

      const requested: Array<string> = []
      const fetchFn = (input: string | URL, init?: RequestInit) => {
        requested.push(String(input))
        return fetch(input, init)
      }
      const provider = new MemoryProvider("http://127.0.0.1:43210/callback")

      const first = yield* Effect.promise(() =>
        auth(provider, { serverUrl, resourceMetadataUrl: new URL(resourceMetadata!), fetchFn })
      )
      expect(first).toBe("REDIRECT")
      // Discovery went through the protected-resource metadata, then RFC 8414.
      expect(requested[0]).toBe(resourceMetadata)
      expect(requested).toContain(`${app.url}/.well-known/oauth-authorization-server`)
      expect(requested).toContain(`${app.url}/api/oauth/register`)
      expect(provider.client?.client_id).toEqual(expect.any(String))

      const authorizationUrl = provider.authorizationUrl!
      expect(authorizationUrl.origin + authorizationUrl.pathname).toBe(`${app.url}/oauth/authorize`)
      // The SDK names the resource once PRM exists; the server ignores it (docs/decisions/oauth.md).
      expect(authorizationUrl.searchParams.get("resource")).toBe(serverUrl)

      const decision = yield* approveOverHttp(app.url, authorizationUrl.href, new CookieJar())
      expect(decision.status).toBe(303)
      const callback = new URL(decision.headers.get("location")!)
      expect(callback.origin + callback.pathname).toBe("http://127.0.0.1:43210/callback")
      expect(callback.searchParams.get("state")).toBe("sdk-state-1")
      expect(callback.searchParams.get("iss")).toBe(app.url)

      const second = yield* Effect.promise(() =>
        auth(provider, { serverUrl, authorizationCode: callback.searchParams.get("code")!, fetchFn })
      )
      expect(second).toBe("AUTHORIZED")
      expect(provider.saved).toMatchObject({ token_type: "Bearer" })
      expect(provider.saved?.refresh_token).toBeUndefined()

      const client = new Client({ name: "belay-oauth-test", version: "1.0.0" })
      const transport = new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: provider })
      yield* Effect.acquireRelease(
        Effect.promise(() => client.connect(transport)),
        () => Effect.promise(() => client.close())
      )
      const tools = yield* Effect.promise(() => client.listTools())
      expect(tools.tools.map((t) => t.name)).toContain("list_networks")
      expect(tools.tools).toHaveLength(23)
    }))
})
