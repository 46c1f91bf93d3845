/**
 * MessageRow: a message on its way into the history and as stored — what the network actors
 * hand MessageWriter (`NewMessage`), what the writer keeps while a batch waits (`PendingRow`:
 * every optional column resolved, NUL replaced, since PostgreSQL text cannot hold it), and
 * what it announces once the batch committed (`StoredRow`, its id final). Also the bounds of the ids an upstream
 * gives its messages (`upstreamMsgid`: migration 0017, docs/decisions/history.md "Message ids, replies, reactions
 * and redaction"). Pure.
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
  /** The upstream's IRCv3 `msgid`; absent or null when it gave none Belay keeps (`upstreamMsgid`). */
  readonly msgid?: string | null
  /** The msgid its `+draft/reply` tag names (for a `react` row, the message reacted to); absent or null when none. */
  readonly replyTo?: string | null
  /** The upstream redacted it (draft/message-redaction): `text` is "". Absent or false otherwise. */
  readonly redacted?: boolean
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
  /** The upstream's `msgid` tag, as given; kept only within `upstreamMsgid`'s bounds. */
  readonly msgid?: string | null
  /** The msgid of the `+draft/reply` tag; kept only within `upstreamMsgid`'s bounds. */
  readonly replyTo?: string | null
}

/**
 * The longest msgid (and reply reference) kept, in characters (a CHECK of migration 0017 holds the same bound).
 * IRCv3 message-ids leave the length to the server (Ergo's are 26 characters, UnrealIRCd's 22, soju's below 100); a
 * bound keeps a hostile upstream's 8 KB tag out of the `(buffer_id, msgid)` index, whose entries must stay far below
 * PostgreSQL's 2.7 KB limit.
 */
export const MSGID_MAX = 256

/**
 * A msgid as the history keeps it: the tag's (unescaped) value when it is 1..MSGID_MAX characters without spaces or
 * control characters (nor a lone surrogate, which PostgreSQL's UTF-8 could not hold as given), else null. Not cut
 * short: a truncated id would name another message. A space could never be referred to again (CHATHISTORY `msgid=`
 * is one IRC parameter), and a control character has no place in an id.
 */
export const upstreamMsgid = (value: string | undefined | null): string | null =>
  value != null && value.length > 0 && value.length <= MSGID_MAX && !/[\p{Cc}\p{Cs}\p{Zs}\p{Zl}\p{Zp}]/u.test(value)
    ? value
    : null

/**
 * A row as stored: its id is final, and ids grow with append order. The message as history reads it, with its
 * buffer's kind (StoredMessageInBuffer above): one shape for both, not two copies of its fields.
 */
export type StoredRow = StoredMessageInBuffer & {
  /**
   * Live only (StoredAnnouncer, from the line as received; never a column): the client-only tags the upstream
   * delivered it with, bounded (TaggedMessages.relayedClientTags), for the member's IRC clients. Absent when none.
   */
  readonly clientTags?: Readonly<Record<string, string>>
}

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
  readonly msgid: string | null
  readonly replyTo: string | null
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
    msgid: upstreamMsgid(m.msgid),
    replyTo: upstreamMsgid(m.replyTo),
    seq: 0
  }
}
