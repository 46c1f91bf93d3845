/**
 * Fuzzed `POST /mcp` requests and the judge of their answers. Tool calls are generated from each tool's published
 * inputSchema (tools/list's, so every one of the 23 tools and every argument is covered as the server describes
 * it): each argument right-typed with hostile content, wrong-typed, missing, or joined by unknown keys. Around them:
 * deep nesting (at every depth up to the 1 MiB body limit) in each argument of each tool and in each member of the
 * envelope, the other methods with junk params, broken envelopes, and raw byte mutations of all of these; and each of
 * those as a 2026-07-28 request too, with its `_meta` and its mirrored headers (MCP-Protocol-Version, Mcp-Method,
 * Mcp-Name) right, missing, mismatched, base64-encoded or hostile. The judge
 * holds every answer to docs/contract.md: a JSON-RPC response or error (codes -32700 to -32602, -32020 and -32022 at
 * 400, -32601 at 404 only for 2026-07-28, never -32603), a tool
 * result whose payload decodes with that tool's output Schema or as `{ok: false, error}` when isError, 202 for
 * notifications, 401 only for a bad credential, 413 only past 1 MiB, a refusal of at most MAX_REFUSAL_BYTES, and
 * never a 5xx.
 */
import { Either, Schema } from "effect"
import fc from "fast-check"
import { MCP_BODY_LIMIT_BYTES } from "../../../src/schema/Limits.js"
import { type ToolName, toolsByName } from "../../../src/schema/McpTools.js"
import { toolListEntries } from "../../../src/schema/ToolCatalog.js"
import { ToolFailurePayload } from "../../../src/schema/ToolErrors.js"
import {
  byteMutation,
  type DeepJson,
  deepJson,
  edgeString,
  encodeJson,
  hostileJson,
  hostileNumber,
  hostileString,
  mutateBytes,
  oneTimeIn
} from "./HostileValues.js"
import type { RawOutcome, RawRequest } from "./RawHttp.js"

export interface McpCase extends RawRequest {
  /** What was generated, for a failure report. */
  readonly label: string
  /** The tool called, when the envelope was a well-formed tools/call of a known tool. */
  readonly tool?: ToolName
  /** The request id, when the envelope was a well-formed request. */
  readonly id?: string | number
  /** The body's bytes are not what JSON.stringify made (mutated): anything but a 5xx and a malformed answer goes. */
  readonly mutated: boolean
  /** Whether the Authorization header is the valid token; "either" for spellings RFC 7235 may allow (scheme case, spaces). */
  readonly credential: "valid" | "invalid" | "either"
}

export interface McpTarget {
  readonly token: string
  readonly networkId: number
}

interface JsonSchemaNode {
  readonly type?: string | ReadonlyArray<string>
  readonly enum?: ReadonlyArray<unknown>
  readonly properties?: Readonly<Record<string, JsonSchemaNode>>
  readonly items?: JsonSchemaNode
  readonly anyOf?: ReadonlyArray<JsonSchemaNode>
}

const plausibleStrings = fc.constantFrom("#belay", "#chan", "alice", "bob", "hello", "b", "o", "+", "-", ":server:1", "*!*@x")

/** A value the argument's schema would take, with hostile content where it is text. */
const rightTyped = (schema: JsonSchemaNode, target: McpTarget, depth = 0): fc.Arbitrary<unknown> => {
  if (schema.enum !== undefined && schema.enum.length > 0) return fc.constantFrom(...schema.enum)
  if (schema.anyOf !== undefined && schema.anyOf.length > 0 && depth < 3) {
    return fc.oneof(...schema.anyOf.map((s) => rightTyped(s, target, depth + 1)))
  }
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  switch (type) {
    case "integer":
    case "number":
      return fc.oneof(fc.constant(target.networkId), fc.integer({ min: 1, max: 1000 }), hostileNumber)
    case "boolean":
      return fc.boolean()
    case "string":
      return fc.oneof({ weight: 2, arbitrary: plausibleStrings }, { weight: 5, arbitrary: hostileString })
    case "array":
      return fc.array(schema.items === undefined || depth >= 3 ? hostileJson : rightTyped(schema.items, target, depth + 1), { maxLength: 6 })
    case "object":
      return schema.properties === undefined || depth >= 3 ? fc.dictionary(edgeString, hostileJson, { maxKeys: 3 }) : argumentsOf(schema, target, depth + 1)
    default:
      return hostileJson
  }
}

/** An arguments object: each property present or not, right-typed or hostile; sometimes an unknown key too. */
const argumentsOf = (schema: JsonSchemaNode, target: McpTarget, depth = 0): fc.Arbitrary<Record<string, unknown>> => {
  const properties = Object.entries(schema.properties ?? {})
  const fields = properties.map(([name, property]) =>
    fc.option(fc.oneof({ weight: 3, arbitrary: rightTyped(property, target, depth) }, { weight: 1, arbitrary: hostileJson }), {
      nil: undefined,
      freq: 5
    }).map((value) => [name, value] as const)
  )
  return fc.tuple(fc.tuple(...fields), oneTimeIn(5, fc.tuple(edgeString, hostileJson))).map(([values, extra]) => {
    const args: Record<string, unknown> = {}
    for (const [name, value] of values) if (value !== undefined) args[name] = value
    if (extra !== undefined) Object.defineProperty(args, extra[0], { value: extra[1], enumerable: true, writable: true, configurable: true })
    return args
  })
}

const requestId = fc.oneof(fc.integer(), fc.integer({ min: -(2 ** 53) + 1, max: 2 ** 53 - 1 }), edgeString)

export interface Envelope {
  readonly label: string
  readonly body: unknown
  readonly tool?: ToolName
  readonly id?: string | number
  /** Headers of a 2026-07-28 request (they replace the generated MCP-Protocol-Version). */
  readonly headers?: Readonly<Record<string, string>>
}

const toolCall = (target: McpTarget): fc.Arbitrary<Envelope> =>
  fc.constantFrom(...toolListEntries).chain((entry) =>
    fc.tuple(
      fc.oneof(
        { weight: 8, arbitrary: argumentsOf(entry.inputSchema as JsonSchemaNode, target) },
        { weight: 1, arbitrary: hostileJson },
        { weight: 1, arbitrary: fc.constant(undefined) }
      ),
      requestId
    ).map(([args, id]): Envelope => ({
      label: `tools/call ${entry.name}`,
      tool: entry.name,
      id,
      body: { jsonrpc: "2.0", id, method: "tools/call", params: args === undefined ? { name: entry.name } : { name: entry.name, arguments: args } }
    }))
  )

/** Room for deep nesting in a `/mcp` body, the envelope and a tool's other arguments aside. */
const MCP_DEEP_ROOM = MCP_BODY_LIMIT_BYTES - 4 * 1024

/** `deep` as it sits in a member: the member itself, or one level down in an array or an object. */
const placed = (deep: DeepJson, wrapping: "as is" | "in an array" | "in an object"): unknown =>
  wrapping === "as is" ? deep : wrapping === "in an array" ? [deep] : { sign: "+", letter: "o", param: deep }

/**
 * A tools/call of every tool with deep nesting (at every depth up to the body limit) in one of its arguments, an
 * unknown key, or in place of the arguments object; the tool's other arguments as `argumentsOf` makes them.
 */
export const deepToolCall = (target: McpTarget): fc.Arbitrary<Envelope> =>
  fc.constantFrom(...toolListEntries).chain((entry) => {
    const schema = entry.inputSchema as JsonSchemaNode
    const fields: ReadonlyArray<string | undefined> = [...Object.keys(schema.properties ?? {}), "__proto__", "deep", undefined]
    return fc.tuple(
      argumentsOf(schema, target),
      fc.constantFrom(...fields),
      deepJson(MCP_DEEP_ROOM),
      fc.constantFrom("as is" as const, "as is" as const, "in an array" as const, "in an object" as const),
      requestId
    ).map(([args, field, deep, wrapping, id]): Envelope => {
      const value = placed(deep, wrapping)
      if (field !== undefined) Object.defineProperty(args, field, { value, enumerable: true, writable: true, configurable: true })
      return {
        label: `tools/call ${entry.name} deep ${field ?? "arguments"} ${wrapping} (${deep.kind} ${deep.depth})`,
        tool: entry.name,
        id,
        body: { jsonrpc: "2.0", id, method: "tools/call", params: { name: entry.name, arguments: field === undefined ? value : args } }
      }
    })
  })

/** Deep nesting in a member of the envelope itself: id, method, params, params.name, params._meta, initialize's params. */
const deepEnvelope: fc.Arbitrary<Envelope> = fc
  .tuple(
    fc.constantFrom("id", "jsonrpc", "method", "params", "params.name", "params._meta", "initialize params.protocolVersion", "initialize params.capabilities"),
    deepJson(MCP_DEEP_ROOM)
  )
  .map(([member, deep]) => {
    const body: Record<string, unknown> = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_networks" } }
    switch (member) {
      case "params.name":
        body["params"] = { name: deep }
        break
      case "params._meta":
        body["params"] = { name: "list_networks", _meta: deep }
        break
      case "initialize params.protocolVersion":
        Object.assign(body, { method: "initialize", params: { protocolVersion: deep, capabilities: {} } })
        break
      case "initialize params.capabilities":
        Object.assign(body, { method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: deep } })
        break
      default:
        body[member] = deep
    }
    return { label: `deep ${member} (${deep.kind} ${deep.depth})`, body }
  })

const otherMethod: fc.Arbitrary<Envelope> = fc
  .tuple(
    fc.constantFrom("initialize", "tools/list", "notifications/initialized", "ping", "tools/call", "resources/list", "Tools/List", "tools/list\u0000"),
    fc.option(hostileJson, { nil: undefined }),
    fc.option(requestId, { nil: undefined, freq: 5 })
  )
  .map(([method, params, id]) => {
    const body: Record<string, unknown> = { jsonrpc: "2.0", method }
    if (id !== undefined) body["id"] = id
    if (params !== undefined) body["params"] = params
    return { label: `method ${JSON.stringify(method)}`, body, ...(id === undefined ? {} : { id }) }
  })

/** Envelopes broken in one or more members, or not envelopes at all. */
const brokenEnvelope: fc.Arbitrary<Envelope> = fc.oneof(
  hostileJson.map((body) => ({ label: "not an envelope", body })),
  fc
    .record({
      jsonrpc: fc.oneof(fc.constant("2.0"), fc.constant("1.0"), fc.constant(2), hostileJson),
      id: fc.oneof(requestId, fc.constant(null), hostileJson),
      method: fc.oneof(fc.constantFrom("tools/call", "tools/list"), hostileJson),
      params: hostileJson,
      result: hostileJson,
      error: hostileJson
    }, { requiredKeys: [] })
    .map((body) => ({ label: "envelope with hostile members", body })),
  fc.array(fc.record({ jsonrpc: fc.constant("2.0"), id: fc.nat(), method: fc.constant("tools/list") }), { maxLength: 50 }).map((body) => ({
    label: "batch",
    body
  })),
  fc.record({ name: fc.oneof(edgeString, hostileJson), arguments: hostileJson }, { requiredKeys: [] }).map((params) => ({
    label: "tools/call with hostile params",
    body: { jsonrpc: "2.0", id: 1, method: "tools/call", params },
    id: 1
  }))
)

const printableAscii = fc.string({ unit: "grapheme-ascii", maxLength: 60 })

const MODERN_META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "fuzz", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {}
}

/** A 2026-07-28 `_meta`: mostly right, else with a field missing, wrong or hostile, or hostile as a whole. */
const modernMeta: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 8, arbitrary: fc.constant(MODERN_META) },
  {
    weight: 3,
    arbitrary: fc.record({
      "io.modelcontextprotocol/protocolVersion": fc.oneof(fc.constantFrom("2026-07-28", "2025-11-25", "v999"), hostileJson),
      "io.modelcontextprotocol/clientCapabilities": fc.oneof(fc.constant({}), hostileJson),
      "io.modelcontextprotocol/clientInfo": hostileJson,
      "io.modelcontextprotocol/logLevel": hostileJson
    }, { requiredKeys: [] })
  },
  { weight: 1, arbitrary: hostileJson }
)

/** A mirrored header's value: the right one, the right one in the base64 form, a broken base64 form, or any text. */
const mirrored = (right: string | undefined): fc.Arbitrary<string | undefined> => {
  const encoded = right === undefined ? undefined : `=?base64?${Buffer.from(right).toString("base64")}?=`
  // A value a header cannot carry as it is goes in the base64 form, as a client must send it.
  const plain = right === undefined || /^[\x20-\x7e]*$/.test(right) ? right : encoded
  return fc.oneof(
    { weight: 8, arbitrary: fc.constant(plain) },
    { weight: 2, arbitrary: fc.constant(encoded) },
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constantFrom("=?base64?SGVsbG8?=", "=?base64?!!?=", "=?base64??=", "tools/list", "TOOLS/CALL") },
    { weight: 1, arbitrary: printableAscii }
  )
}

/** `envelope` as a 2026-07-28 request: `_meta` in its params (when they are an object) and the mirrored headers. */
const modern = (envelope: fc.Arbitrary<Envelope>): fc.Arbitrary<Envelope> =>
  envelope.chain((inner) => {
    const body = isObject(inner.body) ? inner.body : undefined
    const method = typeof body?.["method"] === "string" ? body["method"] : undefined
    const params = body?.["params"]
    const name = isObject(params) && typeof params["name"] === "string" ? params["name"] : undefined
    return fc.tuple(
      modernMeta,
      fc.oneof({ weight: 8, arbitrary: fc.constant("2026-07-28") }, { weight: 1, arbitrary: fc.constantFrom(undefined, "v999", "2025-11-25") }),
      mirrored(method),
      mirrored(name)
    ).map(([meta, version, methodHeader, nameHeader]): Envelope => {
      const headers: Record<string, string> = {}
      if (version !== undefined) headers["mcp-protocol-version"] = version
      if (methodHeader !== undefined) headers["mcp-method"] = methodHeader
      if (nameHeader !== undefined) headers["mcp-name"] = nameHeader
      const withMeta = body !== undefined && (params === undefined || isObject(params))
        ? { ...body, params: { ...(isObject(params) ? params : {}), _meta: meta } }
        : inner.body
      return { ...inner, label: `2026-07-28 ${inner.label}`, body: withMeta, headers }
    })
  })

/** The methods of 2026-07-28, those Belay serves and those it answers 404. */
const modernMethod: fc.Arbitrary<Envelope> = fc
  .tuple(fc.constantFrom("server/discover", "subscriptions/listen", "initialize", "ping", "tools/list", "prompts/list"), requestId, fc.option(hostileJson, { nil: undefined }))
  .map(([method, id, extra]) => ({
    label: `method ${method}`,
    id,
    body: { jsonrpc: "2.0", id, method, params: extra === undefined ? {} : { cursor: extra } }
  }))

/** Mostly the valid token; sometimes none, a wrong one or a malformed header. */
const authorization = (token: string): fc.Arbitrary<string | undefined> =>
  fc.oneof(
    { weight: 18, arbitrary: fc.constant(`Bearer ${token}`) },
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constantFrom("Bearer", "Bearer ", "Basic YWxpY2U6eA==", `bearer ${token}`, `Bearer ${token}x`, `Bearer  ${token}`) },
    { weight: 1, arbitrary: printableAscii.map((s) => `Bearer ${s}`) }
  )

const protocolVersion = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom("2025-06-18", "2025-11-25", "2025-03-26") },
  { weight: 2, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.oneof(fc.constantFrom("2024-11-05", "2099-01-01", "", "latest"), printableAscii) }
)

export const mcpCase = (target: McpTarget): fc.Arbitrary<McpCase> =>
  fc
    .tuple(
      fc.oneof(
        { weight: 12, arbitrary: toolCall(target) },
        { weight: 4, arbitrary: deepToolCall(target) },
        { weight: 2, arbitrary: otherMethod },
        { weight: 3, arbitrary: brokenEnvelope },
        { weight: 1, arbitrary: deepEnvelope },
        { weight: 6, arbitrary: modern(toolCall(target)) },
        { weight: 2, arbitrary: modern(fc.oneof(modernMethod, otherMethod, deepToolCall(target))) }
      ),
      oneTimeIn(6, byteMutation),
      authorization(target.token),
      protocolVersion,
      fc.constantFrom("application/json", "application/json", "application/json; charset=utf-8", "text/plain", "")
    )
    .map(([envelope, mutation, auth, version, contentType]): McpCase => {
      const headers: Record<string, string> = { accept: "application/json, text/event-stream" }
      if (auth !== undefined) headers["authorization"] = auth
      if (version !== undefined) headers["mcp-protocol-version"] = version
      if (contentType !== "") headers["content-type"] = contentType
      if (envelope.headers !== undefined) {
        delete headers["mcp-protocol-version"]
        Object.assign(headers, envelope.headers)
      }
      const encoded = encodeJson(envelope.body)
      return {
        path: "/mcp",
        headers,
        body: mutation === undefined ? encoded : mutateBytes(encoded, mutation),
        label: mutation === undefined ? envelope.label : `${envelope.label}, bytes ${mutation.kind}`,
        mutated: mutation !== undefined,
        credential: auth === `Bearer ${target.token}`
          ? "valid"
          : auth !== undefined && new RegExp(`^bearer +${target.token}$`, "i").test(auth)
          ? "either"
          : "invalid",
        ...(envelope.tool === undefined || mutation !== undefined ? {} : { tool: envelope.tool }),
        ...(envelope.id === undefined || mutation !== undefined ? {} : { id: envelope.id })
      }
    })

/**
 * Requests agents poll, sent again under another id literal: a connection's body that differs from one it sent before
 * only in its id is not parsed again (src/http/mcp/RequestTemplates.ts). The literal is a valid id, or one JSON.parse
 * reads as another value or refuses (leading zeros, a fraction, an exponent, escapes, non-ASCII, past 2^53, not an id,
 * cut short, with spaces, or any text). Each is judged as a body parsed afresh would be: where the body is a request
 * with a valid id, `id` is that id, so the answer must carry it; otherwise it counts as mutated.
 */
export const sentAgainCase = (target: McpTarget): fc.Arbitrary<McpCase> => {
  const MARK = "\u0000id\u0000"
  const recent = { name: "recent_messages", arguments: { networkId: target.networkId, target: "#belay", limit: 5 } }
  const polls = [
    { label: "tools/list", tool: undefined, method: "tools/list", params: {} },
    { label: "recent_messages", tool: "recent_messages" as const, method: "tools/call", params: recent },
    { label: "list_networks, id last", tool: "list_networks" as const, method: "tools/call", params: { name: "list_networks" }, idLast: true }
  ].flatMap((poll) => [false, true].map((era2026) => {
    const params = era2026 ? { ...poll.params, _meta: MODERN_META } : poll.params
    const body = poll.idLast === true
      ? { method: poll.method, params, jsonrpc: "2.0", id: MARK }
      : { jsonrpc: "2.0", id: MARK, method: poll.method, params }
    const [prefix, suffix] = JSON.stringify(body).split(JSON.stringify(MARK)) as [string, string]
    const name = "name" in poll.params ? { "mcp-name": poll.params.name } : {}
    const headers: Record<string, string> = era2026
      ? { "mcp-protocol-version": "2026-07-28", "mcp-method": poll.method, ...name }
      : { "mcp-protocol-version": "2025-11-25" }
    return { label: `${era2026 ? "2026-07-28 " : ""}${poll.label}`, tool: poll.tool, prefix, suffix, headers }
  }))
  const literal = fc.oneof(
    { weight: 4, arbitrary: requestId.map((id) => JSON.stringify(id)) },
    {
      weight: 3,
      arbitrary: fc.constantFrom("01", "-0", "-01", "1.0", "1e2", "-", "+1", "9007199254740992", "-9007199254740992",
        "123456789012345678", "true", "null", "[1]", "{}", "\"a\\\"b\"", "\"\\u0041\"", "\"\u00e9\"", "\"a", "a\"", "1,\"x\":2", "",
        " 1", "1 ", "\"\\\\\"", "\"\t\"", "\"\u007f\"")
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 8 }) }
  )
  return fc.tuple(fc.constantFrom(...polls), literal).map(([poll, idText]): McpCase => {
    const text = `${poll.prefix}${idText}${poll.suffix}`
    let id: string | number | undefined
    try {
      const value: unknown = JSON.parse(text)
      const parsed = isObject(value) ? value["id"] : undefined
      if (typeof parsed === "string" || (typeof parsed === "number" && Number.isSafeInteger(parsed))) id = parsed
    } catch {
      id = undefined
    }
    return {
      path: "/mcp",
      headers: { accept: "application/json, text/event-stream", "content-type": "application/json", authorization: `Bearer ${target.token}`, ...poll.headers },
      body: Buffer.from(text),
      label: `${poll.label} sent again, id ${JSON.stringify(idText)}`,
      mutated: id === undefined,
      credential: "valid",
      ...(id === undefined ? {} : { id }),
      ...(id === undefined || poll.tool === undefined ? {} : { tool: poll.tool })
    }
  })
}

// --- The judge ---

const PROTOCOL_CODES = new Set([-32700, -32600, -32601, -32602, -32020, -32022])
/** 2026-07-28's codes, answered with 400 only (basic/index "Error Codes"). */
const MODERN_CODES = new Set([-32020, -32022])

/**
 * The most a refusal may take (a JSON-RPC error or an isError result): enough for 8 problems of 200 characters that are
 * all escapes, twice (the text item and structuredContent); far from the megabytes a refusal that echoed the value of
 * a 1 MiB body would be.
 */
export const MAX_REFUSAL_BYTES = 32 * 1024

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const resultDecoders = Object.fromEntries(
  toolListEntries.map((entry) => [entry.name, Schema.decodeUnknownEither(toolsByName[entry.name].output as Schema.Schema<unknown, unknown>)])
) as Record<ToolName, (u: unknown) => Either.Either<unknown, unknown>>
const decodeFailure = Schema.decodeUnknownEither(ToolFailurePayload)

const parse = (body: Buffer): unknown => {
  try {
    return JSON.parse(body.toString("utf8"))
  } catch {
    return undefined
  }
}

/** What is wrong with the answer to `request`, or undefined when it is one docs/contract.md allows. */
export const judgeMcp = (request: McpCase, outcome: RawOutcome): string | undefined => {
  if (outcome._tag === "Transport") return `no answer: ${outcome.message}`
  const { status, body } = outcome
  if (status >= 500) return `status ${status}: ${body.toString("utf8").slice(0, 200)}`
  if (status === 202) return body.length === 0 ? undefined : "202 with a body"
  if (!String(outcome.headers["content-type"] ?? "").startsWith("application/json")) return `status ${status} without JSON`
  const json = parse(body)
  if (!isObject(json)) return `status ${status}: the body is not a JSON object`
  if (status === 401) {
    if (request.credential === "valid") return "401 for the valid token"
    if (json["error"] !== "invalid_token" || typeof json["error_description"] !== "string") return "401 without {error: invalid_token}"
    return outcome.headers["www-authenticate"]?.startsWith("Bearer resource_metadata=") ? undefined : "401 without WWW-Authenticate"
  }
  if (request.credential === "invalid") return `status ${status} for a request without the valid token`
  if (status === 413 && request.body.length <= MCP_BODY_LIMIT_BYTES) return "413 for a body within the limit"
  if (![200, 400, 404, 413].includes(status)) return `status ${status}`
  if (json["jsonrpc"] !== "2.0" || !("id" in json)) return "not a JSON-RPC response"
  const error = json["error"]
  const refusal = error !== undefined || (isObject(json["result"]) && json["result"]["isError"] === true)
  // The request's own id is echoed, whatever its length (JSON-RPC 2.0 §5): the bound is on the rest of the answer.
  const echoedId = Buffer.byteLength(JSON.stringify(json["id"]) ?? "")
  if (refusal && body.length - echoedId > MAX_REFUSAL_BYTES) return `a refusal of ${body.length - echoedId} bytes besides the id`
  if (error !== undefined) {
    if ("result" in json) return "both result and error"
    if (!isObject(error) || typeof error["message"] !== "string" || !PROTOCOL_CODES.has(error["code"] as number)) {
      return `error member ${JSON.stringify(error).slice(0, 200)}`
    }
    if (status === 200 && (error["code"] === -32700 || error["code"] === -32600)) return `${error["code"]} with status 200`
    if (MODERN_CODES.has(error["code"] as number) && status !== 400) return `${error["code"]} with status ${status}`
    if (status === 404 && (error["code"] !== -32601 || request.headers["mcp-protocol-version"] === undefined)) {
      return `404 with ${error["code"]} (only a 2026-07-28 request's unknown method is 404)`
    }
    return undefined
  }
  if (status === 404) return "404 with a result"
  if (status !== 200) return `status ${status} with a result`
  if (request.id !== undefined && json["id"] !== request.id) return `id ${JSON.stringify(json["id"])} for ${JSON.stringify(request.id)}`
  const result = json["result"]
  if (!isObject(result)) return "result is not an object"
  if (request.tool === undefined) return undefined
  const content = result["content"]
  if (!Array.isArray(content) || content.length !== 1 || !isObject(content[0]) || content[0]["type"] !== "text") return "content is not one text item"
  const structured = result["structuredContent"]
  if (JSON.stringify(parse(Buffer.from(String(content[0]["text"])))) !== JSON.stringify(structured)) return "text and structuredContent differ"
  if (result["isError"] === true) {
    return Either.isRight(decodeFailure(structured)) ? undefined : `isError payload ${JSON.stringify(structured).slice(0, 200)}`
  }
  return Either.isRight(resultDecoders[request.tool](structured))
    ? undefined
    : `${request.tool} payload does not decode: ${JSON.stringify(structured).slice(0, 200)}`
}
