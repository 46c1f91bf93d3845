/**
 * The transport and JSON-RPC matrix of POST /mcp (docs/contract.md "Protocol decisions"),
 * against the real app in-process with fake network actors.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { startTestApp, seedAccount } from "../../support/TestApp.js"
import { describeMode } from "../../support/TestDatabase.js"

const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const res = await fetch(`${url}/mcp`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body })
    const text = await res.text()
    return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined }
  })

const rpc = (method: string, params?: unknown, id: number | string = 1) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) })

describe(`POST /mcp protocol on ${describeMode}`, () => {
  it.scoped("answers the JSON-RPC and HTTP matrix", () =>
    Effect.gen(function*() {
      const app = yield* startTestApp()
      const { token } = yield* seedAccount(app)
      const auth = { authorization: `Bearer ${token}` }

      // initialize: version negotiation, no session id
      for (const v of ["2025-03-26", "2025-06-18", "2025-11-25"]) {
        const r = yield* post(app.url, rpc("initialize", { protocolVersion: v, capabilities: {}, clientInfo: { name: "t", version: "1" } }), auth)
        expect(r.status).toBe(200)
        expect(r.json.result.protocolVersion).toBe(v)
        expect(r.json.result.capabilities).toEqual({ tools: {} })
        expect(r.json.result.serverInfo.name).toBe("belay")
        expect(r.headers.get("mcp-session-id")).toBeNull()
        expect(r.headers.get("content-type")).toContain("application/json")
      }
      const old = yield* post(app.url, rpc("initialize", { protocolVersion: "1999-01-01" }), auth)
      expect(old.json.result.protocolVersion).toBe("2025-11-25")

      // notifications → 202 with an empty body, whatever the method
      for (const method of ["notifications/initialized", "notifications/cancelled"]) {
        const r = yield* post(app.url, JSON.stringify({ jsonrpc: "2.0", method }), auth)
        expect(r.status).toBe(202)
        expect(r.text).toBe("")
      }

      // ping → an empty result (2025 lifecycle); an unknown method → -32601 with the same id, at HTTP 200
      // (a 2025-era request: the 404 of 2026-07-28 would be a transport error to a 1.x SDK client)
      const ping = yield* post(app.url, rpc("ping", undefined, 6), { ...auth, "mcp-protocol-version": "2025-11-25" })
      expect(ping.status).toBe(200)
      expect(ping.json).toEqual({ jsonrpc: "2.0", id: 6, result: {} })
      // The id's few bytes leave as text beside the kept list (HttpServer `send`): one outside ASCII is counted in
      // bytes, so the whole answer arrives and parses.
      const wide = yield* post(app.url, rpc("tools/list", {}, "списка-✓-1"), auth)
      expect(wide.status).toBe(200)
      expect(wide.json.id).toBe("списка-✓-1")
      expect(wide.json.result.tools).toHaveLength(23)
      expect(Number(wide.headers.get("content-length"))).toBe(Buffer.byteLength(wide.text))
      for (const method of ["resources/list", "server/discover", "logging/setLevel"]) {
        const r = yield* post(app.url, rpc(method, {}, 7), auth)
        expect(r.status).toBe(200)
        expect(r.json).toMatchObject({ jsonrpc: "2.0", id: 7, error: { code: -32601 } })
      }

      // invalid JSON → 400 -32700 id null; not a request → 400 -32600; batch → 400 -32600
      const bad = yield* post(app.url, "{", auth)
      expect(bad.status).toBe(400)
      expect(bad.json).toMatchObject({ id: null, error: { code: -32700 } })
      for (const body of ["42", JSON.stringify({ id: 1, method: "tools/list" }), JSON.stringify([JSON.parse(rpc("tools/list"))])]) {
        const r = yield* post(app.url, body, auth)
        expect(r.status).toBe(400)
        expect(r.json.error.code).toBe(-32600)
      }

      // tools/call without a name or with an unknown tool → -32602
      expect((yield* post(app.url, rpc("tools/call", {}), auth)).json.error.code).toBe(-32602)
      expect((yield* post(app.url, rpc("tools/call", { name: "nope", arguments: {} }), auth)).json.error.code).toBe(-32602)

      // MCP-Protocol-Version: absent or a 2025 version is the 2025 era; an unknown version is 400, -32022 with the
      // supported versions of both eras
      expect((yield* post(app.url, rpc("tools/list"), auth)).status).toBe(200)
      for (const version of ["2025-03-26", "2025-06-18", "2025-11-25"]) {
        const r = yield* post(app.url, rpc("tools/list"), { ...auth, "mcp-protocol-version": version })
        expect(r.status).toBe(200)
        expect(r.json.result.resultType).toBeUndefined()
      }
      const unsupported = yield* post(app.url, rpc("tools/list", {}, 9), { ...auth, "mcp-protocol-version": "1999-01-01" })
      expect(unsupported.status).toBe(400)
      expect(unsupported.json).toEqual({
        jsonrpc: "2.0",
        id: 9,
        error: {
          code: -32022,
          message: expect.any(String),
          data: { supported: ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"], requested: "1999-01-01" }
        }
      })
      // initialize ignores a header that is not 2026-07-28, as it always did
      const initialize = yield* post(app.url, rpc("initialize", { protocolVersion: "2025-06-18" }), { ...auth, "mcp-protocol-version": "1999-01-01" })
      expect(initialize.json.result.protocolVersion).toBe("2025-06-18")

      // Origin: foreign → 403, own → allowed
      expect((yield* post(app.url, rpc("tools/list"), { ...auth, origin: "http://evil.example" })).status).toBe(403)
      expect((yield* post(app.url, rpc("tools/list"), { ...auth, origin: app.url })).status).toBe(200)

      // 401 with the protected-resource pointer, for no token, a bad token, a query token
      for (const headers of [{}, { authorization: "Bearer nope-nope-nope-nope-nope" }, { authorization: `Basic ${token}` }]) {
        const r = yield* post(app.url, rpc("tools/list"), headers)
        expect(r.status).toBe(401)
        expect(r.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${app.url}/.well-known/oauth-protected-resource/mcp"`)
      }
      const query = yield* Effect.promise(() => fetch(`${app.url}/mcp?access_token=${token}`, { method: "POST", body: rpc("tools/list") }))
      expect(query.status).toBe(401)

      // GET and DELETE → 405 Allow: POST, even with a valid token
      for (const method of ["GET", "DELETE"]) {
        const r = yield* Effect.promise(() => fetch(`${app.url}/mcp`, { method, headers: auth }))
        expect(r.status).toBe(405)
        expect(r.headers.get("allow")).toBe("POST")
      }

      // the body limit is 1 MiB: a request of exactly 1,048,576 bytes is answered, one byte more is
      // 413 with a JSON body
      const ofBytes = (bytes: number) => {
        const head = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"pad\":\""
        const tail = "\"}}"
        return head + "x".repeat(bytes - head.length - tail.length) + tail
      }
      const atLimit = yield* post(app.url, ofBytes(1024 * 1024), auth)
      expect(atLimit.status).toBe(200)
      expect(atLimit.json.result.tools.length).toBeGreaterThan(0)
      const huge = yield* post(app.url, ofBytes(1024 * 1024 + 1), auth)
      expect(huge.status).toBe(413)
      expect(huge.json.error).toBeDefined()
    }), { timeout: 60_000 })

  it.scoped("a read token sees and may call only the seven read tools; paused accounts are read-only", () =>
    Effect.gen(function*() {
      const app = yield* startTestApp()
      const rw = yield* seedAccount(app, { scope: "read-write" })
      const read = yield* seedAccount(app, { name: "bob", scope: "read" })
      const list = (token: string) => Effect.map(post(app.url, rpc("tools/list"), { authorization: `Bearer ${token}` }), (r) => r.json.result.tools.map((t: { name: string }) => t.name))
      expect(yield* list(rw.token)).toHaveLength(23)
      expect((yield* list(read.token)).sort()).toEqual(
        ["get_nick_note", "get_topic", "list_buffers", "list_members", "list_networks", "recent_messages", "search_messages"]
      )
      const call = (token: string, name: string, args: unknown) =>
        Effect.map(post(app.url, rpc("tools/call", { name, arguments: args }), { authorization: `Bearer ${token}` }), (r) => r.json.result)
      const refused = yield* call(read.token, "send_message", { networkId: read.networkId, target: "#a", text: "hi" })
      expect(refused).toMatchObject({ isError: true, structuredContent: { ok: false, error: "insufficient-scope" } })

      const { Accounts } = yield* Effect.promise(() => import("../../../src/services/identity/Accounts.js"))
      yield* app.get(Accounts).setStatus("alice", "paused").pipe(Effect.orDie)
      expect(yield* list(rw.token)).toHaveLength(7)
      const paused = yield* call(rw.token, "set_nick_note", { networkId: rw.networkId, nick: "x", note: "y" })
      expect(paused.structuredContent).toMatchObject({ ok: false, error: "account-paused" })
      const readWhilePaused = yield* call(rw.token, "list_networks", {})
      expect(readWhilePaused.isError).toBeUndefined()

      // Revocation reaches /mcp at once, although the token's authentication was just used (and cached).
      const { ApiTokens } = yield* Effect.promise(() => import("../../../src/services/identity/ApiTokens.js"))
      expect((yield* post(app.url, rpc("tools/list"), { authorization: `Bearer ${read.token}` })).status).toBe(200)
      yield* app.get(ApiTokens).revoke("bob", "t-read").pipe(Effect.orDie)
      expect((yield* post(app.url, rpc("tools/list"), { authorization: `Bearer ${read.token}` })).status).toBe(401)
    }), { timeout: 60_000 })
})
