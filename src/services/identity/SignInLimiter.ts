/**
 * SignInLimiter owns the one limit on guessing a member's credentials, shared by every way
 * in — the sign-in pages (`/login`, the authorization page), passkey sign-in,
 * `POST /api/auth/login/token` and the current password of Settings > Password: more than
 * 10 failures for one account or from one address in 10 minutes → refused with
 * Retry-After (docs/decisions/oauth.md). One limiter for all of them, so
 * an attacker cannot get ten guesses per door (docs/decisions/oauth.md, "Sign-in failures").
 *
 * Only failures count; a success takes no slot. The account key is the name as typed,
 * lower-cased, whether or not such an account exists, so the limit reveals nothing about
 * which names exist. State in memory (RegistrationLimiter.makeSlidingWindow: atomic per
 * attempt, time from Effect's Clock); a restart forgives everyone.
 */
import { Duration, Effect, Either } from "effect"
import { TooManyRequests } from "../../schema/OAuthErrors.js"
import { makeSlidingWindow } from "./RegistrationLimiter.js"

export const SignInLimits = { failuresPerWindow: 10, window: Duration.minutes(10) } as const

export interface SignInAttempt {
  /** The rate-limit bucket of the client address (net/RateLimitKey.ts). */
  readonly ipKey: string
  /** The account name the attempt is for, when it names one. */
  readonly account?: string | undefined
}

export class SignInLimiter extends Effect.Service<SignInLimiter>()("belay/SignInLimiter", {
  effect: Effect.gen(function*() {
    const options = { limit: SignInLimits.failuresPerWindow, window: SignInLimits.window }
    const byIp = yield* makeSlidingWindow(options)
    const byAccount = yield* makeSlidingWindow(options)
    const accountKey = (name: string) => name.toLowerCase()

    /** Fails when either the address or the account has used up its failures; Retry-After is the later of the two. */
    const check = (attempt: SignInAttempt): Effect.Effect<void, TooManyRequests> =>
      Effect.gen(function*() {
        const ip = yield* Effect.either(byIp.check(attempt.ipKey))
        const account = attempt.account === undefined || attempt.account === ""
          ? Either.right(undefined)
          : yield* Effect.either(byAccount.check(accountKey(attempt.account)))
        const refusals = [ip, account].flatMap((r) => (Either.isLeft(r) ? [r.left] : []))
        if (refusals.length === 0) return
        return yield* new TooManyRequests({
          description: "too many failed sign-ins; try again later",
          retryAfterSeconds: Math.max(...refusals.map((r) => r.retryAfterSeconds))
        })
      })

    /** Counts one failure against the address and the account. */
    const recordFailure = (attempt: SignInAttempt): Effect.Effect<void> =>
      Effect.all([
        Effect.ignore(byIp.take(attempt.ipKey)),
        attempt.account === undefined || attempt.account === ""
          ? Effect.void
          : Effect.ignore(byAccount.take(accountKey(attempt.account)))
      ], { discard: true })

    return { check, recordFailure } as const
  })
}) {}
