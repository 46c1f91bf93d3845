// ActorTimers under TestClock: callbacks run once the Clock reaches their time and never before, in deadline order
// (schedule order among equals), an earlier deadline wakes the sleeping fiber, and cancelled entries never run.
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, TestClock } from "effect"
import * as ActorTimers from "../../src/actors/ActorTimers.js"

/** Timers whose callbacks record their name and the Clock time they ran at. */
const recorder = Effect.gen(function*() {
  const timers = yield* ActorTimers.make
  const clock = yield* Effect.clock
  const fired: Array<readonly [string, number]> = []
  const at = (ms: number, name: string) => timers.schedule(ms, () => fired.push([name, clock.unsafeCurrentTimeMillis()]))
  return { timers, fired, at }
})

describe("ActorTimers", () => {
  it.scoped("runs each callback at its time, in deadline order, never early", () =>
    Effect.gen(function*() {
      const { fired, at } = yield* recorder
      at(3000, "c")
      at(1000, "a")
      at(2000, "b")
      yield* TestClock.adjust(999)
      expect(fired).toEqual([])
      yield* TestClock.adjust(1)
      expect(fired).toEqual([["a", 1000]])
      yield* TestClock.adjust(5000)
      expect(fired).toEqual([["a", 1000], ["b", 2000], ["c", 3000]])
    }))

  it.scoped("equal deadlines run in the order they were scheduled", () =>
    Effect.gen(function*() {
      const { fired, at } = yield* recorder
      for (const name of ["1", "2", "3", "4", "5"]) at(500, name)
      yield* TestClock.adjust(500)
      expect(fired.map(([name]) => name)).toEqual(["1", "2", "3", "4", "5"])
    }))

  it.scoped("a deadline earlier than the one slept toward wakes the fiber; one in the past runs at once", () =>
    Effect.gen(function*() {
      const { fired, at } = yield* recorder
      at(60_000, "late")
      yield* TestClock.adjust(10)
      at(100, "early")
      yield* TestClock.adjust(90)
      expect(fired).toEqual([["early", 100]])
      at(50, "past")
      yield* TestClock.adjust(0)
      expect(fired).toEqual([["early", 100], ["past", 100]])
    }))

  it.scoped("cancelled entries never run, whether first, last or in between; cancelling twice or after running is harmless", () =>
    Effect.gen(function*() {
      const { timers, fired, at } = yield* recorder
      const entries = [1, 2, 3, 4, 5, 6, 7, 8].map((i) => at(i * 100, `t${i}`))
      for (const i of [0, 3, 7]) timers.cancel(entries[i]!)
      timers.cancel(entries[0]!)
      yield* TestClock.adjust(1000)
      expect(fired.map(([name]) => name)).toEqual(["t2", "t3", "t5", "t6", "t7"])
      timers.cancel(entries[1]!)
      expect(yield* Clock.currentTimeMillis).toBe(1000)
    }))

  it.scoped("a callback that throws is logged; the others still run", () =>
    Effect.gen(function*() {
      const { timers, fired, at } = yield* recorder
      at(100, "before")
      timers.schedule(100, () => {
        throw new Error("bug")
      })
      at(100, "after")
      at(200, "later")
      yield* TestClock.adjust(300)
      expect(fired.map(([name]) => name)).toEqual(["before", "after", "later"])
    }))

  it.scoped("many entries: a heap that stays ordered through random schedules and cancels", () =>
    Effect.gen(function*() {
      const { timers, fired, at } = yield* recorder
      // A fixed pseudo-random sequence (LCG) so a failure reproduces.
      let seed = 42
      const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
      const live = new Map<string, number>()
      const entries: Array<readonly [string, ActorTimers.TimerEntry]> = []
      for (let i = 0; i < 400; i++) {
        const ms = 1 + Math.floor(next() * 2_000)
        const name = `e${i}`
        entries.push([name, at(ms, name)])
        live.set(name, ms)
        if (next() < 0.3) {
          const [victim, entry] = entries[Math.floor(next() * entries.length)]!
          timers.cancel(entry)
          live.delete(victim)
        }
      }
      yield* TestClock.adjust(2_001)
      expect(fired.length).toBe(live.size)
      for (const [name, time] of fired) expect(time).toBe(live.get(name))
      for (let i = 1; i < fired.length; i++) expect(fired[i]![1]).toBeGreaterThanOrEqual(fired[i - 1]![1])
    }))
})
