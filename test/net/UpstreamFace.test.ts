import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import ipaddr from "ipaddr.js"
import {
  IDENT_MAX_ACCOUNT,
  identOf,
  parseSourceRange,
  type SourceRange,
  sourceAddressOf
} from "../../src/net/UpstreamFace.js"

const range = (text: string): SourceRange => {
  const parsed = parseSourceRange(text)
  if ("error" in parsed) throw new Error(parsed.error)
  return parsed
}
const addressOf = (r: SourceRange, id: number) => {
  const drawn = sourceAddressOf(r, id)
  return "address" in drawn ? drawn.address : undefined
}

describe("UpstreamFace", () => {
  it.each([
    [1, "b1"],
    [35, "bz"],
    [36, "b10"],
    [1296, "b100"],
    [IDENT_MAX_ACCOUNT, "bzzzzzzzz"]
  ])("account %i has the ident %s", (id, ident) => {
    expect(identOf(id)).toBe(ident)
  })

  it.each([0, -1, 1.5, IDENT_MAX_ACCOUNT + 1, Number.MAX_SAFE_INTEGER + 2, NaN])("account %s has no ident", (id) => {
    expect(identOf(id)).toBeUndefined()
  })

  it("gives every account an ident of letters and digits, at most 9 long, and no two the same", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: IDENT_MAX_ACCOUNT }), fc.integer({ min: 1, max: IDENT_MAX_ACCOUNT }), (a, b) => {
        const ia = identOf(a)!
        expect(ia).toMatch(/^[a-z][a-z0-9]{1,8}$/)
        expect(ia === identOf(b)).toBe(a === b)
      }),
      { numRuns: 2000 }
    )
  })

  it.each([
    ["127.0.0.0/8", 1, "127.0.0.1"],
    ["127.0.0.0/8", 2, "127.0.0.2"],
    ["127.0.0.0/8", 256, "127.0.1.0"],
    ["192.0.2.77/24", 5, "192.0.2.5"],
    ["192.0.2.0/24", 254, "192.0.2.254"],
    ["192.0.2.0/31", 1, "192.0.2.1"],
    ["2001:db8:5::/64", 1, "2001:db8:5::1"],
    ["2001:DB8:5::/64", 65536, "2001:db8:5::1:0"],
    ["2001:db8::/127", 1, "2001:db8::1"]
  ])("%s gives account %i the address %s", (text, id, address) => {
    expect(addressOf(range(text), id)).toBe(address)
  })

  it.each([
    ["192.0.2.0/24", 255, "holds accounts 1 to 254"],
    ["192.0.2.0/30", 3, "holds accounts 1 to 2"],
    ["192.0.2.0/31", 2, "holds accounts 1 to 1"],
    ["2001:db8::/120", 256, "holds accounts 1 to 255"]
  ])("%s has no address for account %i", (text, id, why) => {
    const drawn = sourceAddressOf(range(text), id)
    expect("error" in drawn && drawn.error).toContain(why)
    expect("error" in drawn && drawn.error).toContain(`account ${id}`)
  })

  it.each([
    ["192.0.2.1", "CIDR"],
    ["192.0.2.0/33", "CIDR"],
    ["irc.example/24", "CIDR"],
    ["192.0.2.0/32", "at least one member"],
    ["2001:db8::1/128", "at least one member"],
    ["::ffff:192.0.2.0/120", "IPv4 form"],
    ["10.0.0.0/8, 10.1.0.0/16", "CIDR"],
    ["", "CIDR"]
  ])("refuses %j (%s)", (text, why) => {
    const parsed = parseSourceRange(text)
    expect("error" in parsed && parsed.error).toContain(why)
  })

  it("draws distinct addresses inside the range, never its network or IPv4 broadcast address", () => {
    const ranges = ["10.0.0.0/8", "192.0.2.0/24", "198.51.100.0/22", "2001:db8::/64", "2001:db8::/112"].map(range)
    fc.assert(
      fc.property(
        fc.constantFrom(...ranges),
        fc.integer({ min: 1, max: 2 ** 24 }),
        fc.integer({ min: 1, max: 2 ** 24 }),
        (r, a, b) => {
          const [net, prefix] = ipaddr.parseCIDR(r.text)
          const first = addressOf(r, a)
          const second = addressOf(r, b)
          expect(first === undefined).toBe(BigInt(a) > r.capacity)
          if (first === undefined) return
          const parsed = ipaddr.parse(first)
          expect(parsed.match(net, prefix)).toBe(true)
          expect(first).not.toBe(net.toString())
          if (r.family === 4 && prefix <= 30) {
            expect(first).not.toBe(ipaddr.IPv4.broadcastAddressFromCIDR(r.text).toString())
          }
          if (second !== undefined) expect(first === second).toBe(a === b)
        }
      ),
      { numRuns: 3000 }
    )
  })
})
