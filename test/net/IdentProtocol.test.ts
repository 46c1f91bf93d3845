import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { IDENT_MAX_LINE, identAnswer, identError, parseIdentQuery } from "../../src/net/IdentProtocol.js"

describe("IdentProtocol", () => {
  it.each([
    ["6193, 23", { local: 6193, remote: 23 }],
    ["6195,6667", { local: 6195, remote: 6667 }],
    ["  40000 ,\t6697  ", { local: 40000, remote: 6697 }],
    ["65535 , 1", { local: 65535, remote: 1 }],
    ["00023 , 00113", { local: 23, remote: 113 }]
  ])("reads %j", (line, query) => {
    expect(parseIdentQuery(line)).toEqual(query)
  })

  it.each([
    "",
    "6193",
    "6193 23",
    "6193,",
    ",23",
    "0 , 23",
    "6193 , 0",
    "65536 , 23",
    "123456 , 23",
    "-1 , 23",
    "6193 , 23 , 5",
    "6193 , 23 : USERID",
    "0x10 , 23",
    "6193\u00a0, 23",
    "６１９３ , 23",
    `${" ".repeat(IDENT_MAX_LINE)}1,1`
  ])("refuses %j", (line) => {
    expect(parseIdentQuery(line)).toBe("invalid")
  })

  it("answers with the ports of the query, in its order (RFC 1413 §6)", () => {
    expect(identAnswer({ local: 6193, remote: 23 }, "b2s")).toBe("6193 , 23 : USERID : UNIX : b2s\r\n")
    expect(identError({ local: 6195, remote: 6667 }, "NO-USER")).toBe("6195 , 6667 : ERROR : NO-USER\r\n")
    expect(identError("invalid", "INVALID-PORT")).toBe("0 , 0 : ERROR : INVALID-PORT\r\n")
  })

  it("reads any two ports in any spacing, and nothing that holds other characters", () => {
    const space = fc.stringOf(fc.constantFrom(" ", "\t"), { maxLength: 4 })
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 65535 }), fc.integer({ min: 1, max: 65535 }), space, space, space, space, (l, r, a, b, c, d) => {
        expect(parseIdentQuery(`${a}${l}${b},${c}${r}${d}`)).toEqual({ local: l, remote: r })
      }),
      { numRuns: 2000 }
    )
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (line) => {
        const parsed = parseIdentQuery(line)
        if (parsed === "invalid") return
        expect(line).toMatch(/^[ \t]*\d+[ \t]*,[ \t]*\d+[ \t]*$/)
        expect(line.length).toBeLessThanOrEqual(IDENT_MAX_LINE)
      }),
      { numRuns: 5000 }
    )
  })
})
