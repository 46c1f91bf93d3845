import { describe, expect, it } from "@effect/vitest"
import { SchemaAST } from "effect"
import { isToolName, McpTools, scopeAllows, TOOL_NAMES, toolsByName } from "../../src/schema/McpTools.js"

// docs/contract.md "MCP tool shapes", transcribed: name, scope (interface "Endpoints"), arguments
// (`?` marks optional ones).
const CONTRACT_TOOLS: ReadonlyArray<readonly [string, "read" | "read-write", ReadonlyArray<string>]> = [
  ["list_networks", "read", []],
  ["list_buffers", "read", ["networkId?"]],
  ["recent_messages", "read", ["networkId", "target", "before?", "limit?"]],
  ["search_messages", "read", ["query", "networkId?", "target?", "nick?", "limit?"]],
  ["get_nick_note", "read", ["networkId", "nick"]],
  ["set_nick_note", "read-write", ["networkId", "nick", "note"]],
  ["set_relay_bot", "read-write", ["networkId", "nick", "marked", "pattern?"]],
  ["send_message", "read-write", ["networkId", "target", "text"]],
  ["send_action", "read-write", ["networkId", "target", "text"]],
  ["send_notice", "read-write", ["networkId", "target", "text"]],
  ["send_raw", "read-write", ["networkId", "line"]],
  ["join_channel", "read-write", ["networkId", "channel", "key?"]],
  ["part_channel", "read-write", ["networkId", "channel", "reason?"]],
  ["set_nick", "read-write", ["networkId", "nick"]],
  ["set_away", "read-write", ["networkId?", "message?"]],
  ["list_members", "read", ["networkId", "channel", "limit?"]],
  ["whois", "read-write", ["networkId", "nick"]],
  ["connect_network", "read-write", ["networkId", "reconnect?"]],
  ["disconnect_network", "read-write", ["networkId"]],
  ["get_topic", "read", ["networkId", "channel"]],
  ["set_topic", "read-write", ["networkId", "channel", "topic"]],
  ["get_mode_list", "read-write", ["networkId", "channel", "letter"]],
  ["set_channel_modes", "read-write", ["networkId", "channel", "changes"]]
]

/** Argument names of a tool's input as seen on the wire (encoded side), `?` for optional. */
const wireArguments = (ast: SchemaAST.AST): ReadonlyArray<string> => {
  const encoded = SchemaAST.encodedAST(ast)
  if (!SchemaAST.isTypeLiteral(encoded)) throw new Error("input is not a struct")
  return encoded.propertySignatures.map((ps) => `${String(ps.name)}${ps.isOptional ? "?" : ""}`)
}

describe("McpTools", () => {
  it("has the 23 tools of the contract, in its order", () => {
    expect(McpTools.length).toBe(23)
    expect(TOOL_NAMES).toEqual(CONTRACT_TOOLS.map(([name]) => name))
  })

  it.each(CONTRACT_TOOLS)("%s: scope %s, arguments %j", (name, scope, args) => {
    if (!isToolName(name)) throw new Error(`${name} missing`)
    const tool = toolsByName[name]
    expect(tool.name).toBe(name)
    expect(tool.scope).toBe(scope)
    expect(wireArguments(tool.input.ast)).toEqual(args)
  })

  it("names follow the MCP tool name rules", () => {
    for (const tool of McpTools) expect(tool.name).toMatch(/^[A-Za-z0-9_.-]{1,128}$/)
  })

  it("has exactly the seven read tools of the interface's scope table", () => {
    expect(McpTools.filter((tool) => tool.scope === "read").map((tool) => tool.name)).toEqual([
      "list_networks",
      "list_buffers",
      "recent_messages",
      "search_messages",
      "get_nick_note",
      "list_members",
      "get_topic"
    ])
  })

  it("describes every tool for an agent, and hints agree with the scope", () => {
    for (const tool of McpTools) {
      expect(tool.description.length).toBeGreaterThan(60)
      expect(tool.title.length).toBeGreaterThan(0)
      if (tool.scope === "read") expect(tool.hints.readOnlyHint).toBe(true)
    }
  })

  it("names the server buffer in every tool whose reply arrives there", () => {
    for (const name of ["send_raw", "set_nick", "whois"] as const) {
      expect(toolsByName[name].description).toContain(":server:<networkId>")
      expect(toolsByName[name].description).toContain("recent_messages")
    }
  })

  it("lets read-write call everything and read only read tools", () => {
    for (const tool of McpTools) {
      expect(scopeAllows("read-write", tool)).toBe(true)
      expect(scopeAllows("read", tool)).toBe(tool.scope === "read")
    }
  })

  it("knows its names and nothing else", () => {
    expect(isToolName("recent_messages")).toBe(true)
    expect(isToolName("toString")).toBe(false)
    expect(isToolName("ping")).toBe(false)
  })
})
