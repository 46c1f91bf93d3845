// ToolDefinition: how an MCP tool is written down — its shape (`McpTool`), `defineTool`, the
// argument builders that carry each argument's description and limits into the published JSON
// Schema, and the result pieces several tools share. The tools themselves are in the files
// beside this one, by role; McpTools.ts lists them as the catalog. Pure data; no state.
import { Schema } from "effect"
import { ModeChange } from "../ChannelMode.js"
import { checkedString, IrcParam, NetworkId, showValue } from "../Ids.js"
import * as Limits from "../Limits.js"

export type ToolScope = "read" | "read-write"

/** MCP ToolAnnotations (2025-03-26+): hints for the client's UI, never trusted for security. */
export interface ToolHints {
  readonly readOnlyHint: boolean
  readonly destructiveHint: boolean
  readonly idempotentHint: boolean
  readonly openWorldHint: boolean
}

/** One tool. `input` decodes the `arguments` object; `output` is the success payload. */
export interface McpTool<
  Name extends string = string,
  Input extends Schema.Schema.AnyNoContext = Schema.Schema.AnyNoContext,
  Output extends Schema.Schema.AnyNoContext = Schema.Schema.AnyNoContext
> {
  readonly name: Name
  readonly title: string
  readonly scope: ToolScope
  readonly description: string
  readonly input: Input
  readonly output: Output
  readonly hints: ToolHints
}

/** A tool's input is always a Struct: MCP arguments are an object, and `fields` names the arguments. */
type ArgumentsSchema = Schema.Schema.AnyNoContext & { readonly fields: Schema.Struct.Fields }

export const defineTool = <const Name extends string, Input extends ArgumentsSchema, Output extends Schema.Schema.AnyNoContext>(
  tool: McpTool<Name, Input, Output>
): McpTool<Name, Input, Output> => tool

// Hint presets: reads touch only the bouncer's own store; IRC actions reach the open world.
export const localRead: ToolHints = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }

// --- Argument builders (each carries its description; limits become minimum/maximum/default) ---

export const networkIdArg = (description: string) => NetworkId.annotations({ description })

export const optionalArg = <S extends Schema.Schema.AnyNoContext>(schema: S) => Schema.optionalWith(schema, { exact: true })

export const limitArg = (defaultValue: number, max: number, noun: string) =>
  Schema.optionalWith(
    Schema.Number.pipe(
      Schema.int(),
      Schema.between(1, max, {
        message: (issue) => ({
          message: `must be an integer from 1 to ${max}, got ${showValue(issue.actual)}`,
          override: true
        })
      })
    ).annotations({
      description: `How many ${noun} to return at most, 1 to ${max}; default ${defaultValue}. Larger values are refused.`,
      default: defaultValue
    }),
    { exact: true, default: () => defaultValue }
  )

export const booleanArg = (description: string, defaultValue?: boolean) =>
  Schema.Boolean.annotations({
    description,
    message: (issue) => ({ message: `must be true or false, got ${showValue(issue.actual)}`, override: true }),
    ...(defaultValue === undefined ? {} : { default: defaultValue })
  })

export const channelArg = (description: string) => IrcParam.annotations({ description })

/** Free-form note text: code points (as JSON Schema counts), NUL refused; newlines allowed. */
export const NoteText = checkedString(
  (s) =>
    s.includes("\0")
      ? "must not contain NUL"
      : [...s].length > Limits.NICK_NOTE_MAX_LENGTH
      ? `must be at most ${Limits.NICK_NOTE_MAX_LENGTH} characters, got ${[...s].length}`
      : undefined,
  { maxLength: Limits.NICK_NOTE_MAX_LENGTH, pattern: "^[^\\x00]*$" }
)

export const ModeChanges = Schema.Array(ModeChange)
  .annotations({
    message: (issue) => ({
      message: `must be an array of {sign, letter, param?} objects, got ${showValue(issue.actual)}`,
      override: false
    })
  })
  .pipe(Schema.minItems(1, { message: () => "must hold at least one change" }))

// --- Result pieces ---

export const okTrue = Schema.Literal(true).annotations({
  description: "true: the command was handed to the network's IRC connection."
})

export const serverBufferField = Schema.String.annotations({
  description: "The network's server buffer, :server:<networkId>. Pass it as target to recent_messages to read the replies."
})

export const Ok = Schema.Struct({ ok: okTrue }).annotations({ description: "The command was sent." })

export const OkWithServerBuffer = Schema.Struct({ ok: okTrue, serverBuffer: serverBufferField }).annotations({
  description: "The command was sent; replies arrive in serverBuffer."
})

export const SERVER_BUFFER_NOTE =
  "The server's replies arrive asynchronously as messages in the server buffer named by serverBuffer (:server:<networkId>): " +
  "wait a moment, then read them with recent_messages using that target."

export const NOT_CONNECTED_NOTE = "Fails with not-connected when the network's connection is not up (including reconnect backoff)."
