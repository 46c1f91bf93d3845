/**
 * McpDispatcher answers a 2025-era request (the initialize handshake's revisions) for an authenticated principal: the
 * four MCP methods of the interface — initialize, notifications/initialized (handled by the route: 202), tools/list
 * (pre-serialized per scope, so listing costs no schema work per call) and tools/call (scope gate → argument decoding
 * → handler → result encoding) — and `ping`, which those revisions require every receiver to answer. Every other
 * method is -32601 (docs/decisions/http-and-mcp.md "Stateless MCP, one POST", "Two eras on one endpoint"). The
 * 2026-07-28 methods are Mcp2026Dispatcher's, which calls tools through `call` here. Stateless.
 *
 * Hot path: tools/list and a failed decode answer without running any Effect beyond the
 * returned value; a tools/call result is serialized once (`callResultBody`).
 *
 * `call` is the one path of a tool call, whoever asks: `/mcp`'s tools/call and the browser
 * WebSocket's `{type: "call"}` (src/http/ws/) both go through it, so the catalog, the scope
 * rule, the pause rule and the write gate cannot differ between them.
 */
import * as Fs from "node:fs"
import { Effect, Either } from "effect"
import {
  decodeCallToolParams,
  initializeResult,
  type JsonRpcId,
  type JsonRpcProtocolError,
  type JsonRpcRequest,
  jsonRpcSuccessResponse,
  JSONRPC_VERSION,
  MethodNotFound,
  unknownTool
} from "../../schema/JsonRpc.js"
import { isToolName, toolsByName, type ToolName } from "../../schema/McpTools.js"
import {
  type CallToolResult,
  toolFailureResult,
  toolsListResponseSuffix,
  toolSuccessResult
} from "../../schema/ToolCatalog.js"
import { AccountPaused, InsufficientScope, type ToolFailure } from "../../schema/ToolErrors.js"
import type { Principal } from "../../services/identity/Authenticator.js"
import { makeDecodedArguments } from "./DecodedArguments.js"
import { makeToolHandlers, type ToolCaller, type ToolHandler } from "./ToolHandlers.js"
import type { HttpResponse } from "../HttpServer.js"
import { mapNow, matchNow } from "../Immediate.js"

/**
 * What a tool call came to: its MCP result, whose one text item is the payload's JSON (serialized once; a failure's
 * payload is `{ok: false, error, message?}`), and whether it failed.
 */
export interface ToolOutcome {
  readonly tool: ToolName
  readonly isError: boolean
  readonly result: CallToolResult
}

export type DispatchOutcome =
  | { readonly _tag: "Result"; readonly body: NonNullable<HttpResponse["body"]>; readonly tool?: ToolName; readonly isError?: boolean }
  | { readonly _tag: "Error"; readonly error: JsonRpcProtocolError }

// dist/http/mcp and src/http/mcp are both three levels below the package root.
export const SERVER_VERSION: string = (() => {
  try {
    const pkg: unknown = JSON.parse(Fs.readFileSync(new URL("../../../package.json", import.meta.url), "utf8"))
    return typeof pkg === "object" && pkg !== null && "version" in pkg && typeof pkg.version === "string" ? pkg.version : "0.0.0"
  } catch {
    return "0.0.0"
  }
})()

const VERSION_JSON = JSON.stringify(JSONRPC_VERSION)

const RESULT_MIDDLE = Buffer.from(`"}],"structuredContent":`)

/** How a tools/call response ends after structuredContent: a success, and a failure (`isError`). */
export interface ResultEnds {
  readonly ok: Buffer
  readonly error: Buffer
}

/** The 2025 era's result ends: nothing after structuredContent but isError. */
const LEGACY_ENDS: ResultEnds = { ok: Buffer.from("}}"), error: Buffer.from(`,"isError":true}}`) }

// ping (basic/utilities/ping, 2025-03-26 to 2025-11-25): "MUST respond promptly with an empty response".
const PING_RESULT = Buffer.from(`,"result":{}}`)

const RESPONSE_HEAD_START = `{"jsonrpc":${VERSION_JSON},"id":`

/**
 * The opening of a response to request `id`, up to its id: a string, so that it leaves with the HTTP head (Route.ts
 * HttpResponse `body`) rather than as a Buffer made for every request.
 */
export const responseHead = (id: JsonRpcId): string =>
  // A number's JSON is its string form (JSON ids are finite), made without the JSON serializer.
  typeof id === "number" ? RESPONSE_HEAD_START + id : RESPONSE_HEAD_START + JSON.stringify(id)

/**
 * The JSON-RPC response to a tools/call, as the parts to write: the result's two texts
 * (ToolCatalog's CallToolResult), each encoded once, where the MCP result carries them — the
 * text item and structuredContent — around a few bytes that carry the request id. For a page of
 * 100 messages, serializing the payload a second time was about a third of the cost of the
 * answer, escaping it into the text item another sixth, and encoding the whole answer again
 * for every poll of an unchanged page a tenth.
 */
export const callResultBody = (id: JsonRpcId, result: CallToolResult, ends: ResultEnds = LEGACY_ENDS): ReadonlyArray<string | Buffer> => {
  const [escaped, json] = result.bytes()
  return [
    `{"jsonrpc":${VERSION_JSON},"id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"`,
    escaped,
    RESULT_MIDDLE,
    json,
    result.isError ? ends.error : ends.ok
  ]
}

export class McpDispatcher extends Effect.Service<McpDispatcher>()("belay/McpDispatcher", {
  effect: Effect.gen(function*() {
    const handlers = yield* makeToolHandlers
    const decoded = makeDecodedArguments()

    /** The scope gate of interface "Authentication" 5 and 7. */
    const gate = (caller: ToolCaller, name: ToolName): ToolFailure | undefined => {
      if (toolsByName[name].scope === "read" || caller.scope === "read-write") return undefined
      return caller.paused && caller.grantedScope === "read-write"
        ? new AccountPaused({ tool: name })
        : new InsufficientScope({ tool: name })
    }

    const failed = (tool: ToolName, failure: ToolFailure): ToolOutcome => ({ tool, isError: true, result: toolFailureResult(failure) })

    /** One tool call: scope and pause gate, argument decoding, the handler (whose port applies the write gate). */
    const call = <N extends ToolName>(caller: ToolCaller, name: N, args: unknown): Effect.Effect<ToolOutcome> => {
      // The gate and the decoding are plain code: a refused or malformed call costs no Effect step.
      const refused = gate(caller, name)
      if (refused) return Effect.succeed(failed(name, refused))
      const input = decoded.decode(name, args)
      if (Either.isLeft(input)) return Effect.succeed(failed(name, input.left))
      // The table is keyed by name, so the handler and the decoded input belong to the same tool.
      const handler: ToolHandler<N> = handlers[name]
      // matchNow: a handler that answered from memory gives an Exit, and the outcome is one too (Immediate.ts).
      const outcome = matchNow(handler(caller, input.right), {
        onFailure: (failure) => failed(name, failure),
        onSuccess: (payload): ToolOutcome => ({ tool: name, isError: false, result: toolSuccessResult(payload) })
      })
      // Logs of a tool that acts on a network (the actors', the write gate's) name the tool and the account. The read
      // tools log nothing of their own, and annotating costs a fiber-ref swap and restore (about 8 µs, measured) on
      // every call of the tools agents poll.
      return toolsByName[name].scope === "read"
        ? outcome
        : Effect.annotateLogs(outcome, { tool: name, accountId: caller.accountId })
    }

    const handle = (principal: Principal, request: JsonRpcRequest): Effect.Effect<DispatchOutcome> => {
      switch (request.method) {
        case "initialize":
          return Effect.succeed({
            _tag: "Result",
            body: JSON.stringify(jsonRpcSuccessResponse(request.id, initializeResult(request.params, SERVER_VERSION)))
          })
        case "tools/list":
          return Effect.succeed({ _tag: "Result", body: [responseHead(request.id), toolsListResponseSuffix[principal.scope]] })
        case "ping":
          return Effect.succeed({ _tag: "Result", body: [responseHead(request.id), PING_RESULT] })
        case "tools/call": {
          const params = decodeCallToolParams(request.params)
          if (Either.isLeft(params)) return Effect.succeed({ _tag: "Error", error: params.left })
          const name = params.right.name
          if (!isToolName(name)) return Effect.succeed({ _tag: "Error", error: unknownTool(name) })
          return mapNow(call(principal, name, params.right.arguments), ({ result, isError }) => ({
            _tag: "Result",
            body: callResultBody(request.id, result),
            tool: name,
            isError
          }))
        }
        default:
          return Effect.succeed({
            _tag: "Error",
            error: new MethodNotFound({ method: request.method })
          })
      }
    }

    return { handle, call } as const
  })
}) {}
