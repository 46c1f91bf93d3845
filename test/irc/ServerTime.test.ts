/**
 * The times an upstream states (src/irc/ServerTime.ts): read when they have an RFC 3339 form (years 0000 to 9999),
 * absent otherwise, so every time Belay stores and sends is one a client can parse.
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { tagTime, unixTime } from "../../src/irc/ServerTime.js"
import { toIsoTime } from "../../src/schema/Ids.js"

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe("ServerTime", () => {
  it("reads a server-time tag, and nothing past the years 0000 to 9999", () => {
    expect(tagTime("2024-05-06T07:08:09.123Z")?.toISOString()).toBe("2024-05-06T07:08:09.123Z")
    expect(tagTime("9999-12-31T23:59:59.999Z")?.toISOString()).toBe("9999-12-31T23:59:59.999Z")
    expect(tagTime("0000-01-01T00:00:00.000Z")?.toISOString()).toBe("0000-01-01T00:00:00.000Z")
    const strays = [undefined, "", "garbage", "+010000-01-01T00:00:00.000Z", "+033658-01-01T00:00:00Z", "-000001-01-01T00:00:00Z"]
    for (const tag of strays) {
      expect(tagTime(tag), String(tag)).toBeUndefined()
    }
  })

  it("reads a Unix time, with 0 and times past the year 9999 unknown", () => {
    expect(unixTime("1700000000")?.toISOString()).toBe("2023-11-14T22:13:20.000Z")
    expect(unixTime("253402300799")?.toISOString()).toBe("9999-12-31T23:59:59.000Z")
    for (const value of [undefined, "0", "253402300800", "999999999999", "-1", "1.5", "1e9", "", "1234567890123"]) {
      expect(unixTime(value), String(value)).toBeNull()
    }
  })

  it("every time it gives has the wire's form", () => {
    for (const seconds of [1, 1_700_000_000, 253_402_300_799]) {
      expect(toIsoTime(unixTime(String(seconds))!)).toMatch(ISO_UTC)
    }
  })

  it("whatever a server sends, a time it gives has the wire's form (generated tags and numbers)", () => {
    // ISO-8601 with any year: four digits within 0000–9999, else signed and six (ECMA-262 "expanded years").
    const year = (y: number) => (y >= 0 && y <= 9999 ? String(y).padStart(4, "0") : `${y < 0 ? "-" : "+"}${String(Math.abs(y)).padStart(6, "0")}`)
    const two = (n: number) => String(n).padStart(2, "0")
    const isoLike = fc.tuple(fc.integer({ min: -300_000, max: 300_000 }), fc.nat(11), fc.nat(27))
      .map(([y, m, d]) => `${year(y)}-${two(m + 1)}-${two(d + 1)}T00:00:00.000Z`)
    fc.assert(
      fc.property(fc.oneof(isoLike, fc.string({ maxLength: 30 })), fc.stringMatching(/^[0-9]{1,12}$/), (tag, seconds) => {
        const read = tagTime(tag)
        if (read !== undefined) expect(toIsoTime(read)).toMatch(ISO_UTC)
        const unix = unixTime(seconds)
        if (unix !== null) expect(toIsoTime(unix)).toMatch(ISO_UTC)
      }),
      { seed: 515151, numRuns: 2_000 }
    )
  })
})
