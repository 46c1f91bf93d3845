// Message: the stored IRC message and the buffer summary as tools return them (docs/contract.md
// "MCP tool shapes": `message`, list_buffers). Output records: every field described for
// the agent reading tools/list. Pure Schemas; no state.
import { Schema } from "effect"
import { IsoTime, MessageId, NetworkId } from "./Ids.js"

/** What a stored line was; docs/decisions/history.md lists exactly these. */
export const MessageKind = Schema.Literal(
  "privmsg",
  "notice",
  "action",
  "join",
  "part",
  "quit",
  "kick",
  "nick",
  "mode",
  "topic",
  "numeric",
  "error",
  "react"
).annotations({
  description:
    "What the line was: privmsg, notice, action (CTCP ACTION, /me), join, part, quit, kick, nick (nick change), " +
    "mode, topic, numeric (a server reply; see numeric), error (an error from the server or from the bouncer) or " +
    "react (a reaction: text is the reaction, replyTo the msgid of the message reacted to)."
})
export type MessageKind = typeof MessageKind.Type

export const Message = Schema.Struct({
  id: MessageId.annotations({
    description: "Message id. Pass the lowest id of a page as `before` to recent_messages to page further back."
  }),
  networkId: NetworkId.annotations({ description: "Network the message belongs to." }),
  target: Schema.String.annotations({
    description: "Buffer of the message: a channel (#chan), the peer's nick for a DM, or :server:<networkId>."
  }),
  time: IsoTime.annotations({ description: "When the message was received or sent, ISO-8601 UTC." }),
  kind: MessageKind,
  nick: Schema.NullOr(Schema.String).annotations({
    description:
      "Who spoke or acted; for a relay bot's message, the speaker inside the envelope. null for server text without a nick."
  }),
  text: Schema.String.annotations({
    description: "The text: message body, part/quit/kick reason, new topic, mode string or numeric reply text."
  }),
  self: Schema.Boolean.annotations({ description: "true when the member's own connection sent it." }),
  numeric: Schema.optional(
    Schema.String.annotations({
      description: "For kind numeric: the three-digit reply code, e.g. \"311\" (RPL_WHOISUSER)."
    })
  ),
  relayBot: Schema.optional(
    Schema.String.annotations({
      description:
        "Present when a marked relay bot carried the message: the bot's nick (nick is then the inner speaker)."
    })
  ),
  encrypted: Schema.optional(
    Schema.Boolean.annotations({
      description:
        "Present only when the message travelled end-to-end encrypted: true when it was decrypted (text is the " +
        "plaintext), false when it could not be (text is the ciphertext as received)."
    })
  ),
  msgid: Schema.optional(
    Schema.String.annotations({
      description:
        "Present when the IRC server gave the message an id (IRCv3 msgid): that id, which replies and reactions " +
        "name in replyTo. Paging still uses id."
    })
  ),
  replyTo: Schema.optional(
    Schema.String.annotations({
      description: "Present on a reply (and on every react): the msgid of the message it answers or reacts to."
    })
  ),
  redacted: Schema.optional(
    Schema.Literal(true).annotations({
      description: "Present when the sender removed the message (IRCv3 message redaction); text is then empty."
    })
  )
}).annotations({ description: "One stored IRC message." })
export type Message = typeof Message.Type

export const BufferKind = Schema.Literal("channel", "dm").annotations({
  description: "channel for a channel buffer, dm for a private conversation with one nick."
})
export type BufferKind = typeof BufferKind.Type

/** A list_buffers row. Server pseudo-buffers are never listed (interface "Other records"). */
export const BufferSummary = Schema.Struct({
  networkId: NetworkId.annotations({ description: "Network the buffer belongs to." }),
  target: Schema.String.annotations({
    description: "Channel name or peer nick; pass it as target to recent_messages or send_message."
  }),
  kind: BufferKind,
  lastMessageAt: Schema.NullOr(IsoTime).annotations({
    description: "Time of the most recent message in the buffer, ISO-8601 UTC; null if none is stored."
  })
}).annotations({ description: "A channel or DM with history." })
export type BufferSummary = typeof BufferSummary.Type
