/**
 * Immediate: over an Effect that is already an Exit, each combinator gives an Exit at once (what lets HttpServer send
 * an answer from memory without a fiber); over any other it gives, when run, what Effect's own combinator gives; a
 * defect is never handled; a throw becomes a defect through `attempt`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Option } from "effect"
import { attempt, flatMapNow, mapNow, matchEffectNow, matchNow, valueNow } from "../../src/http/Immediate.js"

const cases = {
  onFailure: (e: string) => `failed ${e}`,
  onSuccess: (n: number) => `got ${n}`
}
const effectCases = {
  onFailure: (e: string) => Effect.succeed(`failed ${e}`),
  onSuccess: (n: number) => Effect.succeed(`got ${n}`)
}

/** An Effect that is not an Exit: its value is known only when a fiber runs it. */
const later = (n: number) => Effect.sync(() => n)
const laterFailure = Effect.suspend(() => Effect.fail("no"))

describe("Immediate", () => {
  it("gives an Exit at once over an Exit, applying the function before anything runs", () => {
    const mapped = mapNow(Effect.succeed(1), (n) => n + 1)
    expect(Exit.isExit(mapped) && valueNow(mapped)).toBe(2)
    expect(valueNow(flatMapNow(Effect.succeed(1), (n) => Effect.succeed(n * 10)))).toBe(10)
    expect(valueNow(matchNow(Effect.succeed(3), cases))).toBe("got 3")
    expect(valueNow(matchNow(Effect.fail("no"), cases))).toBe("failed no")
    expect(valueNow(matchEffectNow(Effect.succeed(3), effectCases))).toBe("got 3")
    expect(valueNow(matchEffectNow(Effect.fail("no"), effectCases))).toBe("failed no")
    // A failed Exit stays one through map and flatMap, with its error.
    const failed = mapNow(Effect.fail("no") as Effect.Effect<number, string>, (n) => n + 1)
    expect(Exit.isExit(failed) && Exit.isFailure(failed) && Option.getOrUndefined(Cause.failureOption(failed.cause))).toBe("no")
  })

  it.effect("over any other Effect, gives what Effect's own combinators give when run", () =>
    Effect.gen(function*() {
      expect(valueNow(mapNow(later(1), (n) => n + 1))).toBeUndefined()
      expect(yield* mapNow(later(1), (n) => n + 1)).toBe(2)
      expect(yield* flatMapNow(later(1), (n) => later(n * 10))).toBe(10)
      expect(yield* matchNow(later(3), cases)).toBe("got 3")
      expect(yield* matchNow(laterFailure as Effect.Effect<number, string>, cases)).toBe("failed no")
      expect(yield* matchEffectNow(later(3), effectCases)).toBe("got 3")
      expect(yield* matchEffectNow(laterFailure as Effect.Effect<number, string>, effectCases)).toBe("failed no")
    }))

  it.effect("leaves a defect to the fiber, and turns a throw while the Effect is made into one", () =>
    Effect.gen(function*() {
      const died = matchNow(Effect.die("boom") as Effect.Effect<number, string>, cases)
      expect(valueNow(died)).toBeUndefined()
      const exit = yield* Effect.exit(died)
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      const thrown = attempt(() =>
        mapNow(Effect.succeed(1), (): number => {
          throw new Error("thrown")
        })
      )
      const thrownExit = yield* Effect.exit(thrown)
      expect(Exit.isFailure(thrownExit) && Cause.isDie(thrownExit.cause)).toBe(true)
      expect(valueNow(attempt(() => Effect.succeed("made")))).toBe("made")
    }))
})
