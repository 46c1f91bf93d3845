import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, TestClock } from "effect"
import { SignInLimiter } from "../../../src/services/identity/SignInLimiter.js"

const fail = (limiter: SignInLimiter, ipKey: string, account?: string) => limiter.recordFailure({ ipKey, account })
const allowed = (limiter: SignInLimiter, ipKey: string, account?: string) =>
  Effect.map(Effect.either(limiter.check({ ipKey, account })), Either.isRight)

describe("SignInLimiter", () => {
  it.effect("10 failures for one account from ten addresses: the account is refused everywhere, the addresses are not", () =>
    Effect.gen(function*() {
      const limiter = yield* SignInLimiter
      for (let i = 0; i < 10; i++) {
        expect(yield* allowed(limiter, `192.0.2.${i}`, "Alice")).toBe(true)
        yield* fail(limiter, `192.0.2.${i}`, "Alice")
      }
      // The name is compared case-insensitively, whether or not such an account exists.
      expect(yield* allowed(limiter, "192.0.2.200", "alice")).toBe(false)
      expect(yield* allowed(limiter, "192.0.2.1", "bob")).toBe(true)
      expect(yield* allowed(limiter, "192.0.2.1")).toBe(true)
    }).pipe(Effect.provide(SignInLimiter.Default)))

  it.effect("10 failures from one address for ten names: the address is refused for every name", () =>
    Effect.gen(function*() {
      const limiter = yield* SignInLimiter
      for (let i = 0; i < 10; i++) yield* fail(limiter, "198.51.100.1", `user${i}`)
      expect(yield* allowed(limiter, "198.51.100.1", "alice")).toBe(false)
      expect(yield* allowed(limiter, "198.51.100.1")).toBe(false)
      expect(yield* allowed(limiter, "198.51.100.2", "alice")).toBe(true)
    }).pipe(Effect.provide(SignInLimiter.Default)))

  it.effect("Retry-After is when the oldest failure leaves the 10-minute window; then one attempt is allowed again", () =>
    Effect.gen(function*() {
      const limiter = yield* SignInLimiter
      yield* fail(limiter, "203.0.113.1", "carol")
      yield* TestClock.adjust("4 minutes")
      for (let i = 0; i < 9; i++) yield* fail(limiter, "203.0.113.1", "carol")
      const refused = yield* Effect.flip(limiter.check({ ipKey: "203.0.113.1", account: "carol" }))
      expect(refused.retryAfterSeconds).toBe(6 * 60)
      expect(refused.status).toBe(429)
      yield* TestClock.adjust("6 minutes")
      expect(yield* allowed(limiter, "203.0.113.1", "carol")).toBe(true)
      yield* fail(limiter, "203.0.113.1", "carol")
      expect(yield* allowed(limiter, "203.0.113.1", "carol")).toBe(false)
    }).pipe(Effect.provide(SignInLimiter.Default)))
})
