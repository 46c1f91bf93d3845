/**
 * Mcp2026Dispatcher answers a request of MCP revision 2026-07-28 once McpRoute has checked its headers and `_meta`
 * (src/schema/McpRequestMeta.ts): `server/discover`, `tools/list` and `tools/call`, each result with `resultType` and
 * Belay's `serverInfo` in `_meta`, the two cacheable ones with `ttlMs` and `cacheScope` (server/utilities/caching).
 * Every other method — `initialize`, `ping`, `subscriptions/listen`, resources, prompts — is -32601, which the route
 * answers with 404 (docs/decisions/http-and-mcp.md "Two eras on one endpoint"). The tools are the 2025 era's: the same
 * catalog, JSON Schemas and handlers, called through McpDispatcher's `call`, so the scope rule, the pause rule and the
 * write gate cannot differ between eras. Stateless; every answer but a tool's own payload is serialized at load.
 */
import { Effect, Either } from "effect"
import {
  ALL_PROTOCOL_VERSIONS,
  decodeCallToolParams,
  InvalidParams,
  type JsonRpcRequest,
  MethodNotFound,
  SERVER_INSTRUCTIONS,
  SERVER_NAME,
  unknownTool
} from "../../schema/JsonRpc.js"
import { SERVER_INFO_KEY } from "../../schema/McpRequestMeta.js"
import { isToolName, type ToolScope } from "../../schema/McpTools.js"
import { toolsListResultJson } from "../../schema/ToolCatalog.js"
import type { Principal } from "../../services/identity/Authenticator.js"
import { mapNow } from "../Immediate.js"
import {
  callResultBody,
  type DispatchOutcome,
  type McpDispatcher,
  responseHead,
  type ResultEnds,
  SERVER_VERSION
} from "./McpDispatcher.js"

/**
 * server/discover changes only with a new Belay release, and is the same for every caller: an hour, public
 * (docs/contract.md "MCP 2026-07-28").
 */
export const DISCOVER_TTL_MS = 3_600_000
/**
 * tools/list depends on the credential (a read token sees the read tools) and on whether the account is paused, which
 * the member changes at any time: a minute, private (docs/contract.md "MCP 2026-07-28"). A list kept past a pause only
 * lets a client try a write tool and be told `account-paused`.
 */
export const TOOLS_LIST_TTL_MS = 60_000

/** The members every 2026 result of Belay's ends with (basic/index "ResultType", "_meta"). */
const RESULT_TAIL = `"resultType":"complete","_meta":${JSON.stringify({ [SERVER_INFO_KEY]: { name: SERVER_NAME, version: SERVER_VERSION } })}`

const DISCOVER_RESULT = JSON.stringify({
  supportedVersions: ALL_PROTOCOL_VERSIONS,
  capabilities: { tools: {} },
  instructions: SERVER_INSTRUCTIONS,
  ttlMs: DISCOVER_TTL_MS,
  cacheScope: "public"
}).slice(0, -1) + `,${RESULT_TAIL}}`

const DISCOVER_SUFFIX = Buffer.from(`,"result":${DISCOVER_RESULT}}`)

// The 2025 era's pre-serialized list with the 2026 members appended: the list itself is not encoded again.
const listSuffix = (scope: ToolScope) =>
  Buffer.from(
    `,"result":${toolsListResultJson[scope].slice(0, -1)},"ttlMs":${TOOLS_LIST_TTL_MS},"cacheScope":"private",${RESULT_TAIL}}}`
  )
const TOOLS_LIST_SUFFIX: { readonly [S in ToolScope]: Buffer } = { read: listSuffix("read"), "read-write": listSuffix("read-write") }

const CALL_ENDS: ResultEnds = {
  ok: Buffer.from(`,${RESULT_TAIL}}}`),
  error: Buffer.from(`,"isError":true,${RESULT_TAIL}}}`)
}

const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** The 2026 dispatcher over McpDispatcher's one path of a tool call. */
export const makeMcp2026Dispatcher = (call: McpDispatcher["call"]) =>
(principal: Principal, request: JsonRpcRequest): Effect.Effect<DispatchOutcome> => {
  switch (request.method) {
    case "server/discover":
      return Effect.succeed({ _tag: "Result", body: [responseHead(request.id), DISCOVER_SUFFIX] })
    case "tools/list":
      // Belay never pages the list, so it never issued a cursor (server/utilities/pagination: an invalid cursor is -32602).
      if (isPlainObject(request.params) && request.params["cursor"] !== undefined) {
        return Effect.succeed({ _tag: "Error", error: new InvalidParams({ message: "Invalid params: unknown cursor" }) })
      }
      return Effect.succeed({ _tag: "Result", body: [responseHead(request.id), TOOLS_LIST_SUFFIX[principal.scope]] })
    case "tools/call": {
      const params = decodeCallToolParams(request.params)
      if (Either.isLeft(params)) return Effect.succeed({ _tag: "Error", error: params.left })
      const name = params.right.name
      if (!isToolName(name)) return Effect.succeed({ _tag: "Error", error: unknownTool(name) })
      return mapNow(call(principal, name, params.right.arguments), ({ result, isError }) => ({
        _tag: "Result",
        body: callResultBody(request.id, result, CALL_ENDS),
        tool: name,
        isError
      }))
    }
    default:
      return Effect.succeed({ _tag: "Error", error: new MethodNotFound({ method: request.method }) })
  }
}
