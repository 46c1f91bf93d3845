/**
 * RecentPages: the newest messages of the buffers read lately, kept in memory so that the
 * page every reader asks for first — the newest `limit` of a buffer, what an agent polls and
 * what a tab draws when a buffer opens — is answered without a database round trip
 * (docs/decisions/history.md "Recent pages in memory"). Older pages (`before` below what is kept)
 * still read `messages (buffer_id, id)` through MessageHistory.
 *
 * What is kept, per buffer (network id + folded target): up to DEPTH of its newest messages,
 * oldest first, and whether they are the whole buffer. Loaded by the newest page a reader
 * missed (the same statement and page MessageHistory would read anyway, so a first read costs
 * what it always did) and extended by MessageWriter
 * with every batch it stores, synchronously, before the batch is announced on its `stored`
 * PubSub: a tab that saw a `message` event and then reads the page finds the message there.
 * At most MAX_MESSAGES in all; the buffer read least recently goes first.
 *
 * Coherence: a page kept is every row of its buffer from its oldest kept id up (all of them when `complete`). A
 * buffer's rows mostly arrive in id order — one writer fiber stores a network's rows batch after batch (this process's
 * MessageWriter, or in a cluster the owner node's) — so appending only ids above the newest kept one makes a batch
 * that a concurrent load already saw harmless, and a load that raced a batch merges what arrived meanwhile. In a
 * cluster every node keeps pages of every network it is asked about (docs/decisions/several-nodes.md "Recent pages on every
 * node"): rows stored by another node arrive through MessageWriter.relay once their notice is heard
 * (ClusterEvents.ts). Around a handover two writers overlap, and the old owner's last batch may commit after the new
 * owner's first with lower ids; AnnouncedMarks then keeps it from `stored`. So every row read back from a notice is
 * shown here first (`heard`), and so is every row stored (`stored`): a row below the newest kept of its buffer and
 * not kept is out of order, and the buffer's page is dropped — the next read loads it from the database, where the
 * row has committed. While notices may be lost (the LISTEN
 * connection down or its heartbeat missed) ClusterEvents calls `trust(false)`: everything kept is dropped and nothing
 * is answered or kept until `trust(true)`, after the missed rows were read back (docs/decisions/secrets.md "What carries
 * events between nodes"). A network's pages are dropped when it is removed. Nothing here deletes messages otherwise:
 * history has no retention. A redaction (`redact`; MessageRedactions.ts) replaces the kept message by its redacted
 * copy, a new object, so that what was rendered from the old one (MessageRecord's serialized records) is not reused.
 *
 * A page answered again while its buffer did not change is the same array as before, so that
 * what is made from it (the serialized answer of recent_messages: src/http/mcp/ToolHandlers.ts)
 * can be kept with it.
 *
 * Concurrency rule: plain Maps changed by synchronous calls only; nothing suspends while
 * holding a buffer's entry.
 */
import { Effect, Option, PubSub, Queue } from "effect"
import type { StoredMessage } from "./MessageRow.js"
import { Networks } from "../networks/Networks.js"

/** Messages kept per buffer: the interface's largest recent_messages page (500), so any newest page fits. */
export const DEPTH = 500
/** Messages kept in all, across buffers: about 10 MB of message records at 500 bytes each. */
export const MAX_MESSAGES = 20_000

/** A stored message and the folded target of its buffer, as MessageWriter hands them over. */
export interface StoredForPage extends StoredMessage {
  readonly targetFolded: string
}

interface Loaded {
  readonly _tag: "Loaded"
  /** Oldest first, at most DEPTH. */
  messages: Array<StoredMessage>
  /** True when `messages` is the whole buffer (it had fewer than DEPTH when loaded, and every newer row since). */
  complete: boolean
  /** Bumped whenever `messages` changes. */
  version: number
  /** The last page answered, given again while nothing changed: readers may memoize on the array's identity. */
  last?: { readonly version: number; readonly end: number; readonly limit: number; readonly page: ReadonlyArray<StoredMessage> }
}

interface Loading {
  readonly _tag: "Loading"
  /** Rows stored while the load ran; merged above the load's newest id. */
  readonly pending: Array<StoredMessage>
}

type Entry = Loaded | Loading

const keyOf = (networkId: number, targetFolded: string) => `${networkId}\u0000${targetFolded}`

export class RecentPages extends Effect.Service<RecentPages>()("belay/RecentPages", {
  scoped: Effect.gen(function*() {
    const networks = yield* Networks
    /** Map order is recency of use: a hit moves its entry to the end; eviction takes from the front. */
    const entries = new Map<string, Entry>()
    /**
     * The key last touched or begun, which is then the last in `entries` while it is there: only `touch` and
     * `beginLoad` add keys, both at the end. A buffer polled again is already last, and moving it costs a delete and
     * an insert of a string key on every hit.
     */
    let newest: string | undefined = undefined
    let kept = 0
    /** False while rows stored elsewhere may go unheard: nothing is kept or answered. */
    let trusted = true

    const sizeOf = (entry: Entry) => (entry._tag === "Loaded" ? entry.messages.length : 0)

    const drop = (key: string) => {
      const entry = entries.get(key)
      if (entry === undefined) return
      kept -= sizeOf(entry)
      entries.delete(key)
    }

    const evict = () => {
      for (const [key, entry] of entries) {
        if (kept <= MAX_MESSAGES) return
        if (entry._tag === "Loaded") drop(key)
      }
    }

    const touch = (key: string, entry: Entry) => {
      if (key === newest) return
      entries.delete(key)
      entries.set(key, entry)
      newest = key
    }

    /**
     * The page `{before, limit}` (oldest first) when what is kept answers it exactly: the kept
     * messages below `before` number at least `limit`, or they are the whole buffer.
     */
    const page = (
      networkId: number,
      targetFolded: string,
      before: Option.Option<number>,
      limit: number
    ): Option.Option<ReadonlyArray<StoredMessage>> => {
      if (!trusted) return Option.none()
      const key = keyOf(networkId, targetFolded)
      const entry = entries.get(key)
      if (entry === undefined || entry._tag === "Loading") return Option.none()
      const messages = entry.messages
      let end = messages.length
      if (Option.isSome(before)) {
        const below = before.value
        while (end > 0 && messages[end - 1]!.id >= below) end--
      }
      if (end < limit && !entry.complete) return Option.none()
      touch(key, entry)
      const last = entry.last
      if (last !== undefined && last.version === entry.version && last.end === end && last.limit === limit) {
        return Option.some(last.page)
      }
      const answered = messages.slice(Math.max(0, end - limit), end)
      entry.last = { version: entry.version, end, limit, page: answered }
      return Option.some(answered)
    }

    /**
     * Marks the buffer as loading its newest `limit` messages (what kept pages there were are
     * replaced: they answered fewer); returns the function that installs the load's rows (oldest
     * first), or None when another load of it is running.
     */
    const beginLoad = (networkId: number, targetFolded: string, limit: number) => {
      if (!trusted) return Option.none<(rows: ReadonlyArray<StoredMessage>) => void>()
      const key = keyOf(networkId, targetFolded)
      const current = entries.get(key)
      if (current?._tag === "Loading") return Option.none<(rows: ReadonlyArray<StoredMessage>) => void>()
      if (current !== undefined) drop(key)
      const loading: Loading = { _tag: "Loading", pending: [] }
      entries.set(key, loading)
      newest = key
      return Option.some((rows: ReadonlyArray<StoredMessage>) => {
        if (entries.get(key) !== loading) return
        // A buffer without history is not kept: a page of nothing costs one probe of the index, and keeping
        // every target anyone asked for would let entries grow without bound.
        if (rows.length === 0) {
          entries.delete(key)
          return
        }
        // What arrived while loading and the load did not see; below the load's oldest only when the load was whole.
        const complete = rows.length < limit
        const seen = new Set(rows.map((m) => m.id))
        const oldest = rows[0]!.id
        const missed = loading.pending.filter((m) => !seen.has(m.id) && (complete || m.id > oldest))
        const messages = missed.length === 0 ? [...rows] : [...rows, ...missed].sort((x, y) => x.id - y.id)
        const trimmed = messages.length > DEPTH ? messages.slice(messages.length - DEPTH) : messages
        const loaded: Loaded = {
          _tag: "Loaded",
          messages: trimmed,
          complete: complete && trimmed.length === messages.length,
          version: 0
        }
        entries.set(key, loaded)
        kept += trimmed.length
        evict()
      })
    }

    /** Gives up a load that failed, so that the next reader tries again. */
    const abandonLoad = (networkId: number, targetFolded: string) => {
      const key = keyOf(networkId, targetFolded)
      if (entries.get(key)?._tag === "Loading") entries.delete(key)
    }

    /** Whether `id` is among `messages` (ids ascending). */
    const holds = (messages: ReadonlyArray<StoredMessage>, id: number) => {
      let low = 0
      let high = messages.length - 1
      while (low <= high) {
        const mid = (low + high) >>> 1
        const at = messages[mid]!.id
        if (at === id) return true
        if (at < id) low = mid + 1
        else high = mid - 1
      }
      return false
    }

    /**
     * Rows that committed (ids ascending), each checked against its buffer's kept page: one below the newest kept,
     * not kept and within what the page claims to hold (from its oldest up, or all when complete) arrived out of
     * order, and the page is dropped (see Coherence). A buffer loading notes them, for the load to merge.
     */
    const check = (row: StoredForPage, key: string, entry: Entry): void => {
      const { targetFolded: _, ...message } = row
      if (entry._tag === "Loading") {
        entry.pending.push(message)
        return
      }
      const messages = entry.messages
      const newest = messages.length > 0 ? messages[messages.length - 1]!.id : 0
      if (row.id >= newest || holds(messages, row.id)) return
      if (!entry.complete && messages.length > 0 && row.id < messages[0]!.id) return
      drop(key)
    }

    /** Rows another node stored, read back from its notice, before they are relayed (some may never be). */
    const heard = (rows: ReadonlyArray<StoredForPage>) => {
      if (entries.size === 0) return
      for (const row of rows) {
        const key = keyOf(row.networkId, row.targetFolded)
        const entry = entries.get(key)
        if (entry === undefined) continue
        if (entry._tag === "Loaded") {
          check(row, key, entry)
          continue
        }
        // Loading: noted once, here or by `stored` if it gets there.
        if (!entry.pending.some((m) => m.id === row.id)) check(row, key, entry)
      }
    }

    /** Every row of a stored batch (ids ascending), added to the pages of buffers that are kept. */
    const stored = (rows: ReadonlyArray<StoredForPage>) => {
      if (entries.size === 0) return
      for (const row of rows) {
        const key = keyOf(row.networkId, row.targetFolded)
        const entry = entries.get(key)
        if (entry === undefined) continue
        if (entry._tag === "Loading") {
          if (!entry.pending.some((m) => m.id === row.id)) check(row, key, entry)
          continue
        }
        const messages = entry.messages
        const newest = messages.length > 0 ? messages[messages.length - 1]! : undefined
        if (newest !== undefined && row.id <= newest.id) {
          check(row, key, entry)
          continue
        }
        const { targetFolded: _, ...message } = row
        // The buffer's display name is the one it was created with (MessageWriter keeps it), not this row's spelling.
        messages.push(newest === undefined ? message : { ...message, target: newest.target })
        entry.version++
        if (messages.length > DEPTH) {
          messages.shift()
          entry.complete = false
        } else {
          kept++
        }
      }
      evict()
    }

    /**
     * The message `id` of the buffer was redacted (its text gone, MessageRedactions.ts): a kept copy becomes the
     * redacted one, and the page answered last is no longer given again. A load running may have read the row before
     * the redaction committed: it is abandoned, and the next reader loads again.
     */
    const redact = (networkId: number, targetFolded: string, id: number) => {
      const key = keyOf(networkId, targetFolded)
      const entry = entries.get(key)
      if (entry === undefined) return
      if (entry._tag === "Loading") {
        entries.delete(key)
        return
      }
      const messages = entry.messages
      let low = 0
      let high = messages.length - 1
      while (low <= high) {
        const mid = (low + high) >>> 1
        const at = messages[mid]!
        if (at.id < id) low = mid + 1
        else if (at.id > id) high = mid - 1
        else {
          messages[mid] = { ...at, text: "", redacted: true }
          entry.version++
          delete entry.last
          return
        }
      }
    }

    /** Whether what is kept may be answered; false drops it all (see Coherence). */
    const trust = (value: boolean) => {
      trusted = value
      if (!value) {
        entries.clear()
        kept = 0
      }
    }

    const forgetNetwork = (networkId: number) => {
      const prefix = `${networkId}\u0000`
      for (const key of [...entries.keys()]) if (key.startsWith(prefix)) drop(key)
    }

    const changes = yield* PubSub.subscribe(networks.changes)
    yield* Queue.take(changes).pipe(
      Effect.flatMap((change) => Effect.sync(() => change._tag === "Removed" && forgetNetwork(change.networkId))),
      Effect.forever,
      Effect.forkScoped
    )

    /**
     * History retention (HistoryRetention.ts): messages older than `cutoff` leave every kept page, so a newest page kept
     * in memory shows no more than the database keeps; a page that lost some is a new array (what readers memoized on
     * the old one is made again). Pages stay whole from their oldest kept id up, and `complete` keeps its meaning: the
     * rows removed are those the database deletes.
     */
    const expire = (cutoff: Date): number => {
      const before = cutoff.getTime()
      let removed = 0
      for (const entry of entries.values()) {
        if (entry._tag !== "Loaded" || entry.messages.length === 0 || entry.messages[0]!.time.getTime() >= before) continue
        const left = entry.messages.filter((m) => m.time.getTime() >= before)
        removed += entry.messages.length - left.length
        entry.messages = left
        entry.version++
        delete entry.last
      }
      kept -= removed
      return removed
    }

    return {
      page,
      expire,
      beginLoad,
      abandonLoad,
      stored,
      redact,
      trust,
      heard,
      /** Messages kept in all, for tests and metrics. */
      size: () => kept
    } as const
  }),
  dependencies: [Networks.Default]
}) {}
