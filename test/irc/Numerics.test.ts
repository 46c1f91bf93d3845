import { describe, expect, it } from "@effect/vitest"
import { isErrorNumeric, isNumeric, Numeric, numericName } from "../../src/irc/Numerics.js"

describe("Numeric", () => {
  it("has one name per code", () => {
    const codes = Object.values(Numeric)
    expect(new Set(codes).size).toBe(codes.length)
  })

  // The codes the network actor relies on (the codes in src/irc).
  const required = [
    "001", "005", "221", "301", "305", "306",
    "311", "312", "313", "314", "315", "316", "317", "318", "319",
    "324", "329", "331", "332", "333", "346", "347", "348", "349", "352", "353", "366", "367", "368",
    "401", "403", "404", "421", "432", "433", "436", "437", "442", "451", "464", "465", "467",
    "471", "472", "473", "474", "475", "476", "477", "478", "482", "501", "502",
    "728", "729", "730", "731", "732", "733", "734",
    "900", "901", "902", "903", "904", "905", "906", "907", "908"
  ]
  it.each(required.map((code) => ({ code })))("names $code", ({ code }) => {
    expect(numericName(code)).toBeDefined()
  })

  it.each([
    { name: "482", code: "482", result: "ERR_CHANOPRIVSNEEDED" },
    { name: "001", code: "001", result: "RPL_WELCOME" },
    { name: "728", code: "728", result: "RPL_QUIETLIST" },
    { name: "unknown", code: "999", result: undefined }
  ])("numericName: $name", ({ code, result }) => {
    expect(numericName(code)).toBe(result)
  })
})

describe("isErrorNumeric", () => {
  it.each([
    { name: "401 no such nick", code: "401", result: true },
    { name: "482 chanop needed", code: "482", result: true },
    { name: "400 lower bound", code: "400", result: true },
    { name: "599 upper bound", code: "599", result: true },
    { name: "399", code: "399", result: false },
    { name: "600", code: "600", result: false },
    { name: "001 welcome", code: "001", result: false },
    { name: "367 ban list entry", code: "367", result: false },
    { name: "696 invalid mode param", code: "696", result: true },
    { name: "723 no privs", code: "723", result: true },
    { name: "734 monitor list full", code: "734", result: true },
    { name: "730 monitor online", code: "730", result: false },
    { name: "902 nick locked", code: "902", result: true },
    { name: "903 SASL success", code: "903", result: false },
    { name: "904 SASL fail", code: "904", result: true },
    { name: "907 SASL already", code: "907", result: true },
    { name: "908 SASL mechs", code: "908", result: false },
    { name: "word command", code: "PRIVMSG", result: false },
    { name: "four digits", code: "4011", result: false },
    { name: "two digits", code: "40", result: false }
  ])("$name", ({ code, result }) => {
    expect(isErrorNumeric(code)).toBe(result)
  })

  it.each([
    { name: "numeric", command: "433", result: true },
    { name: "word", command: "NOTICE", result: false },
    { name: "letters and digits", command: "4a3", result: false }
  ])("isNumeric: $name", ({ command, result }) => {
    expect(isNumeric(command)).toBe(result)
  })
})
