/**
 * UpstreamFace: what an IRC network sees of one member — the ident Belay's ident server answers for the member's
 * connections, and the source address they leave from when `BELAY_UPSTREAM_SOURCE` gives a range
 * (docs/decisions/hosting.md "Each member their own face upstream"). Both are functions of the account id alone:
 * the same on every node and after every reconnect, never shared by two accounts. Pure; safe from any fiber.
 */
import ipaddr from "ipaddr.js"
import { mappedIPv4 } from "./AddressClass.js"

/** `b` and the id in base 36: letters and digits, at most this long (see identOf). */
export const IDENT_MAX_LENGTH = 9
/** The largest account id that has an ident: `b` + 8 base-36 digits. */
export const IDENT_MAX_ACCOUNT = 36 ** (IDENT_MAX_LENGTH - 1) - 1

/**
 * The member's ident: `b` followed by the account id in lower-case base 36 (`b1`, `b2s`, `bzzzzzzzz`). Distinct ids
 * give distinct idents (a base is a bijection); ids are never reused, so a new member never inherits a departed
 * one's ident, nor a ban on it. Letters and digits only, starting with a letter, at most 9 characters: ngircd keeps
 * nothing else and servers built to RFC 2812 §1.2.1 keep 9. Undefined past IDENT_MAX_ACCOUNT (no ident is then
 * answered, rather than one that could repeat).
 */
export const identOf = (accountId: number): string | undefined =>
  Number.isSafeInteger(accountId) && accountId >= 1 && accountId <= IDENT_MAX_ACCOUNT
    ? `b${accountId.toString(36)}`
    : undefined

/** A range of source addresses (BELAY_UPSTREAM_SOURCE), its network address and how many members it holds. */
export interface SourceRange {
  /** The range as `network/prefix`, for messages. */
  readonly text: string
  readonly family: 4 | 6
  /** The network address, as an integer. */
  readonly base: bigint
  /** The largest account id the range gives an address to (account id n takes base + n). */
  readonly capacity: bigint
}

const bytesToBigInt = (bytes: ReadonlyArray<number>): bigint => bytes.reduce((n, b) => (n << 8n) | BigInt(b), 0n)

const bigIntToAddress = (value: bigint, family: 4 | 6): string => {
  const length = family === 4 ? 4 : 16
  const bytes: Array<number> = []
  let rest = value
  for (let i = 0; i < length; i++) {
    bytes.unshift(Number(rest & 0xffn))
    rest >>= 8n
  }
  return ipaddr.fromByteArray(bytes).toString()
}

/**
 * Reads `BELAY_UPSTREAM_SOURCE`: an IPv4 or IPv6 CIDR (`192.0.2.0/24`, `2001:db8:5::/64`); host bits given are
 * ignored (the range is the one the prefix names). Refused: anything else, an IPv4-mapped IPv6 range (write the IPv4
 * one) and a range with no address for any member.
 */
export const parseSourceRange = (raw: string): SourceRange | { readonly error: string } => {
  const text = raw.trim()
  if (!/^[0-9A-Fa-f:.]+\/\d{1,3}$/.test(text) || !ipaddr.isValidCIDR(text)) {
    return { error: `must be an IPv4 or IPv6 CIDR such as 192.0.2.0/24 or 2001:db8::/64, got ${JSON.stringify(raw)}` }
  }
  const [address, prefix] = ipaddr.parseCIDR(text)
  if (mappedIPv4(address) !== undefined) {
    return { error: `must name an IPv4 range in its IPv4 form, got ${JSON.stringify(raw)}` }
  }
  const family = address.kind() === "ipv4" ? 4 : 6
  const bits = family === 4 ? 32 : 128
  const hostBits = BigInt(bits - prefix)
  const size = 1n << hostBits
  const base = (bytesToBigInt(address.toByteArray()) >> hostBits) << hostBits
  // Offset 0 is the network address (the IPv6 Subnet-Router anycast address, RFC 4291 §2.6.1) and ids start at 1; an
  // IPv4 range of four or more also keeps its broadcast address (the last) out.
  const capacity = family === 4 && hostBits >= 2n ? size - 2n : size - 1n
  if (capacity < 1n) {
    return { error: `must hold an address for at least one member (a /${prefix} holds none), got ${JSON.stringify(raw)}` }
  }
  return { text: `${bigIntToAddress(base, family)}/${prefix}`, family, base, capacity }
}

/**
 * The member's source address: the range's network address plus the account id. Distinct ids give distinct
 * addresses, and an id beyond the range's capacity gets none (the caller refuses to connect: sharing an address,
 * or leaving from the node's own, would put one member's bans on another).
 */
export const sourceAddressOf = (
  range: SourceRange,
  accountId: number
): { readonly address: string } | { readonly error: string } => {
  if (!Number.isSafeInteger(accountId) || accountId < 1 || BigInt(accountId) > range.capacity) {
    return {
      error: `no upstream source address for account ${accountId}: BELAY_UPSTREAM_SOURCE ${range.text} holds accounts 1 to ${range.capacity}`
    }
  }
  return { address: bigIntToAddress(range.base + BigInt(accountId), range.family) }
}
