/**
 * The contract of the message history (implemented by MessageStore.ts). Writers are
 * the network actors; readers are the MCP tools. Ordering rule: messages appended
 * for one buffer are stored in append order (ids increase with append order).
 */
import { Context, type Effect, type Option } from "effect"

export type MessageKind =
  | "privmsg"
  | "notice"
  | "action"
  | "join"
  | "part"
  | "quit"
  | "kick"
  | "nick"
  | "mode"
  | "topic"
  | "numeric"
  | "error"

export type BufferKind = "channel" | "dm" | "server"

export type Encryption = "plain" | "decrypted" | "undecryptable"

export interface NewMessage {
  readonly networkId: number
  /** Display name of the buffer: "#chan", the peer's nick, or ":server:<networkId>". */
  readonly target: string
  /** `target` folded with the network's CASEMAPPING: the buffer's identity. */
  readonly targetFolded: string
  readonly bufferKind: BufferKind
  readonly time: Date
  readonly kind: MessageKind
  readonly nick: string | null
  readonly text: string
  readonly numeric?: string | null
  readonly self: boolean
  readonly encryption?: Encryption
  readonly raw?: string | null
}

export interface StoredMessage {
  readonly id: number
  readonly networkId: number
  readonly target: string
  readonly time: Date
  readonly kind: MessageKind
  readonly nick: string | null
  readonly text: string
  readonly numeric: string | null
  readonly self: boolean
  readonly encryption: Encryption
}

export interface BufferSummary {
  readonly networkId: number
  readonly target: string
  readonly kind: "channel" | "dm"
  readonly lastMessageAt: Date | null
}

export interface SearchQuery {
  readonly accountId: number
  /** Full-text; every term must match (ANDed). */
  readonly query: string
  readonly networkId: Option.Option<number>
  /** Folded target (with the network's CASEMAPPING) when filtering by buffer. */
  readonly targetFolded: Option.Option<string>
  readonly nick: Option.Option<string>
  readonly limit: number
}

export interface MessageStoreService {
  /**
   * Enqueue for the batched writer (flush at 100 ms or 500 rows). Never fails and
   * never blocks on the database: during an outage rows are buffered (bounded, with a
   * warning) and retried; nothing is lost while the buffer has room.
   */
  readonly append: (message: NewMessage) => Effect.Effect<void>
  /** Resolves once everything appended before the call is durably stored. */
  readonly flush: Effect.Effect<void>
  /** Oldest first; `before` is exclusive (an id from a previous page). */
  readonly recent: (
    networkId: number,
    targetFolded: string,
    options: { readonly before: Option.Option<number>; readonly limit: number }
  ) => Effect.Effect<ReadonlyArray<StoredMessage>>
  /** Newest first, across every buffer of the account unless filtered. */
  readonly search: (query: SearchQuery) => Effect.Effect<ReadonlyArray<StoredMessage>>
  /** Channels and DMs with history (server pseudo-buffers excluded), most recent first. */
  readonly listBuffers: (accountId: number, networkId: Option.Option<number>) => Effect.Effect<ReadonlyArray<BufferSummary>>
}

export class MessageStore extends Context.Tag("belay/MessageStore")<MessageStore, MessageStoreService>() {}
