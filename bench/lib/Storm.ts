/**
 * Storm owns the arithmetic of a connect or reconnect storm as the fake IRC server sees it: the most accepts inside
 * any sliding window, and the longest first reconnect delay the policy can choose (src/actors/ReconnectPolicy.ts
 * `reconnectSchedule` is jittered, so the bound is sampled from the schedule itself rather than restated here).
 * Pure apart from stepping fresh schedules.
 *
 * Concurrency rule: none; plain functions over arrays of time stamps.
 */
import { Duration, Effect } from "effect"
import { makeStepper, reconnectSchedule } from "../../src/actors/ReconnectPolicy.js"

/** The largest number of time stamps inside any window of `windowMs` (sliding, not fixed buckets). */
export const maxInWindow = (stamps: ReadonlyArray<number>, windowMs: number) => {
  const sorted = [...stamps].sort((a, b) => a - b)
  let best = 0
  let lo = 0
  for (let hi = 0; hi < sorted.length; hi++) {
    while (sorted[hi]! - sorted[lo]! >= windowMs) lo++
    best = Math.max(best, hi - lo + 1)
  }
  return best
}

/** The longest first reconnect delay the policy can choose, sampled over `samples` fresh steppers. */
export const firstDelayBound = async (samples = 2000) => {
  let max = 0
  for (let i = 0; i < samples; i++) {
    const stepper = await Effect.runPromise(makeStepper(reconnectSchedule))
    max = Math.max(max, Duration.toMillis(await Effect.runPromise(stepper.next)))
  }
  return max
}

/** The `n`th smallest time stamp (1-based): when the nth connection of a storm was accepted. */
export const nth = (stamps: ReadonlyArray<number>, n: number) => [...stamps].sort((a, b) => a - b)[n - 1]!
