// JsonRpc: the JSON-RPC 2.0 envelopes of POST /mcp, the protocol errors with their codes,
// and the MCP handshake data (protocol version negotiation, the initialize result, the four
// methods, tools/call params). Pure; no state.
//
// Decisions (docs/decisions/http-and-mcp.md "Protocol versions"):
// - 2025-era requests: the interface's four methods and ping; anything else is -32601 at HTTP 200.
// - 2026-07-28 requests (McpRequestMeta.ts says which are): their own errors, HeaderMismatch -32020 and
//   UnsupportedProtocolVersion -32022 at HTTP 400, an unknown method -32601 at HTTP 404.
// - Invalid JSON → -32700 with id null (HTTP 400); valid JSON that is not a request, a batch
//   array, or a request whose id is null or not a string/integer → -32600 (HTTP 400), carrying
//   the id when it could be read; a body nesting deeper than BoundedJson's JSON_MAX_DEPTH →
//   -32600 with id null (it is refused unparsed).
// - Unknown tool name, missing name, or params not shaped like CallToolRequest → -32602.
// - Envelopes ignore unknown members (a server is lenient in what it reads).
import { Either, Schema } from "effect"
import { JSON_MAX_DEPTH, parseBoundedJson } from "./BoundedJson.js"
import { showValue } from "./Ids.js"

export const JSONRPC_VERSION = "2.0"

/** MCP: request ids are strings or integers, never null (basic/index "Requests"). */
export const JsonRpcId = Schema.Union(Schema.String, Schema.Number.pipe(Schema.int()))
export type JsonRpcId = typeof JsonRpcId.Type

const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** A JSON object (not an array, not null). */
export const JsonObject = Schema.declare(isPlainObject, {
  description: "a JSON object",
  message: (issue) => `must be a JSON object, got ${showValue(issue.actual)}`
})

/** JSON-RPC 2.0 §4.2: params, when present, are structured — an object or an array. */
const Params = Schema.Union(JsonObject, Schema.Array(Schema.Unknown))

const Version = Schema.Literal(JSONRPC_VERSION)

export const JsonRpcRequest = Schema.Struct({
  jsonrpc: Version,
  id: JsonRpcId,
  method: Schema.String,
  params: Schema.optionalWith(Params, { exact: true })
})
export type JsonRpcRequest = typeof JsonRpcRequest.Type

export const JsonRpcNotification = Schema.Struct({
  jsonrpc: Version,
  method: Schema.String,
  params: Schema.optionalWith(Params, { exact: true })
})
export type JsonRpcNotification = typeof JsonRpcNotification.Type

export const JsonRpcErrorObject = Schema.Struct({
  code: Schema.Number.pipe(Schema.int()),
  message: Schema.String,
  data: Schema.optionalWith(Schema.Unknown, { exact: true })
})
export type JsonRpcErrorObject = typeof JsonRpcErrorObject.Type

export const JsonRpcSuccessResponse = Schema.Struct({
  jsonrpc: Version,
  id: JsonRpcId,
  result: Schema.Unknown
})
export type JsonRpcSuccessResponse = typeof JsonRpcSuccessResponse.Type

/** id is null only when the request's id could not be read (JSON-RPC 2.0 §5). */
export const JsonRpcErrorResponse = Schema.Struct({
  jsonrpc: Version,
  id: Schema.NullOr(JsonRpcId),
  error: JsonRpcErrorObject
})
export type JsonRpcErrorResponse = typeof JsonRpcErrorResponse.Type

/** A response the client posted (never expected here: it gets 202 and is dropped). */
export const JsonRpcResponse = Schema.Union(JsonRpcSuccessResponse, JsonRpcErrorResponse)
export type JsonRpcResponse = typeof JsonRpcResponse.Type

// --- Protocol errors: one class each, code and HTTP status on the class ---

/** The body was not valid JSON. */
export class ParseError extends Schema.TaggedError<ParseError>()("ParseError", {
  message: Schema.String
}) {
  static readonly code = -32700 as const
  static readonly httpStatus = 400 as const
}

/** Valid JSON, but not a single JSON-RPC 2.0 request or notification. Also an unsupported MCP-Protocol-Version header. */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  message: Schema.String,
  data: Schema.optionalWith(Schema.Unknown, { exact: true })
}) {
  static readonly code = -32600 as const
  static readonly httpStatus = 400 as const
}

export class MethodNotFound extends Schema.TaggedError<MethodNotFound>()("MethodNotFound", {
  method: Schema.String
}) {
  static readonly code = -32601 as const
  static readonly httpStatus = 200 as const
  override get message(): string {
    return `Method not found: ${this.method}`
  }
}

/** Params of a known method that do not fit it; for tools/call, also an unknown tool name (docs/decisions/http-and-mcp.md). */
export class InvalidParams extends Schema.TaggedError<InvalidParams>()("InvalidParams", {
  message: Schema.String
}) {
  static readonly code = -32602 as const
  static readonly httpStatus = 200 as const
}

/**
 * An unexpected failure while handling a valid request. Answered with HTTP 200 so that SDK
 * clients read it as a JSON-RPC error instead of a transport failure. Never carries details.
 */
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", {
  message: Schema.String
}) {
  static readonly code = -32603 as const
  static readonly httpStatus = 200 as const
}

/**
 * 2026-07-28 (transports/streamable-http "Server Validation"): an HTTP header that mirrors the body — MCP-Protocol-Version,
 * Mcp-Method, Mcp-Name — is missing, malformed, or names something else than the body.
 */
export class HeaderMismatch extends Schema.TaggedError<HeaderMismatch>()("HeaderMismatch", {
  message: Schema.String
}) {
  static readonly code = -32020 as const
  static readonly httpStatus = 400 as const
}

/**
 * 2026-07-28 (basic/versioning "Protocol Version Negotiation"): the request's protocol version is not one Belay serves
 * that way; `data` lists those it serves (`supported`) and echoes the one asked for (`requested`).
 */
export class UnsupportedProtocolVersion extends Schema.TaggedError<UnsupportedProtocolVersion>()("UnsupportedProtocolVersion", {
  requested: Schema.String
}) {
  static readonly code = -32022 as const
  static readonly httpStatus = 400 as const
  override get message(): string {
    return `Unsupported protocol version ${showValue(this.requested)}; supported: ${ALL_PROTOCOL_VERSIONS.join(", ")}`
  }
}

export const JsonRpcProtocolError = Schema.Union(
  ParseError,
  InvalidRequest,
  MethodNotFound,
  InvalidParams,
  InternalError,
  HeaderMismatch,
  UnsupportedProtocolVersion
)
export type JsonRpcProtocolError = typeof JsonRpcProtocolError.Type

const codeOf: { readonly [K in JsonRpcProtocolError["_tag"]]: number } = {
  ParseError: ParseError.code,
  InvalidRequest: InvalidRequest.code,
  MethodNotFound: MethodNotFound.code,
  InvalidParams: InvalidParams.code,
  InternalError: InternalError.code,
  HeaderMismatch: HeaderMismatch.code,
  UnsupportedProtocolVersion: UnsupportedProtocolVersion.code
}

const httpStatusOf: { readonly [K in JsonRpcProtocolError["_tag"]]: 200 | 400 } = {
  ParseError: ParseError.httpStatus,
  InvalidRequest: InvalidRequest.httpStatus,
  MethodNotFound: MethodNotFound.httpStatus,
  InvalidParams: InvalidParams.httpStatus,
  InternalError: InternalError.httpStatus,
  HeaderMismatch: HeaderMismatch.httpStatus,
  UnsupportedProtocolVersion: UnsupportedProtocolVersion.httpStatus
}

/**
 * The HTTP status to answer a 2025-era request's protocol error with (docs/decisions/http-and-mcp.md: -32700 and
 * -32600 are 400; the rest 200, which the 1.x SDK client reads as a JSON-RPC error rather than a transport failure).
 */
export const httpStatusOfProtocolError = (error: JsonRpcProtocolError): 200 | 400 => httpStatusOf[error._tag]

/**
 * The same for a 2026-07-28 request: an unknown method is 404 (transports/streamable-http "Protocol Version Header"),
 * so that a client tells a modern server without the method from a legacy one.
 */
export const httpStatusOfModernError = (error: JsonRpcProtocolError): 200 | 400 | 404 =>
  error._tag === "MethodNotFound" ? 404 : httpStatusOf[error._tag]

/** The JSON-RPC `error` member for a protocol error. */
export const toJsonRpcErrorObject = (error: JsonRpcProtocolError): JsonRpcErrorObject =>
  error._tag === "InvalidRequest" && error.data !== undefined
    ? { code: codeOf[error._tag], message: error.message, data: error.data }
    : error._tag === "UnsupportedProtocolVersion"
    ? { code: codeOf[error._tag], message: error.message, data: { supported: [...ALL_PROTOCOL_VERSIONS], requested: error.requested } }
    : { code: codeOf[error._tag], message: error.message }

export const jsonRpcErrorResponse = (id: JsonRpcId | null, error: JsonRpcProtocolError): JsonRpcErrorResponse => ({
  jsonrpc: JSONRPC_VERSION,
  id,
  error: toJsonRpcErrorObject(error)
})

export const jsonRpcSuccessResponse = (id: JsonRpcId, result: unknown): JsonRpcSuccessResponse => ({
  jsonrpc: JSONRPC_VERSION,
  id,
  result
})

// --- Reading a body ---

/** What a parsed POST /mcp body is, once it is known to be well-formed. */
export type Incoming =
  | { readonly _tag: "Request"; readonly request: JsonRpcRequest }
  | { readonly _tag: "Notification"; readonly notification: JsonRpcNotification }
  | { readonly _tag: "Response"; readonly response: JsonRpcResponse }

/** A refused body: the error and the id to answer with (null when none could be read). */
export interface RejectedIncoming {
  readonly id: JsonRpcId | null
  readonly error: InvalidRequest
}

const isRequest = Schema.is(JsonRpcRequest)
const isNotification = Schema.is(JsonRpcNotification)
const isResponse = Schema.is(JsonRpcResponse)
/**
 * Schema.is(JsonRpcId), written out: it runs on every request, where the Schema's parser cost a few per cent of a
 * tools/list (the test of decodeIncoming holds the two to the same answers).
 */
const isId = (u: unknown): u is JsonRpcId => typeof u === "string" || (typeof u === "number" && Number.isSafeInteger(u))

/**
 * Parses the raw body text; invalid JSON is -32700, JSON nesting deeper than JSON_MAX_DEPTH -32600 (measured before
 * parsing, so no id is read: both answer with id null). Past the bound nothing looks into the body: the decoders and
 * the messages that show a value recurse (BoundedJson).
 */
export const parseJsonBody = (text: string): Either.Either<unknown, ParseError | InvalidRequest> =>
  Either.mapLeft(parseBoundedJson(text), (refusal) =>
    refusal === "too-deep"
      ? new InvalidRequest({ message: `Invalid Request: the JSON nests deeper than ${JSON_MAX_DEPTH} levels` })
      : new ParseError({ message: "Parse error: the body is not valid JSON" }))

/**
 * Classifies a parsed body: a request (has `id`), a notification (no `id`), or a response the
 * client sent; anything else — a batch array included — is -32600.
 */
export const decodeIncoming = (body: unknown): Either.Either<Incoming, RejectedIncoming> => {
  const reject = (message: string, id: JsonRpcId | null = null) =>
    Either.left<RejectedIncoming>({ id, error: new InvalidRequest({ message: `Invalid Request: ${message}` }) })
  if (Array.isArray(body)) return reject("batch arrays are not supported; send one JSON-RPC message per POST")
  if (!isPlainObject(body)) return reject("the body must be a JSON-RPC 2.0 object")
  const id = isId(body["id"]) ? body["id"] : null
  if (body["jsonrpc"] !== JSONRPC_VERSION) return reject('jsonrpc must be "2.0"', id)
  if ("method" in body) {
    if (typeof body["method"] !== "string") return reject("method must be a string", id)
    if ("params" in body && !isPlainObject(body["params"]) && !Array.isArray(body["params"])) {
      return reject("params must be an object or an array", id)
    }
    // With jsonrpc, method and params checked above, the body is a request exactly when its id is one: the Schema's
    // guard says so once more and gives the type (it runs for a body not sent before: RequestTemplates).
    if ("id" in body) {
      return isRequest(body)
        ? Either.right({ _tag: "Request", request: body })
        : reject("id must be a string or an integer", null)
    }
    return isNotification(body) ? Either.right({ _tag: "Notification", notification: body }) : reject("malformed", id)
  }
  if (isResponse(body)) return Either.right({ _tag: "Response", response: body })
  return reject("method is missing", id)
}

// --- MCP: methods, versions, handshake ---

/** Interface "MCP endpoint": exactly these four. */
export const MCP_METHODS = ["initialize", "notifications/initialized", "tools/list", "tools/call"] as const
export type McpMethod = (typeof MCP_METHODS)[number]
export const isMcpMethod = (method: string): method is McpMethod => (MCP_METHODS as ReadonlyArray<string>).includes(method)

/** Newest first. */
export const SUPPORTED_PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"] as const
export type ProtocolVersion = (typeof SUPPORTED_PROTOCOL_VERSIONS)[number]
export const LATEST_PROTOCOL_VERSION: ProtocolVersion = "2025-11-25"
/** Streamable HTTP (2025-06-18+): a request without MCP-Protocol-Version is taken as 2025-03-26. */
export const DEFAULT_HEADER_PROTOCOL_VERSION: ProtocolVersion = "2025-03-26"

export const isSupportedProtocolVersion = (u: unknown): u is ProtocolVersion =>
  typeof u === "string" && (SUPPORTED_PROTOCOL_VERSIONS as ReadonlyArray<string>).includes(u)

/** The revision served statelessly, with per-request `_meta` (McpRequestMeta.ts); no initialize. */
export const MODERN_PROTOCOL_VERSION = "2026-07-28"

/**
 * Every version Belay serves, newest first: server/discover's `supportedVersions` and the `supported` list of an
 * UnsupportedProtocolVersion error (basic/versioning: a dual-era server names both eras).
 */
export const ALL_PROTOCOL_VERSIONS: ReadonlyArray<string> = [MODERN_PROTOCOL_VERSION, ...SUPPORTED_PROTOCOL_VERSIONS]

/**
 * Lifecycle "Version Negotiation": echo a supported requested version, otherwise answer our
 * latest (not an error; the client decides whether it can go on).
 */
export const negotiateProtocolVersion = (requested: unknown): ProtocolVersion =>
  isSupportedProtocolVersion(requested) ? requested : LATEST_PROTOCOL_VERSION

export const SERVER_NAME = "belay"

/** Sent with initialize; clients may show it to the model. */
export const SERVER_INSTRUCTIONS =
  "Belay is an IRC bouncer: it stays connected to the member's IRC networks and stores every message. " +
  "Start with list_networks (network ids, connection state, current nick) and list_buffers. Read history with " +
  "recent_messages (oldest first; page back with before). Nothing is pushed: poll recent_messages for new messages. " +
  "IRC actions are asynchronous: server replies (WHOIS, refusals, nick changes, connection events) arrive as " +
  "messages in the server buffer :server:<networkId>, readable with recent_messages. A failed tool call returns " +
  "isError true with {ok: false, error, message}."

export interface InitializeResult {
  readonly protocolVersion: ProtocolVersion
  readonly capabilities: { readonly tools: Record<string, never> }
  readonly serverInfo: { readonly name: string; readonly version: string }
  readonly instructions: string
}

/** The initialize result; `params` is the request's params as received (protocolVersion may be anything). */
export const initializeResult = (params: unknown, serverVersion: string): InitializeResult => ({
  protocolVersion: negotiateProtocolVersion(isPlainObject(params) ? params["protocolVersion"] : undefined),
  capabilities: { tools: {} },
  serverInfo: { name: SERVER_NAME, version: serverVersion },
  instructions: SERVER_INSTRUCTIONS
})

/** tools/call params (MCP CallToolRequest): `arguments` may be absent, else must be an object. */
export const CallToolParams = Schema.Struct({
  name: Schema.String,
  arguments: Schema.optionalWith(JsonObject, { exact: true }),
  _meta: Schema.optionalWith(Schema.Unknown, { exact: true })
})
export type CallToolParams = typeof CallToolParams.Type

const decodeCallToolParamsEither = Schema.decodeUnknownEither(CallToolParams)

/** tools/call params, or -32602 naming what is wrong. The tool name is checked by the caller (see `unknownTool`). */
export const decodeCallToolParams = (params: unknown): Either.Either<CallToolParams, InvalidParams> => {
  if (!isPlainObject(params)) {
    return Either.left(new InvalidParams({ message: "Invalid params: tools/call needs params {name, arguments}" }))
  }
  const name = params["name"]
  if (typeof name !== "string") {
    return Either.left(new InvalidParams({ message: "Invalid params: tool name is missing (params.name)" }))
  }
  // What the Schema decodes, written out for well-formed params: it runs on every tools/call, where the Schema's
  // parser cost a measured share of a poll answered from memory. Only refusals go through the Schema, which words them.
  const hasArguments = Object.hasOwn(params, "arguments")
  if (!hasArguments || isPlainObject(params["arguments"])) {
    const decoded: { -readonly [K in keyof CallToolParams]: CallToolParams[K] } = { name }
    if (hasArguments) decoded.arguments = params["arguments"] as NonNullable<CallToolParams["arguments"]>
    if (Object.hasOwn(params, "_meta")) decoded._meta = params["_meta"]
    return Either.right(decoded)
  }
  return Either.mapLeft(
    decodeCallToolParamsEither(params),
    () => new InvalidParams({ message: "Invalid params: arguments must be an object" })
  )
}

/** docs/decisions/http-and-mcp.md: an unknown tool name is JSON-RPC -32602 (tools spec "Error Handling"). */
export const unknownTool = (name: string): InvalidParams =>
  new InvalidParams({ message: `Unknown tool: ${showValue(name)}` })
