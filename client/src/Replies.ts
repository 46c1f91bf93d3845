// Replies: what a reply answers, as the quote line drawn above it. A reply names the upstream msgid of the message it
// answers (`replyTo`, from the `+draft/reply` client tag: https://ircv3.net/specs/client-tags/reply); the quote is
// looked up among the buffer's loaded lines, and says "a message not loaded" when they do not hold it. Pure.
import { stripFormatting } from "./Linkify.js"
import type { MessageRecord } from "./Protocol.js"

/** A quoted message is cut to this many characters: the quote is a pointer, not a copy. */
export const QUOTE_MAX_CHARS = 120

export type Quote =
  | {
    readonly found: true
    /** The quoted message's Belay id: the line to scroll to. */
    readonly id: number
    readonly nick: string | null
    readonly excerpt: string
    readonly redacted: boolean
  }
  | { readonly found: false }

/** msgid → the loaded message with it (reactions left out: a reply answers a message, not a reaction). */
export const msgidIndex = (messages: ReadonlyArray<MessageRecord>): ReadonlyMap<string, MessageRecord> => {
  const index = new Map<string, MessageRecord>()
  for (const m of messages) if (m.msgid !== undefined && m.kind !== "react") index.set(m.msgid, m)
  return index
}

/** The first line of `text`, its runs of spaces made one, cut to QUOTE_MAX_CHARS code points. */
export const excerpt = (text: string): string => {
  const line = (text.split(/\r?\n/).find((l) => l.trim() !== "") ?? "").replace(/\s+/g, " ").trim()
  const chars = [...line]
  return chars.length <= QUOTE_MAX_CHARS ? line : `${chars.slice(0, QUOTE_MAX_CHARS).join("")}…`
}

export const quoteOf = (index: ReadonlyMap<string, MessageRecord>, replyTo: string): Quote => {
  const m = index.get(replyTo)
  if (m === undefined) return { found: false }
  const redacted = m.redacted === true
  return { found: true, id: m.id, nick: m.nick, excerpt: redacted ? "" : excerpt(stripFormatting(m.text)), redacted }
}

export const sameQuote = (a: Quote | undefined, b: Quote | undefined): boolean => {
  if (a === b) return true
  if (a === undefined || b === undefined || a.found !== b.found) return false
  if (!a.found || !b.found) return true
  return a.id === b.id && a.nick === b.nick && a.excerpt === b.excerpt && a.redacted === b.redacted
}
