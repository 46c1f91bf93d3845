/**
 * AddressClass: what kind of address an IP address is, for the destination rules (docs/decisions/hosting.md "One
 * destination guard"): public, or one of the classes a member's connection must not reach under
 * `BELAY_PRIVATE_DESTINATIONS=deny`. Also reads a host as an IP literal in every form a resolver accepts, so that
 * `127.1`, `0x7f.1`, `2130706433`, `0177.0.0.1`, `[::1]` and `::ffff:127.0.0.1` are all known for what they are
 * before any lookup. Pure; safe from any fiber.
 *
 * ipaddr.js (whitequark) does the reading and the range tables: it parses the inet_aton forms (one to four parts,
 * octal and hex) the C library's resolver accepts, and knows the IANA special-purpose registries (RFC 6890).
 */
import ipaddr from "ipaddr.js"

export type Address = ipaddr.IPv4 | ipaddr.IPv6

/** The IPv4 address an IPv4-mapped IPv6 address stands for (`::ffff:127.0.0.1` is 127.0.0.1); undefined for any other. */
export const mappedIPv4 = (address: Address): ipaddr.IPv4 | undefined =>
  address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress() ? address.toIPv4Address() : undefined

/** Why an address is refused; `public` is not. Words as the refusal shows them. */
export type AddressClass =
  | "public"
  | "loopback"
  | "unspecified"
  | "private"
  | "carrier-grade NAT"
  | "link-local"
  | "unique-local"
  | "multicast"
  | "reserved"

/** How a refusal names each class (the RFC that sets the range aside, where one does). */
export const CLASS_DESCRIPTION: Readonly<Record<Exclude<AddressClass, "public">, string>> = {
  loopback: "a loopback address",
  unspecified: "the unspecified address",
  private: "a private address (RFC 1918)",
  "carrier-grade NAT": "a carrier-grade NAT address (RFC 6598)",
  "link-local": "a link-local address",
  "unique-local": "a unique-local address (RFC 4193)",
  multicast: "a multicast address",
  reserved: "a reserved address (RFC 6890)"
}

const IPV4_CLASSES: Readonly<Record<string, AddressClass>> = {
  unicast: "public",
  loopback: "loopback",
  unspecified: "unspecified",
  private: "private",
  carrierGradeNat: "carrier-grade NAT",
  linkLocal: "link-local",
  multicast: "multicast"
  // broadcast, reserved (documentation, benchmarking, 240/4), as112, amt …: reserved
}

const IPV6_CLASSES: Readonly<Record<string, AddressClass>> = {
  unicast: "public",
  loopback: "loopback",
  unspecified: "unspecified",
  linkLocal: "link-local",
  uniqueLocal: "unique-local",
  multicast: "multicast"
  // reserved (documentation), teredo, benchmarking, orchid2, deprecated site-local …: reserved
}

/**
 * IPv6 ranges that carry an IPv4 address a packet reaches in the end: IPv4-mapped (::ffff:0:0/96), IPv4-translated
 * (::ffff:0:0:0/96, RFC 6145), NAT64 (64:ff9b::/96, RFC 6052) and 6to4 (2002::/16, RFC 3056). Each is judged by the
 * IPv4 address inside it.
 */
const embeddedIpv4 = (address: ipaddr.IPv6): ipaddr.IPv4 | undefined => {
  const range = address.range()
  const bytes = address.toByteArray()
  if (range === "ipv4Mapped" || range === "rfc6145" || range === "rfc6052") {
    return new ipaddr.IPv4(bytes.slice(12, 16))
  }
  if (range === "6to4") return new ipaddr.IPv4(bytes.slice(2, 6))
  return undefined
}

export const classify = (address: Address): AddressClass => {
  if (address.kind() === "ipv4") return IPV4_CLASSES[address.range()] ?? "reserved"
  const v6 = address as ipaddr.IPv6
  const inner = embeddedIpv4(v6)
  if (inner !== undefined) return classify(inner)
  return IPV6_CLASSES[v6.range()] ?? "reserved"
}

/** `[::1]` → `::1`; a zone (`fe80::1%eth0`) is kept for the parser, which reads it. */
const unbracket = (host: string): string => host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host

/**
 * The address `host` writes, if it is an IP literal in any form (brackets allowed); undefined for a name. An IPv6
 * literal holding an IPv4 address stays IPv6 here (classify looks inside it).
 */
export const parseLiteral = (host: string): Address | undefined => {
  const text = unbracket(host.trim())
  if (text === "" || !ipaddr.isValid(text)) return undefined
  try {
    return ipaddr.parse(text)
  } catch {
    return undefined
  }
}

/**
 * Whether `host` is one of the names that always mean this machine (RFC 6761 §6.3: `localhost` and every name
 * under it), which a resolver answers without asking DNS.
 */
export const isLocalhostName = (host: string): boolean => {
  const name = host.trim().toLowerCase().replace(/\.$/, "")
  return name === "localhost" || name.endsWith(".localhost")
}

/** An address as a socket takes it (`::ffff:7f00:1`, never the bracketed or shortened forms). */
export const toSocketAddress = (address: Address): string => address.toString()

/** 4 or 6. */
export const familyOf = (address: Address): 4 | 6 => (address.kind() === "ipv4" ? 4 : 6)

/** Reads an address a resolver or a socket reported (always a canonical literal); undefined when it is not one. */
export const parseResolved = (text: string): Address | undefined => parseLiteral(text)
