/**
 * ConnectThrottle owns the pace of new IRC connections of one supervisor (the whole process): a token bucket of
 * CONNECT_BURST connects refilled at CONNECT_RATE a second (ReconnectPolicy.ts), kept as GCRA's one number, the
 * theoretical arrival time. A server restart that drops 500 networks at once brings them back over ten seconds
 * instead of within one, and a boot with 500 stored networks does the same; a small bouncer (up to CONNECT_BURST
 * networks) connects at once, as before. ZNC spaces every connect by its `ConnectDelay`; soju spreads reconnects.
 *
 * Concurrency rule: one instance is shared by every actor of the supervisor. `reserve` is one synchronous step (read
 * the Clock, move the arrival time), so concurrent callers never share a slot and slots follow call order. It never
 * blocks: an actor's dispatcher reserves, then arms a timer for its slot and stays free for commands meanwhile.
 *
 * Time comes only from Effect's Clock (docs/architecture.md), so tests drive the throttle with `TestClock.adjust`.
 */
import { Clock, Duration, Effect } from "effect"
import { CONNECT_BURST, CONNECT_SPACING } from "./ReconnectPolicy.js"

export interface ConnectThrottle {
  /**
   * Takes the next connect slot and returns the wait until it: zero while the bucket holds a token. Beyond the burst,
   * slots are `spacing` apart, so no one-second window holds more than burst + 1 s ÷ spacing − 1 of them.
   */
  readonly reserve: Effect.Effect<Duration.Duration>
  /** `reserve`, then sleep until the slot. */
  readonly acquire: Effect.Effect<void>
}

export interface ThrottleOptions {
  /** Connects that may go at once after a quiet moment. */
  readonly burst: number
  /** Time between two connects once the burst is spent. */
  readonly spacing: Duration.Duration
}

export const make = (
  options: ThrottleOptions = { burst: CONNECT_BURST, spacing: CONNECT_SPACING }
): Effect.Effect<ConnectThrottle> =>
  Effect.sync(() => {
    const spacing = Duration.toMillis(options.spacing)
    /** How far ahead of the arrival time a connect may go: the burst, in spacings. */
    const tolerance = (Math.max(1, options.burst) - 1) * spacing
    /** GCRA's theoretical arrival time: when the bucket would be full again were nobody to ask meanwhile. */
    let arrival = Number.NEGATIVE_INFINITY
    const reserve = Effect.map(Clock.currentTimeMillis, (now) => {
      const due = Math.max(arrival, now)
      arrival = due + spacing
      return Duration.millis(Math.max(0, due - tolerance - now))
    })
    return {
      reserve,
      acquire: Effect.flatMap(reserve, (wait) => (Duration.isZero(wait) ? Effect.void : Effect.sleep(wait)))
    }
  })
