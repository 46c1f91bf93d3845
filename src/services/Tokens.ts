/**
 * Tokens owns how opaque secrets (API tokens, OAuth codes and access tokens, browser
 * sessions) are minted, hashed and compared. Only `sha256` digests reach the database;
 * the raw value is shown once. Stateless.
 *
 * Hosted deployments prefix codes and tokens with `<BELAY_SERVER_NAME>~` (interface
 * "OAuth access token"), so clients must treat them as opaque strings.
 */
import * as Crypto from "node:crypto"
import { Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "./AppConfig.js"

export type TokenKind = "api" | "oauth-code" | "oauth-token" | "session" | "consent"

/** 256 bits of randomness, base64url. */
export const randomSecret = (): string => Crypto.randomBytes(32).toString("base64url")

export const sha256 = (value: string): Buffer => Crypto.createHash("sha256").update(value, "utf8").digest()

/** Constant-time comparison of two strings of possibly different length. */
export const constantTimeEqualStrings = (a: string, b: string): boolean => {
  const ha = sha256(a)
  const hb = sha256(b)
  return Crypto.timingSafeEqual(ha, hb) && a.length === b.length
}

export interface TokenGeneratorService {
  /** A fresh opaque secret of the given kind (prefixed on hosted deployments). */
  readonly mint: (kind: TokenKind) => string
}

export class TokenGenerator extends Context.Tag("belay/TokenGenerator")<TokenGenerator, TokenGeneratorService>() {}

const API_PREFIX = "belay_"

export const TokenGeneratorLive = Layer.effect(
  TokenGenerator,
  Effect.map(AppConfig, (config) => {
    const hostedPrefix = config.hosted ? Option.map(config.serverName, (name) => `${name}~`) : Option.none<string>()
    return {
      mint: (kind) => {
        const secret = randomSecret()
        // API tokens carry a recognisable prefix so secret scanners can find leaked ones.
        if (kind === "api") return API_PREFIX + secret
        if (kind === "oauth-code" || kind === "oauth-token") return Option.getOrElse(hostedPrefix, () => "") + secret
        return secret
      }
    }
  })
)
