/**
 * The one poll tests wait with: re-runs `read` until `done` holds and returns that value. The
 * pauses between attempts and the deadline are on live time even under TestClock (with
 * `step`, e.g. `TestClock.adjust`, run between attempts), because what is awaited is real
 * work: a database write, a socket, another process.
 *
 * Concurrency rule: one attempt at a time, on the caller's fiber.
 */
import { Clock, Duration, Effect, TestServices } from "effect"

const POLL = Duration.millis(20)

const liveNow = TestServices.provideLive(Clock.currentTimeMillis)

const show = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** Fails with an Error naming `what` and the last value read if `done` does not hold within `timeout`. */
export const eventually = <A, E, R>(
  what: string,
  read: Effect.Effect<A, E, R>,
  done: (a: A) => boolean,
  timeout: Duration.DurationInput = "30 seconds",
  step: Effect.Effect<void> = Effect.void
): Effect.Effect<A, E | Error, R> =>
  Effect.gen(function*() {
    const deadline = (yield* liveNow) + Duration.toMillis(timeout)
    for (;;) {
      const last = yield* read
      if (done(last)) return last
      if ((yield* liveNow) > deadline) return yield* Effect.fail(new Error(`${what} never happened; last seen ${show(last)}`))
      yield* step
      yield* TestServices.provideLive(Effect.sleep(POLL))
    }
  })
