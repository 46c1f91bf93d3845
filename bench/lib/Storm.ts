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

/**
 * The window of `windowMs` (sliding, not fixed buckets) holding the most time stamps: how many, and its first stamp,
 * so a report can say when a bunch happened as well as how big it was.
 */
export const busiestWindow = (stamps: ReadonlyArray<number>, windowMs: number) => {
  const sorted = [...stamps].sort((a, b) => a - b)
  let count = 0
  let start = Number.NaN
  let lo = 0
  for (let hi = 0; hi < sorted.length; hi++) {
    while (sorted[hi]! - sorted[lo]! >= windowMs) lo++
    if (hi - lo + 1 > count) {
      count = hi - lo + 1
      start = sorted[lo]!
    }
  }
  return { count, start }
}

/** The largest number of time stamps inside any window of `windowMs` (sliding, not fixed buckets). */
export const maxInWindow = (stamps: ReadonlyArray<number>, windowMs: number) => busiestWindow(stamps, windowMs).count

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
