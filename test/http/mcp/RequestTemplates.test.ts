import { describe, expect, it } from "@effect/vitest"
import type { JsonRpcRequest } from "../../../src/schema/JsonRpc.js"
import {
  makeRequestTemplates,
  TEMPLATE_MAX_BYTES,
  TEMPLATES_PER_CONNECTION
} from "../../../src/http/mcp/RequestTemplates.js"

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "t", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {}
}

/** Learns `text` (parsed as McpRoute parses it) for `connection`; the request it learned. */
const learnText = (templates: ReturnType<typeof makeRequestTemplates>, connection: object, text: string) => {
  const request = JSON.parse(text) as JsonRpcRequest
  templates.learn(connection, Buffer.from(text), text, request)
  return request
}

const matchText = (templates: ReturnType<typeof makeRequestTemplates>, connection: object, text: string) =>
  templates.match(connection, Buffer.from(text))

/** Bodies as clients write them: the id first (the bench), last (the MCP SDKs), a nested "id" in the arguments. */
const shapes = {
  "id first": (id: unknown) => JSON.stringify({ jsonrpc: "2.0", id, method: "tools/list", params: { _meta: META } }),
  "id last": (id: unknown) => JSON.stringify({ method: "tools/list", params: {}, jsonrpc: "2.0", id }),
  "an id in the arguments": (id: unknown) =>
    JSON.stringify({
      jsonrpc: "2.0",
      method: "tools/call",
      params: { name: "recent_messages", arguments: { id: 7, networkId: 1, target: "#a" } },
      id
    })
}

describe("RequestTemplates", () => {
  it.each(Object.entries(shapes))("%s: the same request under another id is the parsed request with that id", (_, shape) => {
    const templates = makeRequestTemplates()
    const connection = {}
    learnText(templates, connection, shape(1))
    for (const id of [1, 2, 0, -7, 12345, 9007199254740991, -9007199254740991, "abc", "a b-1", "", "{[x"]) {
      const text = shape(id)
      const matched = matchText(templates, connection, text)
      expect(matched).toEqual(JSON.parse(text))
    }
  })

  it("an id literal JSON.parse would read otherwise, or one that is no request id, is not matched", () => {
    const templates = makeRequestTemplates()
    const connection = {}
    learnText(templates, connection, shapes["id first"](1))
    const body = (literal: string) => shapes["id first"](1).replace("\"id\":1,", `"id":${literal},`)
    expect(matchText(templates, connection, body("5"))).toEqual(JSON.parse(body("5")))
    for (const literal of ["01", "-0x1", "1.0", "1e2", "-", "+1", "9007199254740992", "true", "null", "\"a\\\"b\"", "\"\\u0041\"", "\"é\"", "\"a", "[1]", "1,\"x\":2"]) {
      expect(matchText(templates, connection, body(literal)), literal).toBeUndefined()
    }
  })

  it("a body that differs anywhere but the id, or comes on another connection, is not matched", () => {
    const templates = makeRequestTemplates()
    const connection = {}
    learnText(templates, connection, shapes["an id in the arguments"](1))
    expect(matchText(templates, connection, shapes["an id in the arguments"](2))).toBeDefined()
    expect(matchText(templates, connection, shapes["an id in the arguments"](2).replace("\"id\":7", "\"id\":8"))).toBeUndefined()
    expect(matchText(templates, connection, shapes["an id in the arguments"](2).replace("#a", "#b"))).toBeUndefined()
    expect(matchText(templates, connection, `${shapes["an id in the arguments"](2)} `)).toBeUndefined()
    expect(matchText(templates, {}, shapes["an id in the arguments"](2))).toBeUndefined()
    expect(templates.match(undefined, Buffer.from(shapes["an id in the arguments"](2)))).toBeUndefined()
  })

  it("a byte changed in a template's short end (compared in a loop) or long end (compared natively) is not matched", () => {
    const templates = makeRequestTemplates()
    const connection = {}
    // Id first: a 22-byte prefix and, with `_meta`, a suffix of some 200 bytes; id last: the other way round.
    learnText(templates, connection, shapes["id first"](1))
    learnText(templates, connection, shapes["an id in the arguments"](1))
    const first = shapes["id first"](2)
    const last = shapes["an id in the arguments"](2)
    expect(matchText(templates, connection, first)).toEqual(JSON.parse(first))
    expect(matchText(templates, connection, last)).toEqual(JSON.parse(last))
    expect(matchText(templates, connection, first.replace("\"2.0\"", "\"2.1\""))).toBeUndefined()
    expect(matchText(templates, connection, first.replace("tools/list", "tools/lisT"))).toBeUndefined()
    expect(matchText(templates, connection, first.slice(0, -3) + "]}}")).toBeUndefined()
    expect(matchText(templates, connection, last.replace("\"2.0\"", "\"2.1\""))).toBeUndefined()
    expect(matchText(templates, connection, last.slice(0, -1) + "]")).toBeUndefined()
  })

  it("only a body that is its value's JSON.stringify, within the size bound and without the marker, is kept", () => {
    const templates = makeRequestTemplates()
    const connection = {}
    const spaced = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }, null, 1)
    learnText(templates, connection, spaced)
    expect(matchText(templates, connection, spaced.replace("\"id\": 1", "\"id\": 2"))).toBeUndefined()
    const escaped = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools\\/list\"}"
    learnText(templates, connection, escaped)
    expect(matchText(templates, connection, escaped.replace(":1,", ":2,"))).toBeUndefined()
    const marker = (id: number) => JSON.stringify({ jsonrpc: "2.0", id, method: "tools/list", params: { x: "\u0000belay-request-id\u0000" } })
    learnText(templates, connection, marker(1))
    expect(matchText(templates, connection, marker(2))).toBeUndefined()
    const sized = (id: number, length: number) => {
      const base = JSON.stringify({ jsonrpc: "2.0", id, method: "tools/list", params: { pad: "" } })
      return base.replace("\"pad\":\"\"", `"pad":"${"x".repeat(length - Buffer.byteLength(base))}"`)
    }
    learnText(templates, connection, sized(1, TEMPLATE_MAX_BYTES))
    expect(matchText(templates, connection, sized(2, TEMPLATE_MAX_BYTES))).toEqual(JSON.parse(sized(2, TEMPLATE_MAX_BYTES)))
    learnText(templates, connection, sized(1, TEMPLATE_MAX_BYTES + 1))
    expect(matchText(templates, connection, sized(2, TEMPLATE_MAX_BYTES + 1))).toBeUndefined()
  })

  it(`keeps the ${TEMPLATES_PER_CONNECTION} newest requests of a connection, frozen`, () => {
    const templates = makeRequestTemplates()
    const connection = {}
    const body = (n: number, id: number) =>
      JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "recent_messages", arguments: { networkId: n } } })
    for (let n = 0; n <= TEMPLATES_PER_CONNECTION; n++) learnText(templates, connection, body(n, 1))
    expect(matchText(templates, connection, body(0, 2))).toBeUndefined()
    for (let n = 1; n <= TEMPLATES_PER_CONNECTION; n++) {
      const matched = matchText(templates, connection, body(n, 2))
      expect(matched).toEqual(JSON.parse(body(n, 2)))
      const params = matched!.params as { readonly arguments: Record<string, unknown> }
      expect(Object.isFrozen(params)).toBe(true)
      expect(Object.isFrozen(params.arguments)).toBe(true)
    }
  })
})
