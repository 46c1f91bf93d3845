/**
 * ClientIp owns which address a request is counted against by rate limits. Pure; safe
 * from any fiber.
 *
 * Without `BELAY_TRUST_PROXY` it is the TCP peer, whatever `X-Forwarded-For` says, so
 * behind an untrusted proxy every client shares one bucket (interface "Authentication"
 * 9). With it, it is the address the proxy appended: the right-most `X-Forwarded-For`
 * entry, never the left-most, which the client writes itself.
 */
import * as Net from "node:net"
import type { HttpRequest } from "./HttpServer.js"

/** `::ffff:192.0.2.1` is an IPv4 client on a dual-stack socket. */
const unmapIpv4 = (address: string): string => {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  return mapped?.[1] ?? address
}

export const clientIp = (request: HttpRequest, trustProxy: boolean): string => {
  const peer = unmapIpv4(request.remoteAddress)
  if (!trustProxy) return peer
  const forwarded = request.header("x-forwarded-for")
  if (forwarded === undefined) return peer
  const hops = forwarded.split(",").map((hop) => hop.trim()).filter((hop) => hop !== "")
  const last = hops[hops.length - 1]
  return last !== undefined && Net.isIP(last) !== 0 ? unmapIpv4(last) : peer
}

/** Expands an IPv6 address to its eight 16-bit groups. */
const ipv6Groups = (address: string): Array<number> | undefined => {
  const zoneless = address.split("%")[0] ?? address
  let text = zoneless
  // a trailing dotted IPv4 part counts as two groups
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number]
    text = text.slice(0, v4.index) + ((a << 8) | b).toString(16) + ":" + ((c << 8) | d).toString(16)
  }
  const [head = "", tail] = text.split("::")
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((g) => parseInt(g, 16)))
  const left = parse(head)
  const right = tail === undefined ? [] : parse(tail)
  const fill = 8 - left.length - right.length
  if (fill < 0 || (tail === undefined && fill !== 0)) return undefined
  const groups = [...left, ...Array<number>(fill).fill(0), ...right]
  return groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined
}

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
