/**
 * Tokens: the one constant-time comparison of secrets, and the generator's kinds and prefixes (hosted deployments
 * prefix codes and tokens with `<BELAY_SERVER_NAME>~`; API tokens always carry `belay_`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { AppConfig } from "../../../src/services/AppConfig.js"
import { API_TOKEN_PREFIX, constantTimeEqual, TokenGenerator, TokenGeneratorLive } from "../../../src/services/identity/Tokens.js"
import { settingsFrom } from "../../support/TestDatabase.js"

describe("constantTimeEqual", () => {
  it.each([
    { name: "equal strings", a: "secret-value", b: "secret-value", equal: true },
    { name: "two empty strings", a: "", b: "", equal: true },
    { name: "equal non-ASCII strings", a: "é~😀", b: "é~😀", equal: true },
    { name: "same length, different last character", a: "secret-value", b: "secret-valuE", equal: false },
    { name: "a prefix", a: "secret", b: "secret-value", equal: false },
    { name: "an extension", a: "secret-value", b: "secret", equal: false },
    { name: "zero bytes padding a shorter string", a: "abc", b: "abc\u0000", equal: false },
    { name: "empty and non-empty", a: "", b: "x", equal: false }
  ])("$name", ({ a, b, equal }) => {
    expect(constantTimeEqual(a, b)).toBe(equal)
  })
})

describe("TokenGenerator", () => {
  const generator = (hosted: boolean) =>
    Effect.gen(function*() {
      const settings = yield* settingsFrom(
        hosted ? { BELAY_HOSTED: "true", PUBLIC_BASE_URL: "https://belay.example", BELAY_SERVER_NAME: "acme" } : {}
      )
      return yield* Effect.provide(TokenGenerator, TokenGeneratorLive.pipe(Layer.provide(Layer.succeed(AppConfig, settings))))
    })

  it.effect("API tokens carry the belay_ prefix; self-hosted codes and tokens none", () =>
    Effect.gen(function*() {
      const g = yield* generator(false)
      expect(g.mint("api").startsWith(API_TOKEN_PREFIX)).toBe(true)
      expect(g.mint("oauth-token")).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(g.mint("oauth-code")).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(g.mint("session")).not.toBe(g.mint("session"))
    }))

  it.effect("hosted: codes and access tokens carry `<name>~`, sessions do not", () =>
    Effect.gen(function*() {
      const g = yield* generator(true)
      expect(g.mint("oauth-token")).toMatch(/^acme~[A-Za-z0-9_-]{43}$/)
      expect(g.mint("oauth-code")).toMatch(/^acme~[A-Za-z0-9_-]{43}$/)
      expect(g.mint("session")).toMatch(/^[A-Za-z0-9_-]{43}$/)
    }))
})
