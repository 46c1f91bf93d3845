/**
 * The issuer rule of docs/decisions/oauth.md and the metadata documents: PUBLIC_BASE_URL wins, else Host, X-Forwarded-* only behind a
 * trusted proxy, malformed hosts refused and never reflected; RFC 8414 discovery with every
 * field; RFC 9728 metadata at both paths naming the same issuer byte for byte.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Option } from "effect"
import type { HttpRequest } from "../../../src/http/HttpServer.js"
import { issuerFor, resolveIssuer } from "../../../src/http/Issuer.js"
import { describeMode } from "../../support/TestDatabase.js"
import { fetchP, jsonOf, rawRequest, startOAuthApp } from "./OAuthHarness.js"

const request = (headers: Record<string, string>): HttpRequest => ({
  method: "GET",
  path: "/",
  params: {},
  query: new URLSearchParams(),
  headers,
  remoteAddress: "127.0.0.1",
  body: () => Effect.succeed(Buffer.alloc(0)),
  header: (name) => headers[name]
})

const settings = (trustProxy: boolean, publicBaseUrl?: string) => ({
  trustProxy,
  publicBaseUrl: publicBaseUrl === undefined ? Option.none<string>() : Option.some(publicBaseUrl)
})

describe("resolveIssuer", () => {
  it.each([
    ["Host with a port (D-06)", { host: "a.example:8443" }, false, undefined, "http://a.example:8443"],
    ["Host is lowercased", { host: "A.Example" }, false, undefined, "http://a.example"],
    ["default port dropped", { host: "a.example:80" }, false, undefined, "http://a.example"],
    ["IPv6 literal", { host: "[::1]:8080" }, false, undefined, "http://[::1]:8080"],
    ["X-Forwarded-* ignored when untrusted (D-07)", { host: "a.example", "x-forwarded-host": "evil.example", "x-forwarded-proto": "https" }, false, undefined, "http://a.example"],
    ["X-Forwarded-* used when trusted", { host: "10.0.0.2:8080", "x-forwarded-host": "belay.example", "x-forwarded-proto": "https" }, true, undefined, "https://belay.example"],
    ["first forwarded value only (D-08)", { host: "x", "x-forwarded-host": "a.example, evil.example", "x-forwarded-proto": "https, http" }, true, undefined, "https://a.example"],
    ["an unknown forwarded proto is http", { host: "a.example", "x-forwarded-proto": "gopher" }, true, undefined, "http://a.example"],
    ["PUBLIC_BASE_URL wins over every header (D-05)", { host: "evil.example", "x-forwarded-host": "evil.example" }, true, "https://b.example", "https://b.example"]
  ] as const)("%s", (_name, headers, trust, base, expected) => {
    expect(resolveIssuer(request(headers), settings(trust, base))).toStrictEqual(Either.right(expected))
  })

  it.each([
    ["userinfo", { host: "a.example@evil.example" }, false],
    ["a path", { host: "evil.example/x" }, false],
    ["a backslash", { host: "a.example\\evil.example" }, false],
    ["a space", { host: "a example" }, false],
    ["two hosts", { host: "a.example, evil.example" }, false],
    ["a port too long", { host: "a.example:123456" }, false],
    ["no Host", {}, false],
    ["a malformed forwarded host", { host: "a.example", "x-forwarded-host": "evil.example/x" }, true]
  ] as const)("refuses %s", (_name, headers, trust) => {
    expect(Either.isLeft(resolveIssuer(request(headers), settings(trust)))).toBe(true)
    expect(issuerFor(request(headers), settings(trust))).toBe("http://localhost")
  })

  it("never ends with a slash", () => {
    expect(issuerFor(request({ host: "a.example" }), settings(false)).endsWith("/")).toBe(false)
  })
})

describe(`discovery documents on ${describeMode}`, () => {
  it.scopedLive("RFC 8414 document with every field, never redirected, not stored by shared caches (D-01…D-03, D-09, D-12)", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({}, { member: false })
      const res = yield* fetchP(`${app.url}/.well-known/oauth-authorization-server`)
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type")).toBe("application/json")
      expect(res.headers.get("cache-control")).toBe("no-store")
      expect(res.headers.get("vary")).toContain("Host")
      const issuer = app.url
      expect(yield* jsonOf(res)).toStrictEqual({
        issuer,
        authorization_endpoint: `${issuer}/oauth/authorize`,
        token_endpoint: `${issuer}/api/oauth/token`,
        revocation_endpoint: `${issuer}/api/oauth/revoke`,
        registration_endpoint: `${issuer}/api/oauth/register`,
        response_types_supported: ["code"],
        grant_types_supported: ["authorization_code"],
        token_endpoint_auth_methods_supported: ["none"],
        revocation_endpoint_auth_methods_supported: ["none"],
        code_challenge_methods_supported: ["S256"],
        service_documentation: `${issuer}/docs/oauth`,
        authorization_response_iss_parameter_supported: true,
        client_id_metadata_document_supported: true
      })
      // we are not an OpenID provider
      expect((yield* fetchP(`${app.url}/.well-known/openid-configuration`)).status).toBe(404)
    }))

  it.scopedLive("protected-resource metadata at both paths names <base>/mcp and the discovery issuer byte for byte", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({}, { member: false })
      const discovery = yield* jsonOf(yield* fetchP(`${app.url}/.well-known/oauth-authorization-server`))
      for (const path of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]) {
        const res = yield* fetchP(`${app.url}${path}`)
        expect(res.status).toBe(200)
        expect(yield* jsonOf(res)).toStrictEqual({
          resource: `${app.url}/mcp`,
          authorization_servers: [discovery.issuer],
          bearer_methods_supported: ["header"]
        })
      }
      // and /mcp's challenge points at the first of them
      const challenge = yield* fetchP(`${app.url}/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
      expect(challenge.headers.get("www-authenticate")).toBe(
        `Bearer resource_metadata="${app.url}/.well-known/oauth-protected-resource/mcp"`
      )
    }))

  it.scopedLive("service_documentation is served: an HTML page naming this issuer's endpoints", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({}, { member: false })
      const discovery = yield* jsonOf(yield* fetchP(`${app.url}/.well-known/oauth-authorization-server`))
      const res = yield* fetchP(discovery.service_documentation as string)
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type")).toContain("text/html")
      expect(res.headers.get("x-frame-options")).toBe("DENY")
      const body = yield* Effect.promise(() => res.text())
      expect(body).toContain(`${discovery.issuer}/api/oauth/register`)
      expect(body).toContain("code_challenge_method=S256")
    }))

  it.scopedLive("the issuer follows Host; X-Forwarded-Host is honoured only with BELAY_TRUST_PROXY; a malformed Host is 400 and not reflected", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({}, { member: false })
      const get = (headers: Record<string, string>) =>
        Effect.map(rawRequest(app.url, { path: "/.well-known/oauth-authorization-server", headers }), (r) => ({
          ...r,
          json: r.status === 200 ? (JSON.parse(r.body) as { issuer: string; token_endpoint: string }) : undefined
        }))
      expect((yield* get({ host: "a.example:8443" })).json?.issuer).toBe("http://a.example:8443")
      expect((yield* get({ host: "a.example", "x-forwarded-host": "evil.example" })).json?.issuer).toBe("http://a.example")
      for (const host of ["a.example@evil.example", "evil.example/x"]) {
        const bad = yield* get({ host })
        expect(bad.status).toBe(400)
        expect(bad.body).not.toContain("evil")
      }

      const trusted = yield* startOAuthApp({ BELAY_TRUST_PROXY: "true" }, { member: false })
      const proxied = yield* Effect.map(
        rawRequest(trusted.url, {
          path: "/.well-known/oauth-authorization-server",
          headers: { host: "10.0.0.2:8080", "x-forwarded-host": "belay.example", "x-forwarded-proto": "https" }
        }),
        (r) => JSON.parse(r.body) as { issuer: string }
      )
      expect(proxied.issuer).toBe("https://belay.example")
    }))

  it.scopedLive("PUBLIC_BASE_URL (trailing slash normalised) wins over Host and X-Forwarded-Host, and may be cached (D-04, D-05)", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({ PUBLIC_BASE_URL: "https://b.example/", BELAY_TRUST_PROXY: "true" }, { member: false })
      const res = yield* rawRequest(app.url, {
        path: "/.well-known/oauth-authorization-server",
        headers: { host: "evil.example", "x-forwarded-host": "evil.example" }
      })
      const doc = JSON.parse(res.body) as { issuer: string; token_endpoint: string }
      expect(doc.issuer).toBe("https://b.example")
      expect(doc.token_endpoint).toBe("https://b.example/api/oauth/token")
      expect(res.headers["cache-control"]).toBe("public, max-age=300")
      const prm = yield* rawRequest(app.url, { path: "/.well-known/oauth-protected-resource", headers: { host: "evil.example" } })
      expect(JSON.parse(prm.body)).toMatchObject({ resource: "https://b.example/mcp", authorization_servers: ["https://b.example"] })
    }))
})
