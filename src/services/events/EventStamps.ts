/**
 * EventStamps: the msgid and time of the channel events this process stored lately, by their append number, so that
 * the live line of an event (a FeedLine with `rows`) goes out with the msgid and time CHATHISTORY shows for it under
 * IRCv3 draft/event-playback (docs/decisions/irc-listener.md "Event playback from the stored fields"; IRCv3
 * message-ids: one id names one message wherever it is seen). The msgid is the row's as every stored line shows it
 * (listener/MessageLines.shownMsgid): the upstream's when it gave one, else Belay's own, the stored id. A line
 * Belay stores as several rows (a QUIT or NICK in each shared channel, a PART of several channels) takes the first
 * row's: one line can carry one msgid, and the first channel's history names it.
 *
 * The listener's LiveOrder and, in a cluster, ClusterLines each keep one: they hold such a line until its rows were
 * announced or dropped (`waitsFor`), then stamp it (`of`); a row that never comes (the database down) leaves the line
 * without a stamp. At most STAMPS_KEPT are kept (the oldest go first): a line waits for its rows at most HOLD_LIMIT.
 *
 * Concurrency rule: synchronous steps only (JavaScript runs one at a time); its owner calls them from its fibers.
 */
import type { StoredRow } from "../history/MessageRow.js"
import type { FeedLine, FeedStamp } from "./NetworkFeed.js"

/** The kinds of stored channel event that draft/event-playback plays back (irc-listener.md, as above). */
export const CHANNEL_EVENT_KINDS: ReadonlySet<string> = new Set(["join", "part", "quit", "kick", "nick", "mode", "topic"])

/** How many recent events' stamps are kept: far more than a busy process stores in HOLD_LIMIT's 2 s. */
export const STAMPS_KEPT = 4096

/** The append number a line waits for: the conversation row before it and, for a stored event, its own rows. */
export const waitsFor = (line: FeedLine): number => Math.max(line.after ?? 0, line.rows?.[1] ?? 0)

/** The stamp a stored row gives its line: the msgid every stored line is shown with, and the row's time. */
export const stampOf = (row: StoredRow): FeedStamp => ({ msgid: row.msgid ?? String(row.id), time: row.time.getTime() })

export const makeEventStamps = () => {
  /** Append number → stamp, oldest first (append numbers only grow, and Map keeps insertion order). */
  const stamps = new Map<number, FeedStamp>()
  return {
    /** A batch this process's writer announced, `seqs` its rows' append numbers: its channel events are kept. */
    stored: (rows: ReadonlyArray<StoredRow>, seqs: ReadonlyArray<number>): void => {
      for (let i = 0; i < rows.length; i++) {
        const row = rows[i]!
        const seq = seqs[i]
        if (seq === undefined || !CHANNEL_EVENT_KINDS.has(row.kind)) continue
        stamps.set(seq, stampOf(row))
        if (stamps.size > STAMPS_KEPT) stamps.delete(stamps.keys().next().value!)
      }
    },
    /** What the line goes out with: the stamp it came with (another node's), or its first row's; undefined: none. */
    of: (line: FeedLine): FeedStamp | undefined =>
      line.stamp ?? (line.rows !== undefined ? stamps.get(line.rows[0]) : undefined)
  }
}

export type EventStamps = ReturnType<typeof makeEventStamps>
