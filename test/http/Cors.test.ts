/**
 * CORS on /mcp and /api/* (docs/decisions/web.md) against the whole
 * app, from an origin listed in BELAY_CORS_ORIGINS and from a foreign one: preflights,
 * the echoed origin with `Vary: Origin`, never `Access-Control-Allow-Credentials`, and 403
 * for every state-changing request of a foreign origin, sign-in included.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { describeMode } from "../support/TestDatabase.js"
import { fetchP, fixtureLayer, jsonOf, OAuthFixture, PASSWORD, postJson } from "./oauth/OAuthHarness.js"
import { apiToken, bearer, passwordToken } from "./auth/MemberHarness.js"

const ALLOWED = "https://client.example"
const FOREIGN = "https://evil.example"

const preflight = (url: string, path: string, origin: string, method = "POST") =>
  fetchP(`${url}${path}`, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": method, "access-control-request-headers": "authorization, content-type" }
  })

const toolsList = { jsonrpc: "2.0", id: 1, method: "tools/list" }
const mcpHeaders = { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18" }

layer(fixtureLayer({ BELAY_CORS_ORIGINS: ALLOWED }), { excludeTestServices: true, timeout: "120 seconds" })(`CORS on ${describeMode}`, (it) => {
  it.effect("preflight from an allowed origin: 204 with the origin, the route's methods and the allowed headers", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      // /api/uploads: a web IRC client on another origin uploading through soju.im/FILEHOST.
      for (
        const [path, methods] of [["/mcp", "POST"], ["/api/auth/login/token", "POST"], ["/api/auth/me", "GET"], ["/api/uploads", "POST"]] as const
      ) {
        const res = yield* preflight(url, path, ALLOWED, methods)
        expect(res.status).toBe(204)
        expect(res.headers.get("access-control-allow-origin")).toBe(ALLOWED)
        expect(res.headers.get("access-control-allow-methods")).toBe(methods)
        expect(res.headers.get("access-control-allow-headers")).toBe(
          "authorization, content-type, mcp-protocol-version, mcp-method, mcp-name, content-disposition"
        )
        expect(res.headers.get("vary")).toBe("Origin")
        expect(res.headers.get("access-control-allow-credentials")).toBeNull()
      }
    }))

  it.effect("preflight from a foreign origin: no CORS headers, so the browser refuses", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      for (const path of ["/mcp", "/api/auth/login/token", "/api/oauth/token"]) {
        const res = yield* preflight(url, path, FOREIGN)
        expect(res.status).toBe(204)
        expect(res.headers.get("access-control-allow-origin")).toBeNull()
        expect(res.headers.get("access-control-allow-methods")).toBeNull()
      }
    }))

  it.effect("an allowed origin's requests carry Access-Control-Allow-Origin and Vary: Origin, never Allow-Credentials", () =>
    Effect.gen(function*() {
      const fixture = yield* OAuthFixture
      const url = fixture.url
      const token = yield* passwordToken(url)
      const mcp = yield* postJson(`${url}/mcp`, toolsList, { ...mcpHeaders, ...bearer(token), origin: ALLOWED })
      expect(mcp.status).toBe(200)
      const me = yield* fetchP(`${url}/api/auth/me`, { headers: { ...bearer(token), origin: ALLOWED } })
      expect(me.status).toBe(200)
      const login = yield* postJson(`${url}/api/auth/login/token`, { username: "alice", password: PASSWORD }, { origin: ALLOWED })
      expect(login.status).toBe(200)
      // A 401 too, with its challenge readable by the page.
      const unauthorized = yield* postJson(`${url}/mcp`, toolsList, { ...mcpHeaders, origin: ALLOWED })
      expect(unauthorized.status).toBe(401)
      for (const res of [mcp, me, login, unauthorized]) {
        expect(res.headers.get("access-control-allow-origin")).toBe(ALLOWED)
        expect(res.headers.get("vary")).toBe("Origin")
        expect(res.headers.get("access-control-allow-credentials")).toBeNull()
      }
      expect(unauthorized.headers.get("access-control-expose-headers")).toContain("www-authenticate")
      // An upload's answer names the file in Location, which the page may read.
      const upload = yield* fetchP(`${url}/api/uploads`, {
        method: "POST",
        headers: { ...bearer(token), origin: ALLOWED, "content-type": "text/plain", "content-disposition": "attachment; filename=\"note.txt\"" },
        body: "hello"
      })
      expect(upload.status).toBe(201)
      expect(upload.headers.get("access-control-allow-origin")).toBe(ALLOWED)
      expect(upload.headers.get("access-control-expose-headers")?.split(", ")).toContain("location")
      expect(upload.headers.get("location")).toMatch(/^http/)
    }))

  it.effect("a foreign origin: its POSTs are 403 (sign-in and logout included) even with a valid token; a GET gets no CORS headers", () =>
    Effect.gen(function*() {
      const fixture = yield* OAuthFixture
      const url = fixture.url
      const api = yield* apiToken(fixture, "cors-probe")
      const mcp = yield* postJson(`${url}/mcp`, toolsList, { ...mcpHeaders, ...bearer(api), origin: FOREIGN })
      expect(mcp.status).toBe(403)
      expect((yield* jsonOf(mcp)).error).toMatchObject({ code: -32600 })
      const login = yield* postJson(`${url}/api/auth/login/token`, { username: "alice", password: PASSWORD }, { origin: FOREIGN })
      expect(login.status).toBe(403)
      expect((yield* jsonOf(login)).error).toBe("invalid_request")
      const logout = yield* fetchP(`${url}/api/auth/logout`, { method: "POST", headers: { origin: FOREIGN } })
      expect(logout.status).toBe(403)
      const me = yield* fetchP(`${url}/api/auth/me`, { headers: { origin: FOREIGN } })
      expect(me.status).toBe(401)
      for (const res of [mcp, login, logout, me]) {
        expect(res.headers.get("access-control-allow-origin")).toBeNull()
        expect(res.headers.get("access-control-allow-credentials")).toBeNull()
      }
    }))

  it.effect("same origin needs no CORS: no Access-Control headers, and POST is allowed", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const login = yield* postJson(`${url}/api/auth/login/token`, { username: "alice", password: PASSWORD }, { origin: url })
      expect(login.status).toBe(200)
      expect(login.headers.get("access-control-allow-origin")).toBeNull()
    }))

  it.effect("GET and DELETE /mcp stay 405 with Allow: POST; OPTIONS is the preflight, not listed", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      for (const method of ["GET", "DELETE"]) {
        const res = yield* fetchP(`${url}/mcp`, { method })
        expect(res.status).toBe(405)
        expect(res.headers.get("allow")).toBe("POST")
      }
    }))
})
