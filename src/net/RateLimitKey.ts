/**
 * RateLimitKey: the bucket a client address is counted in by every per-address limit, the web's and the IRC
 * listener's alike, so that one client is one bucket whichever door it knocks at. Pure; safe from any fiber.
 */
import * as Net from "node:net"
import { ipv6Groups } from "./IpAddress.js"

/**
 * The bucket an address is counted in: an IPv4 address as is, an IPv6 address by its /56
 * prefix (one customer site is usually given a /56 or /48; counting single IPv6 addresses
 * would let one host rotate through 2^64 of them; express-rate-limit 8 defaults to /56).
 */
export const rateLimitKey = (address: string): string => {
  if (Net.isIPv6(address)) {
    const groups = ipv6Groups(address)
    if (groups !== undefined) {
      const [g0, g1, g2, g3] = groups as [number, number, number, number]
      return `${g0.toString(16)}:${g1.toString(16)}:${g2.toString(16)}:${(g3 & 0xff00).toString(16)}::/56`
    }
  }
  return address
}
