// NetworkEvent: what a network's actor tells the member's tabs about the network (docs/decisions/web.md "The browser
// WebSocket"; docs/contract.md "The member's browser surface"): its connection, the channels the member is in, one
// member changed, a topic, the member's away state, a typing notice. The socket sends them on as they are; between
// nodes they cross as JSON (a NOTIFY on `belay_events`, the network entity's `View`), so they are Schemas here and
// are checked where they arrive from another process. Pure; no state.
import { Schema } from "effect"
import { ChannelTopic } from "./ChannelTopic.js"
import { Member } from "./Member.js"
import { NetworkState } from "./Network.js"

const Id = Schema.Int

/**
 * What the upstream connection can carry for the browser (docs/contract.md "The member's browser surface"): IRCv3
 * message-tags (reactions, replies, typing), draft/message-redaction, draft/multiline. All false while not connected.
 * The browser's alone: the MCP tools' network records never carry it (the interface fixes them).
 */
export const NetworkFeatures = Schema.Struct({ tags: Schema.Boolean, redaction: Schema.Boolean, multiline: Schema.Boolean })
export type NetworkFeatures = typeof NetworkFeatures.Type

export const NO_FEATURES: NetworkFeatures = { tags: false, redaction: false, multiline: false }

/** What the `network` event says of a network (docs/contract.md: `{id, name, state, nick, features}`). */
export const NetworkView = Schema.Struct({
  id: Id,
  name: Schema.String,
  state: NetworkState,
  nick: Schema.NullOr(Schema.String),
  features: NetworkFeatures
})
export type NetworkView = typeof NetworkView.Type

/** An upstream `+typing` TAGMSG (IRCv3 typing): live only, never stored. `target` is the buffer (a DM: the sender). */
export const TypingEvent = Schema.Struct({
  type: Schema.Literal("typing"),
  networkId: Id,
  target: Schema.String,
  nick: Schema.String,
  state: Schema.Literal("active", "paused", "done")
})
export type TypingEvent = typeof TypingEvent.Type

/** A joined channel drawn whole: its topic and every member, sorted as list_members sorts them. */
export const ChannelView = Schema.Struct({
  type: Schema.Literal("channel"),
  networkId: Id,
  channel: Schema.String,
  joined: Schema.Literal(true),
  topic: ChannelTopic.pipe(Schema.omit("channel")),
  members: Schema.Array(Member)
})
export type ChannelView = typeof ChannelView.Type

/**
 * Every event, told apart by `type` (and a `channel` event by `joined`): the connection (`network`), which channels the
 * member is in (`channel`: drawn whole on joining and when many members changed at once, `joined: false` on leaving or
 * when the connection ends), one member changed (`member`, null when the nick left the channel), a topic, and the
 * member's own away state (`away`).
 */
export const NetworkEvent = Schema.Union(
  Schema.Struct({ type: Schema.Literal("network"), network: NetworkView }),
  Schema.Struct({ type: Schema.Literal("network-removed"), networkId: Id }),
  ChannelView,
  Schema.Struct({ type: Schema.Literal("channel"), networkId: Id, channel: Schema.String, joined: Schema.Literal(false) }),
  Schema.Struct({
    type: Schema.Literal("member"),
    networkId: Id,
    channel: Schema.String,
    nick: Schema.String,
    member: Schema.NullOr(Member)
  }),
  Schema.extend(Schema.Struct({ type: Schema.Literal("topic"), networkId: Id }), ChannelTopic),
  Schema.Struct({ type: Schema.Literal("away"), networkId: Id, away: Schema.Boolean }),
  TypingEvent
)
export type NetworkEvent = typeof NetworkEvent.Type

export const isNetworkEvent = Schema.is(NetworkEvent)

/**
 * A list of events as another node sent it: those of a kind or shape this build does not know (a node of a newer
 * release during a rolling upgrade, or a damaged payload) are left out rather than failing the rest, so a tab is never
 * sent an event it cannot draw (docs/decisions/secrets.md "What carries events between nodes").
 */
export const KnownNetworkEvents = Schema.transform(
  Schema.Array(Schema.Unknown),
  // Checked by the guard, not decoded: the events kept are the very values sent, with any member a newer release
  // added, rather than copies (a channel drawn whole carries every member).
  Schema.Array(Schema.declare(isNetworkEvent, { identifier: "NetworkEvent" })),
  { strict: true, decode: (events) => events.filter(isNetworkEvent), encode: (events) => events }
)
