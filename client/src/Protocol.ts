// Protocol: the shapes the client exchanges with the server. The socket's frames and the MCP records are the
// server's own types (src/schema), imported as types only, so the two cannot drift; the REST bodies of the web
// client's routes are written out here from their description (docs/architecture.md "The web client").
import type { ChannelView, NetworkView } from "../../src/schema/NetworkEvent.js"
import type {
  FirstView as StoredFirstView,
  MessageRecord as StoredRecord,
  ServerFrame
} from "../../src/schema/SocketFrame.js"
import type { Member } from "../../src/schema/Member.js"
import type { NetworkState } from "../../src/schema/Network.js"

export type { ChannelView, Member, NetworkState, NetworkView, ServerFrame }

/**
 * The MCP message record, with what the message-tags design adds to it (docs/contract.md "MCP tool shapes",
 * `message`): the upstream's `msgid` when it gave one, `replyTo` (the msgid a reply answers or a reaction names), `redacted`
 * (the sender removed it: `text` is ""), and kind `react` (`text` is the reaction). Written out here as well so the
 * client reads them whether or not the server's record has them yet; each is optional.
 */
export type MessageRecord = Omit<StoredRecord, "kind"> & {
  readonly kind: StoredRecord["kind"] | "react"
  readonly msgid?: string
  readonly replyTo?: string
  readonly redacted?: boolean
}

/** IRCv3 typing (https://ircv3.net/specs/client-tags/typing): what a `+typing` tag says. */
export type TypingState = "active" | "paused" | "done"

/** What the network's upstream connection has now, for the browser only (the `network` frame's view). */
export interface NetworkFeatures {
  /** message-tags: client tags (reactions, replies, typing) reach the upstream. */
  readonly tags: boolean
  /** draft/message-redaction: REDACT is understood. */
  readonly redaction: boolean
  /** draft/multiline. */
  readonly multiline: boolean
}

export const NO_FEATURES: NetworkFeatures = { tags: false, redaction: false, multiline: false }

/** The `features` of a network view, read defensively (a server that sends none: nothing is offered). */
export const featuresOf = (view: object): NetworkFeatures => {
  const f: unknown = "features" in view ? view.features : undefined
  if (typeof f !== "object" || f === null) return NO_FEATURES
  const flag = (name: string) => name in f && (f as Record<string, unknown>)[name] === true
  return { tags: flag("tags"), redaction: flag("redaction"), multiline: flag("multiline") }
}

/** The hello's first view (src/http/ws/FirstView.ts), its page's records read as every message record is. */
export type FirstView = Omit<StoredFirstView, "open"> & {
  readonly open:
    | (Omit<NonNullable<StoredFirstView["open"]>, "page"> & { readonly page: { readonly messages: ReadonlyArray<MessageRecord> } })
    | null
}

type Hello = Extract<ServerFrame, { readonly type: "hello" }>

/**
 * Frames the server sends that the client acts on beyond SocketFrame.ts's list: the read markers, someone typing
 * (live only, never stored) and a stored message redacted upstream.
 */
export type ClientServerFrame =
  | Exclude<ServerFrame, { readonly type: "message" } | { readonly type: "hello" }>
  | { readonly type: "message"; readonly message: MessageRecord }
  | Omit<Hello, "first"> & { readonly first?: FirstView }
  | { readonly type: "read-marker"; readonly networkId: number; readonly target: string; readonly messageId: number }
  | {
    readonly type: "typing"
    readonly networkId: number
    readonly target: string
    readonly nick: string
    readonly state: TypingState
  }
  | { readonly type: "redaction"; readonly networkId: number; readonly target: string; readonly messageId: number }

export type BufferKind = "channel" | "query" | "server"

/** `GET /api/buffers` row. */
export interface BufferSummary {
  readonly networkId: number
  readonly target: string
  readonly kind: BufferKind
  readonly lastMessageId: number | null
  readonly lastMessageAt: string | null
  readonly readMessageId: number | null
  readonly unread: number
  readonly highlights: number
}

/** `GET /api/networks` row (never the password). */
export interface NetworkDetails {
  readonly id: number
  readonly name: string
  readonly host: string
  readonly port: number
  readonly tls: boolean
  readonly nick: string
  readonly username: string | null
  readonly realname: string | null
  readonly channels: ReadonlyArray<string>
  readonly hasPassword: boolean
  readonly state: NetworkState
  readonly currentNick: string | null
  readonly lastError: string | null
  readonly nextRetryAt: string | null
}

/** `POST /api/networks` body; PATCH takes any subset (password, username, realname: null clears). */
export interface NetworkInput {
  readonly name: string
  readonly host: string
  readonly port: number
  readonly tls: boolean
  readonly nick: string
  readonly username?: string | null
  readonly realname?: string | null
  readonly password?: string | null
  readonly channels?: ReadonlyArray<string>
}

/** A tool's answer over the socket: the payload, and whether it is a failure (`{ok: false, error, message?}`). */
export interface CallResult {
  readonly isError: boolean
  readonly payload: unknown
}
