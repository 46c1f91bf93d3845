/**
 * Immediate: `Effect.map`, `flatMap`, `match` and `matchEffect` that, handed an Effect which is already an Exit — what
 * `Effect.succeed` and `Effect.fail` make, such as an answer from memory or a body read before the handler ran — apply
 * their function at once and give its result, and otherwise defer to Effect's own combinator. A handler written with
 * them over answers from memory returns an Exit, which HttpServer sends without starting a fiber: on `/mcp` the fiber's
 * creation, run loop and teardown were the largest share of the Effect runtime's time in a tools/list request
 * (docs/decisions/http-and-mcp.md "Answers from memory are sent without a fiber").
 *
 * Results are those of Effect's combinators; only when the function runs differs (at once, rather than when a fiber
 * runs the Effect — which HttpServer does at once anyway). A defect or an interruption is never handled here: it goes
 * the fiber's way, as before. A function that throws throws to the caller (HttpServer turns that into a 500, as the
 * fiber would). Pure; no state.
 */
import { type Cause, Effect, Exit } from "effect"

const succeeded = <A, E, R>(self: Effect.Effect<A, E, R>): self is Effect.Effect<A, E, R> & Exit.Success<A, E> =>
  Exit.isExit(self) && Exit.isSuccess(self)

/** The error of an Exit that failed with a single expected error, or undefined. */
const failedWith = <A, E, R>(self: Effect.Effect<A, E, R>): { readonly error: E } | undefined =>
  Exit.isExit(self) && Exit.isFailure(self) && self.cause._tag === "Fail" ? { error: self.cause.error as E } : undefined

/** `make()`'s Effect, or a defect of what it threw: functions applied at once throw as the Effect is made. */
export const attempt = <A, E, R>(make: () => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  try {
    return make()
  } catch (defect) {
    return Effect.die(defect)
  }
}

/** The value of an Effect that is already a successful Exit; undefined for any other. */
export const valueNow = <A, E, R>(self: Effect.Effect<A, E, R>): A | undefined => (succeeded(self) ? self.value : undefined)

/** A failed Exit as the failure of an Effect of another value: map and flatMap give a failure back unchanged. */
const failure = <A, E, R, B>(self: Effect.Effect<A, E, R>): Effect.Effect<B, E, R> | undefined =>
  Exit.isExit(self) && Exit.isFailure(self) ? Exit.failCause(self.cause as Cause.Cause<E>) : undefined

export const mapNow = <A, E, R, B>(self: Effect.Effect<A, E, R>, f: (a: A) => B): Effect.Effect<B, E, R> =>
  succeeded(self) ? Exit.succeed(f(self.value)) : failure<A, E, R, B>(self) ?? Effect.map(self, f)

export const flatMapNow = <A, E, R, B, E2, R2>(
  self: Effect.Effect<A, E, R>,
  f: (a: A) => Effect.Effect<B, E2, R2>
): Effect.Effect<B, E | E2, R | R2> => (succeeded(self) ? f(self.value) : failure<A, E, R, B>(self) ?? Effect.flatMap(self, f))

export const matchNow = <A, E, R, B, C>(
  self: Effect.Effect<A, E, R>,
  cases: { readonly onFailure: (e: E) => B; readonly onSuccess: (a: A) => C }
): Effect.Effect<B | C, never, R> => {
  if (succeeded(self)) return Exit.succeed(cases.onSuccess(self.value))
  const failed = failedWith(self)
  return failed !== undefined ? Exit.succeed(cases.onFailure(failed.error)) : Effect.match(self, cases)
}

export const matchEffectNow = <A, E, R, B, E2, R2, C, E3, R3>(
  self: Effect.Effect<A, E, R>,
  cases: {
    readonly onFailure: (e: E) => Effect.Effect<B, E2, R2>
    readonly onSuccess: (a: A) => Effect.Effect<C, E3, R3>
  }
): Effect.Effect<B | C, E2 | E3, R | R2 | R3> => {
  if (succeeded(self)) return cases.onSuccess(self.value)
  const failed = failedWith(self)
  return failed !== undefined ? cases.onFailure(failed.error) : Effect.matchEffect(self, cases)
}
