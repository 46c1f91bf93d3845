/**
 * HeapTrim: gives back the memory V8 keeps after a burst of work, once the process has settled (docs/architecture.md
 * "Memory"). Two jobs, read every CHECK_EVERY:
 *
 * - **The old generation, compacted once after it has grown.** A boot or a reconnect storm of thousands of networks
 *   promotes, for a while, what every network holds while it waits for its connect slot and registers; once that dies
 *   the old generation's pages are about half free, and V8's own full collections move objects out of only a few MB
 *   of the sparsest pages each, so the process would keep those pages for as long as it lives (22 KiB a network at
 *   10,000, bench/results/memory-breakdown.md "At 10,000 networks"). When its committed size has doubled since the
 *   last compaction (and by at least MIN_GROWTH) and the bytes of its objects have stopped growing for STEADY_CHECKS
 *   readings, one full collection runs with V8's --compact-on-every-full-gc set for that collection only (V8 reads
 *   the flag at each collection). Its pause is a full collection copying the live heap (about 2.5 s at 10,000
 *   networks on a loaded core), once after a boot or a storm, where the flag left on would pay it at every full
 *   collection.
 * - **The young generation, given back when allocation has slowed.** V8 grows it (up to 2 × 16 MiB on Node 20)
 *   whenever enough survives its scavenges, as everything does while networks connect, and shrinks it only at a
 *   scavenge that finds allocation slow over the last few seconds. An idle bouncer allocates too little to run any
 *   scavenge, so it kept the whole young generation committed after the first burst: 30 MiB that came and went
 *   between two readings of an idle Belay (bench/results/memory-breakdown.md "The young generation"). So while it is
 *   larger than its floor (the smallest size seen, at most YOUNG_FLOOR_BYTES), one scavenge runs per check (about a
 *   millisecond, next to the hundreds a busy process runs on its own) and V8 decides whether to shrink: under load it
 *   keeps its size.
 * - **The pages the young generation gave back, released.** Node 24's V8 (13.6) does not return the pages of a shrunk
 *   young generation to the system: it keeps them in its page pool, touched and resident, until a collection that
 *   reduces memory (its memory reducer's, which V8 schedules after a full collection, and not after every one). After a
 *   boot or a slow spell of adds the last full collection has often come before the shrink, so the pool kept up to the
 *   whole grown young generation: 30 MiB of 100 idle networks' 31 on Node 24 (bench/results/memory-breakdown.md "Node
 *   24, 100 idle networks, as users run it"). So when a scavenge has shrunk the young generation by YOUNG_RELEASE_BYTES
 *   or more, the job runs one memory-reducing collection (`gc({ type: "major", flavor: "last-resort" })`: V8's
 *   CollectAllAvailableGarbage, two full collections at least, which free the pool and compact the old generation; 0.2
 *   s at 100 networks on a loaded core), spaced by RELEASE_MIN_GAP and RELEASE_PAUSE_FACTOR: a burst ending every few seconds under
 *   intermittent load waits for the next. Starting a plain full collection and leaving the rest to the memory reducer
 *   was tried first: it freed the pool in the probe's two runs and in one of section B2b's three. Node 20's V8 unmaps
 *   pooled pages in the background itself; there the collection finds little to free.
 *
 * V8's `gc` is taken from a context made while --expose-gc was set, the flag cleared right after; only `belay serve`
 * builds this layer (src/main.ts), never the tests' servers.
 *
 * Concurrency rule: one fiber, forked into the layer's scope; `step` and `shouldScavenge` are pure.
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
/**
 * The young generation at its smallest, as Node 20's and Node 24's V8 give it back (measured: both shrink it to this
 * at default flags). The job's floor when it starts later than the growth: `belay serve`'s start-up (the bundle, the
 * migrations, thousands of stored networks read) has grown it to its largest before this layer is built, and a floor
 * read then would leave it there for good. Where V8's floor is larger (flags), one scavenge per check is the cost.
 */
export const YOUNG_FLOOR_BYTES = 1024 * 1024
/**
 * A shrink of the young generation this large is followed by one full collection, so V8's memory reducer releases the
 * pages it pooled (Node 24: up to the whole grown young generation, 2 × 32 MiB). Smaller steps are V8's own breathing
 * under light load; a full collection for each would cost more than the pages are worth.
 */
export const YOUNG_RELEASE_BYTES = 4 * 1024 * 1024
/**
 * The memory-reducing collection's pause is two full collections or more, so the next one waits RELEASE_PAUSE_FACTOR
 * times the last one's pause, and RELEASE_MIN_GAP at least: at most about 2 % of the time goes to it however often
 * bursts end (0.3 s at 100 networks: 15 s; some 3 s at 10,000: 150 s).
 */
export const RELEASE_MIN_GAP = Duration.seconds(10)
export const RELEASE_PAUSE_FACTOR = 50

/** A V8 space as it reports itself: committed bytes and the bytes of objects in it. */
export interface Space {
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

export const initialState = (space: Space): WatchState => ({ base: space.committed, mark: space.used, steady: 0 })

/**
 * The next state, and whether to compact now. Objects still being promoted (a boot or a storm going on) keep it
 * waiting, though the committed size stays flat while V8 fills the room a collection freed; counting growth from the
 * lowest point since the last growth keeps a boot from looking settled right after each of its collections.
 */
export const step = (state: WatchState, space: Space): { readonly state: WatchState; readonly compact: boolean } => {
  if (space.used > state.mark + state.mark / 32) return { state: { ...state, mark: space.used, steady: 0 }, compact: false }
  const next = { base: state.base, mark: Math.min(state.mark, space.used), steady: state.steady + 1 }
  const compact = next.steady >= STEADY_CHECKS && space.committed >= state.base * GROWTH &&
    space.committed - state.base >= MIN_GROWTH_BYTES
  return { state: next, compact }
}

/**
 * Whether to run a scavenge for the young generation's sake: only while it is committed above the smallest size it
 * has had (V8's floor, whatever the flags made it), so a process whose young generation is back at its floor is left
 * alone, and one whose V8 keeps it larger (allocation goes on) pays one scavenge per check.
 */
export const shouldScavenge = (youngCommitted: number, floor: number): boolean => youngCommitted > floor

/**
 * Whether a scavenge that took the young generation from `before` to `after` committed bytes gave back enough pages
 * for a memory-reducing collection to be worth it (V8 pools them until one; see the module doc).
 */
export const shouldReleasePool = (before: number, after: number): boolean => before - after >= YOUNG_RELEASE_BYTES

/** Whether a release owed (`pending`) runs now, `sinceLastMs` after the last one (Infinity: none yet) that paused `lastPauseMs`. */
export const releaseDue = (pending: boolean, sinceLastMs: number, lastPauseMs: number): boolean =>
  pending && sinceLastMs >= Math.max(Duration.toMillis(RELEASE_MIN_GAP), RELEASE_PAUSE_FACTOR * lastPauseMs)

const space = (name: string): Space | undefined => {
  const found = V8.getHeapSpaceStatistics().find((s) => s.space_name === name)
  return found === undefined ? undefined : { committed: found.space_size, used: found.space_used_size }
}

const MiB = 1024 * 1024

type Gc = (options?: { readonly type: "minor" | "major"; readonly flavor?: "regular" | "last-resort" }) => void

/** The job, for `belay serve`'s life. */
export const HeapTrimLive = Layer.scopedDiscard(Effect.gen(function*() {
  const first = space("old_space")
  if (first === undefined) return
  V8.setFlagsFromString("--expose-gc")
  const gc = Vm.runInNewContext("gc") as Gc
  V8.setFlagsFromString("--no-expose-gc")
  let state = initialState(first)
  let youngFloor = Math.min(space("new_space")?.committed ?? 0, YOUNG_FLOOR_BYTES)
  /** A shrink has left pages in V8's pool; when the last memory-reducing collection ran. */
  let releasePending = false
  let lastRelease = Number.NEGATIVE_INFINITY
  let lastPause = 0

  const compactOld = (old: Space) => {
    const decided = step(state, old)
    state = decided.state
    if (!decided.compact) return Effect.void
    const started = performance.now()
    V8.setFlagsFromString("--compact-on-every-full-gc")
    try {
      gc()
    } finally {
      V8.setFlagsFromString("--no-compact-on-every-full-gc")
    }
    const after = space("old_space") ?? old
    state = initialState(after)
    return Effect.logInfo("compacted the old generation").pipe(Effect.annotateLogs({
      committedMiBBefore: Math.round(old.committed / MiB),
      committedMiBAfter: Math.round(after.committed / MiB),
      pauseMs: Math.round(performance.now() - started)
    }))
  }

  const trimYoung = () => {
    const young = space("new_space")
    if (young === undefined) return
    youngFloor = Math.min(youngFloor, young.committed)
    if (!shouldScavenge(young.committed, youngFloor)) return
    // V8 shrinks it now or keeps it; the next check's reading lowers the floor if it shrank.
    gc({ type: "minor" })
    const after = space("new_space")?.committed ?? young.committed
    // The pages it gave back sit in V8's pool until a memory-reducing collection (the module doc).
    if (shouldReleasePool(young.committed, after)) releasePending = true
  }

  const releasePool = () => {
    const now = performance.now()
    if (!releaseDue(releasePending, now - lastRelease, lastPause)) return Effect.void
    releasePending = false
    lastRelease = now
    gc({ type: "major", flavor: "last-resort" })
    lastPause = performance.now() - now
    return Effect.logInfo("released the pages the young generation gave back").pipe(Effect.annotateLogs({
      pauseMs: Math.round(lastPause)
    }))
  }

  const check = Effect.suspend(() => {
    const old = space("old_space")
    if (old === undefined) return Effect.void
    const compacting = compactOld(old)
    trimYoung()
    return Effect.zipRight(compacting, releasePool())
  })
  yield* Effect.forkScoped(Effect.repeat(Effect.delay(check, CHECK_EVERY), Schedule.forever))
}))
