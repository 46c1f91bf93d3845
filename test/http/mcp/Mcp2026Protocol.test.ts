/**
 * POST /mcp for requests of MCP revision 2026-07-28 (docs/contract.md "MCP 2026-07-28"): server/discover, tools/list
 * and tools/call with their 2026 result members, the required headers and `_meta` and the revision's errors, and the
 * 404 of every method Belay does not serve that way — against the real app in-process with fake network actors.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { seedAccount, startTestApp } from "../../support/TestApp.js"
import { describeMode } from "../../support/TestDatabase.js"

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "test", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {}
}

interface Call {
  readonly id?: number | string
  readonly params?: Record<string, unknown>
  readonly headers?: Record<string, string | undefined>
}

/** A 2026-07-28 request as a conforming client sends it; `headers` overrides (undefined drops one). */
const post = (url: string, token: string, method: string, call: Call = {}) =>
  Effect.promise(async () => {
    const params: Record<string, unknown> = { _meta: META, ...call.params }
    const name = typeof params["name"] === "string" ? { "mcp-name": params["name"] } : {}
    const merged: Record<string, string | undefined> = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${token}`,
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": method,
      ...name,
      ...call.headers
    }
    const headers = Object.fromEntries(Object.entries(merged).filter((e): e is [string, string] => e[1] !== undefined))
    const res = await fetch(`${url}/mcp`, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id: call.id ?? 1, method, params })
    })
    const text = await res.text()
    return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined }
  })

const SERVER_INFO = { "io.modelcontextprotocol/serverInfo": { name: "belay", version: expect.any(String) } }

describe(`POST /mcp, revision 2026-07-28, on ${describeMode}`, () => {
  it.scoped("serves discover, tools/list and tools/call with the revision's result members", () =>
    Effect.gen(function*() {
      const app = yield* startTestApp()
      const { token, networkId } = yield* seedAccount(app)
      const read = yield* seedAccount(app, { name: "bob", scope: "read" })

      const discover = yield* post(app.url, token, "server/discover", { id: 11 })
      expect(discover.status).toBe(200)
      expect(discover.headers.get("content-type")).toContain("application/json")
      expect(discover.headers.get("mcp-session-id")).toBeNull()
      expect(discover.json).toEqual({
        jsonrpc: "2.0",
        id: 11,
        result: {
          resultType: "complete",
          supportedVersions: ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"],
          capabilities: { tools: {} },
          instructions: expect.stringContaining("IRC bouncer"),
          ttlMs: 3_600_000,
          cacheScope: "public",
          _meta: SERVER_INFO
        }
      })
      // clientInfo is a SHOULD: a request without it is served
      const { "io.modelcontextprotocol/clientInfo": _, ...withoutInfo } = META
      expect((yield* post(app.url, token, "server/discover", { params: { _meta: withoutInfo } })).status).toBe(200)

      const list = yield* post(app.url, token, "tools/list", { id: "l" })
      expect(list.status).toBe(200)
      expect(list.json.id).toBe("l")
      expect(list.json.result).toMatchObject({ resultType: "complete", ttlMs: 60_000, cacheScope: "private", _meta: SERVER_INFO })
      expect(list.json.result.tools).toHaveLength(23)
      // the same entries, in the same order, as the 2025 era's list
      const legacy = yield* Effect.promise(() =>
        fetch(`${app.url}/mcp`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" })
        }).then((r) => r.json() as Promise<{ result: { tools: unknown } }>)
      )
      expect(list.json.result.tools).toEqual(legacy.result.tools)
      expect((yield* post(app.url, read.token, "tools/list")).json.result.tools).toHaveLength(7)
      expect((yield* post(app.url, token, "tools/list", { params: { cursor: "x" } })).json.error.code).toBe(-32602)

      const networks = yield* post(app.url, token, "tools/call", { id: 3, params: { name: "list_networks", arguments: {} } })
      expect(networks.status).toBe(200)
      expect(networks.json.result).toMatchObject({
        resultType: "complete",
        _meta: SERVER_INFO,
        structuredContent: { networks: [{ id: networkId, state: "offline" }] }
      })
      expect(JSON.parse(networks.json.result.content[0].text)).toEqual(networks.json.result.structuredContent)
      const offline = yield* post(app.url, token, "tools/call", { params: { name: "send_message", arguments: { networkId, target: "#belay", text: "hi" } } })
      expect(offline.json.result).toMatchObject({
        resultType: "complete",
        isError: true,
        structuredContent: { ok: false, error: "not-connected" }
      })
      app.fake.network(networkId).status = { state: "connected", nick: "alice" }
      const sent = yield* post(app.url, token, "tools/call", { params: { name: "send_message", arguments: { networkId, target: "#belay", text: "hi" } } })
      expect(sent.json.result).toMatchObject({ resultType: "complete", structuredContent: { ok: true } })
      expect(sent.json.result.isError).toBeUndefined()
      // the scope rule is the 2025 era's
      const refused = yield* post(app.url, read.token, "tools/call", { params: { name: "send_message", arguments: { networkId, target: "#belay", text: "hi" } } })
      expect(refused.json.result.structuredContent).toMatchObject({ ok: false, error: "insufficient-scope" })
      // an unknown tool is a protocol error, as in 2025
      const unknown = yield* post(app.url, token, "tools/call", { id: 4, params: { name: "nope", arguments: {} } })
      expect(unknown.status).toBe(200)
      expect(unknown.json).toMatchObject({ id: 4, error: { code: -32602 } })
      // a notification is accepted without a body
      const note = yield* Effect.promise(() =>
        fetch(`${app.url}/mcp`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${token}`, "mcp-protocol-version": "2026-07-28" },
          body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { _meta: META } })
        })
      )
      expect(note.status).toBe(202)
    }), { timeout: 60_000 })

  it.scoped("refuses missing and mismatched headers, a missing _meta and an unsupported version; unknown methods are 404", () =>
    Effect.gen(function*() {
      const app = yield* startTestApp()
      const { token } = yield* seedAccount(app)
      const refusal = (status: number, code: number, id: number) => ({ status, json: expect.objectContaining({ jsonrpc: "2.0", id, error: expect.objectContaining({ code }) }) })
      const only = (r: { status: number; json: unknown }) => ({ status: r.status, json: r.json })

      const cases: ReadonlyArray<readonly [string, string, Call, number, number]> = [
        ["no _meta", "server/discover", { params: { _meta: undefined } }, 400, -32602],
        ["no protocolVersion in _meta", "tools/list", { params: { _meta: { "io.modelcontextprotocol/clientCapabilities": {} } } }, 400, -32602],
        ["no clientCapabilities", "tools/list", { params: { _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } } }, 400, -32602],
        ["no MCP-Protocol-Version", "tools/list", { headers: { "mcp-protocol-version": undefined } }, 400, -32020],
        ["header and _meta disagree", "tools/list", { params: { _meta: { ...META, "io.modelcontextprotocol/protocolVersion": "v999" } } }, 400, -32020],
        ["no Mcp-Method", "tools/list", { headers: { "mcp-method": undefined } }, 400, -32020],
        ["Mcp-Method of another method", "tools/list", { headers: { "mcp-method": "prompts/list" } }, 400, -32020],
        ["no Mcp-Name", "tools/call", { params: { name: "list_networks", arguments: {} }, headers: { "mcp-name": undefined } }, 400, -32020],
        ["Mcp-Name of another tool", "tools/call", { params: { name: "list_networks", arguments: {} }, headers: { "mcp-name": "send_raw" } }, 400, -32020]
      ]
      let id = 100
      for (const [label, method, call, status, code] of cases) {
        id++
        expect(only(yield* post(app.url, token, method, { ...call, id })), label).toEqual(refusal(status, code, id))
      }
      const unsupported = yield* post(app.url, token, "server/discover", {
        id: 301,
        params: { _meta: { ...META, "io.modelcontextprotocol/protocolVersion": "v999.0.0" } },
        headers: { "mcp-protocol-version": "v999.0.0" }
      })
      expect(unsupported.status).toBe(400)
      expect(unsupported.json.error).toMatchObject({
        code: -32022,
        data: { supported: ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"], requested: "v999.0.0" }
      })
      // Mcp-Name in the base64 form, and with surrounding whitespace, is the name
      const encoded = `=?base64?${Buffer.from("list_networks").toString("base64")}?=`
      for (const name of [encoded, "  list_networks  "]) {
        const r = yield* post(app.url, token, "tools/call", { params: { name: "list_networks", arguments: {} }, headers: { "mcp-name": name } })
        expect(r.status, name).toBe(200)
      }

      // Every method Belay does not serve in this revision, the removed ones included (subscriptions/listen: clients poll)
      for (const method of ["initialize", "ping", "logging/setLevel", "resources/subscribe", "subscriptions/listen", "resources/list", "prompts/list", "completion/complete", "unknown/method"]) {
        id++
        expect(only(yield* post(app.url, token, method, { id })), method).toEqual(refusal(404, -32601, id))
      }

      // Authentication and Origin come first, as in 2025
      expect((yield* post(app.url, "nope-nope-nope-nope", "tools/list")).status).toBe(401)
      expect((yield* post(app.url, token, "tools/list", { headers: { origin: "http://evil.example" } })).status).toBe(403)
    }), { timeout: 60_000 })
})
