/**
 * RequestTemplates: the /mcp requests a connection sent lately, kept as the bytes around their id, so that the same
 * request sent again under another id — an agent polling tools/list or recent_messages; MCP clients number their
 * requests and write them with JSON.stringify — is read without parsing its JSON again. Parsing was the largest part of
 * reading a request, and most of what a 2026-07-28 request costs beyond a 2025 one: its `_meta` (protocol version,
 * client information, capabilities) is the same in every request of a client (docs/decisions/http-and-mcp.md "A
 * request sent again is not parsed again").
 *
 * Exact: a template is made only from a body that is its own value's JSON.stringify (compact, members in their order,
 * strings escaped as JSON.stringify escapes them), as the text before the top-level id's value and the text after it.
 * A body matches when its bytes are that prefix, an id literal (a safe integer in canonical form, or a string of
 * printable ASCII without escapes) and that suffix; JSON.parse would give the kept value with that id, so the request
 * is the kept one with its id replaced, and McpRoute's envelope checks would pass again. Everything that depends on the
 * headers (the era, the 2026-07-28 checks) and on the credential is still judged by each request's own (McpRoute keeps
 * the checks' outcome only for the very headers it was reached with).
 *
 * What is kept: only requests whose content McpRoute may keep (`learn`'s caller decides: tools/list, server/discover
 * and calls of read-only tools, never a write's arguments, as DecodedArguments), of bodies at most TEMPLATE_MAX_BYTES,
 * at most TEMPLATES_PER_CONNECTION a connection (the newest first), dropped with the connection (a WeakMap keyed by
 * its socket). The kept values are frozen, deeply: every request made from a template shares them.
 *
 * Concurrency rule: one WeakMap per route, changed by synchronous calls only.
 */
import type { JsonRpcId, JsonRpcRequest } from "../../schema/JsonRpc.js"

/** Polls' bodies are a few hundred bytes; a template holds its body about twice (bytes and value). */
export const TEMPLATE_MAX_BYTES = 1024
/** An agent alternates a few polls on one connection (tools/list, recent_messages of a few buffers). */
export const TEMPLATES_PER_CONNECTION = 4

interface Template {
  readonly prefix: Buffer
  readonly suffix: Buffer
  readonly request: JsonRpcRequest
}

/**
 * Stands for the id while a template is cut from the body's text. Its JSON is found once in the marked text, at the
 * id, unless the body holds the same string as a value of its own; then it is found twice and nothing is kept.
 */
const MARKER = "\u0000belay-request-id\u0000"
const MARKER_JSON = JSON.stringify(MARKER)

const QUOTE = 0x22
const BACKSLASH = 0x5c
const MINUS = 0x2d
const ZERO = 0x30
const NINE = 0x39
/** "-9007199254740991": the longest safe integer literal. */
const MAX_INTEGER_CHARS = 17

/** The id the literal `body[start, end)` stands for, if it is one a template accepts; else undefined. */
const idAt = (body: Buffer, start: number, end: number): JsonRpcId | undefined => {
  if (end <= start) return undefined
  if (body[start] === QUOTE) {
    if (end - start < 2 || body[end - 1] !== QUOTE) return undefined
    for (let i = start + 1; i < end - 1; i++) {
      const c = body[i]!
      if (c < 0x20 || c > 0x7e || c === QUOTE || c === BACKSLASH) return undefined
    }
    return body.toString("latin1", start + 1, end - 1)
  }
  if (end - start > MAX_INTEGER_CHARS) return undefined
  const digits = body[start] === MINUS ? start + 1 : start
  if (digits === end || (body[digits] === ZERO && end - digits > 1)) return undefined
  // Read digit by digit, without a string: every value up to a safe integer's is exact on the way, and a literal past
  // the largest safe integer reads as a number past it too, refused below.
  let magnitude = 0
  for (let i = digits; i < end; i++) {
    const c = body[i]!
    if (c < ZERO || c > NINE) return undefined
    magnitude = magnitude * 10 + (c - ZERO)
  }
  const id = digits === start ? magnitude : -magnitude
  return Number.isSafeInteger(id) ? id : undefined
}

/**
 * Up to this many bytes a loop compares for less than the call into Buffer.compare (measured on Node 20: 52 against 86
 * ns at 35 bytes, a 2025-era tools/list's suffix); past it the native compare costs the less (84 against 557 ns at 220
 * bytes, a 2026-07-28 request's suffix with its `_meta`).
 */
const LOOP_COMPARE_MAX_BYTES = 48

/** Whether `body` holds `part` at `at`. */
const sameBytes = (body: Buffer, at: number, part: Buffer): boolean => {
  if (part.length > LOOP_COMPARE_MAX_BYTES) return body.compare(part, 0, part.length, at, at + part.length) === 0
  for (let i = 0; i < part.length; i++) if (body[at + i] !== part[i]) return false
  return true
}

/** The kept request under `id`: made member by member, in one of two shapes, rather than spread from the kept one. */
const withId = (kept: JsonRpcRequest, id: JsonRpcId): JsonRpcRequest =>
  kept.params === undefined
    ? { jsonrpc: kept.jsonrpc, id, method: kept.method }
    : { jsonrpc: kept.jsonrpc, id, method: kept.method, params: kept.params }

/** Freezes a parsed JSON value and everything in it (its depth is bounded: BoundedJson). */
const deepFreeze = (value: unknown): void => {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return
  Object.freeze(value)
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key])
}

export interface RequestTemplates {
  /** The request `body` stands for, when it is a kept request of `connection` under another id; else undefined. */
  readonly match: (connection: object | undefined, body: Buffer) => JsonRpcRequest | undefined
  /**
   * Keeps `request`, parsed from `body` (whose text is `text`), for `connection`, if the body is exactly its value's
   * JSON and small enough. Freezes `request`.
   */
  readonly learn: (connection: object | undefined, body: Buffer, text: string, request: JsonRpcRequest) => void
}

export const makeRequestTemplates = (): RequestTemplates => {
  const byConnection = new WeakMap<object, Array<Template>>()

  const match = (connection: object | undefined, body: Buffer): JsonRpcRequest | undefined => {
    if (connection === undefined || body.length > TEMPLATE_MAX_BYTES) return undefined
    const kept = byConnection.get(connection)
    if (kept === undefined) return undefined
    for (const template of kept) {
      const prefix = template.prefix.length
      const suffix = template.suffix.length
      if (body.length <= prefix + suffix) continue
      if (!sameBytes(body, 0, template.prefix) || !sameBytes(body, body.length - suffix, template.suffix)) continue
      const id = idAt(body, prefix, body.length - suffix)
      if (id === undefined) continue
      return withId(template.request, id)
    }
    return undefined
  }

  const learn = (connection: object | undefined, body: Buffer, text: string, request: JsonRpcRequest): void => {
    if (connection === undefined || body.length > TEMPLATE_MAX_BYTES) return
    // The same value with the marker for its id, members in the same order: its JSON.stringify is the request's with
    // the marker's JSON where the id's is.
    const marked = JSON.stringify({ ...request, id: MARKER })
    const at = marked.indexOf(MARKER_JSON)
    if (at < 0 || marked.indexOf(MARKER_JSON, at + 1) >= 0) return
    const prefix = marked.slice(0, at)
    const suffix = marked.slice(at + MARKER_JSON.length)
    const id = JSON.stringify(request.id)
    // Only a body that is exactly JSON.stringify of its value, that is prefix, id and suffix.
    if (
      text.length !== prefix.length + id.length + suffix.length || !text.startsWith(prefix) ||
      !text.startsWith(id, prefix.length) || !text.endsWith(suffix)
    ) return
    deepFreeze(request)
    const template: Template = { prefix: Buffer.from(prefix), suffix: Buffer.from(suffix), request }
    const kept = byConnection.get(connection)
    if (kept === undefined) {
      byConnection.set(connection, [template])
      return
    }
    kept.unshift(template)
    if (kept.length > TEMPLATES_PER_CONNECTION) kept.pop()
  }

  return { match, learn }
}
