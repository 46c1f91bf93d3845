// TokenBucket, the pure pace of a connection's outgoing lines: a table of named cases over plain numbers (no clock),
// then the property flood control exists for, checked on a long schedule: no one-second window holds more than the
// burst at the production rate (ReconnectPolicy.ts).
import { describe, expect, it } from "@effect/vitest"
import { Duration } from "effect"
import * as TokenBucket from "../../../src/actors/network/TokenBucket.js"
import { FLOOD_BURST, FLOOD_INTERVAL } from "../../../src/actors/ReconnectPolicy.js"

const RATE: TokenBucket.TokenBucketRate = { burst: 5, intervalMs: 2000 }

/** Sends as many lines as the bucket allows at `now`, up to `want`; returns the bucket and how many went. */
const sendAt = (bucket: TokenBucket.TokenBucket, now: number, want: number) => {
  let b = bucket
  let sent = 0
  while (sent < want && TokenBucket.available(RATE, b, now) >= 1) {
    b = TokenBucket.take(RATE, b, now)
    sent++
  }
  return { bucket: b, sent }
}

/** Sends `n` lines as soon as the bucket allows each, starting at `start`; returns their send times. */
const schedule = (n: number, start: number, bucket: TokenBucket.TokenBucket = TokenBucket.full) => {
  const times: Array<number> = []
  let b = bucket
  let now = start
  while (times.length < n) {
    now = TokenBucket.nextAt(RATE, b, now)
    b = TokenBucket.take(RATE, b, now)
    times.push(now)
  }
  return times
}

describe("TokenBucket", () => {
  const cases: ReadonlyArray<{ readonly name: string; readonly run: () => void }> = [
    {
      name: "a full bucket lets the burst go at once, and no more",
      run: () => {
        expect(TokenBucket.available(RATE, TokenBucket.full, 1_000)).toBe(5)
        const { bucket, sent } = sendAt(TokenBucket.full, 1_000, 40)
        expect(sent).toBe(5)
        expect(TokenBucket.available(RATE, bucket, 1_000)).toBe(0)
        expect(TokenBucket.nextAt(RATE, bucket, 1_000)).toBe(3_000)
      }
    },
    {
      name: "beyond the burst, one line per interval, never early",
      run: () => {
        expect(schedule(8, 0)).toEqual([0, 0, 0, 0, 0, 2_000, 4_000, 6_000])
        const { bucket } = sendAt(TokenBucket.full, 0, 5)
        expect(TokenBucket.available(RATE, bucket, 1_999)).toBe(0)
        expect(TokenBucket.available(RATE, bucket, 2_000)).toBe(1)
      }
    },
    {
      name: "a quiet moment refills one line per interval, up to the burst and not beyond",
      run: () => {
        const { bucket } = sendAt(TokenBucket.full, 0, 5)
        expect(TokenBucket.available(RATE, bucket, 4_000)).toBe(2)
        expect(TokenBucket.available(RATE, bucket, 5_999)).toBe(2)
        expect(TokenBucket.available(RATE, bucket, 10_000)).toBe(5)
        expect(TokenBucket.available(RATE, bucket, 1_000_000)).toBe(5)
      }
    },
    {
      name: "a line that may not wait goes into debt: the next waits that much longer",
      run: () => {
        const { bucket } = sendAt(TokenBucket.full, 0, 5)
        const indebted = TokenBucket.take(RATE, bucket, 500)
        expect(TokenBucket.available(RATE, indebted, 2_000)).toBe(0)
        expect(TokenBucket.nextAt(RATE, indebted, 500)).toBe(4_000)
      }
    },
    {
      name: "nextAt is now while a token is there",
      run: () => {
        expect(TokenBucket.nextAt(RATE, TokenBucket.full, 7_000)).toBe(7_000)
        const { bucket } = sendAt(TokenBucket.full, 0, 2)
        expect(TokenBucket.nextAt(RATE, bucket, 100)).toBe(100)
      }
    }
  ]
  for (const c of cases) it(c.name, c.run)

  it("at the production rate no one-second window ever holds more than the burst, however the lines are asked for", () => {
    const rate: TokenBucket.TokenBucketRate = { burst: FLOOD_BURST, intervalMs: Duration.toMillis(FLOOD_INTERVAL) }
    // Bursts of demand at irregular moments (a deterministic sequence), each line sent as soon as the bucket allows.
    let bucket = TokenBucket.full
    const sent: Array<number> = []
    let now = 0
    for (let round = 0; round < 200; round++) {
      now += (round * 7919) % 5_000
      const want = 1 + ((round * 31) % 12)
      for (let i = 0; i < want; i++) {
        const at = TokenBucket.nextAt(rate, bucket, now)
        bucket = TokenBucket.take(rate, bucket, at)
        sent.push(at)
        now = at
      }
    }
    let widest = 0
    for (let i = 0, j = 0; i < sent.length; i++) {
      while (sent[i]! - sent[j]! >= 1_000) j++
      widest = Math.max(widest, i - j + 1)
    }
    expect(widest).toBe(FLOOD_BURST)
  })
})
