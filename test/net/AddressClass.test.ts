import { describe, expect, it } from "@effect/vitest"
import { type AddressClass, classify, isLocalhostName, mappedIPv4, parseLiteral } from "../../src/net/AddressClass.js"

/** Every literal form a resolver reads, with the address it writes and its class (docs/decisions/hosting.md). */
const LITERALS: ReadonlyArray<readonly [string, string, AddressClass]> = [
  ["127.0.0.1", "127.0.0.1", "loopback"],
  ["127.1", "127.0.0.1", "loopback"],
  ["0x7f.1", "127.0.0.1", "loopback"],
  ["0x7f000001", "127.0.0.1", "loopback"],
  ["2130706433", "127.0.0.1", "loopback"],
  ["0177.0.0.1", "127.0.0.1", "loopback"],
  ["127.255.255.254", "127.255.255.254", "loopback"],
  ["[::1]", "::1", "loopback"],
  ["::1", "::1", "loopback"],
  ["[::ffff:127.0.0.1]", "::ffff:7f00:1", "loopback"],
  ["::ffff:7f00:1", "::ffff:7f00:1", "loopback"],
  ["::ffff:0:127.0.0.1", "::ffff:0:7f00:1", "loopback"],
  ["64:ff9b::7f00:1", "64:ff9b::7f00:1", "loopback"],
  ["2002:7f00:1::", "2002:7f00:1::", "loopback"],
  ["0.0.0.0", "0.0.0.0", "unspecified"],
  ["0", "0.0.0.0", "unspecified"],
  ["[::]", "::", "unspecified"],
  ["10.1.2.3", "10.1.2.3", "private"],
  ["172.16.0.1", "172.16.0.1", "private"],
  ["192.168.1.1", "192.168.1.1", "private"],
  ["0xc0.0xa8.1.1", "192.168.1.1", "private"],
  ["3232235777", "192.168.1.1", "private"],
  ["::ffff:10.0.0.1", "::ffff:a00:1", "private"],
  ["100.64.0.1", "100.64.0.1", "carrier-grade NAT"],
  ["169.254.169.254", "169.254.169.254", "link-local"],
  ["[fe80::1]", "fe80::1", "link-local"],
  ["fe80::1%eth0", "fe80::1%eth0", "link-local"],
  ["fd00::1", "fd00::1", "unique-local"],
  ["fc00::1", "fc00::1", "unique-local"],
  ["224.0.0.1", "224.0.0.1", "multicast"],
  ["ff02::1", "ff02::1", "multicast"],
  ["240.0.0.1", "240.0.0.1", "reserved"],
  ["255.255.255.255", "255.255.255.255", "reserved"],
  ["192.0.2.1", "192.0.2.1", "reserved"],
  ["198.18.0.1", "198.18.0.1", "reserved"],
  ["2001:db8::1", "2001:db8::1", "reserved"],
  ["8.8.8.8", "8.8.8.8", "public"],
  ["1.2.3", "1.2.0.3", "public"],
  ["[2001:4860:4860::8888]", "2001:4860:4860::8888", "public"],
  ["::ffff:8.8.8.8", "::ffff:808:808", "public"],
  ["64:ff9b::808:808", "64:ff9b::808:808", "public"]
]

describe("AddressClass", () => {
  it.each(LITERALS)("%s is %s, %s", (host, address, expected) => {
    const parsed = parseLiteral(host)
    expect(parsed?.toString()).toBe(address)
    expect(classify(parsed!)).toBe(expected)
  })

  it.each(["irc.libera.chat", "localhost", "example.com.", "999.1.1.1", "[irc.example]", "1.2.3.4.5", ""])(
    "%s is a name, not a literal",
    (host) => expect(parseLiteral(host)).toBeUndefined()
  )

  it.each([["localhost", true], ["LOCALHOST.", true], ["a.b.localhost", true], ["localhost.example", false], [
    "notlocalhost",
    false
  ]] as const)("%s is a localhost name: %s", (host, expected) => expect(isLocalhostName(host)).toBe(expected))

  it("an IPv4-mapped IPv6 address stands for its IPv4 address; no other address does", () => {
    const of = (literal: string) => mappedIPv4(parseLiteral(literal)!)?.toString()
    expect(of("::ffff:127.0.0.1")).toBe("127.0.0.1")
    expect(of("[::ffff:7f00:1]")).toBe("127.0.0.1")
    expect(of("127.0.0.1")).toBeUndefined()
    expect(of("::1")).toBeUndefined()
    expect(of("2001:db8::1")).toBeUndefined()
  })
})
