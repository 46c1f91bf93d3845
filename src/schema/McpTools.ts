// McpTools: the 23 MCP tools as data — name, scope, agent-facing description, hints, and the
// input and output Schemas (docs/contract.md "MCP tool shapes", interface "Endpoints"). The input
// Schema both validates `tools/call` arguments (with defaults applied) and generates the
// published inputSchema (ToolCatalog.ts), so validation and tools/list cannot drift.
// Pure data; no state.
//
// Decisions recorded here:
// - Out-of-range values are refused (`limit: 501` → invalid-arguments), never clamped (docs/decisions.md).
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
import { Schema } from "effect"
import { ModeChange, ModeList, ModeListLetter } from "./ChannelMode.js"
import { ChannelTopic } from "./ChannelTopic.js"
import { BufferTarget, checkedString, IrcParam, IrcText, MessageId, NetworkId, NonEmptyIrcText, showValue } from "./Ids.js"
import * as Limits from "./Limits.js"
import { Member } from "./Member.js"
import { BufferSummary, Message } from "./Message.js"
import { Network } from "./Network.js"
import { RelayBotMark } from "./RelayBot.js"

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

const defineTool = <const Name extends string, Input extends ArgumentsSchema, Output extends Schema.Schema.AnyNoContext>(
  tool: McpTool<Name, Input, Output>
): McpTool<Name, Input, Output> => tool

// Hint presets: reads touch only the bouncer's own store; IRC actions reach the open world.
const localRead: ToolHints = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }

// --- Argument builders (each carries its description; limits become minimum/maximum/default) ---

const networkIdArg = (description: string) => NetworkId.annotations({ description })

const optionalArg = <S extends Schema.Schema.AnyNoContext>(schema: S) => Schema.optionalWith(schema, { exact: true })

const limitArg = (defaultValue: number, max: number, noun: string) =>
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

const booleanArg = (description: string, defaultValue?: boolean) =>
  Schema.Boolean.annotations({
    description,
    message: (issue) => ({ message: `must be true or false, got ${showValue(issue.actual)}`, override: true }),
    ...(defaultValue === undefined ? {} : { default: defaultValue })
  })

const channelArg = (description: string) => IrcParam.annotations({ description })

/** Free-form note text: code points (as JSON Schema counts), NUL refused; newlines allowed. */
const NoteText = checkedString(
  (s) =>
    s.includes("\0")
      ? "must not contain NUL"
      : [...s].length > Limits.NICK_NOTE_MAX_LENGTH
      ? `must be at most ${Limits.NICK_NOTE_MAX_LENGTH} characters, got ${[...s].length}`
      : undefined,
  { maxLength: Limits.NICK_NOTE_MAX_LENGTH, pattern: "^[^\\x00]*$" }
)

const ModeChanges = Schema.Array(ModeChange)
  .annotations({
    message: (issue) => ({
      message: `must be an array of {sign, letter, param?} objects, got ${showValue(issue.actual)}`,
      override: false
    })
  })
  .pipe(Schema.minItems(1, { message: () => "must hold at least one change" }))

// --- Result pieces ---

const okTrue = Schema.Literal(true).annotations({
  description: "true: the command was handed to the network's IRC connection."
})

const serverBufferField = Schema.String.annotations({
  description: "The network's server buffer, :server:<networkId>. Pass it as target to recent_messages to read the replies."
})

const Ok = Schema.Struct({ ok: okTrue }).annotations({ description: "The command was sent." })

const OkWithServerBuffer = Schema.Struct({ ok: okTrue, serverBuffer: serverBufferField }).annotations({
  description: "The command was sent; replies arrive in serverBuffer."
})

const SERVER_BUFFER_NOTE =
  "The server's replies arrive asynchronously as messages in the server buffer named by serverBuffer (:server:<networkId>): " +
  "wait a moment, then read them with recent_messages using that target."

const NOT_CONNECTED_NOTE = "Fails with not-connected when the network's connection is not up (including reconnect backoff)."

// --- The tools, in the order of docs/decisions.md ---

export const ListNetworks = defineTool({
  name: "list_networks",
  title: "List networks",
  scope: "read",
  description:
    "Lists the IRC networks of this account with their live connection state and the member's current nick. " +
    "Call it first: the id of each network is the networkId every other tool takes. " +
    "A network must be in state connected for the write tools to work on it.",
  input: Schema.Struct({}),
  output: Schema.Struct({
    networks: Schema.Array(Network).annotations({ description: "The account's networks." })
  }),
  hints: localRead
})

export const ListBuffers = defineTool({
  name: "list_buffers",
  title: "List buffers",
  scope: "read",
  description:
    "Lists the channels and private conversations (DMs) that have stored history, with the time of the most recent " +
    "message in each. Use it to find what to read with recent_messages. Server buffers (:server:<networkId>) are not " +
    "listed but can be read with recent_messages.",
  input: Schema.Struct({
    networkId: optionalArg(networkIdArg("Only list buffers of this network. Omit for every network."))
  }),
  output: Schema.Struct({
    buffers: Schema.Array(BufferSummary).annotations({ description: "Buffers with history." })
  }),
  hints: localRead
})

export const RecentMessages = defineTool({
  name: "recent_messages",
  title: "Read recent messages",
  scope: "read",
  description:
    "Returns the most recent messages of one buffer, oldest first. To page further back, call again with before set " +
    "to the lowest id of the previous page. To see what is new since an earlier read, read again and skip ids you " +
    "have seen: nothing is pushed, clients poll. Use target :server:<networkId> to read the server buffer, where " +
    "replies to send_raw, whois, set_nick, join_channel and connection events appear.",
  input: Schema.Struct({
    networkId: networkIdArg("Network of the buffer."),
    target: BufferTarget.annotations({
      description: "Buffer to read: a channel (#chan), a nick for a DM, or :server:<networkId> for the server buffer."
    }),
    before: optionalArg(
      MessageId.annotations({
        description: "Only return messages with an id lower than this (exclusive), for paging backwards."
      })
    ),
    limit: limitArg(Limits.RECENT_MESSAGES_DEFAULT_LIMIT, Limits.RECENT_MESSAGES_MAX_LIMIT, "messages")
  }),
  output: Schema.Struct({
    networkId: NetworkId.annotations({ description: "Network of the buffer." }),
    target: Schema.String.annotations({ description: "The buffer that was read." }),
    messages: Schema.Array(Message).annotations({ description: "The messages, oldest first." })
  }),
  hints: localRead
})

export const SearchMessages = defineTool({
  name: "search_messages",
  title: "Search messages",
  scope: "read",
  description:
    "Full-text search over stored messages, newest first. Every term of query must match (terms are ANDed). " +
    "Narrow it with networkId, target and nick. Each result carries networkId, target and id, so the surrounding " +
    "conversation can be read with recent_messages (before = id + 1).",
  input: Schema.Struct({
    query: NonEmptyIrcText.annotations({ description: "Search terms; every term must occur in the message text." }),
    networkId: optionalArg(networkIdArg("Only search this network.")),
    target: optionalArg(
      BufferTarget.annotations({ description: "Only search this buffer (channel, nick or :server:<networkId>)." })
    ),
    nick: optionalArg(IrcParam.annotations({ description: "Only messages spoken by this nick." })),
    limit: limitArg(Limits.SEARCH_MESSAGES_DEFAULT_LIMIT, Limits.SEARCH_MESSAGES_MAX_LIMIT, "messages")
  }),
  output: Schema.Struct({
    messages: Schema.Array(Message).annotations({ description: "Matching messages, newest first." })
  }),
  hints: localRead
})

export const GetNickNote = defineTool({
  name: "get_nick_note",
  title: "Read a nick note",
  scope: "read",
  description:
    "Reads the member's private note about a nick on a network. The note is an empty string when there is none.",
  input: Schema.Struct({
    networkId: networkIdArg("Network of the nick."),
    nick: IrcParam.annotations({ description: "The nick the note is about." })
  }),
  output: Schema.Struct({
    networkId: NetworkId.annotations({ description: "Network of the nick." }),
    nick: Schema.String.annotations({ description: "The nick." }),
    note: Schema.String.annotations({ description: "The note; empty string when there is none." })
  }),
  hints: localRead
})

export const SetNickNote = defineTool({
  name: "set_nick_note",
  title: "Write a nick note",
  scope: "read-write",
  description:
    `Writes the member's private note about a nick on a network, replacing any previous note. An empty note deletes ` +
    `it. At most ${Limits.NICK_NOTE_MAX_LENGTH} characters; line breaks are allowed. The member's open browser tabs ` +
    "show the change at once. Nothing is sent to IRC.",
  input: Schema.Struct({
    networkId: networkIdArg("Network of the nick."),
    nick: IrcParam.annotations({ description: "The nick the note is about." }),
    note: NoteText.annotations({
      description: `The note text, at most ${Limits.NICK_NOTE_MAX_LENGTH} characters; empty string deletes the note.`
    })
  }),
  output: Schema.Struct({
    ok: okTrue,
    networkId: NetworkId.annotations({ description: "Network of the nick." }),
    nick: Schema.String.annotations({ description: "The nick." }),
    note: Schema.String.annotations({ description: "The note as stored; empty string when deleted." })
  }),
  hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false }
})

export const SetRelayBot = defineTool({
  name: "set_relay_bot",
  title: "Mark a relay bot",
  scope: "read-write",
  description:
    "Marks or unmarks a nick as a relay bot (a bot that repeats messages from another chat, like <source> <nick> text). " +
    "While marked, its messages are shown as spoken by the person inside the envelope: message nick is that person, " +
    "text the inner message, relayBot the bot's nick. pattern optionally gives the envelope shape with {source}, " +
    "{nick} and {message}; a pattern lacking {nick} or {message} is stored but ignored when rendering. " +
    "marked false clears the mark. The member's open browser tabs follow the change. Nothing is sent to IRC.",
  input: Schema.Struct({
    networkId: networkIdArg("Network of the bot."),
    nick: IrcParam.annotations({ description: "The bot's nick." }),
    marked: booleanArg("true to mark the nick as a relay bot, false to clear the mark."),
    pattern: optionalArg(
      IrcText.annotations({
        description:
          "Envelope template, e.g. \"<{nick}> {message}\" or \"[{source}] {nick}: {message}\". Omit for the default forms."
      })
    )
  }),
  output: RelayBotMark,
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false }
})

const sendInput = (what: string) =>
  Schema.Struct({
    networkId: networkIdArg("Network to send on."),
    target: IrcParam.annotations({ description: "Channel (#chan) or nick to send to." }),
    text: NonEmptyIrcText.annotations({ description: `The ${what}, one line: CR, LF and NUL are refused.` })
  })

const sendHints: ToolHints = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true }

export const SendMessage = defineTool({
  name: "send_message",
  title: "Send a message",
  scope: "read-write",
  description:
    "Sends a message (PRIVMSG) to a channel or a nick, as the member. The text must be one line. On an end-to-end " +
    "encrypted channel it is sent encrypted. The sent message appears in the buffer (recent_messages). " +
    NOT_CONNECTED_NOTE,
  input: sendInput("message text"),
  output: Ok,
  hints: sendHints
})

export const SendAction = defineTool({
  name: "send_action",
  title: "Send an action",
  scope: "read-write",
  description:
    "Sends an action (CTCP ACTION, what /me does in IRC clients) to a channel or a nick, e.g. text \"waves\" shows as " +
    `"* nick waves". Same rules as send_message. ${NOT_CONNECTED_NOTE}`,
  input: sendInput("action text, without the nick"),
  output: Ok,
  hints: sendHints
})

export const SendNotice = defineTool({
  name: "send_notice",
  title: "Send a notice",
  scope: "read-write",
  description:
    "Sends a NOTICE to a channel or a nick. Notices are for automated replies; clients never answer them " +
    `automatically. Same rules as send_message. ${NOT_CONNECTED_NOTE}`,
  input: sendInput("notice text"),
  output: Ok,
  hints: sendHints
})

export const SendRaw = defineTool({
  name: "send_raw",
  title: "Send a raw IRC line",
  scope: "read-write",
  description:
    "Sends one raw IRC protocol line verbatim on a network, as the member, e.g. \"MODE #chan +i\" or \"LIST >50\". " +
    "No parsing and no trailing CRLF: CR, LF and NUL are refused. A PRIVMSG to an end-to-end encrypted channel is " +
    `refused with e2e-channel-use-send-message (use send_message). ${SERVER_BUFFER_NOTE} ${NOT_CONNECTED_NOTE}`,
  input: Schema.Struct({
    networkId: networkIdArg("Network to send on."),
    line: NonEmptyIrcText.annotations({ description: "The IRC line, without CRLF, e.g. \"WHO #chan\"." })
  }),
  output: OkWithServerBuffer,
  hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true }
})

export const JoinChannel = defineTool({
  name: "join_channel",
  title: "Join a channel",
  scope: "read-write",
  description:
    "Joins a channel. For a +k channel give key; without key the stored key of the channel is sent if there is one. " +
    "Asynchronous: the result only says the JOIN was sent. The buffer, topic and member list arrive shortly after; " +
    "a refusal (banned, invite only, bad key) appears in the server buffer :server:<networkId> (recent_messages). " +
    NOT_CONNECTED_NOTE,
  input: Schema.Struct({
    networkId: networkIdArg("Network of the channel."),
    channel: channelArg("Channel to join, e.g. #chan."),
    key: optionalArg(IrcParam.annotations({ description: "Channel key (password) for a +k channel." }))
  }),
  output: Ok,
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true }
})

export const PartChannel = defineTool({
  name: "part_channel",
  title: "Leave a channel",
  scope: "read-write",
  description: `Leaves a channel, with an optional reason shown to the channel. Its history stays stored. ${NOT_CONNECTED_NOTE}`,
  input: Schema.Struct({
    networkId: networkIdArg("Network of the channel."),
    channel: channelArg("Channel to leave, e.g. #chan."),
    reason: optionalArg(IrcText.annotations({ description: "Part message shown to the channel." }))
  }),
  output: Ok,
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true }
})

export const SetNick = defineTool({
  name: "set_nick",
  title: "Change nick",
  scope: "read-write",
  description:
    "Asks the server to change the member's nick. Asynchronous: the server may refuse (nick in use, invalid nick). " +
    `${SERVER_BUFFER_NOTE} list_networks shows the current nick once the change is done. ${NOT_CONNECTED_NOTE}`,
  input: Schema.Struct({
    networkId: networkIdArg("Network to change the nick on."),
    nick: IrcParam.annotations({ description: "The new nick." })
  }),
  output: OkWithServerBuffer,
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true }
})

export const SetAway = defineTool({
  name: "set_away",
  title: "Set away",
  scope: "read-write",
  description:
    "Marks the member away with a message, or back when message is omitted. Without networkId it applies to every " +
    "network of the account; with networkId only to that one. Other people see the away message when they " +
    "message or WHOIS the member.",
  input: Schema.Struct({
    networkId: optionalArg(networkIdArg("Only this network. Omit for every network.")),
    message: optionalArg(NonEmptyIrcText.annotations({ description: "Away message. Omit to mark the member back." }))
  }),
  output: Schema.Struct({
    ok: okTrue,
    away: Schema.Boolean.annotations({ description: "true when now away, false when back." })
  }),
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true }
})

export const ListMembers = defineTool({
  name: "list_members",
  title: "List channel members",
  scope: "read",
  description:
    "Lists the members of a channel the member has joined, sorted by nick, with status prefixes (@ op, % halfop, " +
    "+ voice, …) and away state. count is the true total; truncated is true when limit cut the list. Fails with " +
    "not-in-channel when the member is not in the channel.",
  input: Schema.Struct({
    networkId: networkIdArg("Network of the channel."),
    channel: channelArg("A joined channel, e.g. #chan."),
    limit: limitArg(Limits.LIST_MEMBERS_DEFAULT_LIMIT, Limits.LIST_MEMBERS_MAX_LIMIT, "members")
  }),
  output: Schema.Struct({
    channel: Schema.String.annotations({ description: "The channel." }),
    count: Schema.Number.pipe(Schema.int()).annotations({ description: "Total number of members in the channel." }),
    truncated: Schema.Boolean.annotations({ description: "true when more members exist than were returned." }),
    members: Schema.Array(Member).annotations({ description: "Members sorted by nick." })
  }),
  hints: localRead
})

export const Whois = defineTool({
  name: "whois",
  title: "WHOIS a nick",
  scope: "read-write",
  description:
    "Sends WHOIS for a nick. The result only says it was sent: the reply (user, host, real name, channels, idle time, " +
    `account) arrives as numeric messages (311, 312, 319, 317, 330, 318 end) in the server buffer. ${SERVER_BUFFER_NOTE} ` +
    NOT_CONNECTED_NOTE,
  input: Schema.Struct({
    networkId: networkIdArg("Network of the nick."),
    nick: IrcParam.annotations({ description: "The nick to look up." })
  }),
  output: OkWithServerBuffer,
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true }
})

export const ConnectNetwork = defineTool({
  name: "connect_network",
  title: "Connect a network",
  scope: "read-write",
  description:
    "Connects a configured network that is offline or waiting in reconnect backoff; reconnect true drops an existing " +
    "connection and connects afresh. Asynchronous: poll list_networks until state is connected; connection events " +
    "appear in the server buffer :server:<networkId>. Fails with locked-down when the instance does not allow the " +
    "network's host.",
  input: Schema.Struct({
    networkId: networkIdArg("Network to connect."),
    reconnect: Schema.optionalWith(
      booleanArg("true to drop an existing connection and connect again; default false.", false),
      { exact: true, default: () => false }
    )
  }),
  output: Ok,
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true }
})

export const DisconnectNetwork = defineTool({
  name: "disconnect_network",
  title: "Disconnect a network",
  scope: "read-write",
  description:
    "Disconnects a network and keeps it offline (no automatic reconnect) until connect_network. Asynchronous: " +
    "list_networks shows state offline once done. Nothing is received from the network while it is offline.",
  input: Schema.Struct({
    networkId: networkIdArg("Network to disconnect.")
  }),
  output: Ok,
  hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true }
})

export const GetTopic = defineTool({
  name: "get_topic",
  title: "Read a channel topic",
  scope: "read",
  description: "Reads the topic of a joined channel, with who set it and when, as last seen by the bouncer.",
  input: Schema.Struct({
    networkId: networkIdArg("Network of the channel."),
    channel: channelArg("A joined channel, e.g. #chan.")
  }),
  output: ChannelTopic,
  hints: localRead
})

export const SetTopic = defineTool({
  name: "set_topic",
  title: "Set a channel topic",
  scope: "read-write",
  description:
    "Sets a channel's topic; an empty string clears it. Always sent, even when unchanged. Needs channel privileges " +
    "(+o, or any member on a -t channel): a refusal such as 482 appears as an error line in the channel (recent_messages). " +
    NOT_CONNECTED_NOTE,
  input: Schema.Struct({
    networkId: networkIdArg("Network of the channel."),
    channel: channelArg("Channel, e.g. #chan."),
    topic: IrcText.annotations({ description: "The new topic, one line; empty string clears it." })
  }),
  output: Ok,
  hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true }
})

export const GetModeList = defineTool({
  name: "get_mode_list",
  title: "Fetch a channel list",
  scope: "read-write",
  description:
    "Fetches a channel's ban (b), ban-exception (e), invite-exception (I) or quiet (q) list fresh from the server and " +
    "waits for it. The reply goes only to this call; nothing is written to the server buffer. If the server refuses " +
    "(e.g. 482 when channel operator status is needed to see the list) the call fails with refused, carrying the numeric " +
    `and the server's text. ${NOT_CONNECTED_NOTE}`,
  input: Schema.Struct({
    networkId: networkIdArg("Network of the channel."),
    channel: channelArg("Channel, e.g. #chan."),
    letter: ModeListLetter
  }),
  output: Schema.Struct({ ok: okTrue, ...ModeList.fields }),
  hints: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true }
})

export const SetChannelModes = defineTool({
  name: "set_channel_modes",
  title: "Change channel modes",
  scope: "read-write",
  description:
    "Changes channel modes: op/voice members (o, v), bans and exceptions (b, e, I, q), key (k), limit (l), flags " +
    "(m, n, t, i, s, …). Each letter is checked against the modes the network advertises; param is required exactly " +
    "when the mode takes one (for -k it may be omitted). The changes are sent as the fewest MODE lines the network " +
    "allows; lines lists them. The server may still refuse (482, 467, 478): refusals appear as error lines in the " +
    `channel (recent_messages). ${NOT_CONNECTED_NOTE}`,
  input: Schema.Struct({
    networkId: networkIdArg("Network of the channel."),
    channel: channelArg("Channel, e.g. #chan."),
    changes: ModeChanges.annotations({ description: "The changes to make, in order; at least one." })
  }),
  output: Schema.Struct({
    ok: okTrue,
    lines: Schema.Array(Schema.String).annotations({
      description: "The MODE lines sent, e.g. [\"MODE #chan +ov-b alice bob *!*@x\"]."
    })
  }),
  hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true }
})

/** Every tool, in the order of docs/decisions.md; tools/list keeps this order. */
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
