// McpRequestMeta: how a POST /mcp request says which protocol era it speaks, and, for revision 2026-07-28, the
// checks of what it must carry — the per-request `_meta` (basic/index "_meta": protocol version and client
// capabilities required) and the HTTP headers that mirror the body (transports/streamable-http "Request Metadata":
// MCP-Protocol-Version, Mcp-Method, Mcp-Name, the latter possibly in the `=?base64?…?=` form). Pure; no state.
// Each check returns undefined when the request passes, so a valid request allocates nothing here.
//
// docs/decisions/http-and-mcp.md "Two eras on one endpoint": a request is 2025-era when it carries no per-request
// protocol version in `_meta` and its MCP-Protocol-Version header is absent or a 2025 version (an `initialize` keeps
// ignoring a header that is not 2026-07-28, as it always did); everything else is judged by 2026-07-28's rules.
import { showValue } from "./Ids.js"
import {
  HeaderMismatch,
  InvalidParams,
  isSupportedProtocolVersion,
  MODERN_PROTOCOL_VERSION,
  UnsupportedProtocolVersion
} from "./JsonRpc.js"

export const PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
export const CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
export const SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"

export type Era = "2025" | "2026"

/** The headers of a request that mirror its body, as node hands them over (names lower-cased, OWS trimmed). */
export interface MirrorHeaders {
  readonly protocolVersion: string | undefined
  readonly method: string | undefined
  readonly name: string | undefined
}

/** What a 2026-07-28 request is refused with: always HTTP 400 (basic/index "_meta"; streamable-http "Server Validation"). */
export type MetaRefusal = HeaderMismatch | UnsupportedProtocolVersion | InvalidParams

const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const metaOf = (params: unknown): Record<string, unknown> | undefined => {
  if (!isPlainObject(params)) return undefined
  const meta = params["_meta"]
  return isPlainObject(meta) ? meta : undefined
}

/** The era a request belongs to (module comment). */
export const eraOf = (method: string, params: unknown, protocolVersionHeader: string | undefined): Era => {
  if (metaOf(params)?.[PROTOCOL_VERSION_KEY] !== undefined) return "2026"
  if (protocolVersionHeader === undefined || isSupportedProtocolVersion(protocolVersionHeader)) return "2025"
  return method === "initialize" && protocolVersionHeader !== MODERN_PROTOCOL_VERSION ? "2025" : "2026"
}

/** Methods whose target is mirrored in Mcp-Name, and the params member it comes from (streamable-http "Standard Request Headers"). */
const NAME_SOURCE: Readonly<Record<string, "name" | "uri">> = { "tools/call": "name", "prompts/get": "name", "resources/read": "uri" }

const SENTINEL_START = "=?base64?"
const SENTINEL_END = "?="
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
/** RFC 9110 §5.5: visible ASCII, space and tab. */
const PLAIN_FIELD_VALUE = /^[\x20-\x7e\t]*$/
const UTF8 = new TextDecoder("utf-8", { fatal: true })

/**
 * A Mcp-Name value as the text it stands for: the base64 form decoded (streamable-http "Value Encoding"), a plain value
 * as it is; undefined when it is malformed (bad base64, characters outside a field value, or bytes that are not UTF-8).
 */
export const decodeMirroredValue = (value: string): string | undefined => {
  if (value.startsWith(SENTINEL_START) && value.endsWith(SENTINEL_END) && value.length >= SENTINEL_START.length + SENTINEL_END.length) {
    const encoded = value.slice(SENTINEL_START.length, value.length - SENTINEL_END.length)
    if (!BASE64.test(encoded)) return undefined
    try {
      return UTF8.decode(Buffer.from(encoded, "base64"))
    } catch {
      return undefined
    }
  }
  return PLAIN_FIELD_VALUE.test(value) ? value.trim() : undefined
}

const mismatch = (message: string) => new HeaderMismatch({ message: `Header mismatch: ${message}` })

/**
 * The checks of a 2026-era request, in this order: MCP-Protocol-Version present and equal to `_meta`'s version
 * (-32020), that version served statelessly (-32022), `_meta` with its required fields (-32602), Mcp-Method equal to
 * the method (-32020), Mcp-Name equal to the name or uri of a method that has one (-32020). Mcp-Param-* headers are
 * not checked: no tool of Belay's declares `x-mcp-header`, so none is recognised, and the transport says to ignore
 * those (streamable-http "Server Behavior for Custom Headers").
 */
export const checkModernRequest = (method: string, params: unknown, headers: MirrorHeaders): MetaRefusal | undefined => {
  const meta = metaOf(params)
  const version = meta?.[PROTOCOL_VERSION_KEY]
  const header = headers.protocolVersion
  if (header === undefined) return mismatch("the MCP-Protocol-Version header is required")
  if (version !== undefined && version !== header) {
    return mismatch(`MCP-Protocol-Version ${showValue(header)} does not match _meta protocolVersion ${showValue(version)}`)
  }
  if (header !== MODERN_PROTOCOL_VERSION) return new UnsupportedProtocolVersion({ requested: header })
  if (meta === undefined) return new InvalidParams({ message: "Invalid params: params._meta is required" })
  if (typeof version !== "string") {
    return new InvalidParams({ message: `Invalid params: _meta must carry "${PROTOCOL_VERSION_KEY}"` })
  }
  if (!isPlainObject(meta[CLIENT_CAPABILITIES_KEY])) {
    return new InvalidParams({ message: `Invalid params: _meta must carry "${CLIENT_CAPABILITIES_KEY}" (an object)` })
  }
  if (headers.method === undefined) return mismatch("the Mcp-Method header is required")
  if (headers.method !== method) {
    return mismatch(`Mcp-Method ${showValue(headers.method)} does not match the method ${showValue(method)}`)
  }
  const source = NAME_SOURCE[method]
  if (source === undefined) return undefined
  const named = (params as Record<string, unknown>)[source]
  if (headers.name === undefined) {
    return typeof named === "string" ? mismatch(`the Mcp-Name header is required for ${method}`) : undefined
  }
  const decoded = decodeMirroredValue(headers.name)
  if (decoded === undefined) return mismatch("Mcp-Name is malformed")
  return decoded === named ? undefined : mismatch(`Mcp-Name ${showValue(decoded)} does not match params.${source} ${showValue(named)}`)
}
