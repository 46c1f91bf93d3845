// ReconnectPolicy: the named schedules stepped under TestClock, and the permanent/temporary table.
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import {
  actorRestartSchedule,
  makeStepper,
  permanentRefusal,
  reconnectSchedule,
  regainNickSchedule
} from "../../src/actors/ReconnectPolicy.js"

const delays = (schedule: Parameters<typeof makeStepper>[0], n: number) =>
  Effect.gen(function*() {
    const stepper = yield* makeStepper(schedule)
    const out: Array<number> = []
    for (let i = 0; i < n; i++) {
      const d = yield* stepper.next
      out.push(Duration.toMillis(d))
      yield* TestClock.adjust(d)
    }
    return { out, stepper }
  })

describe("ReconnectPolicy", () => {
  it.effect("reconnect: from 2 s doubling, jittered down to 80 %, never above 10 minutes, whole milliseconds", () =>
    Effect.gen(function*() {
      const { out, stepper } = yield* delays(reconnectSchedule, 15)
      out.forEach((d, i) => {
        const nominal = Math.min(2000 * 2 ** i, 600_000)
        expect(d).toBeGreaterThanOrEqual(nominal * 0.8 - 1)
        expect(d).toBeLessThanOrEqual(nominal)
        expect(Number.isInteger(d)).toBe(true)
      })
      yield* stepper.reset
      expect(Duration.toMillis(yield* stepper.next)).toBeLessThanOrEqual(2000)
    }))

  it.effect("nick regain: 15 s doubling to 10 minutes, plus up to 10 s", () =>
    Effect.gen(function*() {
      const { out } = yield* delays(regainNickSchedule, 8)
      out.forEach((d, i) => {
        const nominal = Math.min(15_000 * 2 ** i, 600_000)
        expect(d).toBeGreaterThanOrEqual(nominal)
        expect(d).toBeLessThanOrEqual(nominal + 10_000)
      })
    }))

  it.effect("actor restart: 1 s doubling to a minute", () =>
    Effect.gen(function*() {
      const { out } = yield* delays(actorRestartSchedule, 8)
      expect(out).toEqual([1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000])
    }))

  const refusals: ReadonlyArray<readonly [string, ReadonlyArray<string>, boolean, RegExp | undefined]> = [
    ["464", ["*", "Password incorrect"], false, /password/],
    ["465", ["me", "You are banned"], true, /banned/],
    ["904", ["me", "SASL authentication failed"], false, /SASL/],
    ["902", ["me", "You must use a nick assigned to you"], false, /SASL/],
    ["432", ["*", "bad!nick", "Erroneous nickname"], false, /nick/],
    ["432", ["me", "bad!nick", "Erroneous nickname"], true, undefined],
    ["433", ["*", "taken", "Nickname is already in use"], false, undefined],
    ["ERROR", ["Closing link"], true, undefined],
    ["471", ["me", "#full", "Cannot join channel (+l)"], true, undefined]
  ]
  it.each(refusals)("permanentRefusal(%s, %j, registered=%s)", (command, params, registered, want) => {
    const reason = permanentRefusal(command, params, registered)
    if (want === undefined) expect(reason).toBeUndefined()
    else expect(reason).toMatch(want)
  })
})
