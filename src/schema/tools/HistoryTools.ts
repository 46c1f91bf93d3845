// HistoryTools: the tools that read what Belay keeps for the member — networks, buffers,
// history pages, search — and the member's own notes about nicks and relay bots
// (docs/contract.md "MCP tool shapes"). Pure data.
import { Schema } from "effect"
import { BufferTarget, IrcParam, IrcText, MessageId, NetworkId, NonEmptyIrcText } from "../Ids.js"
import * as Limits from "../Limits.js"
import { BufferSummary, Message } from "../Message.js"
import { Network } from "../Network.js"
import { RelayBotMark } from "../RelayBot.js"
import {
  booleanArg,
  defineTool,
  limitArg,
  localRead,
  networkIdArg,
  NoteText,
  okTrue,
  optionalArg
} from "./ToolDefinition.js"

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
