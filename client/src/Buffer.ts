// Buffer: one buffer (a channel, a query or a network's server buffer) as the tab holds it — its messages, read marker
// and unread counts, members and topic — what a fresh one looks like, and which messages count as unread. The Store
// owns every Buffer and alone changes them; views only read.
//
// Concurrency rule: the browser's one event loop; a Buffer is plain mutable data, changed only by the Store.
import { isChannel } from "./Casemap.js"
import { mergeById } from "./MergeById.js"
import type { BufferKind, Member, MessageRecord } from "./Protocol.js"

export const UNREAD_CAP = 999

export interface Topic {
  readonly topic: string
  readonly setBy: string | null
  readonly setAt: string | null
}

export interface Buffer {
  readonly key: string
  readonly networkId: number
  target: string
  kind: BufferKind
  /** Sorted by id, without repeats. */
  messages: ReadonlyArray<MessageRecord>
  /** The newest page of history was merged in. */
  loaded: boolean
  loading: boolean
  /** Older history may exist before `messages[0]`. */
  hasOlder: boolean
  loadingOlder: boolean
  lastMessageId: number | null
  readMessageId: number | null
  /** Messages up to this id were counted by the server; live ones past it are counted here. */
  countedThrough: number | null
  unread: number
  highlights: number
  joined: boolean
  topic: Topic | null
  /** Folded nick → member. */
  members: ReadonlyMap<string, Member>
}

export const countsAsUnread = (m: MessageRecord) =>
  !m.self && (m.kind === "privmsg" || m.kind === "action" || m.kind === "notice")

export const kindOf = (target: string): BufferKind =>
  target.startsWith(":server:") ? "server" : isChannel(target) ? "channel" : "query"

/**
 * The messages with `messageId` shown as redacted upstream (draft/message-redaction: its sender asked for it to be
 * removed; the server keeps the row, without its text). The same list when it does not hold that message.
 */
export const withRedaction = (messages: ReadonlyArray<MessageRecord>, messageId: number): ReadonlyArray<MessageRecord> => {
  const at = messages.findIndex((m) => m.id === messageId)
  if (at < 0 || messages[at]!.redacted === true) return messages
  const next = [...messages]
  next[at] = { ...messages[at]!, text: "", redacted: true }
  return next
}

/** A buffer nothing is known of yet: no messages, history still to load, nothing unread. */
/** The newest page of `limit` lines asked, merged under what the buffer holds; a full page may have more before it. */
export const takeNewestPage = (buffer: Buffer, messages: ReadonlyArray<MessageRecord>, limit: number): void => {
  buffer.messages = mergeById(buffer.messages, messages)
  buffer.loaded = true
  buffer.hasOlder = messages.length === limit
  const newest = buffer.messages[buffer.messages.length - 1]
  if (newest !== undefined && (buffer.lastMessageId === null || newest.id > buffer.lastMessageId)) buffer.lastMessageId = newest.id
}

export const newBuffer = (key: string, networkId: number, target: string, kind: BufferKind): Buffer => ({
  key,
  networkId,
  target,
  kind,
  messages: [],
  loaded: false,
  loading: false,
  hasOlder: true,
  loadingOlder: false,
  lastMessageId: null,
  readMessageId: null,
  countedThrough: null,
  unread: 0,
  highlights: 0,
  joined: false,
  topic: null,
  members: new Map()
})
