/**
 * ClusterLines: which of this node's upstream lines (NetworkFeed) the other nodes of a cluster want, and when each may
 * be sent to them (docs/decisions/irc-listener.md "Upstream lines across nodes"). ClusterEvents owns the wire; this owns the rules:
 *
 * - Interest: a node announces the networks its IRC clients are bound to (NetworkFeed.bound), on each change and with
 *   presence; an announcement replaces that node's previous one and expires like presence. A line of a network no
 *   other node is interested in is never sent, so a cluster without IRC clients pays nothing for the feed.
 * - Order: a line is sent only once the conversation row it came after (`after`, MessageWriter's append order) was
 *   announced here, so that its batch's notice (sent by the statement that stored it) is ahead of the line's on every
 *   other node's LISTEN connection; it carries that row's stored id (`afterId`). With each batch of its own that has
 *   rows of a wanted network, this node sends one group: the lines that batch released, then a mark (`upTo`, the
 *   batch's newest id of the network) — even with no line, so that the receiving listener's LiveOrder knows no line
 *   is missing between rows up to it. Lines of one network are sent in the order they came; a line whose row never
 *   comes (the database down) goes after LINE_HOLD_LIMIT, with the newest id of its network known then.
 * - PRIVMSG and NOTICE are not sent: the listener takes them from the stored rows.
 * - A channel event stored here without an upstream msgid (FeedLine `rows`) also waits for its own rows, then goes
 *   with their stamp (EventStamps.ts): the msgid and time CHATHISTORY shows for it, which the other node cannot know
 *   (its listener has no append numbers). The stamps travel beside the lines (`s` of the notice, `encodeLines`), as
 *   [index, msgid, time]: a node of an earlier build ignores the field and relays the lines unstamped, as before, and
 *   a notice from one has none, so nodes of both builds work together through a rolling restart.
 *
 * Concurrency rule: every method is a synchronous step (JavaScript runs one at a time); ClusterEvents calls them from
 * its follower fibers and its presence timer.
 */
import { Duration } from "effect"
import { type StoredRow, upstreamMsgid } from "../history/MessageRow.js"
import { makeEventStamps, waitsFor } from "../events/EventStamps.js"
import type { FeedLine, FeedStamp } from "../events/NetworkFeed.js"

/** The longest a line waits here for the stored row before it (a batch commits within about 100 ms). */
export const LINE_HOLD_LIMIT = Duration.seconds(2)
/** How many recent rows' (append number → id) are kept to stamp the lines that wait for them. */
const IDS_KEPT = 4096

interface Held {
  readonly line: FeedLine
  readonly since: number
}

/** A line to send, with the stored id of the row it came after, and its row's stamp when it is a stored event. */
export interface OutLine {
  readonly line: FeedLine
  readonly afterId: number
  readonly stamp?: FeedStamp
}

/** An `l` notice's lines: `l`, [account, line, receive time, afterId] each; `s`, the stamps (module comment). */
export const encodeLines = (out: ReadonlyArray<OutLine>) => {
  const s: Array<readonly [number, string, number]> = []
  out.forEach((o, i) => o.stamp !== undefined && s.push([i, o.stamp.msgid, o.stamp.time]))
  const l = out.map(({ afterId, line }) => [line.accountId, line.line, line.time, afterId] as const)
  return s.length > 0 ? { l, s } : { l }
}

/** The largest time, in ms either side of 1970, a Date holds (ECMA-262 "Time Values and Time Range"). */
const TIME_RANGE = 8.64e15

/**
 * The lines of another node's `l` notice for `networkId`, as this node's NetworkFeed takes them. A stamp is taken only
 * as `stampOf` makes one (a msgid Belay keeps, a time a Date holds), so that no peer's notice can put a space or a
 * line break into a tag, or a time no client line can show; any other is dropped and its line goes unstamped.
 */
export const decodeLines = (
  networkId: number,
  l: ReadonlyArray<readonly [number, string, number, number]>,
  s: ReadonlyArray<readonly [number, string, number]> = []
): ReadonlyArray<FeedLine> => {
  const stamps = new Map<number, FeedStamp>()
  for (const [i, msgid, time] of s) {
    if (upstreamMsgid(msgid) === msgid && Number.isFinite(time) && Math.abs(time) <= TIME_RANGE) stamps.set(i, { msgid, time })
  }
  return l.map(([accountId, line, time, afterId], i) => {
    const stamp = stamps.get(i)
    return { accountId, networkId, line, time, afterId, ...(stamp !== undefined ? { stamp } : {}) }
  })
}

/** The command of a raw line, upper-cased. */
const commandOf = (raw: string): string => {
  const words = raw.split(" ", 4)
  let i = 0
  if (words[i]?.startsWith("@")) i++
  if (words[i]?.startsWith(":")) i++
  return (words[i] ?? "").toUpperCase()
}

export const makeClusterLines = (
  send: (networkId: number, lines: ReadonlyArray<OutLine>, upTo: number) => void,
  now: () => number
) => {
  /** Another node → the networks it wants, and when that expires (ms). */
  const interest = new Map<string, { readonly networks: ReadonlySet<number>; readonly expires: number }>()
  /** Append number → stored id, of this node's recent rows. */
  const ids = new Map<number, number>()
  let lowestKept = 1
  /** Every row numbered at most this was announced or dropped. */
  let settled = 0
  /** Per network, the newest stored id announced here. */
  const newest = new Map<number, number>()
  const held = new Map<number, Array<Held>>()
  const stamps = makeEventStamps()
  const out = (line: FeedLine): OutLine => {
    const stamp = stamps.of(line)
    return stamp === undefined ? { line, afterId: idOf(line) } : { line, afterId: idOf(line), stamp }
  }

  const idOf = (line: FeedLine): number => {
    const after = line.after ?? 0
    if (after === 0) return 0
    return ids.get(after) ?? newest.get(line.networkId) ?? 0
  }

  /** The lines of a network that may go now, taken from its queue. */
  const releasable = (networkId: number, overdueSince: number): Array<OutLine> => {
    const queue = held.get(networkId)
    if (queue === undefined) return []
    let n = 0
    while (n < queue.length && (waitsFor(queue[n]!.line) <= settled || queue[n]!.since <= overdueSince)) n++
    const released = queue.splice(0, n).map((h) => out(h.line))
    if (queue.length === 0) held.delete(networkId)
    return released
  }

  const wanted = (networkId: number): boolean => {
    for (const entry of interest.values()) if (entry.networks.has(networkId)) return true
    return false
  }

  return {
    /** `node` wants the lines of `networks` (its whole list), until `expires`. */
    announce: (node: string, networks: ReadonlyArray<number>, expires: number): void => {
      if (networks.length === 0) interest.delete(node)
      else interest.set(node, { networks: new Set(networks), expires })
    },
    /** Forgets the interest not renewed by `at`. */
    expire: (at: number): void => {
      for (const [node, entry] of interest) if (entry.expires <= at) interest.delete(node)
    },
    /** Whether any other node wants any line (the actors build lines only then). */
    anyInterest: (): boolean => interest.size > 0,
    /** A line this node's actor published (`after` set): sent now, held, or not wanted. */
    line: (line: FeedLine): void => {
      if (!wanted(line.networkId)) return
      const command = commandOf(line.line)
      if (command === "PRIVMSG" || command === "NOTICE") return
      const queue = held.get(line.networkId)
      if (queue === undefined && waitsFor(line) <= settled) {
        return send(line.networkId, [out(line)], newest.get(line.networkId) ?? 0)
      }
      const entry = { line, since: now() }
      if (queue !== undefined) queue.push(entry)
      else held.set(line.networkId, [entry])
    },
    /** A batch announced on MessageWriter.stored; `seqs` its rows' append numbers (undefined: another node's). */
    stored: (rows: ReadonlyArray<StoredRow>, seqs: ReadonlyArray<number> | undefined): void => {
      if (seqs === undefined) return
      stamps.stored(rows, seqs)
      const networks = new Set<number>()
      for (let i = 0; i < rows.length; i++) {
        const row = rows[i]!
        const seq = seqs[i]
        if (seq === undefined) continue
        networks.add(row.networkId)
        if (row.id > (newest.get(row.networkId) ?? 0)) newest.set(row.networkId, row.id)
        ids.set(seq, row.id)
        if (seq > settled) settled = seq
      }
      while (ids.size > IDS_KEPT) ids.delete(lowestKept++)
      for (const networkId of networks) {
        if (wanted(networkId)) send(networkId, releasable(networkId, -Infinity), newest.get(networkId) ?? 0)
      }
    },
    /** Sends what waited past LINE_HOLD_LIMIT; the timer calls it. */
    releaseOverdue: (): void => {
      const overdueSince = now() - Duration.toMillis(LINE_HOLD_LIMIT)
      for (const networkId of [...held.keys()]) {
        const out = releasable(networkId, overdueSince)
        if (out.length > 0) send(networkId, out, newest.get(networkId) ?? 0)
      }
    },
    holdingAny: (): boolean => held.size > 0
  }
}

export type ClusterLines = ReturnType<typeof makeClusterLines>
