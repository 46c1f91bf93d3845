import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import {
  ALL_PROTOCOL_VERSIONS,
  CallToolParams,
  decodeCallToolParams,
  decodeIncoming,
  HeaderMismatch,
  httpStatusOfModernError,
  httpStatusOfProtocolError,
  initializeResult,
  InternalError,
  InvalidParams,
  InvalidRequest,
  isMcpMethod,
  jsonRpcErrorResponse,
  type JsonRpcProtocolError,
  JsonRpcRequest,
  jsonRpcSuccessResponse,
  MethodNotFound,
  negotiateProtocolVersion,
  ParseError,
  parseJsonBody,
  SUPPORTED_PROTOCOL_VERSIONS,
  unknownTool,
  UnsupportedProtocolVersion
} from "../../src/schema/JsonRpc.js"

describe("decodeIncoming", () => {
  it.each([
    { name: "request", body: { jsonrpc: "2.0", id: 1, method: "tools/list" }, tag: "Request" },
    { name: "request with string id", body: { jsonrpc: "2.0", id: "a", method: "initialize", params: {} }, tag: "Request" },
    { name: "request with array params", body: { jsonrpc: "2.0", id: 0, method: "x", params: [] }, tag: "Request" },
    { name: "request with extra members", body: { jsonrpc: "2.0", id: 1, method: "x", extra: 1 }, tag: "Request" },
    { name: "notification", body: { jsonrpc: "2.0", method: "notifications/initialized" }, tag: "Notification" },
    { name: "other notification", body: { jsonrpc: "2.0", method: "notifications/cancelled", params: {} }, tag: "Notification" },
    { name: "client response", body: { jsonrpc: "2.0", id: 5, result: {} }, tag: "Response" },
    {
      name: "client error response",
      body: { jsonrpc: "2.0", id: 5, error: { code: -32601, message: "no" } },
      tag: "Response"
    }
  ])("$name → $tag", ({ body, tag }) => {
    const result = decodeIncoming(body)
    expect(Either.isRight(result) && result.right._tag).toBe(tag)
  })

  it.each([
    { name: "batch", body: [{ jsonrpc: "2.0", id: 1, method: "tools/list" }], id: null, text: "batch" },
    { name: "string", body: "hello", id: null, text: "object" },
    { name: "null", body: null, id: null, text: "object" },
    { name: "missing jsonrpc", body: { id: 3, method: "tools/list" }, id: 3, text: "jsonrpc" },
    { name: "wrong jsonrpc", body: { jsonrpc: "1.0", id: 3, method: "tools/list" }, id: 3, text: "jsonrpc" },
    { name: "method not a string", body: { jsonrpc: "2.0", id: "x", method: 5 }, id: "x", text: "method" },
    { name: "null id", body: { jsonrpc: "2.0", id: null, method: "tools/list" }, id: null, text: "id" },
    { name: "fractional id", body: { jsonrpc: "2.0", id: 1.5, method: "tools/list" }, id: null, text: "id" },
    { name: "object id", body: { jsonrpc: "2.0", id: {}, method: "tools/list" }, id: null, text: "id" },
    { name: "params a string", body: { jsonrpc: "2.0", id: 2, method: "x", params: "p" }, id: 2, text: "params" },
    { name: "no method", body: { jsonrpc: "2.0", id: 4 }, id: 4, text: "method" },
    { name: "empty object", body: {}, id: null, text: "jsonrpc" }
  ])("$name → -32600 with id $id", ({ body, id, text }) => {
    const result = decodeIncoming(body)
    if (Either.isRight(result)) throw new Error("accepted")
    expect(result.left.id).toEqual(id)
    expect(result.left.error).toBeInstanceOf(InvalidRequest)
    expect(result.left.error.message).toContain(text)
    expect(jsonRpcErrorResponse(result.left.id, result.left.error)).toMatchObject({
      jsonrpc: "2.0",
      id,
      error: { code: -32600 }
    })
  })

  it("takes a body as a request exactly when Schema.is(JsonRpcRequest) does, whatever its id", () => {
    const isRequest = Schema.is(JsonRpcRequest)
    const ids: ReadonlyArray<unknown> = [
      0, 1, -1, 2 ** 53 - 1, 2 ** 53, -(2 ** 53), 1.5, -0, 1e300, Number.NaN, Infinity, "", "7", null, true, {}, [], [1]
    ]
    for (const id of ids) {
      for (const params of [undefined, {}, [], [1]]) {
        const body = params === undefined ? { jsonrpc: "2.0", id, method: "m" } : { jsonrpc: "2.0", id, method: "m", params }
        const result = decodeIncoming(body)
        expect([id, Either.isRight(result) && result.right._tag === "Request"]).toEqual([id, isRequest(body)])
      }
    }
  })
})

describe("parseJsonBody", () => {
  it("parses JSON and refuses the rest with -32700 and id null", () => {
    expect(parseJsonBody("{\"a\":1}")).toEqual(Either.right({ a: 1 }))
    const result = parseJsonBody("{")
    if (Either.isRight(result)) throw new Error("accepted")
    expect(jsonRpcErrorResponse(null, result.left)).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: { code: -32700, message: "Parse error: the body is not valid JSON" }
    })
  })
})

describe("protocol errors", () => {
  it.each([
    [new ParseError({ message: "bad" }), -32700, 400],
    [new InvalidRequest({ message: "bad" }), -32600, 400],
    [new MethodNotFound({ method: "ping" }), -32601, 200],
    [new InvalidParams({ message: "bad" }), -32602, 200],
    [new InternalError({ message: "Internal error" }), -32603, 200],
    [new HeaderMismatch({ message: "Header mismatch" }), -32020, 400],
    [new UnsupportedProtocolVersion({ requested: "1999-01-01" }), -32022, 400]
  ] as ReadonlyArray<readonly [JsonRpcProtocolError, number, number]>)("%s → %i, HTTP %i", (error, code, status) => {
    expect(jsonRpcErrorResponse(7, error).error.code).toBe(code)
    expect(httpStatusOfProtocolError(error)).toBe(status)
    // 2026-07-28: the same, but an unknown method is 404
    expect(httpStatusOfModernError(error)).toBe(error._tag === "MethodNotFound" ? 404 : status)
  })

  it("lists the supported versions, both eras, in an UnsupportedProtocolVersion error", () => {
    expect(jsonRpcErrorResponse(3, new UnsupportedProtocolVersion({ requested: "v999" })).error).toMatchObject({
      code: -32022,
      data: { supported: ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"], requested: "v999" }
    })
    expect(ALL_PROTOCOL_VERSIONS).toEqual(["2026-07-28", ...SUPPORTED_PROTOCOL_VERSIONS])
  })

  it("words method-not-found and unknown tool", () => {
    expect(jsonRpcErrorResponse(1, new MethodNotFound({ method: "ping" }))).toEqual({
      jsonrpc: "2.0",
      id: 1,
      error: { code: -32601, message: "Method not found: ping" }
    })
    expect(jsonRpcErrorResponse(1, unknownTool("nope")).error).toEqual({
      code: -32602,
      message: "Unknown tool: \"nope\""
    })
  })

  it("builds success responses", () => {
    expect(jsonRpcSuccessResponse("a", { tools: [] })).toEqual({ jsonrpc: "2.0", id: "a", result: { tools: [] } })
  })
})

describe("methods", () => {
  it.each([
    ["initialize", true],
    ["notifications/initialized", true],
    ["tools/list", true],
    ["tools/call", true],
    ["ping", false],
    ["resources/list", false],
    ["server/discover", false]
  ] as const)("%s supported: %s", (method, supported) => {
    expect(isMcpMethod(method)).toBe(supported)
  })
})

describe("protocol version", () => {
  it.each([
    ["2025-11-25", "2025-11-25"],
    ["2025-06-18", "2025-06-18"],
    ["2025-03-26", "2025-03-26"],
    ["2024-11-05", "2025-11-25"],
    ["2026-07-28", "2025-11-25"],
    ["1999-01-01", "2025-11-25"],
    [undefined, "2025-11-25"],
    [20251125, "2025-11-25"]
  ] as const)("initialize asking %j gets %s", (requested, answered) => {
    expect(negotiateProtocolVersion(requested)).toBe(answered)
  })

  it("supports exactly the three initialize-era versions, newest first", () => {
    expect(SUPPORTED_PROTOCOL_VERSIONS).toEqual(["2025-11-25", "2025-06-18", "2025-03-26"])
  })


  it("builds the initialize result", () => {
    const result = initializeResult({ protocolVersion: "2025-06-18", capabilities: {}, clientInfo: {} }, "1.2.3")
    expect(result).toMatchObject({
      protocolVersion: "2025-06-18",
      capabilities: { tools: {} },
      serverInfo: { name: "belay", version: "1.2.3" }
    })
    expect(result.capabilities).toEqual({ tools: {} })
    expect(initializeResult(undefined, "1").protocolVersion).toBe("2025-11-25")
  })
})

describe("decodeCallToolParams", () => {
  it.each([
    [{ name: "list_networks" }, { name: "list_networks" }],
    [{ name: "recent_messages", arguments: { networkId: 1 } }, { name: "recent_messages", arguments: { networkId: 1 } }],
    [{ name: "x", arguments: {}, _meta: { progressToken: 1 } }, { name: "x", arguments: {}, _meta: { progressToken: 1 } }]
  ])("%j is accepted", (params, expected) => {
    expect(decodeCallToolParams(params)).toEqual(Either.right(expected))
  })

  it.each([
    [undefined, "tools/call needs params"],
    [[], "tools/call needs params"],
    [{}, "tool name is missing"],
    [{ name: 5 }, "tool name is missing"],
    [{ name: "x", arguments: [] }, "arguments must be an object"],
    [{ name: "x", arguments: "a=1" }, "arguments must be an object"]
  ])("%j is -32602", (params, text) => {
    const result = decodeCallToolParams(params)
    if (Either.isRight(result)) throw new Error("accepted")
    expect(result.left).toBeInstanceOf(InvalidParams)
    expect(result.left.message).toContain(text)
  })

  // Written out for well-formed params (JsonRpc.ts), it answers as the CallToolParams Schema does.
  it.each([
    { name: "x" },
    { name: "x", arguments: { a: [1] } },
    { name: "x", arguments: null },
    { name: "x", arguments: undefined },
    { name: "x", arguments: [1] },
    { name: "x", _meta: undefined },
    { name: "x", _meta: null, arguments: {} },
    { name: "x", extra: 1, arguments: {}, _meta: { a: 1 } },
    { name: "", arguments: {} }
  ])("%j decodes as the Schema does", (params) => {
    const schema = Schema.decodeUnknownEither(CallToolParams)(params)
    const result = decodeCallToolParams(params)
    if (Either.isRight(schema)) {
      expect(result).toEqual(Either.right(schema.right))
      if (Either.isRight(result)) expect(Object.keys(result.right)).toEqual(Object.keys(schema.right))
    } else {
      expect(Either.isLeft(result)).toBe(true)
    }
  })
})
