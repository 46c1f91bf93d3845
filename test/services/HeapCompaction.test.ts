/**
 * HeapCompaction's decision (docs/architecture.md "Memory"): compact once the old generation has doubled (and by
 * MIN_GROWTH_BYTES) and its objects have stopped growing for STEADY_CHECKS readings; never while they still grow,
 * never for a small heap; growth then counts from the compacted size.
 */
import { describe, expect, it } from "@effect/vitest"
import { initialState, MIN_GROWTH_BYTES, type OldSpace, step, STEADY_CHECKS, type WatchState } from "../../src/services/HeapCompaction.js"

const MiB = 1024 * 1024

/** Feeds readings in order, restarting from the reading after a compaction as the job does; the indexes that compacted. */
const run = (start: OldSpace, readings: ReadonlyArray<OldSpace>) => {
  let state: WatchState = initialState(start)
  const compacted: Array<number> = []
  readings.forEach((space, i) => {
    const decided = step(state, space)
    state = decided.compact ? initialState({ committed: space.used, used: space.used }) : decided.state
    if (decided.compact) compacted.push(i)
  })
  return compacted
}

describe("HeapCompaction.step", () => {
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
