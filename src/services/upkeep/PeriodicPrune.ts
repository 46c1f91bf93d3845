/**
 * PeriodicPrune is the one job that deletes expired rows for the services that keep them
 * (OAuth clients, consents and codes, browser sessions): `every` after the service starts
 * and then every `every`, on Effect's Clock (tests move it with TestClock).
 *
 * Concurrency: one scoped fiber per pruning service, ended with that service's scope. A
 * failed round is logged and the next one runs on time: expired rows are already ignored by
 * every read, so a late prune only costs disk space.
 */
import { type Duration, Effect, Schedule, type Scope } from "effect"

/** Forks the job for `what` (named in the warning) into the current scope. */
export const periodicPrune = (
  what: string,
  every: Duration.DurationInput,
  prune: Effect.Effect<unknown>
): Effect.Effect<void, never, Scope.Scope> =>
  prune.pipe(
    Effect.catchAllCause((cause) => Effect.logWarning(`pruning ${what} failed`, cause)),
    Effect.repeat(Schedule.spaced(every)),
    Effect.delay(every),
    Effect.asVoid,
    Effect.forkScoped,
    Effect.asVoid
  )
