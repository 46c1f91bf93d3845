// SocketFrame: the frames of the browser WebSocket `GET /api/ws` (docs/contract.md "The member's
// browser surface", WebSocket; docs/decisions/web.md "The browser WebSocket"). Text frames, one
// JSON object each, with a `type`. The server's frames are typed here and encoded with
// JSON.stringify once per event, whatever the number of sockets; the client's frames are
// decoded with `decodeClientFrame`. Pure; no state.
import { Either, Schema } from "effect"
import { JSON_MAX_DEPTH, parseBoundedJson } from "./BoundedJson.js"
import type { ChannelTopic } from "./ChannelTopic.js"
import { BufferTarget, MessageId, NetworkId } from "./Ids.js"
import type { Member } from "./Member.js"
import type { Message } from "./Message.js"
import type { NetworkState } from "./Network.js"
import type { BufferPreference, ClientDocument } from "./Preferences.js"

/** The socket's path. */
export const SOCKET_PATH = "/api/ws"

/** A message record exactly as the MCP tools return it (docs/contract.md "MCP tool shapes", `message`). */
export type MessageRecord = Schema.Schema.Encoded<typeof Message>

/** What the `network` event says of a network (docs/contract.md: `{id, name, state, nick}`). */
export interface NetworkView {
  readonly id: number
  readonly name: string
  readonly state: NetworkState
  readonly nick: string | null
}

/** A joined channel drawn whole: its topic and every member, sorted as list_members sorts them. */
export interface ChannelView {
  readonly type: "channel"
  readonly networkId: number
  readonly channel: string
  readonly joined: true
  readonly topic: Omit<ChannelTopic, "channel">
  readonly members: ReadonlyArray<Member>
}

/**
 * What the network actors tell the member's tabs about a network (docs/decisions/web.md "The
 * browser WebSocket"): its connection (`network`), which channels the member is in
 * (`channel`: drawn whole on joining and when many members changed at once, `joined:
 * false` on leaving or when the connection ends), one member changed (`member`, null when
 * the nick left the channel), a topic, and the member's own away state (`away`).
 */
export type NetworkEvent =
  | { readonly type: "network"; readonly network: NetworkView }
  | { readonly type: "network-removed"; readonly networkId: number }
  | ChannelView
  | { readonly type: "channel"; readonly networkId: number; readonly channel: string; readonly joined: false }
  | {
    readonly type: "member"
    readonly networkId: number
    readonly channel: string
    readonly nick: string
    readonly member: Member | null
  }
  | ({ readonly type: "topic"; readonly networkId: number } & ChannelTopic)
  | { readonly type: "away"; readonly networkId: number; readonly away: boolean }

/** Every frame the server sends. */
export type ServerFrame =
  | {
    readonly type: "hello"
    readonly account: { readonly name: string; readonly paused: boolean }
    readonly lastMessageId: number | null
  }
  | { readonly type: "message"; readonly message: MessageRecord }
  | { readonly type: "nick-note"; readonly networkId: number; readonly nick: string; readonly note: string }
  | {
    readonly type: "relay-bot"
    readonly networkId: number
    readonly nick: string
    readonly marked: boolean
    readonly pattern: string | null
  }
  /** A buffer's read marker moved (docs/decisions/web.md "The web client's server surface"); to every tab of the member. */
  | { readonly type: "read-marker"; readonly networkId: number; readonly target: string; readonly messageId: number }
  /** A buffer's choice as stored now (docs/contract.md "Preferences"); to every tab of the member. */
  | ({ readonly type: "buffer-preference" } & BufferPreference)
  /** The web client's settings as stored now (docs/contract.md "Preferences"); to every tab of the member. */
  | { readonly type: "client-preferences"; readonly preferences: ClientDocument }
  | NetworkEvent
  | { readonly type: "resync" }
  | { readonly type: "result"; readonly id: CallId; readonly isError: boolean; readonly payload: unknown }
  /** A frame the server could not act on; `id` is the call's when it was one. */
  | { readonly type: "error"; readonly id: CallId | null; readonly message: string }

// ---------------------------------------------------------------------------------------------
// The client's frames

/** The client's own name for a call, echoed in its result. */
export const CallId = Schema.Union(Schema.String.pipe(Schema.maxLength(128)), Schema.Number)
export type CallId = typeof CallId.Type

/** `{type: "call", id, name, arguments}`: a tool call, answered by one `result` with the same id. */
export const CallFrame = Schema.Struct({
  type: Schema.Literal("call"),
  id: CallId,
  name: Schema.String,
  arguments: Schema.optionalWith(Schema.Unknown, { default: () => ({}) })
})

/** `{type: "focus", focused}`: whether this tab has the member's attention (Web Push holds back while one has). */
export const FocusFrame = Schema.Struct({
  type: Schema.Literal("focus"),
  focused: Schema.Boolean
})

/**
 * `{type: "read", networkId, target, messageId}`: the member has read the buffer up to this message; the server keeps
 * the larger of this and the stored marker and tells every tab of the member (`read-marker`).
 */
export const ReadFrame = Schema.Struct({
  type: Schema.Literal("read"),
  networkId: NetworkId,
  target: BufferTarget,
  messageId: MessageId
})

export const ClientFrame = Schema.Union(CallFrame, FocusFrame, ReadFrame)
export type ClientFrame = typeof ClientFrame.Type

const decodeFrame = Schema.decodeUnknownEither(ClientFrame)
const CallIdOf = Schema.decodeUnknownEither(Schema.Struct({ id: CallId }))

/** The client frame in `text`, or the `error` frame that answers it. */
export const decodeClientFrame = (text: string): Either.Either<ClientFrame, ServerFrame> => {
  const parsed = parseBoundedJson(text)
  if (Either.isLeft(parsed)) {
    // Refused unparsed, before a call reaches the tools' decoders, whose messages show values (BoundedJson).
    const message = parsed.left === "too-deep" ? `a frame nests deeper than ${JSON_MAX_DEPTH} levels` : "a frame must be one JSON object"
    return Either.left({ type: "error", id: null, message })
  }
  const value = parsed.right
  const decoded = decodeFrame(value)
  if (Either.isRight(decoded)) return Either.right(decoded.right)
  return Either.left({
    type: "error",
    id: Either.match(CallIdOf(value), { onLeft: () => null, onRight: (v) => v.id }),
    message:
      "expected {type: \"call\", id, name, arguments}, {type: \"focus\", focused} or {type: \"read\", networkId, target, messageId}"
  })
}
