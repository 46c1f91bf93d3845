/**
 * AnnouncedMarks: in cluster mode, the newest message id MessageWriter announced on `stored`, per network and overall
 * (docs/decisions/secrets.md "What carries events between nodes"). A network's rows are stored by one node, so its ids grow in
 * commit order: a row at or below its network's mark was announced already (read back by a catch-up before the writer
 * announced it, or heard twice), and is not announced again. One process mode keeps no marks: every row is fresh.
 *
 * Concurrency rule: plain synchronous state, used from the writer's announcing steps only.
 */
import type { StoredRow } from "./MessageRow.js"

export class AnnouncedMarks {
  private readonly upTo = new Map<number, number>()
  /** The newest id announced (0 before any); a lower bound for a catch-up. */
  highest = 0

  constructor(private readonly cluster: boolean) {}

  /** The rows not announced yet, marking them announced. */
  fresh<R extends StoredRow>(rows: ReadonlyArray<R>): ReadonlyArray<R> {
    if (!this.cluster) return rows
    const fresh = rows.filter((r) => r.id > (this.upTo.get(r.networkId) ?? 0))
    for (const r of fresh) {
      this.upTo.set(r.networkId, r.id)
      if (r.id > this.highest) this.highest = r.id
    }
    return fresh
  }
}
