/**
 * LiveOrder alone: feed lines wait behind the stored rows appended before them (and only those), are placed between
 * the rows of a batch at their place, keep their order per network, go out after HOLD_LIMIT when their row never
 * comes, and batches or lines from another process pass at once; another node's lines (`afterId`) and rows are
 * interleaved by stored id whichever comes first, its rows wait for its mark once it sends marks, and not past
 * HOLD_LIMIT.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { HOLD_LIMIT, makeLiveOrder } from "../../src/listener/LiveOrder.js"
import type { FeedLine } from "../../src/services/events/NetworkFeed.js"
import { storedRow } from "../support/MessageFixtures.js"

const row = storedRow

const line = (text: string, after: number | undefined, networkId = 1): FeedLine => ({
  accountId: 1,
  networkId,
  line: text,
  time: 0,
  ...(after !== undefined ? { after } : {})
})

const harness = () => {
  const out: Array<string> = []
  const holding: Array<boolean> = []
  let now = 0
  const order = makeLiveOrder({
    rows: (networkId, rows) => out.push(...rows.map((r) => `${networkId}:${r.text}`)),
    line: (l) => out.push(`${l.networkId}:${l.line}`),
    holding: (any) => holding.push(any)
  }, () => now)
  return { order, out, holding, advance: (ms: number) => (now += ms) }
}

describe("LiveOrder", () => {
  it.effect("a line waits for the stored row appended before it, and goes out between the rows of a batch", () =>
    Effect.sync(() => {
      const { order, out, holding } = harness()
      // Row 1 (seq 1) appended, then PART arrived (after = 1), then row 2 (seq 2) appended.
      order.line(line("PART", 1))
      expect(out).toEqual([])
      expect(holding).toEqual([true])
      order.stored([row(10), row(11)], [1, 2])
      expect(out).toEqual(["1:row 10", "1:PART", "1:row 11"])
      expect(holding).toEqual([true, false])
      // Now settled: a line after row 2 goes at once.
      order.line(line("JOIN", 2))
      expect(out.at(-1)).toBe("1:JOIN")
    }))

  it.effect("lines keep their order per network; another network's lines are not held by this one", () =>
    Effect.sync(() => {
      const { order, out } = harness()
      order.line(line("MODE", 3))
      order.line(line("TOPIC", 0))
      order.line(line("QUIT", 0, 2))
      expect(out).toEqual(["2:QUIT"])
      // Rows of network 2 numbered 1 and 2, then network 1's row 3: network 1's lines follow it.
      order.stored([row(20, 2), row(21, 2), row(22)], [1, 2, 3])
      expect(out).toEqual(["2:QUIT", "2:row 20", "2:row 21", "1:row 22", "1:MODE", "1:TOPIC"])
    }))

  it.effect("a row dropped by the writer: a later number releases the line; without one, HOLD_LIMIT does", () =>
    Effect.sync(() => {
      const { order, out, advance } = harness()
      order.line(line("NICK", 5))
      order.stored([row(30)], [7])
      expect(out).toEqual(["1:NICK", "1:row 30"])
      order.line(line("KICK", 9))
      order.releaseOverdue()
      expect(out.at(-1)).toBe("1:row 30")
      advance(Duration.toMillis(HOLD_LIMIT) - 1)
      order.releaseOverdue()
      expect(out.at(-1)).toBe("1:row 30")
      advance(1)
      order.releaseOverdue()
      expect(out.at(-1)).toBe("1:KICK")
      expect(order.holdingAny()).toBe(false)
    }))

  it.effect("batches and lines of another process (no append numbers) pass at once", () =>
    Effect.sync(() => {
      const { order, out } = harness()
      order.line(line("PART", 4))
      order.stored([row(40)], undefined)
      expect(out).toEqual(["1:row 40"])
      order.line(line("remote", undefined, 2))
      expect(out).toEqual(["1:row 40", "2:remote"])
      expect(order.holdingAny()).toBe(true)
    }))

  const remoteLine = (text: string, afterId: number, networkId = 3): FeedLine => ({ accountId: 1, networkId, line: text, time: 0, afterId })

  it.effect("another node's rows first, then its lines and mark: interleaved by stored id", () =>
    Effect.sync(() => {
      const { order, out } = harness()
      // A first group: no row of it was held yet; its lines follow their rows.
      order.mark({ networkId: 3, upTo: 50 })
      // The batch 51–53 is relayed; the group for it (JOIN after 51, MODE after 52, mark 53) comes next.
      order.stored([row(51, 3), row(52, 3), row(53, 3)], undefined)
      expect(out).toEqual([])
      expect(order.holdingAny()).toBe(true)
      order.line(remoteLine("JOIN", 51))
      expect(out).toEqual(["3:row 51", "3:JOIN"])
      order.line(remoteLine("MODE", 52))
      order.mark({ networkId: 3, upTo: 53 })
      expect(out).toEqual(["3:row 51", "3:JOIN", "3:row 52", "3:MODE", "3:row 53"])
      expect(order.holdingAny()).toBe(false)
    }))

  it.effect("another node's lines and mark first, then its rows: interleaved the same", () =>
    Effect.sync(() => {
      const { order, out } = harness()
      order.mark({ networkId: 3, upTo: 50 })
      order.line(remoteLine("JOIN", 51))
      order.line(remoteLine("TOPIC", 52))
      order.mark({ networkId: 3, upTo: 53 })
      expect(out).toEqual([])
      order.stored([row(51, 3), row(52, 3), row(53, 3)], undefined)
      expect(out).toEqual(["3:row 51", "3:JOIN", "3:row 52", "3:TOPIC", "3:row 53"])
      // A line after rows already sent goes at once; another network's relayed rows never wait.
      order.line(remoteLine("PART", 53))
      order.stored([row(60, 4)], undefined)
      expect(out.slice(-2)).toEqual(["3:PART", "4:row 60"])
      expect(order.holdingAny()).toBe(false)
    }))

  it.effect("a mark that never comes: the rows go after HOLD_LIMIT, then pass at once until the next mark", () =>
    Effect.sync(() => {
      const { order, out, advance } = harness()
      order.mark({ networkId: 3, upTo: 50 })
      order.stored([row(51, 3)], undefined)
      advance(Duration.toMillis(HOLD_LIMIT) - 1)
      order.releaseOverdue()
      expect(out).toEqual([])
      advance(1)
      order.releaseOverdue()
      expect(out).toEqual(["3:row 51"])
      order.stored([row(52, 3)], undefined)
      expect(out).toEqual(["3:row 51", "3:row 52"])
      expect(order.holdingAny()).toBe(false)
    }))
})
