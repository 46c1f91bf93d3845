/**
 * LiveOrder: puts the two live sources of a network back in the order its server sent them (docs/decisions/irc-listener.md "Live
 * lines in the upstream's order"). A stored message reaches the listener once its batch commits (MessageWriter.stored,
 * up to 100 ms after it arrived) while every other line comes through NetworkFeed at once; so a PART could overtake
 * the last PRIVMSG of the one who left, or a NICK the PRIVMSG sent just before it. Each feed line carries the newest
 * conversation row its network had appended when the line arrived (`after`, in MessageWriter's append order); a line
 * waits here, behind the earlier lines of its network, until the row numbered `after` has been announced (or
 * dropped: the writer announces in append order, so a later number announced says so). Stored rows are never held:
 * the lines a batch releases are sent between its rows, at their place.
 *
 * A network another node of a cluster runs (docs/decisions/irc-listener.md "Upstream lines across nodes") has no append numbers
 * here: that node sends, after each batch of its own, the lines that came before the batch's rows, each with the stored
 * id of the row it came after (`afterId`), then a mark (`upTo`, the batch's newest id of the network), in one notice
 * behind the batch's own. Its rows reach `stored` (relayed) and its lines and marks the feed, on two fibers, in either
 * order; so once a mark came, its newer rows wait for the next mark, and lines and rows are interleaved by `afterId`.
 * Before any mark (no client here was bound when the batch was stored) rows go at once, and lines after their row.
 *
 * No line is lost: a line whose row never comes (the database down, a row refused) waits at most HOLD_LIMIT, then
 * goes out in the order the lines came; another node's rows waiting for a mark that does not come go after
 * HOLD_LIMIT too, and its rows then pass at once until its next mark.
 *
 * A channel event Belay stores (JOIN, PART, QUIT, KICK, NICK, MODE, TOPIC without an upstream msgid) goes out with
 * the msgid and time of its own row, the ones CHATHISTORY shows for it under draft/event-playback (EventStamps.ts):
 * its line names its rows (`rows`, append numbers; the actor publishes it once they are appended) and waits for them
 * as for the row before it, then takes the first one's stamp; another node's line comes stamped by that node
 * (ClusterLines). Why here: this is where lines already wait for rows, so an event line simply waits for one more
 * (its own, appended right after the conversation row it waited for, and stored in the same batch or the next), and
 * keeps its place; it goes with the batch that stores it, as a message does (up to 100 ms after it arrived), so it
 * moves no further relative to messages than those already move. A line with an upstream msgid keeps it (it is its
 * row's msgid) and does not wait; a line whose row never comes goes unstamped after HOLD_LIMIT, as any line. Rejected:
 * stamping lines from the stored rows' raw text (the rows do not carry it, and a line Belay stored as no row would wait
 * HOLD_LIMIT); relaying the event from its stored row as messages are (a second renderer for lines the upstream
 * already sent whole, with their account, user and host). Since lines now wait longer, each goes only to the sessions
 * bound before it arrived here (`arrival`, SessionHub): a client that binds meanwhile has it in its welcome already.
 *
 * Concurrency rule: `stored`, `line`, `mark` and `releaseOverdue` are synchronous steps (JavaScript runs one at a time);
 * the listener calls the first three from its follower fibers, the last from one timer fiber that runs only while
 * something is held (`holding`).
 */
import { Duration } from "effect"
import { makeEventStamps, waitsFor } from "../services/events/EventStamps.js"
import type { StoredRow } from "../services/history/MessageRow.js"
import type { FeedLine, FeedMark } from "../services/events/NetworkFeed.js"

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
  /**
   * A line, with the `stamp` of its stored row when it is a stored channel event whose row came, and its `arrival`: it
   * was the arrival-th line to reach `line` (see `arrived`).
   */
  readonly line: (line: FeedLine, arrival: number) => void
  /** Something is held (true) or nothing is any more (false): the timer runs only meanwhile. */
  readonly holding: (held: boolean) => void
}

/** Another node's network, while something of it is held or its rows wait for marks. */
interface Remote {
  /** Lines were sent for its rows up to this id; undefined: its rows pass at once. */
  upTo: number | undefined
  readonly rows: Array<StoredRow>
  readonly lines: Array<FeedLine>
  /** Since when something is held (undefined: nothing is). */
  since: number | undefined
}

export const makeLiveOrder = (routes: LiveRoutes, now: () => number) => {
  /** Every row numbered at most this was announced or dropped. */
  let settled = 0
  const stamps = makeEventStamps()
  /** How many lines reached `line`; each line's number among them. */
  let arrived = 0
  const arrivals = new WeakMap<FeedLine, number>()
  /** The line as it goes out: stamped with its row's msgid and time when it has them. */
  const send = (line: FeedLine) => {
    const stamp = stamps.of(line)
    routes.line(stamp === undefined || stamp === line.stamp ? line : { ...line, stamp }, arrivals.get(line) ?? arrived)
  }
  /** Held lines per network, in arrival order: each waits behind the ones before it, whatever it waits for. */
  const held = new Map<number, Array<Held>>()
  const remote = new Map<number, Remote>()
  /** Per network, the newest stored id sent: what another node's lines wait for. */
  const sentIds = new Map<number, number>()
  let holdingNow = false
  const syncHolding = () => {
    let holds = held.size > 0
    if (!holds) for (const r of remote.values()) if (r.since !== undefined) holds = true
    if (holds !== holdingNow) routes.holding((holdingNow = holds))
  }
  const remoteOf = (networkId: number): Remote => {
    let r = remote.get(networkId)
    if (r === undefined) remote.set(networkId, (r = { upTo: undefined, rows: [], lines: [], since: undefined }))
    return r
  }
  const sent = (row: StoredRow) => {
    if (row.id > (sentIds.get(row.networkId) ?? 0)) sentIds.set(row.networkId, row.id)
  }

  /** Sends what of another node's network may go, lines and rows interleaved; everything when `overdue`. */
  const drain = (networkId: number, overdue: boolean) => {
    const r = remote.get(networkId)
    if (r === undefined) return
    let segment: Array<StoredRow> = []
    const flush = () => {
      if (segment.length > 0) routes.rows(networkId, segment)
      segment = []
    }
    for (;;) {
      const line = r.lines[0]
      const row = r.rows[0]
      if (line !== undefined && ((line.afterId ?? 0) <= (sentIds.get(networkId) ?? 0) || (overdue && row === undefined))) {
        flush()
        send(line)
        r.lines.shift()
      } else if (row !== undefined && (overdue || row.id <= Math.max(r.upTo ?? 0, line?.afterId ?? 0))) {
        // A row goes once no line can come before it: the mark covers it, or a line after it came (lines keep order).
        segment.push(row)
        sent(row)
        r.rows.shift()
      } else break
    }
    flush()
    if (overdue) r.upTo = undefined
    if (r.rows.length === 0 && r.lines.length === 0) {
      r.since = undefined
      if (r.upTo === undefined) remote.delete(networkId)
    } else if (r.since === undefined) r.since = now()
  }

  const releaseNetwork = (networkId: number, queue: Array<Held>, upTo: number, overdueSince: number) => {
    let n = 0
    while (n < queue.length && (queue[n]!.after <= upTo || queue[n]!.since <= overdueSince)) n++
    if (n === 0) return
    for (const h of queue.splice(0, n)) send(h.line)
    if (queue.length === 0) held.delete(networkId)
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
      const remoteTouched = new Set<number>()
      if (seqs !== undefined) stamps.stored(rows, seqs)
      for (let i = 0; i < rows.length; i++) {
        const row = rows[i]!
        const seq = seqs?.[i]
        const r = seqs === undefined ? remote.get(row.networkId) : undefined
        if (r !== undefined) {
          remoteTouched.add(row.networkId)
          // Rows of another node's network wait for its mark (drained below), behind any of its rows that wait.
          if (r.upTo !== undefined || r.rows.length > 0) {
            r.rows.push(row)
            continue
          }
        }
        sent(row)
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
      for (const networkId of remoteTouched) drain(networkId, false)
      syncHolding()
    },
    /** Another node's mark (NetworkFeed): its lines for its rows up to `upTo` have all come. */
    mark: (mark: FeedMark): void => {
      const r = remoteOf(mark.networkId)
      r.upTo = Math.max(r.upTo ?? 0, mark.upTo)
      drain(mark.networkId, false)
      syncHolding()
    },
    /** A line from NetworkFeed. */
    line: (line: FeedLine): void => {
      arrivals.set(line, ++arrived)
      if (line.afterId !== undefined) {
        remoteOf(line.networkId).lines.push(line)
        drain(line.networkId, false)
        return syncHolding()
      }
      const queue = held.get(line.networkId)
      const after = waitsFor(line)
      if (queue === undefined && after <= settled) return send(line)
      const entry: Held = { line, after, since: now() }
      if (queue !== undefined) return void queue.push(entry)
      held.set(line.networkId, [entry])
      syncHolding()
    },
    /** Sends what waited past HOLD_LIMIT (and whatever may go anyway); the timer calls it. */
    releaseOverdue: (): void => {
      const overdueSince = now() - Duration.toMillis(HOLD_LIMIT)
      release(settled, overdueSince)
      for (const [networkId, r] of remote) if (r.since !== undefined && r.since <= overdueSince) drain(networkId, true)
      syncHolding()
    },
    /** Whether anything waits. */
    holdingAny: (): boolean => holdingNow,
    /** How many lines reached `line` so far: a session bound now gets those numbered higher (SessionHub `boundAt`). */
    arrived: (): number => arrived
  }
}

export type LiveOrder = ReturnType<typeof makeLiveOrder>
