/**
 * POST /mcp: the MCP Streamable HTTP transport in its single-POST, stateless profile
 * (interface "MCP endpoint", CONTRACT.md "Protocol decisions", research/mcp.md §5).
 * This file decides HTTP status codes and headers only; what each method does is
 * McpDispatcher's. Order of checks: Origin (403) → bearer (401) → body size (413) →
 * JSON (-32700) → envelope (-32600) → notification (202) → version header (400) →
 * dispatch. GET, DELETE and other methods get 405 from the router, never 401.
 * Stateless: every request is authenticated again; no Mcp-Session-Id is ever issued.
 */
import { Effect, Either, Option } from "effect"
import { checkProtocolVersionHeader, decodeIncoming, httpStatusOfProtocolError, jsonRpcErrorResponse, parseJsonBody, InvalidRequest } from "../../schema/JsonRpc.js"
import { MCP_BODY_LIMIT_BYTES } from "../../schema/Limits.js"
import { mcpWwwAuthenticate } from "../../schema/OAuth.js"
import { AppConfig } from "../../services/AppConfig.js"
import { Authenticator } from "../../services/Authenticator.js"
import { Metrics } from "../../services/Metrics.js"
import { isAllowedOrigin, issuerFor } from "../Issuer.js"
import { json, type HttpResponse, type Route } from "../HttpServer.js"
import { McpDispatcher } from "./McpDispatcher.js"

const JSON_HEADERS = { "content-type": "application/json" } as const

const rpcError = (status: number, body: unknown): HttpResponse => ({ status, headers: JSON_HEADERS, body: JSON.stringify(body) })

export const mcpRoutes = Effect.gen(function*() {
  const config = yield* AppConfig
  const authenticator = yield* Authenticator
  const dispatcher = yield* McpDispatcher
  const metrics = yield* Metrics

  const unauthorized = (base: string): HttpResponse =>
    json(401, { error: "invalid_token", error_description: "a valid Bearer token is required" }, {
      "www-authenticate": mcpWwwAuthenticate(base)
    })

  const post: Route = {
    method: "POST",
    path: "/mcp",
    handler: (request) =>
      Effect.gen(function*() {
        const origin = request.header("origin")
        // DNS-rebinding defence (transports 2025-11-25 "Security Warning"): a browser page
        // on another origin must not drive the endpoint, even with a token.
        if (origin !== undefined && !isAllowedOrigin(config, issuerFor(request, config), origin)) {
          return rpcError(403, jsonRpcErrorResponse(null, new InvalidRequest({ message: "Forbidden: origin not allowed" })))
        }
        const principal = yield* authenticator.authenticate(request.header("authorization"))
        if (Option.isNone(principal)) return unauthorized(issuerFor(request, config))

        const body = yield* request.body(MCP_BODY_LIMIT_BYTES).pipe(Effect.either)
        if (Either.isLeft(body)) {
          return body.left._tag === "BodyTooLarge"
            ? rpcError(413, jsonRpcErrorResponse(null, new InvalidRequest({ message: `Request body larger than ${MCP_BODY_LIMIT_BYTES} bytes` })))
            : rpcError(400, jsonRpcErrorResponse(null, new InvalidRequest({ message: "could not read the request body" })))
        }
        const parsed = parseJsonBody(body.right.toString("utf8"))
        if (Either.isLeft(parsed)) return rpcError(400, jsonRpcErrorResponse(null, parsed.left))
        const incoming = decodeIncoming(parsed.right)
        if (Either.isLeft(incoming)) return rpcError(400, jsonRpcErrorResponse(incoming.left.id, incoming.left.error))

        // Notifications (any method) and client responses are accepted without a body.
        if (incoming.right._tag !== "Request") return { status: 202 }

        const rpc = incoming.right.request
        if (rpc.method !== "initialize") {
          const version = checkProtocolVersionHeader(request.header("mcp-protocol-version"))
          if (Either.isLeft(version)) return rpcError(400, jsonRpcErrorResponse(rpc.id, version.left))
        }
        const outcome = yield* dispatcher.handle(principal.value, rpc)
        if (outcome._tag === "Error") {
          return rpcError(httpStatusOfProtocolError(outcome.error), jsonRpcErrorResponse(rpc.id, outcome.error))
        }
        if (outcome.tool) {
          metrics.increment("belay_mcp_calls_total", "MCP tools/call by tool and outcome.", {
            tool: outcome.tool,
            outcome: outcome.isError ? "error" : "ok"
          })
        }
        return { status: 200, headers: JSON_HEADERS, body: outcome.body }
      })
  }

  return [post] as ReadonlyArray<Route>
})
