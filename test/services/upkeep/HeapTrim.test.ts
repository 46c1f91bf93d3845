/**
 * HeapTrim (docs/architecture.md "Memory"). The old generation's decision: compact once it has doubled (and by
 * MIN_GROWTH_BYTES) and its objects have stopped growing for STEADY_CHECKS readings; never while they still grow,
 * never for a small heap; growth then counts from the compacted size. The young generation's, in a process of its
 * own (the test worker's heap is the test runner's): after a burst, an idle process running the job has its young
 * generation back at its floor within a few checks, where the same process without it keeps it grown.
 */
import * as Child from "node:child_process"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Duration } from "effect"
import {
  CHECK_EVERY,
  initialState,
  MIN_GROWTH_BYTES,
  RELEASE_MIN_GAP,
  RELEASE_PAUSE_FACTOR,
  releaseDue,
  shouldReleasePool,
  shouldScavenge,
  type Space,
  step,
  STEADY_CHECKS,
  type WatchState,
  YOUNG_RELEASE_BYTES
} from "../../../src/services/upkeep/HeapTrim.js"

const MiB = 1024 * 1024

/** Feeds readings in order, restarting from the reading after a compaction as the job does; the indexes that compacted. */
const run = (start: Space, readings: ReadonlyArray<Space>) => {
  let state: WatchState = initialState(start)
  const compacted: Array<number> = []
  readings.forEach((space, i) => {
    const decided = step(state, space)
    state = decided.compact ? initialState({ committed: space.used, used: space.used }) : decided.state
    if (decided.compact) compacted.push(i)
  })
  return compacted
}

describe("HeapTrim.step (the old generation)", () => {
  it("compacts once after a boot has grown the heap and settled, not while it grows", () => {
    const boot = [100, 200, 300, 400].map((used) => ({ committed: used * 2 * MiB, used: used * MiB }))
    const settled = Array.from({ length: 2 }, () => ({ committed: 800 * MiB, used: 400 * MiB }))
    // After the compaction the old generation is its objects: no second one.
    const compacted = Array.from({ length: 5 }, () => ({ committed: 400 * MiB, used: 400 * MiB }))
    expect(run({ committed: 30 * MiB, used: 25 * MiB }, [...boot, ...settled, ...compacted]))
      .toEqual([boot.length + STEADY_CHECKS - 1])
  })

  it("waits while collections free objects between bursts of promotion (the low point counts)", () => {
    const readings = [
      { committed: 400 * MiB, used: 300 * MiB },
      { committed: 400 * MiB, used: 150 * MiB }, // a collection freed half
      { committed: 400 * MiB, used: 250 * MiB }, // promotion goes on from the low point: still growing
      { committed: 400 * MiB, used: 250 * MiB },
      { committed: 400 * MiB, used: 250 * MiB }
    ]
    expect(run({ committed: 40 * MiB, used: 30 * MiB }, readings)).toEqual([4])
  })

  it("leaves a heap alone that has not doubled, or grew by less than the minimum", () => {
    const steady = (committed: number) => Array.from({ length: 5 }, () => ({ committed, used: committed / 2 }))
    expect(run({ committed: 300 * MiB, used: 150 * MiB }, steady(500 * MiB))).toEqual([])
    const small = 10 * MiB
    expect(run({ committed: small, used: small / 2 }, steady(small + MIN_GROWTH_BYTES - 1))).toEqual([])
  })

  it("counts growth again from the size after a compaction", () => {
    const settled = (n: number, committed: number, used: number) => Array.from({ length: n }, () => ({ committed, used }))
    // A boot compacted to 250 MB (the reading at index STEADY_CHECKS); a storm then grows the objects to 350 MB.
    const boot = settled(STEADY_CHECKS + 1, 600 * MiB, 250 * MiB)
    const big = [{ committed: 600 * MiB, used: 350 * MiB }, ...settled(STEADY_CHECKS, 600 * MiB, 350 * MiB)]
    expect(run({ committed: 50 * MiB, used: 40 * MiB }, [...boot, ...big])).toEqual([
      STEADY_CHECKS,
      boot.length + STEADY_CHECKS
    ])
    // Less than twice the compacted size: no second pause.
    const mild = [{ committed: 450 * MiB, used: 350 * MiB }, ...settled(STEADY_CHECKS + 2, 450 * MiB, 350 * MiB)]
    expect(run({ committed: 50 * MiB, used: 40 * MiB }, [...boot, ...mild])).toEqual([STEADY_CHECKS])
  })
})

/** The compiled module (npm test builds dist/ first), run in a child Node with or without the job. */
const MODULE = pathToFileURL(Path.resolve(import.meta.dirname, "../../../dist/services/upkeep/HeapTrim.js")).href
/** Five checks: V8 shrinks only at a scavenge whose last seconds saw little allocation, so not at the first after the burst. */
const IDLE_MS = Duration.toMillis(CHECK_EVERY) * 5

/**
 * A child that grows its young generation (objects surviving several scavenges, as while networks connect), then
 * idles IDLE_MS, printing the young generation's committed size before and after; HeapTrimLive started before the
 * burst, after it (as in `belay serve`, whose start-up grows the young generation before the layer is built), or not.
 */
const youngGeneration = (trim: "before" | "after" | "none") =>
  new Promise<{ readonly grown: number; readonly idle: number }>((resolve, reject) => {
    const script = `
      import * as V8 from "node:v8"
      import { Effect, Layer } from "effect"
      import { HeapTrimLive } from ${JSON.stringify(MODULE)}
      const young = () => V8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size
      const trim = ${JSON.stringify(trim)}
      if (trim === "before") Effect.runFork(Layer.launch(HeapTrimLive))
      await new Promise((r) => setTimeout(r, 100))
      let keep = []
      for (let round = 0; round < 40; round++) {
        for (let i = 0; i < 200000; i++) keep.push({ i, list: [i] })
        if (keep.length > 1500000) keep = keep.slice(-500000)
      }
      keep = null
      if (trim === "after") Effect.runFork(Layer.launch(HeapTrimLive))
      const grown = young()
      await new Promise((r) => setTimeout(r, ${IDLE_MS}))
      process.stdout.write("\\n" + JSON.stringify({ grown, idle: young() }))
      process.exit(0)
    `
    Child.execFile(process.execPath, ["--input-type=module", "-e", script], { cwd: Path.resolve(import.meta.dirname, "../../..") },
      (error, stdout, stderr) => {
        if (error !== null) return reject(new Error(`${error.message}\n${stderr}`))
        // The job's own log line (a compaction, when the burst doubled the old generation) comes before the figures.
        try {
          resolve(JSON.parse(stdout.trim().split("\n").at(-1)!))
        } catch (e) {
          reject(new Error(`the child printed no figures: ${String(e)}\n${stdout}\n${stderr}`))
        }
      })
  })

describe("HeapTrim (the young generation)", () => {
  it("runs a scavenge only while the young generation is above its floor", () => {
    expect(shouldScavenge(32 * MiB, 1 * MiB)).toBe(true)
    expect(shouldScavenge(1 * MiB, 1 * MiB)).toBe(false)
  })

  it("owes a memory-reducing collection after a shrink of the young generation, so V8 releases the pages it pooled", () => {
    // Node 24 after 100 networks added over a minute: 64 MiB → 1 MiB kept 30 MiB resident in V8's page pool.
    expect(shouldReleasePool(64 * MiB, 1 * MiB)).toBe(true)
    expect(shouldReleasePool(1 * MiB + YOUNG_RELEASE_BYTES, 1 * MiB)).toBe(true)
    // V8's own small steps (2 → 1, 4 → 1 MiB) and no shrink at all: no full collection.
    expect(shouldReleasePool(4 * MiB, 1 * MiB)).toBe(false)
    expect(shouldReleasePool(32 * MiB, 32 * MiB)).toBe(false)
  })

  it("runs the memory-reducing collection once owed, spaced by its own pause", () => {
    const gap = Duration.toMillis(RELEASE_MIN_GAP)
    expect(releaseDue(true, Number.POSITIVE_INFINITY, 0)).toBe(true)
    expect(releaseDue(true, gap, 100)).toBe(true)
    expect(releaseDue(true, gap - 1, 0)).toBe(false)
    // A 3 s pause (10,000 networks): the next waits RELEASE_PAUSE_FACTOR times as long.
    expect(releaseDue(true, gap * 2, 3000)).toBe(false)
    expect(releaseDue(true, RELEASE_PAUSE_FACTOR * 3000, 3000)).toBe(true)
    expect(releaseDue(false, Number.POSITIVE_INFINITY, 0)).toBe(false)
  })

  it("gives the young generation back once an idle process settles, the job started before the growth or after", async () => {
    const [before, after, untouched] = await Promise.all([
      youngGeneration("before"),
      youngGeneration("after"),
      youngGeneration("none")
    ])
    // Without the job it stays grown.
    expect(untouched.grown).toBeGreaterThanOrEqual(8 * MiB)
    expect(untouched.idle).toBe(untouched.grown)
    for (const trimmed of [before, after]) {
      expect(trimmed.grown).toBeGreaterThanOrEqual(8 * MiB)
      expect(trimmed.idle).toBeLessThanOrEqual(trimmed.grown / 4)
    }
    // Three children at once, each a burst of over 100 MB: 50–100 s on the shared 2-core machine at load 13.
  }, 180_000)
})
