import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { clientIp } from "../../src/http/ClientIp.js"
import { rateLimitKey } from "../../src/net/RateLimitKey.js"
import type { HttpRequest } from "../../src/http/HttpServer.js"

const request = (remoteAddress: string, xff?: string): HttpRequest => ({
  method: "POST",
  path: "/",
  params: {},
  query: new URLSearchParams(),
  headers: {},
  remoteAddress,
  body: () => Effect.succeed(Buffer.alloc(0)),
  header: (name) => (name === "x-forwarded-for" ? xff : undefined)
})

describe("clientIp", () => {
  it.each([
    ["untrusted: the socket, whatever X-Forwarded-For says", "10.0.0.2", "1.2.3.4", false, "10.0.0.2"],
    ["an IPv4-mapped socket address is IPv4", "::ffff:192.0.2.7", undefined, false, "192.0.2.7"],
    ["trusted: the right-most hop, which the proxy appended", "10.0.0.2", "1.2.3.4, 203.0.113.9", true, "203.0.113.9"],
    ["trusted, no header: the socket", "10.0.0.2", undefined, true, "10.0.0.2"],
    ["trusted, a garbage hop: the socket", "10.0.0.2", "1.2.3.4, not-an-ip", true, "10.0.0.2"],
    ["trusted IPv6 hop", "10.0.0.2", "2001:db8::1", true, "2001:db8::1"]
  ] as const)("%s", (_name, socket, xff, trust, expected) => {
    expect(clientIp(request(socket, xff), trust)).toBe(expected)
  })
})

describe("rateLimitKey", () => {
  it.each([
    ["IPv4 as is", "192.0.2.1", "192.0.2.1"],
    ["IPv6 by /56", "2001:db8:1:2345:6789::1", "2001:db8:1:2300::/56"],
    ["same /56, same key", "2001:db8:1:23ff:ffff:ffff:ffff:ffff", "2001:db8:1:2300::/56"],
    ["compressed forms expand", "2001:db8::1", "2001:db8:0:0::/56"],
    ["loopback", "::1", "0:0:0:0::/56"]
  ] as const)("%s", (_name, address, key) => {
    expect(rateLimitKey(address)).toBe(key)
  })
})
