/**
 * StoredAnnouncer: what MessageWriter announces on its `stored` PubSub. Its own batches once the statement that stored
 * them has committed, with their ids and each row's number in append order (`sequenceOf`); in cluster mode also the
 * rows other nodes stored (`relay`, docs/decisions/secrets.md "What carries events between nodes"), each row once
 * (AnnouncedMarks), marked as relayed (`storedHere`). Every row goes into the newest pages (RecentPages) before it is
 * announced: whoever hears of a row and then reads its buffer's newest page finds it.
 *
 * Concurrency rule: plain synchronous state (the marks, and weak maps keyed by the announced batches), changed by each
 * call in one synchronous step before its publish; `stored` is unbounded, so announcing never waits for a subscriber.
 */
import { Effect, PubSub } from "effect"
import { relayedClientTags } from "../../irc/TaggedMessages.js"
import { AnnouncedMarks } from "./AnnouncedMarks.js"
import type { PendingRow, StoredRow } from "./MessageRow.js"
import type { Metrics } from "../upkeep/Metrics.js"
import type { RecentPages, StoredForPage } from "./RecentPages.js"

const STORED_METRIC = "belay_messages_stored_total"
const STORED_HELP = "Messages stored in the database."

/**
 * The client-only tags the row's line came with, announced with it but never stored nor paged: the member's IRC
 * clients get them live, as soju relays them (docs/contract.md "The IRC client listener").
 */
const withClientTags = (r: PendingRow): { readonly clientTags?: Readonly<Record<string, string>> } => {
  const clientTags = relayedClientTags(r.raw)
  return clientTags === undefined ? {} : { clientTags }
}

export class StoredAnnouncer {
  /** Cluster mode: what was announced already, per network (AnnouncedMarks.ts). */
  private readonly marks: AnnouncedMarks
  /** Batches published by `relay`: stored by another node. */
  private readonly relayed = new WeakSet<ReadonlyArray<StoredRow>>()
  /** The append order of each announced batch's rows (see MessageWriter); weak, so batches go with their readers. */
  private readonly sequences = new WeakMap<ReadonlyArray<StoredRow>, ReadonlyArray<number>>()

  constructor(
    readonly stored: PubSub.PubSub<ReadonlyArray<StoredRow>>,
    private readonly metrics: Metrics,
    private readonly pages: RecentPages,
    private readonly cluster: boolean
  ) {
    this.marks = new AnnouncedMarks(cluster)
  }

  /** Cluster mode: the newest id announced on `stored` (0 before any); a lower bound for a catch-up. */
  get highest(): number {
    return this.marks.highest
  }

  private readonly unannounced = <R extends StoredRow>(rows: ReadonlyArray<R>): ReadonlyArray<R> =>
    this.marks.fresh(rows)

  /** Counts the rows as stored and announces them with their ids (in id order). */
  readonly announce = (rows: ReadonlyArray<PendingRow>, ids: ReadonlyArray<number>) =>
    Effect.suspend(() => {
      this.metrics.increment(STORED_METRIC, STORED_HELP, {}, rows.length)
      const storedRows = rows.map((r, i): StoredRow => ({
        id: ids[i]!,
        networkId: r.networkId,
        target: r.target,
        bufferKind: r.bufferKind,
        time: r.time,
        kind: r.kind,
        nick: r.nick,
        text: r.text,
        numeric: r.numeric,
        self: r.self,
        encryption: r.encryption,
        msgid: r.msgid,
        replyTo: r.replyTo,
        redacted: false,
        ...withClientTags(r)
      }))
      if (this.cluster) {
        const fresh = this.unannounced(storedRows.map((row, i) => ({ ...row, targetFolded: rows[i]!.targetFolded })))
        const batch = fresh.map(({ targetFolded: _, ...row }): StoredRow => row)
        const seqOf = new Map(storedRows.map((row, i) => [row.id, rows[i]!.seq] as const))
        this.sequences.set(batch, batch.map((row) => seqOf.get(row.id)!))
        return this.publishStored(fresh, batch)
      }
      // Before the announcement: whoever hears of a row and then reads its buffer's newest page finds it.
      this.pages.stored(storedRows.map(({ bufferKind: _, clientTags: _tags, ...row }, i) => ({ ...row, targetFolded: rows[i]!.targetFolded })))
      this.sequences.set(storedRows, rows.map((r) => r.seq))
      return PubSub.publish(this.stored, storedRows)
    })

  /** Into the newest pages, then on `stored`: whoever hears of a row and then reads its buffer's newest page finds it. */
  private readonly publishStored = (
    forPages: ReadonlyArray<StoredRow & { readonly targetFolded: string }>,
    batch: ReadonlyArray<StoredRow>
  ) => {
    if (batch.length === 0) return Effect.void
    this.pages.stored(forPages.map(({ bufferKind: _, clientTags: _tags, ...row }): StoredForPage => row))
    return PubSub.publish(this.stored, batch)
  }

  /**
   * Rows another node stored (ids ascending; ClusterEvents read them back): into the newest pages, then announced on
   * `stored` like this writer's own, each row once (`unannounced`).
   */
  readonly relay = (rows: ReadonlyArray<StoredRow & { readonly targetFolded: string }>): Effect.Effect<void> =>
    Effect.suspend(() => {
      const fresh = this.unannounced(rows)
      const batch = fresh.map(({ targetFolded: _, ...row }): StoredRow => row)
      this.relayed.add(batch)
      return this.publishStored(fresh, batch)
    })

  /** Whether a batch heard on `stored` was stored by this node (not relayed from another). */
  readonly storedHere = (batch: ReadonlyArray<StoredRow>): boolean => !this.relayed.has(batch)

  /** Each row's number in append order, for a batch this writer announced on `stored`; undefined for any other. */
  readonly sequenceOf = (batch: ReadonlyArray<StoredRow>): ReadonlyArray<number> | undefined => this.sequences.get(batch)
}
