/**
 * McpCalls owns how the bench speaks to Belay's /mcp: the headers of an authenticated request (Bearer token, the
 * MCP protocol version), JSON-RPC bodies for tools/list and tools/call in both protocol eras, and the check that an answer is a 200 with a
 * result that is not a tool failure. Pure apart from `probe`, one request by hand.
 *
 * Concurrency rule: none of its own; `probe` is one fetch.
 */
import type { RunningBelay } from "./Belay.js"

export const PROTOCOL_VERSION = "2025-11-25"

export const rpc = (method: string, params: Record<string, unknown>) =>
  JSON.stringify({ jsonrpc: "2.0", id: 1, method, params })

export const callBody = (name: string, args: Record<string, unknown>) => rpc("tools/call", { name, arguments: args })

export const headers = (token: string) => ({
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  authorization: `Bearer ${token}`,
  "mcp-protocol-version": PROTOCOL_VERSION
})

/** The revision served statelessly: every request carries `_meta` and mirrors its method (and tool) in headers. */
export const MODERN_PROTOCOL_VERSION = "2026-07-28"

const MODERN_META = {
  "io.modelcontextprotocol/protocolVersion": MODERN_PROTOCOL_VERSION,
  "io.modelcontextprotocol/clientInfo": { name: "belay-bench", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {}
}

/** A 2026-07-28 request: its body and the headers it needs beside `headers(token)`'s (docs/contract.md "MCP 2026-07-28"). */
export const modernRpc = (token: string, method: string, params: Record<string, unknown>) => ({
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { ...params, _meta: MODERN_META } }),
  headers: {
    ...headers(token),
    "mcp-protocol-version": MODERN_PROTOCOL_VERSION,
    "mcp-method": method,
    ...(typeof params["name"] === "string" ? { "mcp-name": params["name"] } : {})
  }
})

export const modernCall = (token: string, name: string, args: Record<string, unknown>) =>
  modernRpc(token, "tools/call", { name, arguments: args })

export interface RpcAnswer {
  readonly result?: {
    readonly isError?: boolean
    readonly tools?: ReadonlyArray<unknown>
    readonly structuredContent?: { readonly messages?: ReadonlyArray<{ readonly id: number }> }
  }
}

/** Fails unless the answer is a 200 with a JSON-RPC result that is not a tool failure. */
export const checkAnswer = (status: number, text: string): RpcAnswer => {
  if (status !== 200) throw new Error(`POST /mcp answered ${status}: ${text.slice(0, 500)}`)
  const parsed = JSON.parse(text) as RpcAnswer
  if (!parsed.result || parsed.result.isError) throw new Error(`POST /mcp failed: ${text.slice(0, 500)}`)
  return parsed
}

/** One request by hand: the JSON-RPC result and the body size the load will see. */
export const probe = async (belay: RunningBelay, token: string, body: string, with2026?: Record<string, string>) => {
  const res = await fetch(`${belay.url}/mcp`, { method: "POST", headers: with2026 ?? headers(token), body })
  const text = await res.text()
  return { text, bytes: Buffer.byteLength(text), result: checkAnswer(res.status, text).result! }
}
