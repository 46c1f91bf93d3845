/**
 * LiveOrder: puts the two live sources of a network back in the order its server sent them (docs/decisions.md "Live
 * lines in the upstream's order"). A stored message reaches the listener once its batch commits (MessageWriter.stored,
 * up to 100 ms after it arrived) while every other line comes through NetworkFeed at once; so a PART could overtake
 * the last PRIVMSG of the one who left, or a NICK the PRIVMSG sent just before it. Each feed line carries the newest
 * conversation row its network had appended when the line arrived (`after`, in MessageWriter's append order); a line
 * waits here, behind the earlier lines of its network, until the row numbered `after` has been announced (or
 * dropped: the writer announces in append order, so a later number announced says so). Stored rows are never held:
 * the lines a batch releases are sent between its rows, at their place.
 *
 * No line is lost: a line whose row never comes (the database down, a row refused) waits at most HOLD_LIMIT, then
 * goes out in the order the lines came; a batch or line from another process (no append numbers) goes out at once.
 *
 * Concurrency rule: `stored`, `line` and `releaseOverdue` are synchronous steps (JavaScript runs one at a time); the
 * listener calls the first two from its follower fibers, the last from one timer fiber that runs only while a line is
 * held (`holding`).
 */
import { Duration } from "effect"
import type { StoredRow } from "../services/MessageRow.js"
import type { FeedLine } from "../services/NetworkFeed.js"

/** The longest a line waits for the stored message before it (a batch commits within about 100 ms). */
export const HOLD_LIMIT = Duration.seconds(2)

interface Held {
  readonly line: FeedLine
  readonly after: number
  readonly since: number
}

export interface LiveRoutes {
  /** Stored rows of one network, in id order. */
  readonly rows: (networkId: number, rows: ReadonlyArray<StoredRow>) => void
  readonly line: (line: FeedLine) => void
  /** Something is held (true) or nothing is any more (false): the timer runs only meanwhile. */
  readonly holding: (any: boolean) => void
}

export const makeLiveOrder = (routes: LiveRoutes, now: () => number) => {
  /** Every row numbered at most this was announced or dropped. */
  let settled = 0
  /** Held lines per network, in arrival order (their `after` never decreases). */
  const held = new Map<number, Array<Held>>()

  const releaseNetwork = (networkId: number, queue: Array<Held>, upTo: number, overdueSince: number) => {
    let n = 0
    while (n < queue.length && (queue[n]!.after <= upTo || queue[n]!.since <= overdueSince)) n++
    if (n === 0) return
    for (const h of queue.splice(0, n)) routes.line(h.line)
    if (queue.length === 0) {
      held.delete(networkId)
      if (held.size === 0) routes.holding(false)
    }
  }

  /** Lines of every network that may go now, the ones held past `overdueSince` included. */
  const release = (upTo: number, overdueSince = -Infinity) => {
    for (const [networkId, queue] of held) releaseNetwork(networkId, queue, upTo, overdueSince)
  }

  return {
    /** A batch announced on MessageWriter.stored; `seqs` its rows' append numbers (undefined: another process's). */
    stored: (rows: ReadonlyArray<StoredRow>, seqs: ReadonlyArray<number> | undefined): void => {
      const segments = new Map<number, Array<StoredRow>>()
      const flush = (networkId: number) => {
        const segment = segments.get(networkId)
        if (segment !== undefined && segment.length > 0) {
          segments.delete(networkId)
          routes.rows(networkId, segment)
        }
      }
      for (let i = 0; i < rows.length; i++) {
        const row = rows[i]!
        const seq = seqs?.[i]
        if (seq !== undefined && held.size > 0) {
          // The lines that arrived before this row was appended go first, after the rows before it.
          const queue = held.get(row.networkId)
          if (queue !== undefined && queue[0]!.after < seq) {
            flush(row.networkId)
            releaseNetwork(row.networkId, queue, seq - 1, -Infinity)
          }
        }
        let segment = segments.get(row.networkId)
        if (segment === undefined) segments.set(row.networkId, (segment = []))
        segment.push(row)
      }
      for (const networkId of [...segments.keys()]) flush(networkId)
      const last = seqs?.[seqs.length - 1]
      if (last !== undefined && last > settled) settled = last
      if (held.size > 0) release(settled)
    },
    /** A line from NetworkFeed. */
    line: (line: FeedLine): void => {
      const queue = held.get(line.networkId)
      const after = line.after ?? 0
      if (queue === undefined && after <= settled) return routes.line(line)
      const entry: Held = { line, after, since: now() }
      if (queue !== undefined) return void queue.push(entry)
      held.set(line.networkId, [entry])
      if (held.size === 1) routes.holding(true)
    },
    /** Sends what waited past HOLD_LIMIT (and whatever may go anyway); the timer calls it. */
    releaseOverdue: (): void => release(settled, now() - Duration.toMillis(HOLD_LIMIT)),
    /** Whether any line waits. */
    holdingAny: (): boolean => held.size > 0
  }
}

export type LiveOrder = ReturnType<typeof makeLiveOrder>
