import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { WebAuthnChallengeLimits, WebAuthnChallenges } from "../../../src/services/identity/WebAuthnChallenges.js"

const register = { _tag: "Register", accountId: 1, sessionId: 2, passkeyName: "Laptop", userHandle: "dXNlcg" } as const

describe("WebAuthnChallenges", () => {
  it.effect("a challenge is 32 random bytes in base64url, taken once with what it was issued for", () =>
    Effect.gen(function*() {
      const challenges = yield* WebAuthnChallenges
      const a = yield* challenges.issue(register)
      const b = yield* challenges.issue({ _tag: "SignIn" })
      expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(Buffer.from(a, "base64url")).toHaveLength(32)
      expect(a).not.toBe(b)
      expect(yield* challenges.take(a)).toEqual(Option.some(register))
      expect(yield* challenges.take(a)).toEqual(Option.none())
      expect(yield* challenges.take(b)).toEqual(Option.some({ _tag: "SignIn" }))
      expect(yield* challenges.take("never-issued")).toEqual(Option.none())
    }).pipe(Effect.provide(WebAuthnChallenges.Default)))

  it.effect("a challenge lives 5 minutes", () =>
    Effect.gen(function*() {
      const challenges = yield* WebAuthnChallenges
      const young = yield* challenges.issue({ _tag: "SignIn" })
      const old = yield* challenges.issue({ _tag: "SignIn" })
      yield* TestClock.adjust("4 minutes")
      expect(Option.isSome(yield* challenges.take(young))).toBe(true)
      yield* TestClock.adjust("1 minute")
      expect(yield* challenges.take(old)).toEqual(Option.none())
    }).pipe(Effect.provide(WebAuthnChallenges.Default)))

  it.effect("at most 10,000 are kept: past that the oldest is dropped, the newest still works", () =>
    Effect.gen(function*() {
      const challenges = yield* WebAuthnChallenges
      const first = yield* challenges.issue({ _tag: "SignIn" })
      const second = yield* challenges.issue({ _tag: "SignIn" })
      let last = ""
      for (let i = 0; i < WebAuthnChallengeLimits.maxPending - 1; i++) last = yield* challenges.issue({ _tag: "SignIn" })
      expect(yield* challenges.take(first)).toEqual(Option.none())
      expect(Option.isSome(yield* challenges.take(second))).toBe(true)
      expect(Option.isSome(yield* challenges.take(last))).toBe(true)
    }).pipe(Effect.provide(WebAuthnChallenges.Default)))
})
