// ToolCatalog: what the MCP endpoint derives from the tool data of McpTools.ts — the
// tools/list entries with their JSON Schemas (built once, at module load, and also kept
// pre-serialized per scope so tools/list costs one string concatenation), the decoding of
// tools/call arguments into an invalid-arguments failure that names the offending field, and
// the tools/call result shapes. Pure and immutable after load; safe to share between requests.
//
// JSON Schema decisions:
// - Root `type: "object"`, no `$ref`/`$defs`/`$id` anywhere (generation throws otherwise, so a
//   bad Schema fails at startup and in tests, never in front of a client), no `$schema` (the
//   SDK client compiles outputSchema with a draft-07 Ajv, which rejects a 2020-12 `$schema`),
//   no auto-generated `title`s.
// - inputSchema: `additionalProperties: false`, matching the decoder, which refuses unknown keys.
// - outputSchema: `{type: "object", anyOf: [success, failure]}` — the SDK client validates the
//   structuredContent of isError results against outputSchema too — with additional
//   properties allowed, so a field added later does not break a client holding an old list.
import { Either, JSONSchema, ParseResult, Schema } from "effect"
import { showValue } from "./Ids.js"
import { listProblems } from "./ProblemList.js"
import type { JsonRpcId } from "./JsonRpc.js"
import {
  type AnyMcpTool,
  isToolName,
  McpTools,
  type ToolHints,
  type ToolInput,
  type ToolName,
  type ToolScope,
  toolsByName
} from "./McpTools.js"
import { InvalidArguments, type ToolFailure, ToolFailurePayload, toToolFailurePayload } from "./ToolErrors.js"

/** A JSON Schema whose root is an object schema, as MCP requires for inputSchema and outputSchema. */
export interface JsonSchemaObject {
  readonly type: "object"
  readonly [keyword: string]: unknown
}

/** One entry of a tools/list result (MCP `Tool`, 2025-06-18 / 2025-11-25). */
export interface ToolListEntry {
  readonly name: ToolName
  readonly title: string
  readonly description: string
  readonly inputSchema: JsonSchemaObject
  readonly outputSchema: JsonSchemaObject
  readonly annotations: ToolHints & { readonly title: string }
}

// --- JSON Schema generation ---

const SCHEMA_VALUED = new Set(["items", "additionalItems", "additionalProperties", "not", "propertyNames", "contains"])
const SCHEMA_ARRAY_VALUED = new Set(["anyOf", "allOf", "oneOf", "prefixItems"])
const SCHEMA_MAP_VALUED = new Set(["properties", "patternProperties"])
const FORBIDDEN = new Set(["$ref", "$defs", "definitions", "$id"])

/** Drops `title` and `$schema` at every schema position, drops empty `required`, refuses references. */
const tidy = (node: unknown, where: string): unknown => {
  if (typeof node !== "object" || node === null) return node
  if (Array.isArray(node)) return node.map((item, i) => tidy(item, `${where}/${i}`))
  const out: Record<string, unknown> = {}
  for (const [keyword, value] of Object.entries(node)) {
    if (FORBIDDEN.has(keyword)) {
      throw new Error(`JSON Schema at ${where} contains ${keyword}; give the Schema no identifier`)
    }
    if (keyword === "title" || keyword === "$schema" || keyword === "$comment") continue
    if (keyword === "required" && Array.isArray(value) && value.length === 0) continue
    if (SCHEMA_VALUED.has(keyword) || SCHEMA_ARRAY_VALUED.has(keyword)) {
      out[keyword] = tidy(value, `${where}/${keyword}`)
    } else if (SCHEMA_MAP_VALUED.has(keyword) && typeof value === "object" && value !== null) {
      out[keyword] = Object.fromEntries(
        Object.entries(value).map(([name, schema]) => [name, tidy(schema, `${where}/${keyword}/${name}`)])
      )
    } else {
      // enum, const, default, examples, required, bounds, pattern, format, description: data, kept as is
      out[keyword] = value
    }
  }
  return out
}

/**
 * The JSON Schema of a Schema's encoded side, as published to MCP clients: fully inlined, no
 * titles, no `$schema`. `additionalProperties` is "strict" (false) or "allow" (true) on every object.
 */
export const toJsonSchema = (
  schema: Schema.Schema.AnyNoContext,
  additionalProperties: "strict" | "allow" = "strict"
): Record<string, unknown> => {
  const definitions: Record<string, JSONSchema.JsonSchema7> = {}
  const raw = JSONSchema.fromAST(schema.ast, {
    definitions,
    topLevelReferenceStrategy: "skip",
    additionalPropertiesStrategy: additionalProperties
  })
  const defined = Object.keys(definitions)
  if (defined.length > 0) {
    throw new Error(`JSON Schema would need $defs for ${defined.join(", ")}; build those Schemas without identifiers`)
  }
  return tidy(raw, "#") as Record<string, unknown>
}

const asObjectSchema = (schema: Record<string, unknown>, what: string): JsonSchemaObject => {
  if (schema["type"] !== "object") throw new Error(`${what}: root of the JSON Schema is not type object`)
  return { ...schema, type: "object" }
}

// A tool without parameters publishes an empty object schema that refuses any property.
const inputSchemaOf = (tool: AnyMcpTool): JsonSchemaObject =>
  Object.keys(tool.input.fields).length === 0
    ? { type: "object", properties: {}, additionalProperties: false }
    : asObjectSchema(toJsonSchema(tool.input, "strict"), `${tool.name} inputSchema`)

const failureJsonSchema = toJsonSchema(ToolFailurePayload, "allow")

const outputSchemaOf = (tool: AnyMcpTool): JsonSchemaObject => ({
  type: "object",
  anyOf: [asObjectSchema(toJsonSchema(tool.output, "allow"), `${tool.name} outputSchema`), failureJsonSchema]
})

const entryOf = (tool: AnyMcpTool): ToolListEntry => ({
  name: tool.name,
  title: tool.title,
  description: tool.description,
  inputSchema: inputSchemaOf(tool),
  outputSchema: outputSchemaOf(tool),
  annotations: { title: tool.title, ...tool.hints }
})

/** Every tools/list entry, in McpTools order; built once at module load. */
export const toolListEntries: ReadonlyArray<ToolListEntry> = McpTools.map(entryOf)

const readEntries = toolListEntries.filter((entry) => toolsByName[entry.name].scope === "read")

/**
 * The tools a credential may see and call (interface "Authentication" 5 and 7): read → the 7
 * read tools; read-write → all 23. A paused account is treated as read. Stable order.
 */
export const toolsForScope = (scope: ToolScope): ReadonlyArray<ToolListEntry> =>
  scope === "read" ? readEntries : toolListEntries

/** The `result` member of a tools/list response, serialized once per scope. */
export const toolsListResultJson: { readonly [S in ToolScope]: string } = {
  read: JSON.stringify({ tools: readEntries }),
  "read-write": JSON.stringify({ tools: toolListEntries })
}

/**
 * What follows the request id in a tools/list response, per scope (McpDispatcher writes it behind the id). The ~54 KB
 * list is UTF-8 encoded once, at load, and a response is that buffer behind a few bytes that carry the request id:
 * re-encoding the list per request, or copying it into a new buffer with the id spliced in, was a visible share of
 * tools/list time (and of its GC).
 */
export const toolsListResponseSuffix: { readonly [S in ToolScope]: Buffer } = {
  read: Buffer.from(`,"result":${toolsListResultJson.read}}`),
  "read-write": Buffer.from(`,"result":${toolsListResultJson["read-write"]}}`)
}

/** A whole tools/list JSON-RPC response body, as the parts to write in order (HttpResponse.body). */
export const toolsListResponseParts = (scope: ToolScope, id: JsonRpcId): readonly [Buffer, Buffer] => [
  Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(id)}`),
  toolsListResponseSuffix[scope]
]

// --- tools/call arguments ---

interface ArgumentDecoder {
  readonly names: ReadonlyArray<string>
  readonly decode: (u: unknown) => Either.Either<unknown, ParseResult.ParseError>
}

// Built once per tool: Schema.decodeUnknownEither compiles its parser on creation.
const argumentDecoders: ReadonlyMap<string, ArgumentDecoder> = new Map(
  McpTools.map((tool): [string, ArgumentDecoder] => [
    tool.name,
    {
      names: Object.keys(tool.input.fields),
      decode: Schema.decodeUnknownEither(tool.input as Schema.Schema<unknown, unknown>, {
        errors: "all",
        onExcessProperty: "error"
      })
    }
  ])
)

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (acc, key) => (typeof key === "number" ? `${acc}[${key}]` : acc === "" ? String(key) : `${acc}.${String(key)}`),
    ""
  )

const formatIssue = (issue: ParseResult.ArrayFormatterIssue): string => {
  const where = issue.path.length === 0 ? "arguments" : formatPath(issue.path)
  switch (issue._tag) {
    case "Missing":
      return `${where}: is required`
    case "Unexpected":
      return `${where}: is not a known field`
    default:
      return `${where}: ${issue.message}`
  }
}

/** The message of an invalid-arguments failure: the problems (ProblemList), each prefixed by its field path. */
export const formatArgumentErrors = (error: ParseResult.ParseError): string =>
  listProblems(ParseResult.ArrayFormatter.formatErrorSync(error).map(formatIssue))

const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * Decodes the `arguments` of a tools/call for a known tool: defaults applied, or an
 * invalid-arguments failure whose message names each offending field, e.g.
 * `limit: must be an integer from 1 to 500, got 501`. Absent arguments count as `{}`.
 * An unknown tool name is the caller's -32602 (see `isToolName`), not a tool failure.
 */
export const decodeToolArguments = <N extends ToolName>(
  name: N,
  args: unknown
): Either.Either<ToolInput<N>, InvalidArguments> => {
  const input = args === undefined ? {} : args
  if (!isPlainObject(input)) {
    return Either.left(new InvalidArguments({ message: `arguments: must be an object, got ${showValue(input)}` }))
  }
  const decoder = argumentDecoders.get(name)
  if (decoder === undefined) throw new Error(`decodeToolArguments: ${name} is not a tool`)
  // Unknown keys are reported with the list of real ones, alongside every other problem.
  const known = decoder.names
  const unknown = Object.keys(input).filter((key) => !known.includes(key))
  const keyProblems = unknown.map((key) =>
    known.length === 0
      ? `${key}: is not an argument (${name} takes no arguments)`
      : `${key}: is not an argument of ${name} (it takes ${known.join(", ")})`
  )
  const decoded = decoder.decode(
    unknown.length === 0 ? input : Object.fromEntries(Object.entries(input).filter(([key]) => known.includes(key)))
  ) as Either.Either<ToolInput<N>, ParseResult.ParseError>
  // concat, not push(...): an array argument of 200,000 wrong items has as many problems, past the limit of arguments.
  const problems = Either.isLeft(decoded)
    ? keyProblems.concat(ParseResult.ArrayFormatter.formatErrorSync(decoded.left).map(formatIssue))
    : keyProblems
  return problems.length === 0 && Either.isRight(decoded)
    ? Either.right(decoded.right)
    : Either.left(new InvalidArguments({ message: listProblems(problems) }))
}

export { isToolName }

// --- tools/call results ---

/** A JSON text as a JSON string literal's contents: escaped, without the quotes. */
const escapedJson = (json: string): string => JSON.stringify(json).slice(1, -1)

/**
 * A tools/call result (docs/decisions/http-and-mcp.md): the payload as structuredContent and the same
 * payload as JSON in one text item (for clients older than 2025-06-18). Kept as the two texts
 * the response is written from (McpDispatcher.callResultBody), so that neither is made twice,
 * and encoded to UTF-8 once, when first written: a result given again (a polled page of
 * history whose buffer did not change) is written without being encoded again.
 */
export class CallToolResult {
  #bytes: readonly [escaped: Buffer, json: Buffer] | undefined
  constructor(
    /** The payload's JSON: structuredContent as written, and the text item's value. */
    readonly json: string,
    /** `json` escaped as the contents of a JSON string (no quotes): the text item as written. */
    readonly escaped: string,
    readonly isError?: true
  ) {}
  /** `escaped` and `json` as UTF-8. */
  bytes(): readonly [escaped: Buffer, json: Buffer] {
    return (this.#bytes ??= [Buffer.from(this.escaped), Buffer.from(this.json)])
  }
}

/** A part of a payload serialized ahead of the call: its JSON, and that JSON escaped as inside a JSON string. */
export interface SerializedPart {
  readonly json: string
  readonly escaped: string
}

export const serializedPart = (json: string): SerializedPart => ({ json, escaped: escapedJson(json) })

/**
 * A payload assembled from parts serialized earlier — a history page from records rendered once
 * (src/services/history/MessageRecord.ts) — as `head`, the items joined by commas, and `tail`. Its JSON
 * must be what JSON.stringify of the payload `A` would give; `A` only types which tool may return it.
 * A handler that returns the same SerializedPayload again answers with the same result, bytes included.
 */
export class SerializedPayload<A extends object> {
  declare readonly payload: A
  readonly result: CallToolResult
  constructor(head: string, items: ReadonlyArray<SerializedPart>, tail: string) {
    let json = head
    let escaped = escapedJson(head)
    for (let i = 0; i < items.length; i++) {
      const comma = i === 0 ? "" : ","
      json += comma + items[i]!.json
      escaped += comma + items[i]!.escaped
    }
    this.result = new CallToolResult(json + tail, escaped + escapedJson(tail))
  }
}

/** The result of a successful call; `payload` is the tool's output (`ToolOutput<N>`), as a value or serialized. */
export const toolSuccessResult = (payload: object): CallToolResult => {
  if (payload instanceof SerializedPayload) return payload.result
  const json = JSON.stringify(payload)
  return new CallToolResult(json, escapedJson(json))
}

/** The result of a failed call: isError true, payload per ToolErrors.toToolFailurePayload. */
export const toolFailureResult = (failure: ToolFailure): CallToolResult => {
  const json = JSON.stringify(toToolFailurePayload(failure))
  return new CallToolResult(json, escapedJson(json), true)
}
