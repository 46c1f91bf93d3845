/**
 * ClusterLines alone: a line is sent only to a network some other node wants (and never PRIVMSG or NOTICE), after the
 * batch of the row it came after, with that row's stored id; each own batch of a wanted network sends one group with a
 * mark, even without lines; a line whose row never comes goes after LINE_HOLD_LIMIT; interest expires. A stored
 * channel event also waits for its own rows and goes with their stamp, beside the lines on the wire, where a node of
 * the earlier build (its `l` tuples of four) still reads the notice and one of this build reads a notice without it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Schema } from "effect"
import { decodeLines, encodeLines, LINE_HOLD_LIMIT, makeClusterLines, type OutLine } from "../../../src/services/nodes/ClusterLines.js"
import type { FeedLine } from "../../../src/services/events/NetworkFeed.js"
import { storedRow } from "../../support/MessageFixtures.js"

const row = storedRow

const line = (text: string, after: number, networkId = 1): FeedLine => ({ accountId: 7, networkId, line: text, time: 0, after })

const harness = () => {
  const sent: Array<string> = []
  let now = 0
  const lines = makeClusterLines((networkId, out, upTo) => {
    sent.push(`${networkId}: ${out.map((o) => `${o.line.line}@${o.afterId}`).join(", ")} | ${upTo}`)
  }, () => now)
  return { lines, sent, advance: (ms: number) => (now += ms), now: () => now }
}

describe("ClusterLines", () => {
  it.effect("only wanted networks; no PRIVMSG or NOTICE; a line after its row's batch, with the row's id, and a mark", () =>
    Effect.sync(() => {
      const { lines, sent } = harness()
      lines.line(line(":d JOIN #c", 0))
      lines.stored([row(10)], [1])
      expect(sent).toEqual([])
      expect(lines.anyInterest()).toBe(false)
      lines.announce("node-b", [1], 30_000)
      expect(lines.anyInterest()).toBe(true)
      // Row 11 (append number 2) appended, then JOIN arrived (after = 2), then row 12 (3): one batch of both rows.
      lines.line(line(":d!u@h JOIN #c", 2))
      lines.line(line("@time=x :b PRIVMSG #c :hi", 2))
      lines.line(line(":b NOTICE #c :hi", 2))
      lines.line(line(":x JOIN #other", 0, 2))
      expect(sent).toEqual([])
      lines.stored([row(11), row(12)], [2, 3])
      expect(sent).toEqual(["1: :d!u@h JOIN #c@11 | 12"])
      // Settled: the next line goes at once, marked with the newest id; a batch without lines still sends its mark.
      lines.line(line(":b MODE #c +v d", 3))
      lines.stored([row(13)], [4])
      expect(sent.slice(1)).toEqual(["1: :b MODE #c +v d@12 | 12", "1:  | 13"])
      // Another node's batch (no append numbers) sends nothing.
      lines.stored([row(14)], undefined)
      expect(sent).toHaveLength(3)
    }))

  it.effect("a line whose row never comes goes after LINE_HOLD_LIMIT; interest not renewed expires", () =>
    Effect.sync(() => {
      const { lines, sent, advance, now } = harness()
      lines.announce("node-b", [1], 30_000)
      lines.line(line(":d PART #c", 9))
      lines.line(line(":e PART #c", 9))
      advance(Duration.toMillis(LINE_HOLD_LIMIT) - 1)
      lines.releaseOverdue()
      expect(sent).toEqual([])
      advance(1)
      lines.releaseOverdue()
      expect(sent).toEqual(["1: :d PART #c@0, :e PART #c@0 | 0"])
      expect(lines.holdingAny()).toBe(false)
      lines.expire(now() + 30_000)
      expect(lines.anyInterest()).toBe(false)
      lines.line(line(":f PART #c", 0))
      expect(sent).toHaveLength(1)
      // An empty announcement withdraws a node's interest at once.
      lines.announce("node-c", [1], now() + 60_000)
      lines.announce("node-c", [], now() + 60_000)
      expect(lines.anyInterest()).toBe(false)
    }))

  it.effect("a stored channel event waits for its own rows and goes with the first one's stamp", () =>
    Effect.sync(() => {
      const out: Array<ReadonlyArray<OutLine>> = []
      const lines = makeClusterLines((_networkId, group) => void out.push(group), () => 0)
      lines.announce("node-b", [1], 30_000)
      lines.line({ ...line(":d TOPIC #c :new", 1), rows: [2, 2] })
      lines.stored([row(10)], [1])
      expect(out.flat()).toEqual([])
      lines.stored([{ ...row(11), kind: "topic", time: new Date(5000) }], [2])
      expect(out.flat().map((o) => [o.line.line, o.afterId, o.stamp])).toEqual([[":d TOPIC #c :new", 10, { msgid: "11", time: 5000 }]])
    }))

  it.effect("the stamps beside the lines: read back by this build, ignored by the earlier one", () =>
    Effect.sync(() => {
      const a = line(":d JOIN #c", 0)
      const sent: ReadonlyArray<OutLine> = [{ line: a, afterId: 3 }, { line: a, afterId: 4, stamp: { msgid: "5", time: 9 } }]
      const notice = { t: "l", n: 1, up: 5, ...encodeLines(sent) }
      expect(notice.s).toEqual([[1, "5", 9]])
      expect(decodeLines(1, notice.l, notice.s).map((l) => [l.afterId, l.stamp])).toEqual([[3, undefined], [4, { msgid: "5", time: 9 }]])
      // A notice of the earlier build has no `s`: its lines come unstamped.
      expect(decodeLines(1, notice.l).map((l) => l.stamp)).toEqual([undefined, undefined])
      expect(encodeLines([{ line: a, afterId: 3 }])).toEqual({ l: [[7, ":d JOIN #c", 0, 3]] })
      // The earlier build's schema of the notice (four-element tuples, no `s`) still decodes it.
      const earlier = Schema.Struct({
        t: Schema.Literal("l"),
        n: Schema.Int,
        up: Schema.Int,
        l: Schema.Array(Schema.Tuple(Schema.Int, Schema.String, Schema.Number, Schema.Int))
      })
      expect(Either.isRight(Schema.decodeUnknownEither(earlier)(JSON.parse(JSON.stringify(notice))))).toBe(true)
    }))
})
