/**
 * POST /mcp: the MCP Streamable HTTP transport in its single-POST, stateless profile, for both protocol eras
 * (interface "MCP endpoint"; docs/decisions/http-and-mcp.md "Stateless MCP, one POST", "Request body
 * limits", "Protocol versions", "Two eras on one endpoint"). This file decides HTTP status codes and headers only;
 * what each method does is McpDispatcher's (2025 era) or Mcp2026Dispatcher's (2026-07-28). Order of checks: Origin
 * (403) → bearer (401) → body size (413) → JSON (-32700) → envelope (-32600) → notification (202) → the request's era
 * (McpRequestMeta.eraOf) → for 2026-07-28, its headers and `_meta` (400: -32020, -32022, -32602) → dispatch (an
 * unknown method: 200 in the 2025 era, 404 in 2026's). GET, DELETE and other methods get 405 from the router, never
 * 401. Stateless: every request is authenticated again; no Mcp-Session-Id is ever issued.
 *
 * Hot path: a request is two asynchronous steps (authentication, then the body) and the
 * dispatcher's answer; everything between them is plain synchronous code. They are joined with Immediate.ts, so when
 * all three are at hand (a cached credential, a body read ahead, an answer from memory such as tools/list) the
 * handler returns the response itself, which HttpServer sends without a fiber. A body the connection sent before
 * under another id is not parsed again (RequestTemplates); the era and its checks follow every request's own headers
 * (`checksOf`).
 */
import { Effect, Either, Option } from "effect"
import {
  decodeIncoming,
  httpStatusOfModernError,
  httpStatusOfProtocolError,
  InvalidRequest,
  jsonRpcErrorResponse,
  type JsonRpcRequest,
  parseJsonBody
} from "../../schema/JsonRpc.js"
import { checkModernRequest, type Era, eraOf, type MetaRefusal } from "../../schema/McpRequestMeta.js"
import { MCP_BODY_LIMIT_BYTES } from "../../schema/Limits.js"
import { isToolName, McpTools, type ToolName, toolsByName } from "../../schema/McpTools.js"
import { mcpWwwAuthenticate } from "../../schema/OAuth.js"
import { AppConfig } from "../../services/AppConfig.js"
import { Authenticator, type Principal } from "../../services/identity/Authenticator.js"
import { Metrics } from "../../services/upkeep/Metrics.js"
import { flatMapNow, mapNow, matchEffectNow } from "../Immediate.js"
import { isAllowedOrigin, issuerFor } from "../Issuer.js"
import { type HttpRequest, type HttpResponse, json, type Route } from "../HttpServer.js"
import { makeMcp2026Dispatcher } from "./Mcp2026Dispatcher.js"
import { type DispatchOutcome, McpDispatcher } from "./McpDispatcher.js"
import { makeRequestTemplates } from "./RequestTemplates.js"

const JSON_HEADERS = { "content-type": "application/json" } as const
const ACCEPTED: HttpResponse = { status: 202 }

const rpcError = (status: number, body: unknown): HttpResponse => ({ status, headers: JSON_HEADERS, body: JSON.stringify(body) })

const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * Requests whose content may be kept past the call (RequestTemplates): the list, discovery, and calls of read-only
 * tools, which agents poll. A write's arguments (a message's text, a raw line that may identify to NickServ) are not.
 */
const mayKeep = (rpc: JsonRpcRequest): boolean => {
  if (rpc.method === "tools/list" || rpc.method === "server/discover") return true
  if (rpc.method !== "tools/call" || !isPlainObject(rpc.params)) return false
  const name = rpc.params["name"]
  return typeof name === "string" && isToolName(name) && toolsByName[name].hints.readOnlyHint === true
}

export const mcpRoutes = Effect.gen(function*() {
  const config = yield* AppConfig
  const authenticator = yield* Authenticator
  const dispatcher = yield* McpDispatcher
  const metrics = yield* Metrics
  const modern = makeMcp2026Dispatcher(dispatcher.call)
  const templates = makeRequestTemplates()
  // Each series' label key made once, here, rather than on every call (Metrics.counter).
  const callCounter = (tool: ToolName, outcome: "ok" | "error") =>
    metrics.counter("belay_mcp_calls_total", "MCP tools/call by tool and outcome.", { tool, outcome })
  const callCounters = Object.fromEntries(
    McpTools.map(({ name }) => [name, { ok: callCounter(name, "ok"), error: callCounter(name, "error") }])
  ) as Record<ToolName, { readonly ok: () => void; readonly error: () => void }>

  const unauthorized = (base: string): HttpResponse =>
    json(401, { error: "invalid_token", error_description: "a valid Bearer token is required" }, {
      "www-authenticate": mcpWwwAuthenticate(base)
    })

  const tooLarge = rpcError(
    413,
    jsonRpcErrorResponse(null, new InvalidRequest({ message: `Request body larger than ${MCP_BODY_LIMIT_BYTES} bytes` }))
  )
  const unreadable = rpcError(400, jsonRpcErrorResponse(null, new InvalidRequest({ message: "could not read the request body" })))
  // docs/decisions/http-and-mcp.md "Slow and abandoned connections": a body not sent in time; the connection closes with it.
  const timedOut = rpcError(408, jsonRpcErrorResponse(null, new InvalidRequest({ message: "the request body did not arrive in time" })))

  /** After authentication and the body: decode (or know a request sent before: RequestTemplates), check, dispatch. */
  const answer = (request: HttpRequest, principal: Principal, body: Buffer): Effect.Effect<HttpResponse> => {
    const known = templates.match(request.connection, body)
    if (known !== undefined) return dispatch(request, principal, known)
    const text = body.toString("utf8")
    const parsed = parseJsonBody(text)
    if (Either.isLeft(parsed)) return Effect.succeed(rpcError(400, jsonRpcErrorResponse(null, parsed.left)))
    const incoming = decodeIncoming(parsed.right)
    if (Either.isLeft(incoming)) {
      return Effect.succeed(rpcError(400, jsonRpcErrorResponse(incoming.left.id, incoming.left.error)))
    }
    // Notifications (any method) and client responses are accepted without a body.
    if (incoming.right._tag !== "Request") return Effect.succeed(ACCEPTED)
    const rpc = incoming.right.request
    if (mayKeep(rpc)) templates.learn(request.connection, body, text, rpc)
    return dispatch(request, principal, rpc)
  }

  /**
   * The era and 2026-07-28 checks last made for a params value, with the headers they were made with. Requests made
   * from one template (RequestTemplates) share one frozen params value, so a poll sent again with the same headers
   * has the same era and the same refusal, or none, as the request before it: both are pure functions of these.
   */
  const lastChecks = new WeakMap<object, {
    readonly method: string
    readonly version: string | undefined
    readonly mcpMethod: string | undefined
    readonly mcpName: string | undefined
    readonly era: Era
    readonly refused: MetaRefusal | undefined
  }>()

  const checksOf = (request: HttpRequest, rpc: JsonRpcRequest) => {
    const version = request.header("mcp-protocol-version")
    const mcpMethod = request.header("mcp-method")
    const mcpName = request.header("mcp-name")
    const params = rpc.params
    const kept = typeof params === "object" && params !== null ? lastChecks.get(params) : undefined
    if (
      kept !== undefined && kept.method === rpc.method && kept.version === version && kept.mcpMethod === mcpMethod &&
      kept.mcpName === mcpName
    ) return kept
    const era = eraOf(rpc.method, params, version)
    const refused = era === "2025"
      ? undefined
      : checkModernRequest(rpc.method, params, { protocolVersion: version, method: mcpMethod, name: mcpName })
    const checks = { method: rpc.method, version, mcpMethod, mcpName, era, refused }
    if (typeof params === "object" && params !== null && Object.isFrozen(params)) lastChecks.set(params, checks)
    return checks
  }

  /** The era, its checks, and the dispatcher's answer. */
  const dispatch = (request: HttpRequest, principal: Principal, rpc: JsonRpcRequest): Effect.Effect<HttpResponse> => {
    const { era, refused } = checksOf(request, rpc)
    if (era === "2025") {
      return mapNow(dispatcher.handle(principal, rpc), (outcome) => respond(rpc, outcome, httpStatusOfProtocolError))
    }
    if (refused !== undefined) return Effect.succeed(rpcError(400, jsonRpcErrorResponse(rpc.id, refused)))
    return mapNow(modern(principal, rpc), (outcome) => respond(rpc, outcome, httpStatusOfModernError))
  }

  const respond = (
    rpc: JsonRpcRequest,
    outcome: DispatchOutcome,
    statusOf: (error: Extract<DispatchOutcome, { _tag: "Error" }>["error"]) => number
  ): HttpResponse => {
    if (outcome._tag === "Error") return rpcError(statusOf(outcome.error), jsonRpcErrorResponse(rpc.id, outcome.error))
    if (outcome.tool) {
      const count = callCounters[outcome.tool]
      if (outcome.isError) count.error()
      else count.ok()
    }
    return { status: 200, headers: JSON_HEADERS, body: outcome.body }
  }

  const post: Route = {
    method: "POST",
    path: "/mcp",
    handler: (request) => {
      const origin = request.header("origin")
      // DNS-rebinding defence (transports 2025-11-25 "Security Warning"): a browser page
      // on another origin must not drive the endpoint, even with a token.
      if (origin !== undefined && !isAllowedOrigin(config, issuerFor(request, config), origin)) {
        return Effect.succeed(
          rpcError(403, jsonRpcErrorResponse(null, new InvalidRequest({ message: "Forbidden: origin not allowed" })))
        )
      }
      return flatMapNow(authenticator.authenticateNow(request.header("authorization"), request.connection), (principal) =>
        Option.isNone(principal)
          ? Effect.succeed(unauthorized(issuerFor(request, config)))
          : matchEffectNow(request.body(MCP_BODY_LIMIT_BYTES), {
            onFailure: (e) =>
              Effect.succeed(e._tag === "BodyTooLarge" ? tooLarge : e._tag === "BodyTimedOut" ? timedOut : unreadable),
            onSuccess: (body) => answer(request, principal.value, body)
          }))
    }
  }

  return [post] as ReadonlyArray<Route>
})
