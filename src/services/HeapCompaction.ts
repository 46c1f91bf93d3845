/**
 * HeapCompaction: one full collection that compacts V8's old generation after it has grown and settled
 * (docs/architecture.md "Memory"). A boot or a reconnect storm of thousands of networks promotes, for a while, what
 * every network holds while it waits for its connect slot and registers; once that dies the old generation's pages
 * are about half free, and V8's own full collections move objects out of only a few MB of the sparsest pages each,
 * so the process would keep those pages for as long as it lives (22 KiB a network at 10,000,
 * bench/results/memory-breakdown.md "At 10,000 networks").
 *
 * So every CHECK_EVERY the old generation is read, and when its committed size has doubled since the last compaction
 * (and by at least MIN_GROWTH) and the bytes of its objects have stopped growing for STEADY_CHECKS readings, one full
 * collection runs with V8's --compact-on-every-full-gc set for that collection only (V8 reads the flag at each
 * collection). Its pause is a full collection copying the live heap (about 2.5 s at 10,000 networks on a loaded
 * core), once after a boot or a storm, where the flag left on would pay it at every full collection.
 *
 * V8's `gc` is taken from a context made while --expose-gc was set, the flag cleared right after; only `belay serve`
 * builds this layer (src/main.ts), never the tests' servers.
 *
 * Concurrency rule: one fiber, forked into the layer's scope; `step` is pure.
 */
import * as V8 from "node:v8"
import * as Vm from "node:vm"
import { Duration, Effect, Layer, Schedule } from "effect"

export const CHECK_EVERY = Duration.seconds(3)
/** Readings in a row without the objects growing by more than a 32nd before the heap counts as settled. */
export const STEADY_CHECKS = 2
/** Compact when the committed size is this many times what it was after the last compaction (or at start)… */
export const GROWTH = 2
/** …and at least this much more: a small heap's free pages are not worth a pause. */
export const MIN_GROWTH_BYTES = 32 * 1024 * 1024

/** The old generation as V8 reports it: committed bytes and the bytes of objects in it. */
export interface OldSpace {
  readonly committed: number
  readonly used: number
}

export interface WatchState {
  /** Committed size after the last compaction (or at start). */
  readonly base: number
  /** Bytes of objects when they last grew by more than a 32nd (lowered by every collection that frees some). */
  readonly mark: number
  /** Readings in a row since they last grew. */
  readonly steady: number
}

export const initialState = (space: OldSpace): WatchState => ({ base: space.committed, mark: space.used, steady: 0 })

/**
 * The next state, and whether to compact now. Objects still being promoted (a boot or a storm going on) keep it
 * waiting, though the committed size stays flat while V8 fills the room a collection freed; counting growth from the
 * lowest point since the last growth keeps a boot from looking settled right after each of its collections.
 */
export const step = (state: WatchState, space: OldSpace): { readonly state: WatchState; readonly compact: boolean } => {
  if (space.used > state.mark + state.mark / 32) return { state: { ...state, mark: space.used, steady: 0 }, compact: false }
  const next = { base: state.base, mark: Math.min(state.mark, space.used), steady: state.steady + 1 }
  const compact = next.steady >= STEADY_CHECKS && space.committed >= state.base * GROWTH &&
    space.committed - state.base >= MIN_GROWTH_BYTES
  return { state: next, compact }
}

const oldSpace = (): OldSpace | undefined => {
  const space = V8.getHeapSpaceStatistics().find((s) => s.space_name === "old_space")
  return space === undefined ? undefined : { committed: space.space_size, used: space.space_used_size }
}

const MiB = 1024 * 1024

/** The job, for `belay serve`'s life. */
export const HeapCompactionLive = Layer.scopedDiscard(Effect.gen(function*() {
  const first = oldSpace()
  if (first === undefined) return
  V8.setFlagsFromString("--expose-gc")
  const gc = Vm.runInNewContext("gc") as () => void
  V8.setFlagsFromString("--no-expose-gc")
  let state = initialState(first)
  const check = Effect.suspend(() => {
    const space = oldSpace()
    if (space === undefined) return Effect.void
    const decided = step(state, space)
    state = decided.state
    if (!decided.compact) return Effect.void
    const started = performance.now()
    V8.setFlagsFromString("--compact-on-every-full-gc")
    try {
      gc()
    } finally {
      V8.setFlagsFromString("--no-compact-on-every-full-gc")
    }
    const after = oldSpace() ?? space
    state = initialState(after)
    return Effect.logInfo("compacted the old generation").pipe(Effect.annotateLogs({
      committedMiBBefore: Math.round(space.committed / MiB),
      committedMiBAfter: Math.round(after.committed / MiB),
      pauseMs: Math.round(performance.now() - started)
    }))
  })
  yield* Effect.forkScoped(Effect.repeat(Effect.delay(check, CHECK_EVERY), Schedule.forever))
}))
