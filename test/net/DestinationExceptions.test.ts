import { describe, expect, it } from "@effect/vitest"
import { parseLiteral } from "../../src/net/AddressClass.js"
import { addressExcepted, nameExcepted, parseExceptions } from "../../src/net/DestinationExceptions.js"

const parse = (list: string) => {
  const parsed = parseExceptions(list)
  if ("error" in parsed) throw new Error(parsed.error)
  return parsed.exceptions
}
const at = (text: string) => parseLiteral(text)!

describe("DestinationExceptions", () => {
  it("reads host:port, address:port, [v6]:port and CIDR with or without a port", () => {
    const list = parse(" irc.local:6667 , 127.0.0.1:6697,[::1]:6668, 10.0.0.0/8, 127.0.0.0/8:7000 ,[fd00::]/8:6697,,")
    expect(list.map((e) => e._tag)).toEqual(["Name", "Range", "Range", "Range", "Range", "Range"])
    expect(nameExcepted(list, "IRC.local.", 6667)).toBe(true)
    expect(nameExcepted(list, "irc.local", 6668)).toBe(false)
    expect(addressExcepted(list, at("127.0.0.1"), 6697)).toBe(true)
    expect(addressExcepted(list, at("::ffff:127.0.0.1"), 6697)).toBe(true)
    expect(addressExcepted(list, at("127.0.0.1"), 6667)).toBe(false)
    expect(addressExcepted(list, at("::1"), 6668)).toBe(true)
    expect(addressExcepted(list, at("10.200.1.1"), 1)).toBe(true)
    expect(addressExcepted(list, at("127.9.9.9"), 7000)).toBe(true)
    expect(addressExcepted(list, at("127.9.9.9"), 7001)).toBe(false)
    expect(addressExcepted(list, at("fd12::5"), 6697)).toBe(true)
    expect(addressExcepted(list, at("fe80::1"), 6697)).toBe(false)
    expect(addressExcepted(list, at("192.168.0.1"), 6667)).toBe(false)
  })

  it.each([
    ["irc.local", "neither host:port nor CIDR"],
    ["irc.local:0", "no valid port"],
    ["irc.local:70000", "no valid port"],
    ["10.0.0.0/33", "not a CIDR"],
    ["10.0.0.0/8:x", "not a CIDR"],
    ["::1:6667", "neither host:port nor CIDR"],
    ["10.0.0.0/8:99999", "no valid port"]
  ])("refuses %s (%s)", (entry, why) => {
    const parsed = parseExceptions(entry)
    expect("error" in parsed && parsed.error).toContain(why)
  })

  it("an empty list opens nothing", () => {
    expect(parse("")).toEqual([])
    expect(addressExcepted([], at("127.0.0.1"), 1)).toBe(false)
  })
})
