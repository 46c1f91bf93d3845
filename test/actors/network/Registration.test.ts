// Registration.fallbackNick: the nicks tried after 433 while registering, within NICKLEN (a table of cases). The rest
// of registration (welcome, burst, regain) runs against the scripted fake IRC server in
// NetworkActor.lifecycle.test.ts.
import { describe, expect, it } from "@effect/vitest"
import { fallbackNick } from "../../../src/actors/network/Registration.js"

describe("fallbackNick", () => {
  it.each([
    ["belay", 1, 30, "belay_"],
    ["belay", 2, 30, "belay__"],
    ["belay", 3, 30, "belay___"],
    ["belay", 4, 30, "belay4"],
    ["abcdefghi", 1, 9, "abcdefgh1"],
    ["abcdefgh", 1, 9, "abcdefgh_"]
  ] as const)("fallbackNick(%s, %i, NICKLEN %i) = %s", (wanted, attempt, len, want) => {
    expect(fallbackNick(wanted, attempt, len)).toBe(want)
  })
})
