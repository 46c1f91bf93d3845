/**
 * Tokens owns how opaque secrets (API tokens, OAuth codes and access tokens, browser
 * sessions, CSRF tokens) are minted, hashed and compared. Only `sha256` digests reach the
 * database; the raw value is shown once. Stateless.
 *
 * Hosted deployments prefix codes and tokens with `<BELAY_SERVER_NAME>~` (the interface,
 * "OAuth access token"), so clients must treat them as opaque strings. The generator is a
 * port (`Context.Tag` + layer) so that a test can mint predictable secrets.
 */
import * as Crypto from "node:crypto"
import { Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../AppConfig.js"

export type TokenKind = "api" | "oauth-code" | "oauth-token" | "session" | "consent"

/** 256 bits of randomness, base64url. */
export const randomSecret = (): string => Crypto.randomBytes(32).toString("base64url")

/**
 * One-shot `crypto.hash` where Node has it (20.12 and later): every /mcp request hashes its bearer token, and the
 * one-shot call is about twice as fast as a Hash object. Same digest either way.
 */
const oneShot: typeof Crypto.hash | undefined = typeof Crypto.hash === "function" ? Crypto.hash : undefined

export const sha256 = (value: string): Buffer =>
  oneShot !== undefined ? oneShot("sha256", value, "buffer") : Crypto.createHash("sha256").update(value, "utf8").digest()

/** `sha256(value)` in base64, made as such: the key a bearer token is cached under (CredentialCache). */
export const sha256Base64 = (value: string): string =>
  oneShot !== undefined ? oneShot("sha256", value, "base64") : Crypto.createHash("sha256").update(value, "utf8").digest("base64")

/**
 * Compares two secrets in time that depends only on their lengths, never on where they
 * first differ: both are copied into zero-padded buffers of the longer length for
 * `crypto.timingSafeEqual`, then the lengths are compared. The one comparison of secrets
 * in the code base (CSRF tokens, PKCE challenges).
 */
export const constantTimeEqual = (a: string, b: string): boolean => {
  const bytesA = Buffer.from(a, "utf8")
  const bytesB = Buffer.from(b, "utf8")
  const length = Math.max(bytesA.length, bytesB.length)
  const paddedA = Buffer.alloc(length)
  const paddedB = Buffer.alloc(length)
  bytesA.copy(paddedA)
  bytesB.copy(paddedB)
  return Crypto.timingSafeEqual(paddedA, paddedB) && bytesA.length === bytesB.length
}

/** API tokens carry a recognisable prefix so secret scanners can find leaked ones. */
export const API_TOKEN_PREFIX = "belay_"

export interface TokenGeneratorService {
  /** A fresh opaque secret of the given kind (prefixed on hosted deployments). */
  readonly mint: (kind: TokenKind) => string
}

export class TokenGenerator extends Context.Tag("belay/TokenGenerator")<TokenGenerator, TokenGeneratorService>() {}

export const TokenGeneratorLive: Layer.Layer<TokenGenerator, never, AppConfig> = Layer.effect(
  TokenGenerator,
  Effect.map(AppConfig, (config) => {
    const hostedPrefix = config.hosted ? Option.map(config.serverName, (name) => `${name}~`) : Option.none<string>()
    return {
      mint: (kind) => {
        const secret = randomSecret()
        if (kind === "api") return API_TOKEN_PREFIX + secret
        if (kind === "oauth-code" || kind === "oauth-token") return Option.getOrElse(hostedPrefix, () => "") + secret
        return secret
      }
    }
  })
)
