// McpTools: the 23 MCP tools as data — name, scope, agent-facing description, hints, and the
// input and output Schemas (docs/contract.md "MCP tool shapes", interface "Endpoints"). The input
// Schema both validates `tools/call` arguments (with defaults applied) and generates the
// published inputSchema (ToolCatalog.ts), so validation and tools/list cannot drift.
// Pure data; no state.
//
// Decisions recorded here:
// - Out-of-range values are refused (`limit: 501` → invalid-arguments), never clamped (docs/decisions/http-and-mcp.md).
// - Unknown argument keys are refused, naming the key: the published schemas say
//   `additionalProperties: false`, and a misspelt optional argument (`limt`) silently
//   ignored would hand the agent a result it did not ask for.
// - Strings that reach an IRC line refuse CR, LF and NUL (Ids.ts); names (channel, nick,
//   target, key, mode argument) also refuse spaces and a leading ':'. Strings that never reach
//   IRC (search query, buffer filters) refuse the same, so one rule holds for every tool.
//   The nick note is the one exception: free-form multi-line text stored for the member,
//   which never goes to IRC; it refuses NUL only (PostgreSQL text cannot hold NUL).
// - Output Schemas describe the success payload only; ToolCatalog publishes
//   `anyOf [success, ToolFailurePayload]` because SDK clients validate structuredContent
//   against outputSchema on isError results too.
//
// The tools are written in src/schema/tools/, by role (ToolDefinition.ts says how one is
// written down); this file is the catalog: their order, their names, and lookups by name.
import { GetModeList, GetTopic, SetChannelModes, SetTopic } from "./tools/ChannelTools.js"
import {
  ConnectNetwork,
  DisconnectNetwork,
  JoinChannel,
  ListMembers,
  PartChannel,
  SendAction,
  SendMessage,
  SendNotice,
  SendRaw,
  SetAway,
  SetNick,
  Whois
} from "./tools/CommandTools.js"
import {
  GetNickNote,
  ListBuffers,
  ListNetworks,
  RecentMessages,
  SearchMessages,
  SetNickNote,
  SetRelayBot
} from "./tools/HistoryTools.js"
import type { Schema } from "effect"
import type { ToolScope } from "./tools/ToolDefinition.js"

export type { McpTool, ToolHints, ToolScope } from "./tools/ToolDefinition.js"

/** Every tool, in the order of docs/decisions/http-and-mcp.md; tools/list keeps this order. */
export const McpTools = [
  ListNetworks,
  ListBuffers,
  RecentMessages,
  SearchMessages,
  GetNickNote,
  SetNickNote,
  SetRelayBot,
  SendMessage,
  SendAction,
  SendNotice,
  SendRaw,
  JoinChannel,
  PartChannel,
  SetNick,
  SetAway,
  ListMembers,
  Whois,
  ConnectNetwork,
  DisconnectNetwork,
  GetTopic,
  SetTopic,
  GetModeList,
  SetChannelModes
] as const

export type AnyMcpTool = (typeof McpTools)[number]
export type ToolName = AnyMcpTool["name"]
export type ToolByName<N extends ToolName> = Extract<AnyMcpTool, { readonly name: N }>
/** Decoded arguments of a tool, defaults applied. */
export type ToolInput<N extends ToolName> = Schema.Schema.Type<ToolByName<N>["input"]>
/** The success payload of a tool. */
export type ToolOutput<N extends ToolName> = Schema.Schema.Type<ToolByName<N>["output"]>

export const TOOL_NAMES: ReadonlyArray<ToolName> = McpTools.map((tool) => tool.name)

export const toolsByName: { readonly [N in ToolName]: ToolByName<N> } = Object.fromEntries(
  McpTools.map((tool) => [tool.name, tool])
) as { readonly [N in ToolName]: ToolByName<N> }

export const isToolName = (name: string): name is ToolName => Object.hasOwn(toolsByName, name)

/** May a credential with this scope call the tool? (interface "Authentication" 7: read-write ⊇ read). */
export const scopeAllows = (scope: ToolScope, tool: AnyMcpTool): boolean =>
  scope === "read-write" || tool.scope === "read"
