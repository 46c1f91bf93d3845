/**
 * RegistrationLimiter owns the per-IP limit on dynamic client registration: 5 accepted
 * registrations per client IP in any 10 minutes, then 429 with `Retry-After`
 * (interface "Limits"; RFC 7591 §3.1 allows rate-limiting). The same sliding window,
 * `makeSlidingWindow`, limits failed sign-ins.
 *
 * State is in memory (a restart forgives everyone, which a limit meant to slow scripted
 * abuse can afford). Time comes only from Effect's Clock, so tests move it with
 * TestClock. Concurrency: every reservation is one atomic `Ref.modify`, so parallel
 * requests can never overshoot the limit; a slot reserved for a request that then fails
 * is handed back, because only accepted registrations count (docs/decisions/oauth.md).
 */
import { Clock, Duration, Effect, Exit, Ref } from "effect"
import { TooManyRequests } from "../../schema/OAuthErrors.js"

export const RegistrationLimits = {
  perIp: 5,
  window: Duration.minutes(10)
} as const

/** Beyond this many tracked keys, keys with no slot left in the window are swept. */
const SWEEP_ABOVE_KEYS = 10_000

export interface SlidingWindow {
  /**
   * Runs `effect` holding one of `key`'s slots; fails with TooManyRequests (Retry-After =
   * whole seconds until the oldest slot leaves the window, at least 1) when all are taken.
   * The slot is handed back when `effect` fails or is interrupted.
   */
  readonly withSlot: <A, E, R>(key: string, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | TooManyRequests, R>
  /** Takes a slot that is kept (e.g. a failed sign-in), or fails when none is left. */
  readonly take: (key: string) => Effect.Effect<void, TooManyRequests>
  /** Fails when no slot is left, without taking one. */
  readonly check: (key: string) => Effect.Effect<void, TooManyRequests>
}

export const makeSlidingWindow = (options: { readonly limit: number; readonly window: Duration.DurationInput }) =>
  Effect.gen(function*() {
    const windowMs = Duration.toMillis(Duration.decode(options.window))
    // key → slot times, oldest first
    const slots = yield* Ref.make(new Map<string, Array<number>>())

    const live = (times: ReadonlyArray<number> | undefined, now: number) =>
      (times ?? []).filter((t) => t > now - windowMs)

    const refusal = (oldest: number, now: number) =>
      new TooManyRequests({
        description: "too many requests from this address; try again later",
        retryAfterSeconds: Math.max(1, Math.ceil((oldest + windowMs - now) / 1000))
      })

    const reserve = (key: string, keep: boolean) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Ref.modify(slots, (map): readonly [TooManyRequests | number, Map<string, Array<number>>] => {
          if (map.size > SWEEP_ABOVE_KEYS) {
            for (const [k, times] of map) if (live(times, now).length === 0) map.delete(k)
          }
          const times = live(map.get(key), now)
          if (times.length >= options.limit) {
            map.set(key, times)
            return [refusal(times[0]!, now), map]
          }
          if (keep) times.push(now)
          map.set(key, times)
          return [now, map]
        })).pipe(Effect.flatMap((r) => (typeof r === "number" ? Effect.succeed(r) : Effect.fail(r))))

    const release = (key: string, at: number) =>
      Ref.update(slots, (map) => {
        const times = map.get(key)
        const i = times?.indexOf(at) ?? -1
        if (times !== undefined && i !== -1) times.splice(i, 1)
        return map
      })

    const withSlot = <A, E, R>(key: string, effect: Effect.Effect<A, E, R>) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(reserve(key, true), (at) =>
          restore(effect).pipe(Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : release(key, at)))))
      )

    const take = (key: string) => Effect.asVoid(reserve(key, true))
    const check = (key: string) => Effect.asVoid(reserve(key, false))

    return { withSlot, take, check } satisfies SlidingWindow
  })

export class RegistrationLimiter extends Effect.Service<RegistrationLimiter>()("belay/RegistrationLimiter", {
  effect: makeSlidingWindow({ limit: RegistrationLimits.perIp, window: RegistrationLimits.window })
}) {}
