/**
 * ClientIp owns which address an HTTP request is counted against by rate limits (the key of that address is
 * net/RateLimitKey.ts, shared with the IRC listener). Pure; safe from any fiber.
 *
 * Without `BELAY_TRUST_PROXY` it is the TCP peer, whatever `X-Forwarded-For` says, so
 * behind an untrusted proxy every client shares one bucket (interface "Authentication"
 * 9). With it, it is the address the proxy appended: the right-most `X-Forwarded-For`
 * entry, never the left-most, which the client writes itself.
 */
import * as Net from "node:net"
import { unmapIpv4 } from "../net/IpAddress.js"
import type { HttpRequest } from "./Route.js"

export const clientIp = (request: HttpRequest, trustProxy: boolean): string => {
  const peer = unmapIpv4(request.remoteAddress)
  if (!trustProxy) return peer
  const forwarded = request.header("x-forwarded-for")
  if (forwarded === undefined) return peer
  const hops = forwarded.split(",").map((hop) => hop.trim()).filter((hop) => hop !== "")
  const last = hops[hops.length - 1]
  return last !== undefined && Net.isIP(last) !== 0 ? unmapIpv4(last) : peer
}
