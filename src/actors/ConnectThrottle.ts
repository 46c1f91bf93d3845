/**
 * ConnectThrottle owns the pace of new IRC connections of one supervisor (the whole process): a token bucket of
 * CONNECT_BURST connects refilled at CONNECT_RATE a second (ReconnectPolicy.ts), kept as GCRA's one number, the
 * theoretical arrival time. A server restart that drops 500 networks at once brings them back over ten seconds
 * instead of within one, and a boot with 500 stored networks does the same; a small bouncer (up to CONNECT_BURST
 * networks) connects at once, as before. ZNC spaces every connect by its `ConnectDelay`; soju spreads reconnects.
 *
 * Slots count from when a connect was due, not from when its request was handled (`reserveSince`): a server restart
 * drops every network at once, and handling 10,000 drops kept one core busy for seconds, so the actors' requests,
 * all due about RECONNECT_BASE after the drop, were handled that much later; the slots then started late and the
 * whole storm ended seconds past `reconnectBound`. A request handled late takes the slots from when it was due, so
 * those that fell behind connect at once, as many as the lag holds slots, and never more than CONNECT_CATCH_UP's
 * worth (a machine waking from suspend has every retry overdue by as long as it slept).
 *
 * Concurrency rule: one instance is shared by every actor of the supervisor. `reserve` is one synchronous step (read
 * the Clock, move the arrival time), so concurrent callers never share a slot and slots follow call order. It never
 * blocks: an actor's dispatcher reserves, then arms a timer for its slot and stays free for commands meanwhile.
 *
 * Time comes only from Effect's Clock (docs/architecture.md), so tests drive the throttle with `TestClock.adjust`.
 */
import { Clock, Duration, Effect } from "effect"
import { CONNECT_BURST, CONNECT_CATCH_UP, CONNECT_SPACING } from "./ReconnectPolicy.js"

export interface ConnectThrottle {
  /**
   * Takes the next connect slot and returns the wait until it: zero while the bucket holds a token. Beyond the burst,
   * slots are `spacing` apart, so no one-second window holds more than burst + 1 s ÷ spacing − 1 of them.
   */
  readonly reserve: Effect.Effect<Duration.Duration>
  /**
   * `reserve` for a connect that was due at `dueAt` (epoch ms, Clock time; a retry whose backoff ended then): the
   * slots count from `dueAt`, or from `catchUp` ago if that is later, so a request handled late is not put behind
   * the time it waited to be handled.
   */
  readonly reserveSince: (dueAt: number) => Effect.Effect<Duration.Duration>
  /** `reserve`, then sleep until the slot. */
  readonly acquire: Effect.Effect<void>
}

export interface ThrottleOptions {
  /** Connects that may go at once after a quiet moment. */
  readonly burst: number
  /** Time between two connects once the burst is spent. */
  readonly spacing: Duration.Duration
  /** How far back a late request's slots may count from (`reserveSince`). */
  readonly catchUp?: Duration.Duration
}

export const make = (
  options: ThrottleOptions = { burst: CONNECT_BURST, spacing: CONNECT_SPACING, catchUp: CONNECT_CATCH_UP }
): Effect.Effect<ConnectThrottle> =>
  Effect.sync(() => {
    const spacing = Duration.toMillis(options.spacing)
    const catchUp = Duration.toMillis(options.catchUp ?? CONNECT_CATCH_UP)
    /** How far ahead of the arrival time a connect may go: the burst, in spacings. */
    const tolerance = (Math.max(1, options.burst) - 1) * spacing
    /** GCRA's theoretical arrival time: when the bucket would be full again were nobody to ask meanwhile. */
    let arrival = Number.NEGATIVE_INFINITY
    /** The slot for a connect due at `since` (at most `now`), asked at `now`: the wait from `now`. */
    const take = (now: number, since: number) => {
      const due = Math.max(arrival, since)
      arrival = due + spacing
      return Duration.millis(Math.max(0, due - tolerance - now))
    }
    const reserve = Effect.map(Clock.currentTimeMillis, (now) => take(now, now))
    return {
      reserve,
      reserveSince: (dueAt) =>
        Effect.map(Clock.currentTimeMillis, (now) => take(now, Math.min(now, Math.max(dueAt, now - catchUp)))),
      acquire: Effect.flatMap(reserve, (wait) => (Duration.isZero(wait) ? Effect.void : Effect.sleep(wait)))
    }
  })
