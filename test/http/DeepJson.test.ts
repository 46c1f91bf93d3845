/**
 * Deeply nested and very wide JSON in every JSON body the server reads (docs/decisions/http-and-mcp.md "Bounded JSON"): a tool's
 * arguments over `/mcp` and over the WebSocket, the JSON-RPC envelope's `params` and `id`, the OAuth endpoints, every
 * `/api` JSON body and the admin socket's request line, each at nesting depths up to what its body limit holds. Every
 * one is refused with a clear, short answer — never a 5xx, never the value echoed back — and the server goes on.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeAdminHandler } from "../../src/admin/AdminServer.js"
import { JSON_MAX_DEPTH } from "../../src/schema/BoundedJson.js"
import { MCP_BODY_LIMIT_BYTES } from "../../src/schema/Limits.js"
import { apiToken, bearer, passwordToken, postJsonAs, signedIn } from "./auth/MemberHarness.js"
import { fetchP, startOAuthApp, textOf } from "./oauth/OAuthHarness.js"
import { OAUTH_BODY_LIMIT } from "../../src/http/oauth/OAuthHttp.js"
import { startTestApp } from "../support/TestApp.js"
import { describeMode } from "../support/TestDatabase.js"
import { connect } from "./ws/SocketClient.js"

const HOLE = "\"\\u0000hole\""

/** `depth` arrays (or objects `{"a": …}`) around a 1, as JSON text: built as text, as no JSON.stringify could. */
const nested = (depth: number, kind: "array" | "object"): string =>
  kind === "array" ? `${"[".repeat(depth)}1${"]".repeat(depth)}` : `${"{\"a\":".repeat(depth)}1${"}".repeat(depth)}`

/** `template` as JSON with the value `HOLE` marks replaced by `text`. */
const withHole = (template: unknown, text: string): string => {
  const json = JSON.stringify(template)
  expect(json.split(HOLE)).toHaveLength(2)
  return json.replace(HOLE, text)
}
const hole = JSON.parse(HOLE) as string

/** The deepest nesting of `kind` that `template` can carry within `limit` bytes. */
const deepestWithin = (template: unknown, kind: "array" | "object", limit: number): number => {
  const room = limit - (JSON.stringify(template).length - HOLE.length) - 1
  return Math.floor(room / (kind === "array" ? 2 : 6))
}

const post = (url: string, path: string, body: string, headers: Record<string, string>) =>
  Effect.gen(function*() {
    const res = yield* fetchP(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body })
    const text = yield* textOf(res)
    return { status: res.status, text, json: (text.startsWith("{") ? JSON.parse(text) : undefined) as Record<string, any> | undefined }
  })

const call = (name: string, args: unknown, id: unknown = 1) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } })

/** The three fields of the report, then a string and an array argument; each with the tool's other arguments valid. */
const FIELDS: ReadonlyArray<readonly [tool: string, field: string, others: Record<string, unknown>]> = [
  ["list_buffers", "networkId", {}],
  ["connect_network", "reconnect", { networkId: 1 }],
  ["recent_messages", "limit", { networkId: 1, target: "#belay" }],
  ["send_message", "text", { networkId: 1, target: "#belay" }],
  ["set_channel_modes", "changes", { networkId: 1, channel: "#belay" }]
]

describe(`deeply nested and wide JSON on ${describeMode}`, () => {
  it.scopedLive("/mcp: a tool argument nested past the bound is -32600 (refused unparsed: id null), at every depth up to the body limit", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const auth = bearer(yield* apiToken(app))
      for (const [tool, field, others] of FIELDS) {
        for (const kind of ["array", "object"] as const) {
          const template = call(tool, { ...others, [field]: hole }, 7)
          // The argument starts at level 3 (body, params, arguments): this smallest depth is one past the bound.
          for (const depth of [10_000, JSON_MAX_DEPTH - 2, deepestWithin(template, kind, MCP_BODY_LIMIT_BYTES)]) {
            const body = withHole(template, nested(depth, kind))
            expect(body.length).toBeLessThanOrEqual(MCP_BODY_LIMIT_BYTES)
            const res = yield* post(app.url, "/mcp", body, auth)
            expect(res.status, `${tool}.${field} ${kind} ${depth}: ${res.text.slice(0, 200)}`).toBe(400)
            expect(res.json).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } })
            expect(res.json!.error.message).toBe(`Invalid Request: the JSON nests deeper than ${JSON_MAX_DEPTH} levels`)
          }
        }
      }
      // The envelope's own members: params, id, and the body itself.
      const deep = nested(10_000, "array")
      const params = yield* post(app.url, "/mcp", withHole({ jsonrpc: "2.0", id: 8, method: "tools/call", params: hole }, deep), auth)
      expect(params.status).toBe(400)
      expect(params.json).toMatchObject({ id: null, error: { code: -32600 } })
      const id = yield* post(app.url, "/mcp", withHole({ jsonrpc: "2.0", id: hole, method: "tools/list" }, deep), auth)
      expect(id.status).toBe(400)
      expect(id.json).toMatchObject({ id: null, error: { code: -32600 } })
      const arrayBody = yield* post(app.url, "/mcp", nested(500_000, "array"), auth)
      expect(arrayBody.status).toBe(400)
      expect(arrayBody.json).toMatchObject({ id: null, error: { code: -32600 } })
      // Still answering.
      const listed = yield* post(app.url, "/mcp", JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }), auth)
      expect(listed.status).toBe(200)
    }))

  it.scopedLive("/mcp: within the bound, nested and wide values are invalid-arguments whose message is short and names the field", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const auth = bearer(yield* apiToken(app))
      // Nested as deep as the bound lets an argument be (the envelope takes three levels).
      const depth = JSON_MAX_DEPTH - 3
      const wide = `[${Array.from({ length: 200_000 }, () => "0").join(",")}]`
      for (const [tool, field, others] of FIELDS) {
        for (const value of [nested(depth, "array"), nested(depth, "object"), wide]) {
          const res = yield* post(app.url, "/mcp", withHole(call(tool, { ...others, [field]: hole }), value), auth)
          expect(res.status, `${tool}.${field}: ${res.text.slice(0, 200)}`).toBe(200)
          const payload = res.json!.result.structuredContent
          expect(payload).toMatchObject({ ok: false, error: "invalid-arguments" })
          expect(payload.message).toMatch(new RegExp(`^${field}(\\[\\d+\\])?: `))
          expect(payload.message.length).toBeLessThanOrEqual(2_000)
          expect(res.text.length).toBeLessThan(3_000)
        }
      }
    }))

  it.scopedLive("the WebSocket: a call whose arguments nest 10,000 deep is an error frame; the socket goes on", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const tab = yield* connect(app.url, { headers: bearer(yield* passwordToken(app.url)) })
      expect((yield* tab.next()).type).toBe("hello")
      for (const [tool, field, others] of FIELDS.slice(0, 3)) {
        yield* tab.send(withHole({ type: "call", id: `deep-${tool}`, name: tool, arguments: { ...others, [field]: hole } }, nested(10_000, "array")))
        const [answer] = yield* tab.until((f) => f.type === "error" || f.type === "result")
        expect(answer).toEqual({ type: "error", id: null, message: `a frame nests deeper than ${JSON_MAX_DEPTH} levels` })
      }
      const fine = yield* tab.call("list_networks")
      expect(fine).toMatchObject({ type: "result", isError: false })
    }))

  it.scopedLive("the OAuth endpoints and every /api JSON body: nesting up to the 16 KiB limit is the malformed-body 400", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const token = bearer(yield* passwordToken(app.url))
      const jar = yield* signedIn(app.url)
      const session = { ...jar.header(), origin: app.url }
      const targets: ReadonlyArray<{ readonly path: string; readonly template: unknown; readonly headers: Record<string, string> }> = [
        { path: "/api/oauth/register", template: { client_name: hole, redirect_uris: ["http://127.0.0.1/cb"] }, headers: {} },
        { path: "/api/oauth/register", template: { client_name: "App", redirect_uris: [hole] }, headers: {} },
        { path: "/api/oauth/token", template: { grant_type: "authorization_code", code: hole }, headers: {} },
        { path: "/api/oauth/revoke", template: { client_id: "x", token: hole }, headers: {} },
        { path: "/api/auth/login/token", template: { username: hole, password: "x" }, headers: {} },
        { path: "/api/networks", template: { name: "n", host: "irc.example", port: hole, tls: true, nick: "alice" }, headers: token },
        { path: "/api/networks", template: { name: "n", host: "irc.example", port: 6697, tls: true, nick: "alice", channels: hole }, headers: token },
        { path: "/api/push/subscriptions", template: { endpoint: "https://push.example/x", keys: hole }, headers: token },
        { path: "/login/passkey", template: { credential: hole }, headers: { origin: app.url } },
        { path: "/settings/passkeys", template: { name: "key", credential: hole }, headers: session }
      ]
      for (const { path, template, headers } of targets) {
        for (const kind of ["array", "object"] as const) {
          for (const depth of [JSON_MAX_DEPTH + 1, deepestWithin(template, kind, OAUTH_BODY_LIMIT)]) {
            const body = withHole(template, nested(depth, kind))
            expect(body.length).toBeLessThanOrEqual(OAUTH_BODY_LIMIT)
            const res = yield* post(app.url, path, body, headers)
            expect(res.status, `${path} ${kind} ${depth}: ${res.text.slice(0, 200)}`).toBe(400)
            expect(res.json).toEqual({ error: "invalid_request" })
          }
        }
      }
      // A PATCH too, and the server goes on answering.
      const created = yield* postJsonAs(app.url, jar, "/api/networks", { name: "n", host: "irc.example", port: 6697, tls: true, nick: "alice" })
      expect(created.status).toBe(201)
      const patched = yield* fetchP(`${app.url}/api/networks/${created.json.id}`, {
        method: "PATCH",
        headers: { "content-type": "application/json", ...session },
        body: withHole({ channels: hole }, nested(8_000, "array"))
      })
      expect(patched.status).toBe(400)
      expect(yield* textOf(patched)).toBe(JSON.stringify({ error: "invalid_request" }))
    }))

  it.scopedLive("/api/networks: within the bound, a nested or wide field is refused naming it, in a short description", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const token = bearer(yield* passwordToken(app.url))
      const wide = `[${Array.from({ length: 7_000 }, () => "0").join(",")}]`
      for (const value of [nested(JSON_MAX_DEPTH - 1, "array"), nested(JSON_MAX_DEPTH - 1, "object"), wide]) {
        const res = yield* post(app.url, "/api/networks", withHole({ name: "n", host: "irc.example", port: 6697, tls: true, nick: "alice", channels: hole }, value), token)
        expect(res.status).toBe(400)
        expect(res.json!.error).toBe("invalid_request")
        expect(res.json!.error_description).toMatch(/^channels(\.\d+)?: /)
        expect(res.json!.error_description.length).toBeLessThanOrEqual(2_000)
      }
    }))

  it.scopedLive("the admin socket's request line: nested past the bound, or a wrong field within it, is a short refusal", () =>
    Effect.gen(function*() {
      const app = yield* startTestApp()
      const handle = yield* Effect.provide(makeAdminHandler, app.context)
      const deep = yield* handle(withHole({ _tag: "AccountAdd", name: hole, password: "a long password" }, nested(30_000, "array")))
      expect(deep).toEqual({ ok: false, error: `invalid request: nests deeper than ${JSON_MAX_DEPTH} levels` })
      const within = yield* handle(withHole({ _tag: "AccountAdd", name: hole, password: "a long password" }, nested(JSON_MAX_DEPTH - 1, "array")))
      expect(within).toMatchObject({ ok: false })
      expect(within.ok === false && within.error.startsWith("invalid request: ")).toBe(true)
      expect(yield* handle("{")).toEqual({ ok: false, error: "invalid request: not JSON" })
    }))
})
