/**
 * HttpLimits: the bounds of the HTTP listener (HttpServer.ts) — its timeouts, sizes and connection count — as
 * constants with the reason for each, and the layer-provided settings that tests shrink. Pure data.
 */
import { Context } from "effect"

/**
 * The bounds of the listener (docs/decisions/http-and-mcp.md "Slow and abandoned connections"). Wall-clock timers of node:http and
 * of the body reader, not Effect's Clock: they guard the transport against real clients, and a test that moves
 * TestClock a day must not time out the requests it is making.
 */
export interface HttpLimitsSettings {
  /** node:http `headersTimeout`: all headers must arrive within this of the connection or the request starting. */
  readonly headersTimeoutMs: number
  /**
   * node:http `requestTimeout`: the whole request, body included; node answers 408 and closes. The listener sets node's
   * bound to the larger of this and the longest streamed body (`streamDeadlineMs` of the largest upload), since node
   * has one bound for every route; a body a handler reads has its own deadline, and one no handler reads ends with
   * the answer (the connection is closed).
   */
  readonly requestTimeoutMs: number
  /** The body reader's own deadline, from the handler asking for the body. */
  readonly bodyTimeoutMs: number
  /** The slowest streamed body (an upload) still taken: its deadline is bodyTimeoutMs plus its limit at this rate. */
  readonly streamFloorBytesPerSecond: number
  /** node:http `keepAliveTimeout`: an idle keep-alive connection between two requests. */
  readonly keepAliveTimeoutMs: number
  /** Socket inactivity (no byte either way) after which the socket is destroyed. */
  readonly idleSocketTimeoutMs: number
  /** node:http `connectionsCheckingInterval`: how often the header and request deadlines are checked. */
  readonly checkIntervalMs: number
  /** node:http `maxHeaderSize`: beyond it node answers 431 and closes. */
  readonly maxHeaderBytes: number
  /** `server.maxConnections`: sockets past it are closed as soon as accepted. */
  readonly maxConnections: number
}

/**
 * A slowloris client (headers trickled a byte at a time) is cut after 10 s instead of node's 60 s: a real client sends
 * its headers in one packet, and 10 s still leaves a congested mobile link ample room. It also bounds a connection
 * that sends nothing at all (node counts from the connection's start).
 */
export const HTTP_HEADERS_TIMEOUT_MS = 10_000
/**
 * The whole request, body included: a 1 MiB /mcp body (the largest allowed) still arrives in 30 s at 35 KB/s, while a
 * client trickling a body cannot hold a handler for node's default of 5 minutes.
 */
export const HTTP_REQUEST_TIMEOUT_MS = 30_000
/**
 * The body reader's own deadline, a little inside the request's, so that a handler waiting on a body always ends with
 * an answer of its own (408) rather than depending on when node's periodic check next runs.
 */
export const HTTP_BODY_TIMEOUT_MS = 25_000
/**
 * 64 KiB/s, about half a megabit: a phone's uplink on a poor mobile link still sends the 25 MiB default upload, in
 * under seven minutes, while a client trickling a body cannot hold a socket much longer than an honest slow one.
 */
export const HTTP_STREAM_FLOOR_BYTES_PER_SECOND = 64 * 1024
/** The deadline of a streamed body of at most `limit` bytes (HttpLimitsSettings.streamFloorBytesPerSecond). */
export const streamDeadlineMs = (limits: HttpLimitsSettings, limit: number): number =>
  limits.bodyTimeoutMs + Math.ceil((limit / limits.streamFloorBytesPerSecond) * 1000)
/** Idle keep-alive connections are closed after 5 s (node's default, kept): agents reconnect cheaply. */
export const HTTP_KEEP_ALIVE_TIMEOUT_MS = 5_000
/**
 * A socket on which nothing moves either way for 2 minutes is dead (a client that stopped reading its response included).
 * Far above the longest tool call, which waits seconds for IRC; the browser WebSocket pings every 30 s.
 */
export const HTTP_IDLE_SOCKET_TIMEOUT_MS = 120_000
/** node checks header and request deadlines on this interval (its default, 30 s, would let a bound overrun fourfold). */
export const HTTP_CHECK_INTERVAL_MS = 2_000
/**
 * node's default 16 KiB, stated: a bearer token, a session cookie and an MCP client's headers are under 2 KiB, and a
 * larger header block is only memory for an unauthenticated caller to fill.
 */
export const HTTP_MAX_HEADER_BYTES = 16 * 1024
/**
 * Open connections at once (WebSockets included). Each costs a socket and a few KB; the bound keeps a flood of idle
 * sockets from exhausting memory or descriptors, and the header timeout empties it again within 10 s. One member's
 * agents and tabs need tens; a shared instance stays far below a thousand.
 */
export const HTTP_MAX_CONNECTIONS = 1024

export const HTTP_LIMITS: HttpLimitsSettings = {
  headersTimeoutMs: HTTP_HEADERS_TIMEOUT_MS,
  requestTimeoutMs: HTTP_REQUEST_TIMEOUT_MS,
  bodyTimeoutMs: HTTP_BODY_TIMEOUT_MS,
  streamFloorBytesPerSecond: HTTP_STREAM_FLOOR_BYTES_PER_SECOND,
  keepAliveTimeoutMs: HTTP_KEEP_ALIVE_TIMEOUT_MS,
  idleSocketTimeoutMs: HTTP_IDLE_SOCKET_TIMEOUT_MS,
  checkIntervalMs: HTTP_CHECK_INTERVAL_MS,
  maxHeaderBytes: HTTP_MAX_HEADER_BYTES,
  maxConnections: HTTP_MAX_CONNECTIONS
}

/** The listener's bounds; HTTP_LIMITS unless a layer provides others (tests shrink the timeouts). */
export class HttpLimits extends Context.Reference<HttpLimits>()("belay/HttpLimits", { defaultValue: () => HTTP_LIMITS }) {}
