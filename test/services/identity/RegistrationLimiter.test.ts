/**
 * The sliding window behind the registration limit (5 per IP per 10 minutes) and the
 * failed-sign-in limit, on TestClock: Retry-After, the window reopening, slots handed
 * back when the guarded effect fails or is interrupted, and no overshoot in parallel.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Either, Fiber, TestClock } from "effect"
import { makeSlidingWindow, RegistrationLimiter } from "../../../src/services/identity/RegistrationLimiter.js"

describe("RegistrationLimiter", () => {
  it.effect("5 slots per key in 10 minutes; the 6th fails with Retry-After until the oldest leaves", () =>
    Effect.gen(function*() {
      const limiter = yield* RegistrationLimiter
      for (let i = 0; i < 5; i++) {
        yield* limiter.withSlot("192.0.2.1", Effect.void)
        yield* TestClock.adjust("1 minute")
      }
      const refused = yield* Effect.either(limiter.withSlot("192.0.2.1", Effect.void))
      expect(Either.isLeft(refused) && refused.left.retryAfterSeconds).toBe(300)
      // other keys are not affected
      yield* limiter.withSlot("192.0.2.2", Effect.void)
      yield* TestClock.adjust("299 seconds")
      expect(Either.isLeft(yield* Effect.either(limiter.withSlot("192.0.2.1", Effect.void)))).toBe(true)
      yield* TestClock.adjust("1 second")
      yield* limiter.withSlot("192.0.2.1", Effect.void)
    }).pipe(Effect.provide(RegistrationLimiter.Default)))

  it.effect("a slot is handed back when the guarded effect fails or is interrupted", () =>
    Effect.gen(function*() {
      const limiter = yield* RegistrationLimiter
      for (let i = 0; i < 10; i++) yield* Effect.either(limiter.withSlot("k", Effect.fail("refused")))
      const started = yield* Deferred.make<void>()
      const fiber = yield* Effect.fork(limiter.withSlot("k", Deferred.succeed(started, undefined).pipe(Effect.zipRight(Effect.never))))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      for (let i = 0; i < 5; i++) yield* limiter.withSlot("k", Effect.void)
      expect(Either.isLeft(yield* Effect.either(limiter.withSlot("k", Effect.void)))).toBe(true)
    }).pipe(Effect.provide(RegistrationLimiter.Default)))

  it.effect("20 parallel requests on one key: exactly 5 get a slot", () =>
    Effect.gen(function*() {
      const limiter = yield* RegistrationLimiter
      const results = yield* Effect.all(
        Array.from({ length: 20 }, () => Effect.either(limiter.withSlot("k", Effect.yieldNow()))),
        { concurrency: "unbounded" }
      )
      expect(results.filter(Either.isRight)).toHaveLength(5)
    }).pipe(Effect.provide(RegistrationLimiter.Default)))

  it.effect("take keeps its slot; check does not take one", () =>
    Effect.gen(function*() {
      const window = yield* makeSlidingWindow({ limit: 2, window: "1 minute" })
      yield* window.check("k")
      yield* window.check("k")
      yield* window.take("k")
      yield* window.take("k")
      const refused = yield* Effect.either(window.check("k"))
      expect(Either.isLeft(refused) && refused.left.retryAfterSeconds).toBe(60)
    }))
})
