/**
 * WebAuthnChallenges owns the challenges of passkey ceremonies (W3C WebAuthn §13.4.3: random,
 * at least 16 bytes, generated and kept by the relying party): each is issued for one
 * ceremony, kept server-side with what it was issued for, and taken at most once — the
 * ceremony's response is checked against the challenge it was issued with, never one the
 * client supplies on its own, and a replayed response finds nothing to take.
 *
 * A challenge lives 5 minutes (the browser's prompt times out after 2; docs/decisions/web.md,
 * "Passkeys"). State in memory:
 * a restart only makes an open prompt fail. At most 10,000 are kept; beyond that the
 * oldest is dropped, so anonymous sign-in prompts cannot grow memory without bound.
 * Single-threaded JS and one synchronous step per operation: a take is atomic.
 */
import * as Crypto from "node:crypto"
import { Clock, Duration, Effect, Option } from "effect"

export const WebAuthnChallengeLimits = {
  lifetime: Duration.minutes(5),
  /** What the browser is told (`timeout`, §5.4 / §5.5), in milliseconds. */
  promptTimeoutMs: 120_000,
  maxPending: 10_000
} as const

const LIFETIME_MS = Duration.toMillis(WebAuthnChallengeLimits.lifetime)

/** What a challenge was issued for. */
export type ChallengePurpose =
  | { readonly _tag: "SignIn" }
  | {
    readonly _tag: "Register"
    readonly accountId: number
    /** The browser session that asked; only it may complete the registration. */
    readonly sessionId: number
    readonly passkeyName: string
    /** The WebAuthn user handle sent in the options (base64url). */
    readonly userHandle: string
  }
  | {
    /** A signed-in member proving it is them again before a change that matters (deleting the account). */
    readonly _tag: "Reauthenticate"
    readonly accountId: number
    /** The browser session that asked; only it may use the answer. */
    readonly sessionId: number
  }

export class WebAuthnChallenges extends Effect.Service<WebAuthnChallenges>()("belay/WebAuthnChallenges", {
  sync: () => {
    const pending = new Map<string, { readonly purpose: ChallengePurpose; readonly expiresAt: number }>()

    /** A fresh challenge (base64url of 32 random bytes) for `purpose`. */
    const issue = (purpose: ChallengePurpose) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        if (pending.size >= WebAuthnChallengeLimits.maxPending) {
          for (const [key, entry] of pending) if (entry.expiresAt <= now) pending.delete(key)
          // Still full: Map iteration is insertion order, so the first key is the oldest.
          while (pending.size >= WebAuthnChallengeLimits.maxPending) {
            const oldest = pending.keys().next()
            if (oldest.done === true) break
            pending.delete(oldest.value)
          }
        }
        const challenge = Crypto.randomBytes(32).toString("base64url")
        pending.set(challenge, { purpose, expiresAt: now + LIFETIME_MS })
        return challenge
      })

    /** The purpose of a live challenge, removing it: a second take of the same challenge finds nothing. */
    const take = (challenge: string) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const entry = pending.get(challenge)
        if (entry === undefined) return Option.none<ChallengePurpose>()
        pending.delete(challenge)
        return entry.expiresAt > now ? Option.some(entry.purpose) : Option.none<ChallengePurpose>()
      })

    return { issue, take } as const
  }
}) {}
