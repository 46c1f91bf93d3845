// ConnectThrottle under TestClock: a storm of simultaneous connects is spread to at most the burst plus the rate in
// any one-second window (a fifth of 500 networks at most), while a lone connect, or a small bouncer's few, goes at once.
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Fiber, TestClock } from "effect"
import * as ConnectThrottle from "../../src/actors/ConnectThrottle.js"
import {
  CONNECT_BURST,
  CONNECT_CATCH_UP,
  CONNECT_RATE,
  CONNECT_SPACING,
  reconnectBound
} from "../../src/actors/ReconnectPolicy.js"

/** The most time stamps inside any half-open window [t, t + windowMs). */
const maxInWindow = (stamps: ReadonlyArray<number>, windowMs: number) => {
  const sorted = [...stamps].sort((a, b) => a - b)
  let best = 0
  let lo = 0
  for (let hi = 0; hi < sorted.length; hi++) {
    while (sorted[hi]! - sorted[lo]! >= windowMs) lo++
    best = Math.max(best, hi - lo + 1)
  }
  return best
}

/** `n` fibers acquire at the same instant; the Clock time at which each was let through, in acquisition order. */
const storm = (throttle: ConnectThrottle.ConnectThrottle, n: number, settle: Duration.DurationInput) =>
  Effect.gen(function*() {
    const fibers = yield* Effect.forEach(
      Array.from({ length: n }),
      () => Effect.fork(Effect.zipRight(throttle.acquire, Clock.currentTimeMillis)),
      { concurrency: "unbounded" }
    )
    yield* TestClock.adjust(settle)
    return yield* Effect.forEach(fibers, Fiber.join)
  })

describe("ConnectThrottle", () => {
  it.effect("the policy's figures: 50 a second after a burst of 10, 20 ms apart; 500 networks within 2 s + 10 s", () =>
    Effect.sync(() => {
      expect(CONNECT_RATE).toBe(50)
      expect(CONNECT_BURST).toBe(10)
      expect(Duration.toMillis(CONNECT_SPACING)).toBe(20)
      expect(Duration.toMillis(reconnectBound(500))).toBe(12_000)
      // no more than a fifth of a 500-network storm in any one second.
      expect(CONNECT_BURST + CONNECT_RATE - 1).toBeLessThanOrEqual(100)
    }))

  it.effect("a single acquisition is immediate, and so is a small bouncer's burst", () =>
    Effect.gen(function*() {
      const throttle = yield* ConnectThrottle.make()
      yield* throttle.acquire
      expect(yield* Clock.currentTimeMillis).toBe(0)
      const waits = yield* Effect.forEach(Array.from({ length: CONNECT_BURST - 1 }), () => throttle.reserve)
      expect(waits.map(Duration.toMillis)).toEqual(Array.from({ length: CONNECT_BURST - 1 }, () => 0))
      // The burst is spent: the next one waits one spacing.
      expect(Duration.toMillis(yield* throttle.reserve)).toBe(20)
    }))

  it.effect("500 simultaneous acquisitions: never more than the burst plus the rate in any second, the rate once the burst is spent, all within N ÷ rate", () =>
    Effect.gen(function*() {
      const throttle = yield* ConnectThrottle.make()
      const times = yield* storm(throttle, 500, "11 seconds")
      expect(times).toHaveLength(500)
      // Slots follow the order of asking, and the burst goes at once.
      expect(times).toEqual([...times].sort((a, b) => a - b))
      expect(times.filter((t) => t === 0)).toHaveLength(CONNECT_BURST)
      expect(maxInWindow(times, 1000)).toBeLessThanOrEqual(CONNECT_BURST + CONNECT_RATE - 1)
      // After the first second, any second holds exactly the rate.
      expect(maxInWindow(times.filter((t) => t >= 1000), 1000)).toBe(CONNECT_RATE)
      for (let i = CONNECT_BURST; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBe(20)
      expect(times[499]).toBeLessThanOrEqual(500 * 20)
    }))

  it.effect("the bucket refills while nobody connects: after a quiet spell the burst is free again", () =>
    Effect.gen(function*() {
      const throttle = yield* ConnectThrottle.make()
      yield* storm(throttle, 30, "1 second")
      // Quiet for as long as the burst takes to refill.
      yield* TestClock.adjust(Duration.times(CONNECT_SPACING, CONNECT_BURST))
      const waits = yield* Effect.forEach(Array.from({ length: CONNECT_BURST }), () => throttle.reserve)
      expect(waits.every(Duration.isZero)).toBe(true)
      expect(Duration.isZero(yield* throttle.reserve)).toBe(false)
    }))

  it.effect("other settings: a burst of 1 is plain spacing", () =>
    Effect.gen(function*() {
      const throttle = yield* ConnectThrottle.make({ burst: 1, spacing: Duration.millis(100) })
      const times = yield* storm(throttle, 5, "1 second")
      expect(times).toEqual([0, 100, 200, 300, 400])
    }))

  it.effect("a storm handled late: slots count from when the retries were due, so the last is where it would have been", () =>
    Effect.gen(function*() {
      const throttle = yield* ConnectThrottle.make()
      // 1,000 retries due at 2 s, their requests handled only at 5 s (the core busy with the drops).
      yield* TestClock.adjust("5 seconds")
      const now = yield* Clock.currentTimeMillis
      const waits = yield* Effect.forEach(Array.from({ length: 1000 }), () => throttle.reserveSince(2000))
      const slots = waits.map((w) => now + Duration.toMillis(w))
      // Handled as they were due: the last slot is 2 s + 1,000 spacings back from the burst, not 5 s + that.
      expect(slots[999]).toBe(2000 + (1000 - CONNECT_BURST) * 20)
      expect(slots[999]).toBeLessThanOrEqual(2000 + Duration.toMillis(reconnectBound(1000)) - 2000)
      // Those that fell behind go at once: the lag's slots and the burst; after them, the rate.
      expect(slots.filter((t) => t === now)).toHaveLength((3000 / 20) + CONNECT_BURST)
      expect(maxInWindow(slots.filter((t) => t > now), 1000)).toBe(CONNECT_RATE)
      // The same requests through `reserve` count from 5 s.
      const late = yield* ConnectThrottle.make()
      const lateWaits = yield* Effect.forEach(Array.from({ length: 1000 }), () => late.reserve)
      expect(now + Duration.toMillis(lateWaits[999]!)).toBe(5000 + (1000 - CONNECT_BURST) * 20)
    }))

  it.effect("catching up is bounded: retries overdue by an hour (a suspended machine) count from CONNECT_CATCH_UP ago", () =>
    Effect.gen(function*() {
      const throttle = yield* ConnectThrottle.make()
      yield* TestClock.adjust("1 hour")
      const waits = yield* Effect.forEach(Array.from({ length: 1000 }), () => throttle.reserveSince(0))
      const atOnce = waits.filter(Duration.isZero).length
      expect(atOnce).toBe(Duration.toMillis(CONNECT_CATCH_UP) / 20 + CONNECT_BURST)
      // A connect due later than now counts from now.
      expect(Duration.toMillis(yield* (yield* ConnectThrottle.make()).reserveSince((yield* Clock.currentTimeMillis) + 60_000)))
        .toBe(0)
    }))
})
