/**
 * IpAddress: the textual forms of IP addresses, read into numbers — what the rate limits key on (RateLimitKey.ts) and
 * what the destination rules classify. Pure; no I/O, safe from any fiber.
 */

/** `::ffff:192.0.2.1` is an IPv4 client on a dual-stack socket. */
export const unmapIpv4 = (address: string): string => {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  return mapped?.[1] ?? address
}

/** Expands an IPv6 address to its eight 16-bit groups. */
export const ipv6Groups = (address: string): Array<number> | undefined => {
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
