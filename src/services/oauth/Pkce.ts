// PKCE with S256 only (RFC 7636; RFC 9700 §2.1.1 makes it mandatory for public clients, §4.8
// rules out a plain fallback). Pure functions; no state, safe from any fiber.
import * as Crypto from "node:crypto"
import { Schema } from "effect"
import { CodeChallenge, CodeVerifier } from "../../schema/OAuth.js"
import { constantTimeEqual } from "../identity/Tokens.js"

/** RFC 7636 §4.1: 43–128 characters of [A-Za-z0-9._~-]. */
export const isValidCodeVerifier: (verifier: string) => boolean = Schema.is(CodeVerifier)

/** RFC 7636 §4.2 with S256: 43 characters of base64url, no padding. */
export const isValidCodeChallenge: (challenge: string) => boolean = Schema.is(CodeChallenge)

/** BASE64URL(SHA-256(ASCII(verifier))) without padding (RFC 7636 §4.2). */
export const s256 = (verifier: string): string =>
  Crypto.createHash("sha256").update(verifier, "ascii").digest("base64url")

/** True when `verifier` is well-formed and S256 of it equals the stored `challenge`. A verifier
 * equal to the challenge string fails (no plain downgrade, RFC 9700 §4.8); a mismatch is
 * invalid_grant at the token endpoint (RFC 7636 §4.6). */
export const verifyPkce = (verifier: string, challenge: string): boolean =>
  isValidCodeVerifier(verifier) && constantTimeEqual(s256(verifier), challenge)
