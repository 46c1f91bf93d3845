/**
 * FakeIrcError: every failure of the FakeIrcServer, and `withDeadline`, the one way the fake bounds a wait.
 *
 * Concurrency rule: socket I/O is real, so every wait of the fake is bounded by `Effect.timeoutFail` run under
 * `Effect.withClock(liveClock)`, never the ambient Clock. Inside `it.effect`/`it.scoped` the ambient Clock is
 * TestClock, which moves only on `TestClock.adjust`; a timeout on it would never fire. So a test may drive the actor's
 * backoff and keepalive with TestClock while the fake's waits still expire in real milliseconds.
 */
import { Clock, Data, Duration, Effect } from "effect"

/** Every failure of the fake; `message` always lists the tail of what the client sent. */
export class FakeIrcError extends Data.TaggedError("FakeIrcError")<{
  /** Timeout: the deadline passed. Mismatch: expectNext saw another line. Closed: the socket is gone. */
  readonly reason: "Timeout" | "Mismatch" | "Closed"
  readonly message: string
}> {}

const liveClock = Clock.make()

/** Bounds `self` by `timeout` on the live clock (see the concurrency rule above). */
export const withDeadline = <A>(
  self: Effect.Effect<A, FakeIrcError>,
  timeout: Duration.Duration,
  onTimeout: () => FakeIrcError
): Effect.Effect<A, FakeIrcError> =>
  self.pipe(Effect.timeoutFail({ duration: timeout, onTimeout }), Effect.withClock(liveClock))
