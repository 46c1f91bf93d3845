/**
 * MessageRow: a message on its way into the history and as stored — what the network actors
 * hand MessageWriter (`NewMessage`), what the writer keeps while a batch waits (`PendingRow`:
 * every optional column resolved, NUL replaced, since PostgreSQL text cannot hold it), and
 * what it announces once the batch committed (`StoredRow`, its id final). Pure.
 */
import type { MessageKind } from "../../schema/Message.js"

export type { MessageKind }

export type BufferKind = "channel" | "dm" | "server"

export type Encryption = "plain" | "decrypted" | "undecryptable"

/** A message as history reads it (MessageHistory, RecentPages). */
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

/** A stored message with the kind of its buffer (Web Push tells DMs from channels). */
export interface StoredMessageInBuffer extends StoredMessage {
  readonly bufferKind: BufferKind
}

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

/**
 * A row as stored: its id is final, and ids grow with append order. The message as history reads it, with its
 * buffer's kind (StoredMessageInBuffer above): one shape for both, not two copies of its fields.
 */
export type StoredRow = StoredMessageInBuffer

/** The buffer's identity within the writer: network and folded target. */
export const bufferKey = (networkId: number, targetFolded: string) => `${networkId}\u0000${targetFolded}`

const noNul = (s: string) => (s.includes("\u0000") ? s.replaceAll("\u0000", "\uFFFD") : s)
const noNulOrNull = (s: string | null | undefined) => (s == null ? null : noNul(s))

/** What the writer keeps: the message with every optional column resolved and NUL gone. */
export interface PendingRow {
  readonly key: string
  readonly networkId: number
  readonly target: string
  readonly targetFolded: string
  readonly bufferKind: BufferKind
  readonly time: Date
  readonly kind: MessageKind
  readonly nick: string | null
  readonly text: string
  readonly numeric: string | null
  readonly self: boolean
  readonly encryption: Encryption
  readonly raw: string | null
  /**
   * The row's place in the writer's append order (1 for the first row appended, then 2…), set when the writer takes
   * it; 0 before. MessageWriter.sequenceOf reports it for each announced row.
   */
  seq: number
}

/** `m` as the writer keeps it, stamped `time` (the message's own, unless it was not a valid date). */
export const toPendingRow = (m: NewMessage, time: Date): PendingRow => {
  const targetFolded = noNul(m.targetFolded)
  return {
    key: bufferKey(m.networkId, targetFolded),
    networkId: m.networkId,
    target: noNul(m.target),
    targetFolded,
    bufferKind: m.bufferKind,
    time,
    kind: m.kind,
    nick: noNulOrNull(m.nick),
    text: noNul(m.text),
    numeric: noNulOrNull(m.numeric),
    self: m.self,
    encryption: m.encryption ?? "plain",
    raw: noNulOrNull(m.raw),
    seq: 0
  }
}
