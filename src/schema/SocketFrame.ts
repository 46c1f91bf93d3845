// SocketFrame: the frames of the browser WebSocket `GET /api/ws` (docs/contract.md "The member's
// browser surface", WebSocket; docs/decisions/web.md "The browser WebSocket"). Text frames, one
// JSON object each, with a `type`. The server's frames are typed here (a network's own events in
// NetworkEvent.ts) and encoded with JSON.stringify once per event, whatever the number of sockets;
// the client's frames are decoded with `decodeClientFrame`. Pure; no state.
import { Either, ParseResult, Schema } from "effect"
import { JSON_MAX_DEPTH, parseBoundedJson } from "./BoundedJson.js"
import { BufferTarget, IrcParam, MessageId, NetworkId, NonEmptyIrcText } from "./Ids.js"
import type { Message } from "./Message.js"
import type { NetworkEvent, NetworkView } from "./NetworkEvent.js"
import type { BufferPreference, ClientDocument } from "./Preferences.js"

/** The socket's path. */
export const SOCKET_PATH = "/api/ws"

/** A message record exactly as the MCP tools return it (docs/contract.md "MCP tool shapes", `message`). */
export type MessageRecord = Schema.Schema.Encoded<typeof Message>

/**
 * What a new tab draws first (src/http/ws/FirstView.ts): the member's networks (their `network` events follow, with
 * `features`), every buffer as `GET /api/buffers` lists them, and the buffer it opens first with its newest page
 * (`limit` lines asked, `page` as `recent_messages` answers), or null.
 */
export interface FirstView {
  readonly networks: ReadonlyArray<Omit<NetworkView, "features">>
  readonly buffers: ReadonlyArray<{
    readonly networkId: number
    readonly target: string
    readonly kind: "channel" | "query" | "server"
    readonly lastMessageId: number | null
    readonly lastMessageAt: string | null
    readonly readMessageId: number | null
    readonly unread: number
    readonly highlights: number
  }>
  readonly open: {
    readonly networkId: number
    readonly target: string
    readonly limit: number
    readonly page: { readonly messages: ReadonlyArray<MessageRecord> }
  } | null
}

/** Every frame the server sends. */
export type ServerFrame =
  | {
    readonly type: "hello"
    readonly account: { readonly name: string; readonly paused: boolean }
    readonly lastMessageId: number | null
    /** With `?first=` only: the tab's first view (src/http/ws/FirstView.ts). */
    readonly first?: FirstView
  }
  | { readonly type: "message"; readonly message: MessageRecord }
  /** The stored message `messageId` was redacted upstream: its text is gone (docs/contract.md "Message ids, replies, reactions and redaction"). */
  | { readonly type: "redaction"; readonly networkId: number; readonly target: string; readonly messageId: number }
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

// The tag frames (docs/contract.md "The member's browser surface"): each goes upstream as the IRCv3 line it names,
// answered by `result` `{ok: true}` or an `error` frame; refused when the upstream lacks the capability.

/** A msgid as the upstream gave it (message-ids): one word, bounded. */
export const FRAME_MSGID_MAX = 256
/** A reaction: an emoji or a short word (IRCv3 client tag `+draft/react`). */
export const FRAME_REACTION_MAX = 64
/** A reply's text, in UTF-16 code units (split at the server's line limit as send_message splits). */
export const FRAME_REPLY_TEXT_MAX = 4096

const FrameMsgid = IrcParam.pipe(Schema.maxLength(FRAME_MSGID_MAX))
/** What every tag frame carries: its optional call id, and the buffer it acts in. */
const TagFrameFields = { id: Schema.optional(CallId), networkId: NetworkId, target: IrcParam }

/** `{type: "react", networkId, target, msgid, reaction}` → `@+draft/react=<r>;+draft/reply=<msgid> TAGMSG <target>`. */
export const ReactFrame = Schema.Struct({
  type: Schema.Literal("react"),
  ...TagFrameFields,
  msgid: FrameMsgid,
  reaction: NonEmptyIrcText.pipe(Schema.maxLength(FRAME_REACTION_MAX))
})

/** `{type: "reply", networkId, target, msgid, text}` → `@+draft/reply=<msgid> PRIVMSG <target> :<text>`. */
export const ReplyFrame = Schema.Struct({
  type: Schema.Literal("reply"),
  ...TagFrameFields,
  msgid: FrameMsgid,
  text: NonEmptyIrcText.pipe(Schema.maxLength(FRAME_REPLY_TEXT_MAX))
})

/** `{type: "typing", networkId, target, state}` → `@+typing=<state> TAGMSG <target>` (at most one `active` per 3 s). */
export const TypingFrame = Schema.Struct({
  type: Schema.Literal("typing"),
  ...TagFrameFields,
  state: Schema.Literal("active", "paused", "done")
})

/** `{type: "redact", networkId, target, msgid}` → `REDACT <target> <msgid>` (draft/message-redaction). */
export const RedactFrame = Schema.Struct({
  type: Schema.Literal("redact"),
  ...TagFrameFields,
  msgid: FrameMsgid
})

export type TagFrame = typeof ReactFrame.Type | typeof ReplyFrame.Type | typeof TypingFrame.Type | typeof RedactFrame.Type

export const ClientFrame = Schema.Union(CallFrame, FocusFrame, ReadFrame, ReactFrame, ReplyFrame, TypingFrame, RedactFrame)
export type ClientFrame = typeof ClientFrame.Type

const decodeFrame = Schema.decodeUnknownEither(ClientFrame)

/** Each tag frame's own decoder, by its `type`: a frame's schema decodes the unknown value into that frame. */
const TAG_FRAMES: Readonly<Record<TagFrame["type"], (value: unknown) => Either.Either<TagFrame, ParseResult.ParseError>>> = {
  react: Schema.decodeUnknownEither(ReactFrame),
  reply: Schema.decodeUnknownEither(ReplyFrame),
  typing: Schema.decodeUnknownEither(TypingFrame),
  redact: Schema.decodeUnknownEither(RedactFrame)
}

const isTagFrameType = (type: string): type is TagFrame["type"] => Object.hasOwn(TAG_FRAMES, type)

/** For a tag frame that does not decode: which field is wrong (named, its value never shown), else "". */
const frameProblem = (value: unknown): string => {
  if (typeof value !== "object" || value === null || !("type" in value)) return ""
  const type = value.type
  if (typeof type !== "string" || !isTagFrameType(type)) return ""
  const decoded = TAG_FRAMES[type](value)
  if (Either.isRight(decoded)) return ""
  const issue = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)[0]
  const field = issue?.path[0]
  return field === undefined ? "" : `: the ${type} frame's ${String(field)} is missing or invalid`
}
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
      "expected {type: \"call\", id, name, arguments}, {type: \"focus\", focused}, {type: \"read\", networkId, target, " +
      "messageId}, or {type: \"react\" | \"reply\" | \"typing\" | \"redact\", networkId, target, …}" + frameProblem(value)
  })
}
