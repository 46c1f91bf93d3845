// Protocol: the shapes the client exchanges with the server. The socket's frames and the MCP records are the
// server's own types (src/schema), imported as types only, so the two cannot drift; the REST bodies of the web
// client's routes are written out here from their description (docs/architecture.md "The web client").
import type { ChannelView, MessageRecord, NetworkView, ServerFrame } from "../../src/schema/SocketFrame.js"
import type { Member } from "../../src/schema/Member.js"
import type { NetworkState } from "../../src/schema/Network.js"

export type { ChannelView, Member, MessageRecord, NetworkState, NetworkView, ServerFrame }

/** Frames the server sends that the client acts on beyond SocketFrame.ts's list: the read markers. */
export type ClientServerFrame =
  | ServerFrame
  | { readonly type: "read-marker"; readonly networkId: number; readonly target: string; readonly messageId: number }

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
