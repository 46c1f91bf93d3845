// CommandTools: the tools that act on an IRC connection — messages, raw lines, joining and
// leaving, nick, away, members, WHOIS, connecting and disconnecting. Every write passes the one
// write gate (docs/contract.md "MCP tool shapes"). Pure data.
import { Schema } from "effect"
import { IrcParam, IrcText, NonEmptyIrcText } from "../Ids.js"
import * as Limits from "../Limits.js"
import { Member } from "../Member.js"
import {
  booleanArg,
  channelArg,
  defineTool,
  limitArg,
  localRead,
  networkIdArg,
  NOT_CONNECTED_NOTE,
  okTrue,
  Ok,
  OkWithServerBuffer,
  optionalArg,
  SERVER_BUFFER_NOTE,
  type ToolHints
} from "./ToolDefinition.js"

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
