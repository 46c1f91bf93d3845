import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import { type ToolName, toolsByName, TOOL_NAMES } from "../../src/schema/McpTools.js"
import {
  decodeToolArguments,
  toolFailureResult,
  toolListEntries,
  toolsForScope,
  toolsListResponseParts,
  toolsListResultJson,
  serializedPart,
  SerializedPayload,
  toolSuccessResult
} from "../../src/schema/ToolCatalog.js"
import {
  AccountPaused,
  E2eChannelUseSendMessage,
  InsufficientScope,
  InvalidArguments,
  LockedDown,
  NotConnected,
  NotInChannel,
  Refused,
  Timeout,
  type ToolFailure,
  toToolFailurePayload,
  UnknownNetwork
} from "../../src/schema/ToolErrors.js"

// --- A small JSON Schema checker for exactly the keywords the catalog may emit. It throws on
// any other keyword, so it doubles as the check that nothing unexpected ($ref, $defs, titles,
// $schema) is published. (ajv is not a dependency; this covers draft-07 for our subset.)

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [k: string]: Json }
type JsonSchema = { readonly [keyword: string]: unknown }

const ANNOTATIONS = new Set(["description", "default"])
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/

const typeOf = (value: unknown): string =>
  value === null
    ? "null"
    : Array.isArray(value)
    ? "array"
    : typeof value === "number"
    ? Number.isInteger(value) ? "integer" : "number"
    : typeof value

/** Problems of `value` against `schema`; [] when it validates. */
const validate = (schema: JsonSchema, value: unknown, at = "$"): ReadonlyArray<string> => {
  const problems: Array<string> = []
  for (const [keyword, arg] of Object.entries(schema)) {
    switch (keyword) {
      case "type": {
        const actual = typeOf(value)
        const ok = arg === actual || (arg === "number" && actual === "integer")
        if (!ok) return [`${at}: expected ${String(arg)}, got ${actual}`]
        break
      }
      case "enum":
        if (!(arg as ReadonlyArray<unknown>).includes(value)) problems.push(`${at}: not in enum`)
        break
      case "properties":
        if (typeOf(value) === "object") {
          for (const [name, sub] of Object.entries(arg as Record<string, JsonSchema>)) {
            const v = (value as Record<string, unknown>)[name]
            if (v !== undefined) problems.push(...validate(sub, v, `${at}.${name}`))
          }
        }
        break
      case "required":
        if (typeOf(value) === "object") {
          for (const name of arg as ReadonlyArray<string>) {
            if (!(name in (value as object))) problems.push(`${at}.${name}: required`)
          }
        }
        break
      case "additionalProperties":
        if (typeOf(value) === "object" && arg === false) {
          const known = Object.keys((schema["properties"] ?? {}) as object)
          for (const name of Object.keys(value as object)) {
            if (!known.includes(name)) problems.push(`${at}.${name}: additional property`)
          }
        } else if (arg !== true && arg !== false) throw new Error(`${at}: additionalProperties schema unsupported`)
        break
      case "items":
        if (Array.isArray(value)) value.forEach((v, i) => problems.push(...validate(arg as JsonSchema, v, `${at}[${i}]`)))
        break
      case "minItems":
        if (Array.isArray(value) && value.length < (arg as number)) problems.push(`${at}: too few items`)
        break
      case "anyOf": {
        const branches = (arg as ReadonlyArray<JsonSchema>).map((s) => validate(s, value, at))
        if (branches.every((b) => b.length > 0)) problems.push(`${at}: no anyOf branch matches (${branches.flat().join(", ")})`)
        break
      }
      case "minimum":
        if (typeof value === "number" && value < (arg as number)) problems.push(`${at}: below minimum`)
        break
      case "maximum":
        if (typeof value === "number" && value > (arg as number)) problems.push(`${at}: above maximum`)
        break
      case "minLength":
        if (typeof value === "string" && [...value].length < (arg as number)) problems.push(`${at}: too short`)
        break
      case "maxLength":
        if (typeof value === "string" && [...value].length > (arg as number)) problems.push(`${at}: too long`)
        break
      case "pattern":
        if (typeof value === "string" && !new RegExp(arg as string, "u").test(value)) problems.push(`${at}: pattern`)
        break
      case "format":
        if (arg !== "date-time") throw new Error(`${at}: format ${String(arg)} unsupported`)
        if (typeof value === "string" && !ISO_DATE_TIME.test(value)) problems.push(`${at}: not a date-time`)
        break
      default:
        if (!ANNOTATIONS.has(keyword)) throw new Error(`${at}: unexpected JSON Schema keyword ${keyword}`)
    }
  }
  return problems
}

/** Every schema object reachable from `schema` with its path (properties, items, anyOf). */
const subschemas = (schema: JsonSchema, at = "#"): ReadonlyArray<readonly [string, JsonSchema]> => {
  const out: Array<readonly [string, JsonSchema]> = [[at, schema]]
  const props = schema["properties"] as Record<string, JsonSchema> | undefined
  for (const [name, sub] of Object.entries(props ?? {})) out.push(...subschemas(sub, `${at}/properties/${name}`))
  if (typeof schema["items"] === "object") out.push(...subschemas(schema["items"] as JsonSchema, `${at}/items`))
  const anyOf = schema["anyOf"] as ReadonlyArray<JsonSchema> | undefined
  anyOf?.forEach((sub, i) => out.push(...subschemas(sub, `${at}/anyOf/${i}`)))
  return out
}

const allKeys = (u: unknown): ReadonlyArray<string> =>
  typeof u !== "object" || u === null
    ? []
    : Array.isArray(u)
    ? u.flatMap(allKeys)
    : Object.entries(u).flatMap(([k, v]) => [k, ...allKeys(v)])

// --- Samples: one valid call per tool, naming every argument (so the generated cases below
// reach every string argument), and one valid success payload per tool.

const validArguments: { readonly [N in ToolName]: Record<string, Json> } = {
  list_networks: {},
  list_buffers: { networkId: 1 },
  recent_messages: { networkId: 1, target: "#chan", before: 900, limit: 20 },
  search_messages: { query: "hello world", networkId: 1, target: "#chan", nick: "alice", limit: 10 },
  get_nick_note: { networkId: 1, nick: "alice" },
  set_nick_note: { networkId: 1, nick: "alice", note: "met at FOSDEM" },
  set_relay_bot: { networkId: 1, nick: "relay", marked: true, pattern: "<{nick}> {message}" },
  send_message: { networkId: 1, target: "#chan", text: "hello" },
  send_action: { networkId: 1, target: "#chan", text: "waves" },
  send_notice: { networkId: 1, target: "bob", text: "ping" },
  send_raw: { networkId: 1, line: "WHO #chan" },
  join_channel: { networkId: 1, channel: "#chan", key: "secret" },
  part_channel: { networkId: 1, channel: "#chan", reason: "bye: see you" },
  set_nick: { networkId: 1, nick: "alice_" },
  set_away: { networkId: 1, message: "lunch" },
  list_members: { networkId: 1, channel: "#chan", limit: 1000 },
  whois: { networkId: 1, nick: "bob" },
  connect_network: { networkId: 1, reconnect: true },
  disconnect_network: { networkId: 1 },
  get_topic: { networkId: 1, channel: "#chan" },
  set_topic: { networkId: 1, channel: "#chan", topic: "welcome" },
  get_mode_list: { networkId: 1, channel: "#chan", letter: "b" },
  set_channel_modes: {
    networkId: 1,
    channel: "#chan",
    changes: [{ sign: "+", letter: "o", param: "bob" }, { sign: "-", letter: "k" }]
  }
}

const message = {
  id: 41,
  networkId: 1,
  target: "#chan",
  time: "2025-01-31T12:00:00.000Z",
  kind: "privmsg",
  nick: "alice",
  text: "hi",
  self: false
}
const numericMessage = {
  ...message,
  id: 42,
  target: ":server:1",
  kind: "numeric",
  nick: null,
  numeric: "311",
  text: "bob ~b host * :Bob"
}
const relayed = { ...message, id: 43, relayBot: "relay", encrypted: true }

const validOutputs: { readonly [N in ToolName]: Record<string, Json> } = {
  list_networks: {
    networks: [
      {
        id: 1, name: "libera", host: "irc.libera.chat", port: 6697, tls: true, state: "connected", nick: "alice",
        lastError: null, nextRetryAt: null
      },
      {
        id: 2, name: "oftc", host: "irc.oftc.net", port: 6667, tls: false, state: "backoff", nick: null,
        lastError: "connection closed by the server", nextRetryAt: "2025-01-31T12:00:05.000Z"
      }
    ]
  },
  list_buffers: {
    buffers: [
      { networkId: 1, target: "#chan", kind: "channel", lastMessageAt: "2025-01-31T12:00:00.000Z" },
      { networkId: 1, target: "bob", kind: "dm", lastMessageAt: null }
    ]
  },
  recent_messages: { networkId: 1, target: "#chan", messages: [message, numericMessage, relayed] },
  search_messages: { messages: [relayed, message] },
  get_nick_note: { networkId: 1, nick: "alice", note: "" },
  set_nick_note: { ok: true, networkId: 1, nick: "alice", note: "met at FOSDEM" },
  set_relay_bot: { networkId: 1, nick: "Relay", marked: true, pattern: null },
  send_message: { ok: true },
  send_action: { ok: true },
  send_notice: { ok: true },
  send_raw: { ok: true, serverBuffer: ":server:1" },
  join_channel: { ok: true },
  part_channel: { ok: true },
  set_nick: { ok: true, serverBuffer: ":server:1" },
  set_away: { ok: true, away: true },
  list_members: {
    channel: "#chan",
    count: 3,
    truncated: true,
    members: [
      { nick: "alice", prefix: "@+", modes: ["o", "v"], away: false },
      { nick: "bob", prefix: "", modes: [], away: true }
    ]
  },
  whois: { ok: true, serverBuffer: ":server:1" },
  connect_network: { ok: true },
  disconnect_network: { ok: true },
  get_topic: { channel: "#chan", topic: "welcome", setBy: "alice", setAt: "2025-01-31T12:00:00.000Z" },
  set_topic: { ok: true },
  get_mode_list: {
    ok: true,
    channel: "#chan",
    letter: "b",
    entries: [
      { mask: "*!*@spam.example", setBy: "alice", setAt: "2025-01-31T12:00:00.000Z" },
      { mask: "*!*@old.example", setBy: null, setAt: null }
    ]
  },
  set_channel_modes: { ok: true, lines: ["MODE #chan +o-k bob *"] }
}

const failures: ReadonlyArray<ToolFailure> = [
  new InsufficientScope({ tool: "send_message" }),
  new AccountPaused({ tool: "send_message" }),
  new UnknownNetwork({ networkId: 9 }),
  new InvalidArguments({ message: "limit: must be an integer from 1 to 500, got 501" }),
  new NotConnected({ networkId: 1 }),
  new NotInChannel({ networkId: 1, channel: "#chan" }),
  new E2eChannelUseSendMessage({ networkId: 1, target: "#chan" }),
  new LockedDown({ networkId: 1, host: "irc.example.org" }),
  new Refused({ numeric: "482", text: "You're not channel operator" }),
  new Timeout({ operation: "MODE #chan b", seconds: 10 })
]

const entry = (name: ToolName) => {
  const found = toolListEntries.find((e) => e.name === name)
  if (found === undefined) throw new Error(name)
  return found
}

describe("tools/list entries", () => {
  it.each(TOOL_NAMES)("%s publishes plain object schemas with no references and no titles", (name) => {
    const { inputSchema, outputSchema } = entry(name)
    for (const schema of [inputSchema, outputSchema]) {
      expect(schema.type).toBe("object")
      expect(JSON.parse(JSON.stringify(schema))).toEqual(schema)
      const keys = allKeys(schema)
      for (const forbidden of ["$ref", "$defs", "definitions", "$id", "$schema", "title", "$comment"]) {
        expect(keys).not.toContain(forbidden)
      }
    }
  })

  it.each(TOOL_NAMES)("%s describes every property", (name) => {
    const { inputSchema, outputSchema } = entry(name)
    for (const schema of [inputSchema, outputSchema]) {
      for (const [at, sub] of subschemas(schema)) {
        const props = sub["properties"] as Record<string, JsonSchema> | undefined
        for (const [prop, propSchema] of Object.entries(props ?? {})) {
          expect(typeof propSchema["description"], `${name} ${at}/properties/${prop}`).toBe("string")
        }
      }
    }
  })

  it("has no parameters schema for list_networks as MCP recommends", () => {
    expect(entry("list_networks").inputSchema).toEqual({ type: "object", properties: {}, additionalProperties: false })
  })

  it.each([
    ["recent_messages", 100, 500],
    ["search_messages", 50, 100],
    ["list_members", 200, 1000]
  ] as const)("%s publishes limit default %i and maximum %i", (name, defaultValue, max) => {
    const limit = (entry(name).inputSchema["properties"] as Record<string, JsonSchema>)["limit"]
    expect(limit).toMatchObject({ type: "integer", minimum: 1, maximum: max, default: defaultValue })
  })

  it("publishes the reconnect default", () => {
    const props = entry("connect_network").inputSchema["properties"] as Record<string, JsonSchema>
    expect(props["reconnect"]).toMatchObject({ type: "boolean", default: false })
  })

  it("carries MCP annotations", () => {
    expect(entry("get_topic").annotations).toMatchObject({ readOnlyHint: true, openWorldHint: false })
    expect(entry("send_message").annotations).toMatchObject({ readOnlyHint: false, idempotentHint: false })
  })
})

describe("toolsForScope", () => {
  it("gives the seven read tools to read, in a stable order", () => {
    expect(toolsForScope("read").map((e) => e.name)).toEqual([
      "list_networks",
      "list_buffers",
      "recent_messages",
      "search_messages",
      "get_nick_note",
      "list_members",
      "get_topic"
    ])
  })

  it("gives all 23 to read-write, in the catalog order", () => {
    expect(toolsForScope("read-write").map((e) => e.name)).toEqual(TOOL_NAMES)
  })

  it("is built once, not per request", () => {
    expect(toolsForScope("read")).toBe(toolsForScope("read"))
    expect(toolsForScope("read-write")).toBe(toolListEntries)
  })

  it.each(["read", "read-write"] as const)("%s: the pre-serialized result equals the entries", (scope) => {
    expect(JSON.parse(toolsListResultJson[scope])).toEqual({ tools: toolsForScope(scope) })
  })

  it.each([7, "req-1"])("wraps the pre-serialized result in a response for id %j", (id) => {
    expect(JSON.parse(Buffer.concat(toolsListResponseParts("read", id)).toString("utf8"))).toEqual({
      jsonrpc: "2.0",
      id,
      result: { tools: toolsForScope("read") }
    })
  })
})

describe("published schemas agree with the Schemas", () => {
  it.each(TOOL_NAMES)("%s: the sample arguments pass both", (name) => {
    const args = validArguments[name]
    expect(validate(entry(name).inputSchema, args)).toEqual([])
    expect(Either.isRight(decodeToolArguments(name, args))).toBe(true)
  })

  it.each(TOOL_NAMES)("%s: the sample success payload passes both", (name) => {
    const payload = validOutputs[name]
    expect(validate(entry(name).outputSchema, payload)).toEqual([])
    const output = toolsByName[name].output as Schema.Schema<unknown, unknown>
    expect(Schema.decodeUnknownEither(output, { onExcessProperty: "error" })(payload)._tag).toBe("Right")
  })

  it.each(TOOL_NAMES)("%s: every failure payload fits the outputSchema (isError results are validated too)", (name) => {
    for (const failure of failures) {
      expect(validate(entry(name).outputSchema, toToolFailurePayload(failure))).toEqual([])
    }
  })

  it.each(TOOL_NAMES)("%s: a wrong payload does not fit the outputSchema", (name) => {
    expect(validate(entry(name).outputSchema, { ok: false }).length).toBeGreaterThan(0)
    expect(validate(entry(name).outputSchema, { ok: "yes", error: "timeout" }).length).toBeGreaterThan(0)
  })

  it("refuses limit 501 in the published schema too", () => {
    expect(validate(entry("recent_messages").inputSchema, { networkId: 1, target: "#a", limit: 501 })).toEqual([
      "$.limit: above maximum"
    ])
  })
})

describe("decodeToolArguments", () => {
  it.each([
    ["recent_messages", { networkId: 1, target: "#a" }, { networkId: 1, target: "#a", limit: 100 }],
    ["search_messages", { query: "x" }, { query: "x", limit: 50 }],
    ["list_members", { networkId: 1, channel: "#a" }, { networkId: 1, channel: "#a", limit: 200 }],
    ["connect_network", { networkId: 1 }, { networkId: 1, reconnect: false }],
    ["recent_messages", { networkId: 1, target: "#a", limit: 500 }, { networkId: 1, target: "#a", limit: 500 }],
    ["recent_messages", { networkId: 1, target: "#a", limit: 1 }, { networkId: 1, target: "#a", limit: 1 }],
    ["search_messages", { query: "x", limit: 100 }, { query: "x", limit: 100 }],
    ["list_members", { networkId: 1, channel: "#a", limit: 1000 }, { networkId: 1, channel: "#a", limit: 1000 }],
    ["list_networks", undefined, {}],
    ["set_away", {}, {}]
  ] as const)("%s %j → %j (defaults applied)", (name, args, expected) => {
    expect(decodeToolArguments(name, args)).toEqual(Either.right(expected))
  })

  it.each([
    ["recent_messages", { networkId: 1, target: "#a", limit: 501 }, "limit: must be an integer from 1 to 500, got 501"],
    ["recent_messages", { networkId: 1, target: "#a", limit: 0 }, "limit: must be an integer from 1 to 500, got 0"],
    ["recent_messages", { networkId: 1, target: "#a", limit: 2.5 }, "limit: must be an integer from 1 to 500, got 2.5"],
    ["search_messages", { query: "x", limit: 101 }, "limit: must be an integer from 1 to 100, got 101"],
    ["search_messages", { query: "x", limit: 0 }, "limit: must be an integer from 1 to 100, got 0"],
    ["list_members", { networkId: 1, channel: "#a", limit: 0 }, "limit: must be an integer from 1 to 1000, got 0"],
    ["list_members", { networkId: 1, channel: "#a", limit: 1001 }, "limit: must be an integer from 1 to 1000, got 1001"],
    ["recent_messages", { target: "#a" }, "networkId: is required"],
    ["recent_messages", { networkId: 0, target: "#a" }, "networkId: must be an integer from 1 to 9007199254740991, got 0"],
    ["get_mode_list", { networkId: 1, channel: "#a", letter: "z" }, "letter: must be one of b, e, I, q, got \"z\""],
    ["set_channel_modes", { networkId: 1, channel: "#a", changes: [] }, "changes: must hold at least one change"],
    [
      "set_channel_modes",
      { networkId: 1, channel: "#a", changes: [{ sign: "*", letter: "o" }] },
      "changes[0].sign: must be \"+\" or \"-\", got \"*\""
    ],
    ["set_relay_bot", { networkId: 1, nick: "r", marked: "yes" }, "marked: must be true or false, got \"yes\""],
    ["send_message", { networkId: 1, target: "#a", text: "" }, "text: must not be empty"],
    ["list_networks", [], "arguments: must be an object, got []"],
    ["list_networks", "x", "arguments: must be an object, got \"x\""]
  ] as const)("%s %j is refused: %s", (name, args, expected) => {
    expect(decodeToolArguments(name, args)).toEqual(Either.left(new InvalidArguments({ message: expected })))
  })

  it("refuses unknown keys, naming them and the real arguments, with the other problems", () => {
    const result = decodeToolArguments("recent_messages", { networkId: "1", target: "#a", limt: 5 })
    expect(result).toEqual(
      Either.left(
        new InvalidArguments({
          message: "limt: is not an argument of recent_messages (it takes networkId, target, before, limit); " +
            "networkId: must be an integer from 1 to 9007199254740991, got \"1\""
        })
      )
    )
    expect(decodeToolArguments("list_networks", { verbose: true })).toEqual(
      Either.left(new InvalidArguments({ message: "verbose: is not an argument (list_networks takes no arguments)" }))
    )
    expect(
      decodeToolArguments("set_channel_modes", {
        networkId: 1,
        channel: "#a",
        changes: [{ sign: "+", letter: "o", param: "bob", extra: 1 }]
      })
    ).toEqual(Either.left(new InvalidArguments({ message: "changes[0].extra: is not a known field" })))
  })

  it("allows line breaks in a nick note but never NUL, and counts characters as code points", () => {
    const note = (text: string) => decodeToolArguments("set_nick_note", { networkId: 1, nick: "bob", note: text })
    expect(Either.isRight(note("line one\r\nline two"))).toBe(true)
    expect(validate(entry("set_nick_note").inputSchema, { networkId: 1, nick: "bob", note: "line one\r\nline two" })).toEqual([])
    expect(note("a\0b")).toEqual(Either.left(new InvalidArguments({ message: "note: must not contain NUL" })))
    expect(Either.isRight(note("😀".repeat(4096)))).toBe(true)
    expect(note("😀".repeat(4097))).toEqual(
      Either.left(new InvalidArguments({ message: "note: must be at most 4096 characters, got 4097" }))
    )
    expect(Either.isRight(note(""))).toBe(true)
  })
})

// Generated from the data: every string argument (including changes[].letter/param) of every
// tool gets CR, LF and NUL, and must be refused by the Schema and the published schema alike.
// The nick note is the one multi-line field (McpTools.ts): it refuses NUL only.
const MULTI_LINE: ReadonlySet<string> = new Set(["set_nick_note.note"])

type Case = {
  readonly tool: ToolName
  readonly path: string
  readonly args: Record<string, Json>
  readonly label: string
}

const stringPaths = (schema: JsonSchema, prefix: string): ReadonlyArray<string> => {
  const props = (schema["properties"] ?? {}) as Record<string, JsonSchema>
  return Object.entries(props).flatMap(([name, sub]) => {
    const path = prefix === "" ? name : `${prefix}.${name}`
    if (sub["type"] === "string") return [path]
    if (sub["type"] === "array" && (sub["items"] as JsonSchema)["type"] === "object") {
      return stringPaths(sub["items"] as JsonSchema, `${path}[0]`)
    }
    return []
  })
}

/** A deep copy of args with the value at `path` ("a", "a[0].b") replaced; the sample must name it. */
const withValue = (args: Record<string, Json>, path: string, value: string): Record<string, Json> => {
  const set = (node: Json, keys: ReadonlyArray<string>): Json => {
    const [key, ...rest] = keys
    if (key === undefined) return value
    if (Array.isArray(node)) return node.map((item, i) => (String(i) === key ? set(item, rest) : item))
    if (typeof node !== "object" || node === null || !(key in node)) throw new Error(`sample for ${path} missing`)
    return { ...node, [key]: set((node as Record<string, Json>)[key]!, rest) }
  }
  return set(args, path.replace("[0]", ".0").split(".")) as Record<string, Json>
}

const lineBreakCases: ReadonlyArray<Case> = TOOL_NAMES.flatMap((tool) =>
  stringPaths(entry(tool).inputSchema, "").flatMap((path) =>
    ["a\rb", "a\nb", "a\r\nQUIT :x", "a\0b"]
      .filter((bad) => !MULTI_LINE.has(`${tool}.${path}`) || bad.includes("\0"))
      .map((bad) => ({ tool, path, label: JSON.stringify(bad), args: withValue(validArguments[tool], path, bad) }))
  )
)

describe("CR, LF and NUL in string arguments", () => {
  it("covers every string argument of every write tool", () => {
    const covered = new Set(lineBreakCases.map((c) => `${c.tool}.${c.path}`))
    expect([...covered]).toEqual(
      expect.arrayContaining([
        "send_message.target",
        "send_message.text",
        "send_raw.line",
        "set_channel_modes.changes[0].param",
        "set_relay_bot.pattern",
        "set_topic.topic",
        "part_channel.reason",
        "join_channel.key",
        "set_away.message",
        "set_nick_note.note"
      ])
    )
    expect(covered.size).toBe(33)
  })

  it.each(lineBreakCases)("$tool $path $label is refused, naming the argument", ({ args, path, tool }) => {
    const result = decodeToolArguments(tool, args)
    if (Either.isRight(result)) throw new Error("accepted")
    expect(result.left.message.startsWith(`${path}: `)).toBe(true)
    expect(validate(entry(tool).inputSchema, args).length).toBeGreaterThan(0)
  })
})

describe("tools/call results", () => {
  it("carries the payload as JSON and as that JSON escaped for the text item", () => {
    const payload = { ok: true, serverBuffer: ":server:1", text: 'a "quoted" line\\ with \n a break' }
    const result = toolSuccessResult(payload)
    expect(JSON.parse(result.json)).toEqual(payload)
    expect(JSON.parse(`"${result.escaped}"`)).toBe(result.json)
    expect(result.isError).toBeUndefined()
  })

  it("writes a payload assembled from serialized parts exactly as JSON.stringify of the payload would", () => {
    const items = [{ id: 1, text: 'say "hi"' }, { id: 2, text: "tab\there \u2028 and \\" }]
    const assembled = new SerializedPayload<{ target: string; messages: ReadonlyArray<object> }>(
      `{"target":${JSON.stringify("#a\"b")},"messages":[`,
      items.map((item) => serializedPart(JSON.stringify(item))),
      "]}"
    )
    const expected = JSON.stringify({ target: "#a\"b", messages: items })
    const result = toolSuccessResult(assembled)
    expect(result.json).toBe(expected)
    expect(result.escaped).toBe(JSON.stringify(expected).slice(1, -1))
    expect(result.bytes().map((b) => b.toString("utf8"))).toEqual([result.escaped, result.json])
    // The same payload given again is the same result, encoded once.
    expect(toolSuccessResult(assembled).bytes()[1]).toBe(result.bytes()[1])
    const empty = new SerializedPayload<object>(`{"messages":[`, [], "]}")
    expect(JSON.parse(toolSuccessResult(empty).json)).toEqual({ messages: [] })
  })

  it("marks every failure isError with the failure payload", () => {
    for (const failure of failures) {
      const result = toolFailureResult(failure)
      expect(result.isError).toBe(true)
      expect(JSON.parse(result.json)).toEqual(toToolFailurePayload(failure))
      expect(JSON.parse(`"${result.escaped}"`)).toBe(result.json)
    }
  })
})
