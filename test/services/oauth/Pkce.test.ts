import { describe, expect, it } from "@effect/vitest"
import {
  isValidCodeChallenge,
  isValidCodeVerifier,
  s256,
  verifyPkce
} from "../../../src/services/oauth/Pkce.js"

// RFC 7636 Appendix B.
const RFC_VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
const RFC_CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"

describe("Pkce", () => {
  it("s256 reproduces the RFC 7636 Appendix B vector", () => {
    expect(s256(RFC_VERIFIER)).toBe(RFC_CHALLENGE)
  })

  it.each([
    { name: "the RFC 7636 Appendix B pair", verifier: RFC_VERIFIER, challenge: RFC_CHALLENGE, ok: true },
    { name: "a 128-character verifier", verifier: "~".repeat(128), challenge: s256("~".repeat(128)), ok: true },
    { name: "a wrong verifier", verifier: "a".repeat(43), challenge: RFC_CHALLENGE, ok: false },
    { name: "the challenge itself as verifier (no plain downgrade)", verifier: RFC_CHALLENGE, challenge: RFC_CHALLENGE, ok: false },
    { name: "a verifier one character short", verifier: RFC_VERIFIER.slice(1), challenge: RFC_CHALLENGE, ok: false },
    { name: "a malformed verifier whose hash matches", verifier: "short", challenge: s256("short"), ok: false },
    { name: "a challenge with padding", verifier: RFC_VERIFIER, challenge: RFC_CHALLENGE + "=", ok: false },
    { name: "an empty challenge", verifier: RFC_VERIFIER, challenge: "", ok: false }
  ])("verifyPkce: $name", ({ verifier, challenge, ok }) => {
    expect(verifyPkce(verifier, challenge)).toBe(ok)
  })

  it.each([
    { name: "43 characters", value: "a".repeat(43), ok: true },
    { name: "128 characters", value: "a".repeat(128), ok: true },
    { name: "every allowed symbol", value: "AZaz09._~-".repeat(5), ok: true },
    { name: "the RFC 7636 verifier", value: RFC_VERIFIER, ok: true },
    { name: "42 characters", value: "a".repeat(42), ok: false },
    { name: "129 characters", value: "a".repeat(129), ok: false },
    { name: "a plus sign", value: "a".repeat(42) + "+", ok: false },
    { name: "a slash", value: "a".repeat(42) + "/", ok: false },
    { name: "a padding sign", value: "a".repeat(42) + "=", ok: false },
    { name: "a space", value: "a".repeat(42) + " ", ok: false },
    { name: "non-ASCII", value: "a".repeat(42) + "é", ok: false },
    { name: "a trailing newline", value: "a".repeat(43) + "\n", ok: false }
  ])("isValidCodeVerifier: $name", ({ value, ok }) => {
    expect(isValidCodeVerifier(value)).toBe(ok)
  })

  it.each([
    { name: "the RFC 7636 challenge", value: RFC_CHALLENGE, ok: true },
    { name: "43 base64url characters", value: "-_".repeat(21) + "A", ok: true },
    { name: "42 characters", value: RFC_CHALLENGE.slice(1), ok: false },
    { name: "44 characters", value: RFC_CHALLENGE + "A", ok: false },
    { name: "a trailing padding sign", value: RFC_CHALLENGE.slice(1) + "=", ok: false },
    { name: "a plus sign (base64, not base64url)", value: RFC_CHALLENGE.slice(1) + "+", ok: false },
    { name: "a slash (base64, not base64url)", value: RFC_CHALLENGE.slice(1) + "/", ok: false },
    { name: "a dot", value: RFC_CHALLENGE.slice(1) + ".", ok: false },
    { name: "a tilde", value: RFC_CHALLENGE.slice(1) + "~", ok: false },
    { name: "empty", value: "", ok: false }
  ])("isValidCodeChallenge: $name", ({ value, ok }) => {
    expect(isValidCodeChallenge(value)).toBe(ok)
  })
})
