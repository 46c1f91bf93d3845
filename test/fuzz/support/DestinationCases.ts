/**
 * Fuzzed network destinations for a Belay under BELAY_PRIVATE_DESTINATIONS=deny (docs/decisions/hosting.md "One
 * destination guard"): `POST /api/networks` with a body that is right in every member but `host`, which is an address
 * the guard refuses written in one of the forms a resolver reads — IPv4 as one to four parts, each decimal, octal or
 * hex (`0x7f.1`, `017700000001`, `2130706433`), IPv6 compressed or expanded, bracketed or not, with IPv4 inside
 * (mapped, translated, NAT64, 6to4), or a `localhost` name in any case, with a trailing dot or a label in front. The
 * judge: 400 `invalid_request` whose description starts `host:` and names a class; never a success, never a 5xx.
 */
import fc from "fast-check"
import type { RawOutcome, RawRequest } from "./RawHttp.js"

export interface DestinationCase extends RawRequest {
  readonly label: string
}

/** Refused IPv4 ranges as [first octet pattern, …]: each arbitrary makes one address inside. */
export const refusedIpv4: fc.Arbitrary<readonly [number, number, number, number]> = fc.oneof(
  fc.tuple(fc.constant(127), fc.nat(255), fc.nat(255), fc.nat(255)),
  fc.tuple(fc.constant(10), fc.nat(255), fc.nat(255), fc.nat(255)),
  fc.tuple(fc.constant(172), fc.integer({ min: 16, max: 31 }), fc.nat(255), fc.nat(255)),
  fc.tuple(fc.constant(192), fc.constant(168), fc.nat(255), fc.nat(255)),
  fc.tuple(fc.constant(100), fc.integer({ min: 64, max: 127 }), fc.nat(255), fc.nat(255)),
  fc.tuple(fc.constant(169), fc.constant(254), fc.nat(255), fc.nat(255)),
  fc.tuple(fc.constant(0), fc.nat(255), fc.nat(255), fc.nat(255)),
  fc.tuple(fc.integer({ min: 224, max: 255 }), fc.nat(255), fc.nat(255), fc.nat(255))
)

type Radix = "dec" | "oct" | "hex"
const inRadix = (n: number, radix: Radix) =>
  radix === "dec" ? String(n) : radix === "oct" ? `0${n.toString(8)}` : `0x${n.toString(16)}`

/** inet_aton's forms: a.b.c.d, a.b.cd (16 bits), a.bcd (24 bits), abcd (32 bits), each part in any radix. */
const ipv4Form = fc.tuple(refusedIpv4, fc.integer({ min: 1, max: 4 }), fc.array(fc.constantFrom<Radix>("dec", "oct", "hex"), { minLength: 4, maxLength: 4 }))
  .map(([[a, b, c, d], parts, radices]) => {
    const value = ((a << 24) >>> 0) + (b << 16) + (c << 8) + d
    const split = parts === 4
      ? [a, b, c, d]
      : parts === 3
      ? [a, b, (c << 8) + d]
      : parts === 2
      ? [a, (b << 16) + (c << 8) + d]
      : [value]
    return split.map((n, i) => inRadix(n, radices[i]!)).join(".")
  })

const hex4 = (n: number) => n.toString(16)
const v4Words = ([a, b, c, d]: readonly [number, number, number, number]) => [hex4((a << 8) | b), hex4((c << 8) | d)]

/** IPv6 forms of refused addresses, and IPv6 wrappings of refused IPv4 ones. */
const ipv6Form = fc.oneof(
  fc.constantFrom("::1", "0:0:0:0:0:0:0:1", "::", "fe80::1", "fe80::abcd:1", "fd00::1", "fc12:3456::9", "ff02::1", "2001:db8::1"),
  refusedIpv4.map((v4) => `::ffff:${v4.join(".")}`),
  refusedIpv4.map((v4) => `::ffff:${v4Words(v4).join(":")}`),
  refusedIpv4.map((v4) => `::ffff:0:${v4.join(".")}`),
  refusedIpv4.map((v4) => `64:ff9b::${v4Words(v4).join(":")}`),
  refusedIpv4.map((v4) => `2002:${v4Words(v4).join(":")}::1`)
).chain((text) => fc.constantFrom(text, `[${text}]`, text.toUpperCase()))

const localhostForm = fc.tuple(
  fc.option(fc.stringMatching(/^[a-z0-9]{1,12}$/), { nil: undefined }),
  fc.constantFrom("localhost", "LOCALHOST", "LocalHost"),
  fc.boolean()
).map(([label, name, dot]) => `${label === undefined ? "" : `${label}.`}${name}${dot ? "." : ""}`)

/** A host the guard must refuse under `deny`, in one of the forms above. */
export const refusedHost: fc.Arbitrary<string> = fc.oneof(ipv4Form, ipv6Form, localhostForm)

export const destinationCase = (bearer: string): fc.Arbitrary<DestinationCase> =>
  fc.tuple(refusedHost, fc.integer({ min: 1, max: 65535 }), fc.boolean()).map(([host, port, tls]) => ({
    method: "POST",
    path: "/api/networks",
    headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
    body: Buffer.from(JSON.stringify({ name: "fuzz-destination", host, port, tls, nick: "alice" })),
    label: `destination ${host}:${port}`
  }))

const CLASS_WORDS = /loopback|unspecified|private|carrier-grade NAT|link-local|unique-local|multicast|reserved/

/** What is wrong with the answer, or undefined when it is the refusal the guard owes. */
export const judgeDestination = (_request: DestinationCase, outcome: RawOutcome): string | undefined => {
  if (outcome._tag === "Transport") return `no answer: ${outcome.message}`
  if (outcome.status !== 400) return `status ${outcome.status}: ${outcome.body.toString("utf8").slice(0, 200)}`
  let json: Record<string, unknown>
  try {
    json = JSON.parse(outcome.body.toString("utf8")) as Record<string, unknown>
  } catch {
    return "the refusal is not JSON"
  }
  const description = String(json["error_description"] ?? "")
  if (json["error"] !== "invalid_request") return `error ${String(json["error"])}`
  if (!description.startsWith("host: ") || !CLASS_WORDS.test(description)) return `description ${description.slice(0, 200)}`
  return undefined
}

/**
 * An address a resolver may answer (always a plain literal, never bracketed nor in inet_aton's short forms) that the
 * guard refuses: a refused IPv4 address, or an IPv6 one — refused itself, or carrying a refused IPv4 address
 * (mapped, translated, NAT64, 6to4).
 */
export const refusedAnswer: fc.Arbitrary<string> = fc.oneof(
  refusedIpv4.map((v4) => v4.join(".")),
  fc.constantFrom("::1", "::", "fe80::1", "fd00::1", "fc12:3456::9", "ff02::1", "2001:db8::1", "100::1"),
  refusedIpv4.map((v4) => `::ffff:${v4.join(".")}`),
  refusedIpv4.map((v4) => `::ffff:${v4Words(v4).join(":")}`),
  refusedIpv4.map((v4) => `64:ff9b::${v4Words(v4).join(":")}`),
  refusedIpv4.map((v4) => `2002:${v4Words(v4).join(":")}::1`)
)

/** Addresses the guard lets a member reach (public unicast, both families). */
export const publicAnswer: fc.Arbitrary<string> = fc.constantFrom(
  "8.8.8.8", "1.1.1.1", "9.9.9.9", "208.67.222.222", "2001:4860:4860::8888", "2606:4700:4700::1111", "2620:fe::fe"
)
