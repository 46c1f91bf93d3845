import { describe, expect, it } from "@effect/vitest"
import { jsonRpcErrorResponse } from "../../src/schema/JsonRpc.js"
import { checkModernRequest, decodeMirroredValue, eraOf, type MirrorHeaders } from "../../src/schema/McpRequestMeta.js"

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {}
}
const HEADERS: MirrorHeaders = { protocolVersion: "2026-07-28", method: "tools/list", name: undefined }
const b64 = (text: string) => `=?base64?${Buffer.from(text).toString("base64")}?=`

describe("eraOf", () => {
  it.each([
    ["initialize", { protocolVersion: "2025-11-25" }, undefined, "2025"],
    ["initialize", {}, "1999-01-01", "2025"],
    ["initialize", {}, "2026-07-28", "2026"],
    ["initialize", { _meta: META }, undefined, "2026"],
    ["tools/list", undefined, undefined, "2025"],
    ["tools/list", {}, "2025-03-26", "2025"],
    ["tools/list", {}, "2025-06-18", "2025"],
    ["tools/list", { _meta: { progressToken: 1 } }, "2025-11-25", "2025"],
    ["tools/list", [], "2025-11-25", "2025"],
    ["tools/list", {}, "2026-07-28", "2026"],
    ["tools/list", {}, "1999-01-01", "2026"],
    ["server/discover", {}, undefined, "2025"],
    ["server/discover", { _meta: META }, "2025-11-25", "2026"]
  ] as const)("%s %j with MCP-Protocol-Version %j is %s-era", (method, params, header, era) => {
    expect(eraOf(method, params, header)).toBe(era)
  })
})

describe("checkModernRequest", () => {
  it.each([
    ["tools/list", { _meta: META }, HEADERS],
    ["server/discover", { _meta: { ...META, "io.modelcontextprotocol/clientInfo": { name: "c", version: "1" } } }, { ...HEADERS, method: "server/discover" }],
    ["tools/call", { _meta: META, name: "list_networks" }, { ...HEADERS, method: "tools/call", name: "list_networks" }],
    ["tools/call", { _meta: META, name: "list_networks" }, { ...HEADERS, method: "tools/call", name: b64("list_networks") }],
    ["tools/call", { _meta: META, name: "büro" }, { ...HEADERS, method: "tools/call", name: b64("büro") }],
    // no name in the body and none in the header: the dispatcher's -32602, not a header error
    ["tools/call", { _meta: META }, { ...HEADERS, method: "tools/call" }],
    // Mcp-Name is only checked for the methods that mirror a name
    ["tools/list", { _meta: META }, { ...HEADERS, name: "whatever" }]
  ] as const)("%s %j passes", (method, params, headers) => {
    expect(checkModernRequest(method, params, headers)).toBeUndefined()
  })

  it.each([
    ["no MCP-Protocol-Version", "tools/list", { _meta: META }, { ...HEADERS, protocolVersion: undefined }, -32020],
    ["header and _meta disagree", "tools/list", { _meta: { ...META, "io.modelcontextprotocol/protocolVersion": "v999" } }, HEADERS, -32020],
    ["an unknown version in both", "tools/list", { _meta: { ...META, "io.modelcontextprotocol/protocolVersion": "v999" } }, { ...HEADERS, protocolVersion: "v999" }, -32022],
    ["an unknown version, no _meta", "tools/list", {}, { ...HEADERS, protocolVersion: "1999-01-01" }, -32022],
    ["a 2025 version in _meta", "tools/list", { _meta: { ...META, "io.modelcontextprotocol/protocolVersion": "2025-11-25" } }, { ...HEADERS, protocolVersion: "2025-11-25" }, -32022],
    ["no params", "tools/list", undefined, HEADERS, -32602],
    ["no _meta", "tools/list", {}, HEADERS, -32602],
    ["_meta an array", "tools/list", { _meta: [] }, HEADERS, -32602],
    ["no protocolVersion in _meta", "tools/list", { _meta: { "io.modelcontextprotocol/clientCapabilities": {} } }, HEADERS, -32602],
    ["no clientCapabilities", "tools/list", { _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } }, HEADERS, -32602],
    ["clientCapabilities not an object", "tools/list", { _meta: { ...META, "io.modelcontextprotocol/clientCapabilities": "all" } }, HEADERS, -32602],
    ["no Mcp-Method", "tools/list", { _meta: META }, { ...HEADERS, method: undefined }, -32020],
    ["Mcp-Method of another method", "tools/list", { _meta: META }, { ...HEADERS, method: "prompts/list" }, -32020],
    ["Mcp-Method in other case", "tools/list", { _meta: META }, { ...HEADERS, method: "TOOLS/LIST" }, -32020],
    ["no Mcp-Name", "tools/call", { _meta: META, name: "list_networks" }, { ...HEADERS, method: "tools/call" }, -32020],
    ["Mcp-Name of another tool", "tools/call", { _meta: META, name: "list_networks" }, { ...HEADERS, method: "tools/call", name: "send_raw" }, -32020],
    ["Mcp-Name without a name in the body", "tools/call", { _meta: META }, { ...HEADERS, method: "tools/call", name: "send_raw" }, -32020],
    ["Mcp-Name in bad base64 padding", "tools/call", { _meta: META, name: "Hello" }, { ...HEADERS, method: "tools/call", name: "=?base64?SGVsbG8?=" }, -32020],
    ["Mcp-Name in base64 with foreign characters", "tools/call", { _meta: META, name: "Hello" }, { ...HEADERS, method: "tools/call", name: "=?base64?SGVs!!!bG8=?=" }, -32020],
    ["Mcp-Name in base64 of bytes that are not UTF-8", "tools/call", { _meta: META, name: "x" }, { ...HEADERS, method: "tools/call", name: "=?base64?/w==?=" }, -32020],
    ["Mcp-Name with a character outside a field value", "tools/call", { _meta: META, name: "büro" }, { ...HEADERS, method: "tools/call", name: "büro" }, -32020]
  ] as const)("%s → %i", (_, method, params, headers, code) => {
    const refused = checkModernRequest(method, params, headers)
    if (refused === undefined) throw new Error("accepted")
    expect(jsonRpcErrorResponse(1, refused).error.code).toBe(code)
  })
})

describe("decodeMirroredValue", () => {
  it.each([
    ["us-west1", "us-west1"],
    ["  padded  ", "padded"],
    [b64("Hello, 世界"), "Hello, 世界"],
    [b64("=?base64?literal?="), "=?base64?literal?="],
    // without both markers a value is literal
    ["=?base64?SGVsbG8=", "=?base64?SGVsbG8="],
    ["SGVsbG8=?=", "SGVsbG8=?="],
    ["=?base64??=", ""]
  ])("%j → %j", (value, text) => {
    expect(decodeMirroredValue(value)).toBe(text)
  })

  it.each(["=?base64?SGVsbG8?=", "=?base64?S?=", "tab\u0000nul", "é"])("%j is malformed", (value) => {
    expect(decodeMirroredValue(value)).toBeUndefined()
  })
})
