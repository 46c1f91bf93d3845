/**
 * Client ID Metadata Documents end to end (docs/decisions/oauth.md "Client ID Metadata Documents: …"): the app in
 * process under BELAY_PRIVATE_DESTINATIONS=deny with BELAY_DESTINATION_EXCEPTIONS opening only the local https
 * server that publishes the documents (its own CA, trusted through EgressTrust). Discovery advertises the documents;
 * an https client_id is fetched through the destination guard only for a signed-in member, once per its cache
 * lifetime; its client_id, redirect_uris and form are checked, refusals are pages naming invalid_client or
 * invalid_request; the approval page names the document's host and warns when every redirect stays on this
 * computer; the code, the token, Settings › Authorized apps and Revoke work as for a registered app. Then each MCP
 * client's documented redirect shape, through registration and through a document (README "Connect an MCP client").
 */
import { auth, type OAuthClientProvider, type OAuthDiscoveryState } from "@modelcontextprotocol/client"
import * as Crypto from "node:crypto"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { EgressTrust } from "../../../src/services/egress/GuardedFetch.js"
import { describeMode } from "../../support/TestDatabase.js"
import { getPage, postSettings } from "../auth/MemberHarness.js"
import { DOCUMENT_CA, type DocumentServer, startDocumentServer } from "./DocumentServer.js"
import {
  authorizeUrl,
  CookieJar,
  decide,
  fetchP,
  field,
  jsonOf,
  mcpStatus,
  newAuthorization,
  type OAuthApp,
  pkcePair,
  postJson,
  randomIp,
  signIn,
  startOAuthApp,
  textOf,
  tokenRequest
} from "./OAuthHarness.js"

interface Fixture {
  readonly app: OAuthApp
  readonly jar: CookieJar
  readonly documents: DocumentServer
}
class DocumentFixture extends Context.Tag("test/DocumentFixture")<DocumentFixture, Fixture>() {}

const fixture = Layer.scoped(
  DocumentFixture,
  Effect.gen(function*() {
    const documents = yield* startDocumentServer
    const app = yield* startOAuthApp({
      BELAY_TRUST_PROXY: "true",
      BELAY_PRIVATE_DESTINATIONS: "deny",
      BELAY_DESTINATION_EXCEPTIONS: `127.0.0.1:${documents.port}`
    }).pipe(Effect.provideService(EgressTrust, { ca: [DOCUMENT_CA] }))
    const jar = new CookieJar()
    const signed = yield* signIn(app.url, (yield* newAuthorization(app.url)).authorize, jar)
    if (signed.status !== 303) return yield* Effect.dieMessage(`fixture sign-in failed: ${signed.status}`)
    return { app, jar, documents }
  })
)

let serial = 0
/** Publishes a document for `redirectUris` at a fresh path; `override` replaces or removes its fields. */
const publish = (
  documents: DocumentServer,
  redirectUris: ReadonlyArray<string>,
  override: Record<string, unknown> = {},
  options: { readonly headers?: Record<string, string>; readonly status?: number } = {}
) => {
  const path = `/clients/${++serial}/client.json`
  const url = `${documents.origin}${path}`
  documents.serve(path, { client_id: url, client_name: "Test Client", redirect_uris: redirectUris, ...override }, options)
  return { url, path }
}

const authorizeFor = (app: OAuthApp, clientId: string, redirectUri: string, extra: Record<string, string> = {}) => {
  const { verifier, challenge } = pkcePair()
  return { verifier, url: authorizeUrl(app.url, { client_id: clientId, redirect_uri: redirectUri, code_challenge: challenge, state: "st", ...extra }) }
}

/** GETs the page signed in; returns status and HTML. */
const pageOf = (url: string, jar: CookieJar) =>
  Effect.gen(function*() {
    const res = jar.take(yield* fetchP(url, { headers: jar.header() }))
    return { status: res.status, location: res.headers.get("location"), html: yield* textOf(res) }
  })

/** Approves on the approval page `html`; returns the Location. */
const approve = (app: OAuthApp, jar: CookieJar, html: string) =>
  Effect.gen(function*() {
    const res = yield* decide(app.url, jar, { consent: field(html, "consent")!, csrf_token: field(html, "csrf_token")!, decision: "approve" })
    expect(res.status).toBe(303)
    return res.headers.get("location")!
  })

/** The whole flow through a document: approval page, code, token. Returns the page, the callback and the token. */
const flowThroughDocument = (f: Fixture, clientId: string, redirectUri: string) =>
  Effect.gen(function*() {
    const { url, verifier } = authorizeFor(f.app, clientId, redirectUri, { resource: `${f.app.url}/mcp` })
    const page = yield* pageOf(url, f.jar)
    expect(page.status).toBe(200)
    const location = yield* approve(f.app, f.jar, page.html)
    const callback = new URL(location)
    const token = yield* tokenRequest(f.app.url, {
      grant_type: "authorization_code",
      client_id: clientId,
      code: callback.searchParams.get("code")!,
      redirect_uri: redirectUri,
      code_verifier: verifier,
      resource: `${f.app.url}/mcp`
    })
    expect(token.status).toBe(200)
    return { page: page.html, location, accessToken: (yield* jsonOf(token)).access_token as string }
  })

/** The error page of a refused authorization: status, no Location, the OAuth error named. */
const expectRefused = (url: string, jar: CookieJar, error: string) =>
  Effect.gen(function*() {
    const page = yield* pageOf(url, jar)
    expect(page.status).toBe(400)
    expect(page.location).toBeNull()
    expect(page.html).toContain(`<code>${error}</code>`)
    return page.html
  })

const CURSOR = "cursor://anysphere.cursor-mcp/oauth/callback"

type ProviderParts = Parameters<OAuthClientProvider["saveClientInformation"] & {}>[0]
type TokenParts = Parameters<OAuthClientProvider["saveTokens"]>[0]

/** An in-memory OAuthClientProvider of @modelcontextprotocol/client 2.4.0 that names its metadata document. */
class DocumentProvider implements OAuthClientProvider {
  client: ProviderParts | undefined
  saved: TokenParts | undefined
  verifier = ""
  discovery: OAuthDiscoveryState | undefined
  authorizationUrl: URL | undefined
  constructor(readonly clientMetadataUrl: string, readonly redirect: string) {}
  get redirectUrl() {
    return this.redirect
  }
  get clientMetadata() {
    return { client_name: "SDK 2.4.0 client", redirect_uris: [this.redirect], token_endpoint_auth_method: "none" }
  }
  state() {
    return "sdk2-state"
  }
  clientInformation() {
    return this.client
  }
  saveClientInformation(info: ProviderParts) {
    this.client = info
  }
  tokens() {
    return this.saved
  }
  saveTokens(tokens: TokenParts) {
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
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state
  }
  discoveryState() {
    return this.discovery
  }
}

layer(fixture, { excludeTestServices: true, timeout: "120 seconds" })(`client metadata documents on ${describeMode}`, (it) => {
  it.effect("discovery advertises documents beside token auth method none", () =>
    Effect.gen(function*() {
      const { app } = yield* DocumentFixture
      const doc = yield* jsonOf(yield* fetchP(`${app.url}/.well-known/oauth-authorization-server`))
      expect(doc.client_id_metadata_document_supported).toBe(true)
      expect(doc.token_endpoint_auth_methods_supported).toContain("none")
    }))

  it.effect("Claude's shape: approval by host, token, /mcp, Settings › Authorized apps by host, Revoke", () =>
    Effect.gen(function*() {
      const f = yield* DocumentFixture
      const { url: clientId } = publish(f.documents, ["https://claude.ai/api/mcp/auth_callback"], {
        client_name: "Claude",
        client_uri: "https://claude.ai",
        logo_uri: "https://claude.ai/logo.png"
      })
      const flow = yield* flowThroughDocument(f, clientId, "https://claude.ai/api/mcp/auth_callback")
      expect(flow.page).toContain(`<strong>127.0.0.1:${f.documents.port}</strong>`)
      expect(flow.page).toContain("this is what identifies the app")
      expect(flow.page).toContain("Claude <span class=\"muted\">(from its metadata document, not verified)</span>")
      // The logo through Belay's image proxy, never from claude.ai by the browser (docs/decisions/previews.md).
      expect(flow.page).toMatch(/<img src="\/api\/previews\/image\?url=https%3A%2F%2Fclaude\.ai%2Flogo\.png&amp;sig=[\w-]{43}" alt="The app's logo" width="48" height="48"> from claude\.ai <span class="muted">\(not verified\)<\/span>/)
      expect(flow.page).not.toContain("is on this computer")
      expect(flow.location.startsWith("https://claude.ai/api/mcp/auth_callback?code=")).toBe(true)
      expect(new URL(flow.location).searchParams.get("iss")).toBe(f.app.url)
      expect(yield* mcpStatus(f.app.url, flow.accessToken)).toBe(200)

      const settings = yield* getPage(f.app.url, f.jar, "/settings/authorized-apps")
      const action = `/settings/authorized-apps/${encodeURIComponent(clientId)}/revoke`
      expect(settings.html).toContain(`action="${action}"`)
      const row = settings.html.split("<tr>").find((r) => r.includes(action))!
      expect(row).toContain(`<th scope="row">127.0.0.1:${f.documents.port} <span class="muted">(Claude, name not verified)</span></th>`)
      const revoked = yield* postSettings(f.app.url, f.jar, action, {}, { csrfFrom: "/settings/authorized-apps" })
      expect(revoked.location).toBe("/settings/authorized-apps?done=app-revoked")
      expect(yield* mcpStatus(f.app.url, flow.accessToken)).toBe(401)
    }))

  it.effect("VS Code's shape: a loopback redirect on any port, vscode.dev; a document of loopback redirects only warns", () =>
    Effect.gen(function*() {
      const f = yield* DocumentFixture
      const { url: vscode } = publish(f.documents, ["http://127.0.0.1:33418", "https://vscode.dev/redirect"], { client_name: "Visual Studio Code" })
      for (const redirect of ["http://127.0.0.1:33418", "http://127.0.0.1:51234", "https://vscode.dev/redirect"]) {
        const flow = yield* flowThroughDocument(f, vscode, redirect)
        expect(flow.location.startsWith(`${redirect}?code=`) || flow.location.startsWith(`${redirect}/?code=`)).toBe(true)
        expect(flow.page).not.toContain("is on this computer")
      }
      const { url: local } = publish(f.documents, ["http://127.0.0.1/callback", "com.example.app:/cb"], { client_name: "Local" })
      const page = yield* pageOf(authorizeFor(f.app, local, "http://127.0.0.1:40000/callback").url, f.jar)
      expect(page.status).toBe(200)
      expect(page.html).toContain(`Every address this app may send the approval to is on this computer, so any program on this computer could be asking in the name of 127.0.0.1:${f.documents.port}.`)
    }))

  it.effect("Cursor's custom scheme has no dot: refused in a document (invalid_client) as at registration (invalid_redirect_uri)", () =>
    Effect.gen(function*() {
      const f = yield* DocumentFixture
      const { url } = publish(f.documents, [CURSOR], { client_name: "Cursor" })
      const html = yield* expectRefused(authorizeFor(f.app, url, CURSOR).url, f.jar, "invalid_client")
      expect(html).toContain("custom scheme that is not reverse-DNS")
      const registered = yield* postJson(`${f.app.url}/api/oauth/register`, { client_name: "Cursor", redirect_uris: [CURSOR] }, { "x-forwarded-for": randomIp() })
      expect(registered.status).toBe(400)
      expect((yield* jsonOf(registered)).error).toBe("invalid_redirect_uri")
    }))

  it.effect("refusals: client_id other than the URL, no client_name, a secret, 404, a redirect, too large, not JSON → invalid_client; an unlisted redirect_uri → invalid_request", () =>
    Effect.gen(function*() {
      const f = yield* DocumentFixture
      const redirect = "http://127.0.0.1/cb"
      const cases: ReadonlyArray<readonly [string, ReturnType<typeof publish>]> = [
        ["another client_id", publish(f.documents, [redirect], { client_id: `${f.documents.origin}/elsewhere.json` })],
        ["client_id with a trailing slash", publish(f.documents, [redirect], { client_id: `${f.documents.origin}/x/` })],
        ["no client_name", publish(f.documents, [redirect], { client_name: undefined })],
        ["a client secret", publish(f.documents, [redirect], { client_secret: "s" })],
        ["client_secret_basic", publish(f.documents, [redirect], { token_endpoint_auth_method: "client_secret_basic" })],
        ["HTTP 404", publish(f.documents, [redirect], {}, { status: 404 })],
        ["a redirect", publish(f.documents, [redirect], {}, { status: 302, headers: { location: "/elsewhere.json" } })],
        ["text/html", publish(f.documents, [redirect], {}, { headers: { "content-type": "text/html" } })],
        ["over 5 KiB", publish(f.documents, [redirect], { padding: "x".repeat(6000) })]
      ]
      for (const [name, { url, path }] of cases) {
        const html = yield* expectRefused(authorizeFor(f.app, url, redirect).url, f.jar, "invalid_client")
        expect(html, name).toContain(`The metadata document of this app (at 127.0.0.1:${f.documents.port}) cannot be used`)
        expect(f.documents.hits(path), name).toBe(1)
      }
      expect(f.documents.hits("/elsewhere.json")).toBe(0)

      const { url } = publish(f.documents, [redirect])
      yield* expectRefused(authorizeFor(f.app, url, "http://127.0.0.1/other").url, f.jar, "invalid_request")
      yield* expectRefused(authorizeFor(f.app, url, "https://evil.example/cb").url, f.jar, "invalid_request")
      yield* expectRefused(authorizeFor(f.app, url, redirect, { resource: "https://other-mcp.example/mcp" }).url, f.jar, "invalid_target")
    }))

  it.effect("the URL's own form: no path, a fragment, a dot segment, userinfo, not canonical → invalid_client without a fetch", () =>
    Effect.gen(function*() {
      const f = yield* DocumentFixture
      const o = f.documents.origin
      for (const clientId of [`${o}/`, `${o}`, `${o}/c.json#x`, `${o}/a/../c.json`, `https://u@127.0.0.1:${f.documents.port}/c.json`, `https://LOCALHOST:${f.documents.port}/c.json`]) {
        yield* expectRefused(authorizeFor(f.app, clientId, "http://127.0.0.1/cb").url, f.jar, "invalid_client")
      }
    }))

  it.scoped("the guard decides: a valid document on a loopback port the exceptions do not open is never fetched", () =>
    Effect.gen(function*() {
      const f = yield* DocumentFixture
      const other = yield* startDocumentServer
      const path = "/client.json"
      const url = other.serve(path, { client_id: `${other.origin}${path}`, client_name: "Inside", redirect_uris: ["http://127.0.0.1/cb"] })
      const html = yield* expectRefused(authorizeFor(f.app, url, "http://127.0.0.1/cb").url, f.jar, "invalid_client")
      expect(html).toContain("could not be fetched")
      expect(other.hits(path)).toBe(0)
    }))

  it.effect("signed out: the sign-in page names the host and nothing is fetched; afterwards one fetch serves every page of its lifetime", () =>
    Effect.gen(function*() {
      const f = yield* DocumentFixture
      const { url, path } = publish(f.documents, ["http://127.0.0.1/cb"], {}, { headers: { "cache-control": "max-age=0" } })
      const anonymous = yield* pageOf(authorizeFor(f.app, url, "http://127.0.0.1/cb").url, new CookieJar())
      expect(anonymous.status).toBe(200)
      expect(anonymous.html).toContain(`<strong>127.0.0.1:${f.documents.port}</strong>`)
      expect(f.documents.hits(path)).toBe(0)
      for (let i = 0; i < 3; i++) expect((yield* pageOf(authorizeFor(f.app, url, "http://127.0.0.1/cb").url, f.jar)).status).toBe(200)
      // max-age=0 is held at the one-minute floor
      expect(f.documents.hits(path)).toBe(1)
      // a failure is remembered for a while too: a reloading page does not hammer the host
      const missing = `${f.documents.origin}/clients/missing.json`
      for (let i = 0; i < 2; i++) yield* expectRefused(authorizeFor(f.app, missing, "http://127.0.0.1/cb").url, f.jar, "invalid_client")
      expect(f.documents.hits("/clients/missing.json")).toBe(1)
    }))

  it.effect("the SDK 2.4.0 client's own flow with clientMetadataUrl: discovery, the document as client_id, approval, token for /mcp", () =>
    Effect.gen(function*() {
      const f = yield* DocumentFixture
      const redirect = "http://127.0.0.1:43211/callback"
      const { url: documentUrl, path } = publish(f.documents, [redirect], { client_name: "SDK 2.4.0 client" })
      const serverUrl = `${f.app.url}/mcp`
      const requested: Array<string> = []
      const fetchFn = (input: string | URL | Request, init?: RequestInit) => {
        requested.push(input instanceof Request ? input.url : String(input))
        return fetch(input, init)
      }
      const provider = new DocumentProvider(documentUrl, redirect)
      expect(yield* Effect.promise(() => auth(provider, { serverUrl, fetchFn }))).toBe("REDIRECT")
      // No registration: the document's URL is the client_id.
      expect(requested).not.toContain(`${f.app.url}/api/oauth/register`)
      expect(provider.client?.client_id).toBe(documentUrl)
      const authorizationUrl = provider.authorizationUrl!
      expect(authorizationUrl.searchParams.get("client_id")).toBe(documentUrl)
      expect(authorizationUrl.searchParams.get("resource")).toBe(serverUrl)

      const page = yield* pageOf(authorizationUrl.href, f.jar)
      expect(page.status).toBe(200)
      const callback = new URL(yield* approve(f.app, f.jar, page.html))
      expect(callback.origin + callback.pathname).toBe(redirect)
      expect(callback.searchParams.get("state")).toBe("sdk2-state")
      const result = yield* Effect.promise(() =>
        auth(provider, {
          serverUrl,
          authorizationCode: callback.searchParams.get("code")!,
          iss: callback.searchParams.get("iss")!,
          fetchFn
        })
      )
      expect(result).toBe("AUTHORIZED")
      const accessToken = provider.saved!.access_token
      expect(yield* mcpStatus(f.app.url, accessToken)).toBe(200)
      expect(f.documents.hits(path)).toBe(1)
      const hash = Crypto.createHash("sha256").update(accessToken).digest()
      const rows = yield* f.app.sql<{ clientId: string; resource: string | null }>`
        SELECT client_id AS "clientId", resource FROM oauth_tokens WHERE token_hash = ${hash}`
      expect(rows).toEqual([{ clientId: documentUrl, resource: serverUrl }])
    }))

  it.effect("each client's redirect shape through registration: Claude, ChatGPT, VS Code, the Inspector and the SDKs reach the code", () =>
    Effect.gen(function*() {
      const f = yield* DocumentFixture
      for (const [name, redirect, presented] of [
        ["Claude", "https://claude.ai/api/mcp/auth_callback", "https://claude.ai/api/mcp/auth_callback"],
        ["ChatGPT", "https://chatgpt.com/connector_platform_oauth_redirect", "https://chatgpt.com/connector_platform_oauth_redirect"],
        ["VS Code", "https://vscode.dev/redirect", "https://vscode.dev/redirect"],
        ["VS Code (loopback)", "http://127.0.0.1:33418", "http://127.0.0.1:33418"],
        ["MCP Inspector", "http://localhost:6274/oauth/callback", "http://localhost:6274/oauth/callback"],
        ["an SDK on a random port", "http://127.0.0.1/callback", "http://127.0.0.1:49152/callback"]
      ] as const) {
        const registered = yield* postJson(`${f.app.url}/api/oauth/register`, { client_name: name, redirect_uris: [redirect] }, { "x-forwarded-for": randomIp() })
        expect(registered.status, name).toBe(201)
        const clientId = (yield* jsonOf(registered)).client_id as string
        const { url } = authorizeFor(f.app, clientId, presented)
        const page = yield* pageOf(url, f.jar)
        expect(page.status, name).toBe(200)
        const location = yield* approve(f.app, f.jar, page.html)
        expect(new URL(location).searchParams.get("code"), name).toEqual(expect.any(String))
        expect(location.startsWith(presented), name).toBe(true)
      }
    }))
})
