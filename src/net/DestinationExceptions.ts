/**
 * DestinationExceptions: the destinations an operator opens even under `BELAY_PRIVATE_DESTINATIONS=deny`
 * (`BELAY_DESTINATION_EXCEPTIONS`, docs/contract.md "Names"): a comma list of `host:port` (a name, or an address,
 * IPv6 in brackets) or `CIDR[:port]` (`10.0.0.0/8`, `127.0.0.1/32:6667`, `[fd00::]/8:6697`). A name matches the
 * network's host as written (case-insensitive) and then opens every address it resolves to; an address or CIDR
 * matches the address a connection would go to. Pure; safe from any fiber.
 */
import ipaddr from "ipaddr.js"
import { type Address, mappedIPv4, parseLiteral } from "./AddressClass.js"

export type DestinationException =
  | { readonly _tag: "Name"; readonly name: string; readonly port: number }
  | { readonly _tag: "Range"; readonly range: [Address, number]; readonly port: number | null }

const PORT = /^\d{1,5}$/

const portOf = (text: string): number | undefined => {
  if (!PORT.test(text)) return undefined
  const port = Number(text)
  return port >= 1 && port <= 65535 ? port : undefined
}

/** `[addr]/len`, `addr/len`, `[addr/len]` → the range; undefined when not a CIDR. */
const parseRange = (text: string): [Address, number] | undefined => {
  const cidr = text.replace(/^\[([^\]]+)\](\/\d+)$/, "$1$2").replace(/^\[([^\]]+\/\d+)\]$/, "$1")
  if (!ipaddr.isValidCIDR(cidr)) return undefined
  try {
    return ipaddr.parseCIDR(cidr)
  } catch {
    return undefined
  }
}

/** One entry, or why it is not one. */
const parseEntry = (entry: string): DestinationException | string => {
  const slash = entry.indexOf("/")
  if (slash >= 0) {
    // CIDR, then an optional `:port` after the prefix length.
    const withPort = /^(.*\/\d{1,3})(?::(\d+))?$/.exec(entry)
    const range = withPort !== null ? parseRange(withPort[1]!) : undefined
    if (withPort === null || range === undefined) return `"${entry}" is not a CIDR range`
    if (withPort[2] === undefined) return { _tag: "Range", range, port: null }
    const port = portOf(withPort[2])
    return port === undefined ? `"${entry}" has no valid port` : { _tag: "Range", range, port }
  }
  const hostPort = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(entry)
  if (hostPort === null) return `"${entry}" is neither host:port nor CIDR[:port]`
  const port = portOf(hostPort[2]!)
  if (port === undefined) return `"${entry}" has no valid port`
  const literal = parseLiteral(hostPort[1]!)
  if (literal !== undefined) {
    return { _tag: "Range", range: [literal, literal.kind() === "ipv4" ? 32 : 128], port }
  }
  return { _tag: "Name", name: hostPort[1]!.toLowerCase().replace(/\.$/, ""), port }
}

/** Every entry of the comma list, or the first that is not one. */
export const parseExceptions = (list: string): { readonly exceptions: ReadonlyArray<DestinationException> } | {
  readonly error: string
} => {
  const exceptions: Array<DestinationException> = []
  for (const raw of list.split(",")) {
    const entry = raw.trim()
    if (entry === "") continue
    const parsed = parseEntry(entry)
    if (typeof parsed === "string") return { error: parsed }
    exceptions.push(parsed)
  }
  return { exceptions }
}

/** An IPv4 address and its IPv4-mapped IPv6 form are one destination. */
const sameFamily = (address: Address, range: Address): Address | undefined => {
  if (address.kind() === range.kind()) return address
  const mapped = mappedIPv4(address)
  if (mapped !== undefined) return mapped
  if (address instanceof ipaddr.IPv4) return address.toIPv4MappedAddress()
  return undefined
}

/** Whether the name as the network writes it is opened on `port`. */
export const nameExcepted = (exceptions: ReadonlyArray<DestinationException>, host: string, port: number): boolean => {
  const name = host.trim().toLowerCase().replace(/\.$/, "")
  return exceptions.some((e) => e._tag === "Name" && e.name === name && e.port === port)
}

/** Whether `address` is opened on `port`. */
export const addressExcepted = (
  exceptions: ReadonlyArray<DestinationException>,
  address: Address,
  port: number
): boolean =>
  exceptions.some((e) => {
    if (e._tag !== "Range" || (e.port !== null && e.port !== port)) return false
    const comparable = sameFamily(address, e.range[0])
    if (comparable === undefined) return false
    return comparable.kind() === "ipv4"
      ? (comparable as ipaddr.IPv4).match(e.range as [ipaddr.IPv4, number])
      : (comparable as ipaddr.IPv6).match(e.range as [ipaddr.IPv6, number])
  })
