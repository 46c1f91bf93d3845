// ChannelTools: a joined channel's topic and modes, and the mode lists fetched fresh from the
// server (docs/contract.md "MCP tool shapes"). Pure data.
import { Schema } from "effect"
import { ModeList, ModeListLetter } from "../ChannelMode.js"
import { ChannelTopic } from "../ChannelTopic.js"
import { IrcText } from "../Ids.js"
import {
  channelArg,
  defineTool,
  localRead,
  ModeChanges,
  networkIdArg,
  NOT_CONNECTED_NOTE,
  okTrue,
  Ok
} from "./ToolDefinition.js"

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
