/**
 * DestinationGuard owns the one question every connection Belay opens on a member's behalf asks first — an IRC
 * network (every connect and reconnect), a Web Push endpoint, a fetched document: may it go there, and to which
 * address exactly (docs/decisions/hosting.md "One destination guard").
 *
 * Under `BELAY_PRIVATE_DESTINATIONS=deny` (the hosted default) it resolves the name once, refuses when any of its
 * addresses is loopback, unspecified, private, carrier-grade NAT, link-local, unique-local, multicast or reserved
 * (IPv4-mapped and -translated IPv6 forms judged by the IPv4 inside), or one of this node's own interface
 * addresses, and hands back the address it checked: the caller connects to that address and no other, so a name
 * that answers differently a moment later (DNS rebinding) cannot slip through; TLS still verifies the name. A
 * literal in any form a resolver reads (`127.1`, `0x7f.1`, `2130706433`, `[::1]`, `::ffff:127.0.0.1`) and the
 * `localhost` names are judged without a lookup. `BELAY_DESTINATION_EXCEPTIONS` opens named destinations.
 * Under `allow` (self-hosted) nothing is refused, and the caller connects by name as before (unless it needs one
 * family of addresses: see `check`).
 *
 * Concurrency: stateless but for a short-lived copy of the node's interface addresses; safe from any fiber.
 */
import * as Dns from "node:dns"
import * as Os from "node:os"
import { Context, Data, Duration, Effect } from "effect"
import {
  type Address,
  type AddressClass,
  CLASS_DESCRIPTION,
  classify,
  familyOf,
  isLocalhostName,
  mappedIPv4,
  parseLiteral,
  parseResolved,
  toSocketAddress
} from "../../net/AddressClass.js"
import { addressExcepted, nameExcepted } from "../../net/DestinationExceptions.js"
import { AppConfig } from "../AppConfig.js"

/** A destination the rules refuse: the address it would have reached, and why. */
export class DestinationRefused extends Data.TaggedError("DestinationRefused")<{
  readonly host: string
  readonly port: number
  readonly address: string
  readonly addressClass: Exclude<AddressClass, "public"> | "own"
}> {
  override get message(): string {
    const what = this.addressClass === "own" ? "an address of this node" : CLASS_DESCRIPTION[this.addressClass]
    const via = this.address === this.host ? this.host : `${this.host} (${this.address})`
    return `${via} is ${what}, which this instance does not connect to for members (BELAY_PRIVATE_DESTINATIONS=deny)`
  }
}

/** The name did not resolve (or not in time): an ordinary connection failure, retried as any other. */
export class DestinationUnresolved extends Data.TaggedError("DestinationUnresolved")<{
  readonly host: string
  readonly reason: string
}> {
  override get message(): string {
    return `could not resolve ${this.host}: ${this.reason}`
  }
}

/**
 * Where to connect. `address` null: not checked (allow mode), connect by name. Otherwise connect to `address` and
 * nothing else; `name` stays the TLS server name and the Host header.
 */
export interface PinnedDestination {
  readonly name: string
  readonly port: number
  readonly address: string | null
  readonly family: 4 | 6 | null
}

/** A lookup that takes longer is a failure: a member's name must not hold a connect attempt for long. */
export const LOOKUP_TIMEOUT = Duration.seconds(5)
/** How long the node's own interface addresses are kept before they are read again (DHCP, hotplug). */
const OWN_ADDRESSES_TTL_MS = 30_000

/** `[::1]` → `::1`: a bracketed literal is the address it writes, not a name to look up. */
const bareHost = (host: string): string => {
  const trimmed = host.trim()
  return trimmed.startsWith("[") && trimmed.endsWith("]") ? trimmed.slice(1, -1) : trimmed
}

/**
 * Every address a name resolves to, in the resolver's order, or the resolver's error code; with `family`, only the
 * addresses of that family (getaddrinfo's AF_INET or AF_INET6).
 */
export type NameLookupService = (
  host: string,
  done: (error: string | null, addresses: ReadonlyArray<string>) => void,
  family?: 4 | 6
) => void

const systemLookup: NameLookupService = (host, done, family) =>
  Dns.lookup(host, { all: true, verbatim: true, family: family ?? 0 }, (error, addresses) =>
    done(error ? (error.code ?? error.message) : null, error ? [] : addresses.map((a) => a.address)))

/** How names are resolved: the system resolver (getaddrinfo); tests swap in answers of their own (a rebinding name). */
export class NameLookup extends Context.Reference<NameLookup>()("belay/NameLookup", {
  defaultValue: (): NameLookupService => systemLookup
}) {}

/** Why a name has no address to use when a family is required: said the way a refusal of the family reads. */
const noAddressOf = (family: 4 | 6) => `no IPv${family} address`

const lookupAll = (lookup: NameLookupService, host: string, family: 4 | 6 | undefined) =>
  Effect.async<ReadonlyArray<string>, DestinationUnresolved>((resume) => {
    lookup(host, (error, addresses) => {
      // A name with addresses of the other family only: getaddrinfo says ENOTFOUND or ENODATA (EAI_NONAME,
      // EAI_NODATA), which reads as if the name did not exist.
      if (error !== null && family !== undefined && (error === "ENOTFOUND" || error === "ENODATA")) {
        resume(Effect.fail(new DestinationUnresolved({ host, reason: `${noAddressOf(family)} (${error})` })))
      } else if (error !== null) resume(Effect.fail(new DestinationUnresolved({ host, reason: error })))
      else if (addresses.length === 0) {
        resume(Effect.fail(new DestinationUnresolved({ host, reason: family === undefined ? "no address" : noAddressOf(family) })))
      } else resume(Effect.succeed(addresses))
    }, family)
  }).pipe(
    Effect.timeoutFail({
      duration: LOOKUP_TIMEOUT,
      onTimeout: () => new DestinationUnresolved({ host, reason: `no answer within ${Duration.format(LOOKUP_TIMEOUT)}` })
    })
  )

export class DestinationGuard extends Effect.Service<DestinationGuard>()("belay/DestinationGuard", {
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const deny = config.privateDestinations === "deny"
    const exceptions = config.destinationExceptions
    const lookup = yield* NameLookup
    // The start-up log says which rule holds, so an operator sees it without reading the environment.
    yield* Effect.logInfo(
      deny
        ? "member connections: private and local addresses refused (BELAY_PRIVATE_DESTINATIONS=deny)"
        : "member connections: every address allowed (BELAY_PRIVATE_DESTINATIONS=allow)"
    ).pipe(Effect.annotateLogs({ privateDestinations: config.privateDestinations, exceptions: exceptions.length }))

    let own: { readonly at: number; readonly addresses: ReadonlySet<string> } | undefined
    /** The node's own addresses, canonical; an IPv4 one also as its IPv4-mapped form. */
    const ownAddresses = (): ReadonlySet<string> => {
      const now = Date.now()
      if (own !== undefined && now - own.at < OWN_ADDRESSES_TTL_MS) return own.addresses
      const addresses = new Set<string>()
      for (const list of Object.values(Os.networkInterfaces())) {
        for (const entry of list ?? []) {
          const parsed = parseResolved(entry.address.split("%")[0]!)
          if (parsed !== undefined) addresses.add(canonical(parsed))
        }
      }
      own = { at: now, addresses }
      return addresses
    }

    /** One form per destination: IPv4-mapped IPv6 compares as the IPv4 address. */
    const canonical = (address: Address): string => (mappedIPv4(address) ?? address).toString()

    /** Why `address` may not be reached on `port`, if it may not. */
    const judge = (host: string, port: number, address: Address): DestinationRefused | undefined => {
      if (addressExcepted(exceptions, address, port)) return undefined
      const addressClass = classify(address)
      const text = toSocketAddress(address)
      if (addressClass !== "public") return new DestinationRefused({ host, port, address: text, addressClass })
      if (ownAddresses().has(canonical(address))) {
        return new DestinationRefused({ host, port, address: text, addressClass: "own" })
      }
      return undefined
    }

    /** Whether a literal is of `family` (or none is required); if not, why it cannot be used. */
    const ofFamily = (host: string, address: Address, family: 4 | 6 | undefined): Effect.Effect<void, DestinationUnresolved> =>
      family === undefined || familyOf(address) === family
        ? Effect.void
        : Effect.fail(new DestinationUnresolved({ host, reason: `${toSocketAddress(address)} is not an IPv${family} address` }))

    /**
     * Where a connection to `host:port` may go: the address to use, or the refusal. Every connect and reconnect
     * asks again (a name's answer changes). `family`: the connection can only use addresses of that family (its
     * source address is one, BELAY_UPSTREAM_SOURCE): the name is resolved for that family alone, so a name that
     * answers IPv4 first still gives its IPv6 address to an IPv6 source, and one without an address of the family
     * fails, saying so (docs/decisions/hosting.md "Each member their own face upstream"). Under `allow` a family makes
     * the guard resolve too (nothing is refused), so that the connection goes to an address it can reach.
     */
    const check = (
      host: string,
      port: number,
      options: { readonly family?: 4 | 6 | undefined } = {}
    ): Effect.Effect<PinnedDestination, DestinationRefused | DestinationUnresolved> =>
      Effect.suspend(() => {
        const name = bareHost(host)
        const family = options.family
        const pinned = (address: Address): PinnedDestination => ({ name, port, address: toSocketAddress(address), family: familyOf(address) })
        if (!deny && family === undefined) return Effect.succeed<PinnedDestination>({ name, port, address: null, family: null })
        const literal = parseLiteral(name)
        if (literal !== undefined) {
          const refused = deny ? judge(host, port, literal) : undefined
          if (refused !== undefined) return Effect.fail(refused)
          return Effect.as(ofFamily(name, literal, family), pinned(literal))
        }
        const openByName = !deny || nameExcepted(exceptions, name, port)
        if (isLocalhostName(name) && !openByName) {
          return Effect.fail(new DestinationRefused({ host, port, address: "127.0.0.1", addressClass: "loopback" }))
        }
        return Effect.flatMap(lookupAll(lookup, name, family), (answers): Effect.Effect<PinnedDestination, DestinationRefused | DestinationUnresolved> => {
          let first: Address | undefined
          for (const answer of answers) {
            const address = parseResolved(answer)
            // Only the family asked for is a candidate (a resolver may answer more than it was asked).
            if (address === undefined || (family !== undefined && familyOf(address) !== family)) continue
            // Every address must pass, not just the first: a name answering a public and a private address would
            // otherwise reach the private one whenever the order changes.
            const refused = openByName ? undefined : judge(host, port, address)
            if (refused !== undefined) return Effect.fail(refused)
            first ??= address
          }
          return first === undefined
            ? Effect.fail(new DestinationUnresolved({ host: name, reason: family === undefined ? "no usable address" : noAddressOf(family) }))
            : Effect.succeed(pinned(first))
        })
      })

    /**
     * The check made when a member stores a destination (a network's host and port): refused addresses are refused
     * now, naming the address and its class; a name that does not resolve yet is stored (it may later), and is
     * checked again at every connect.
     */
    const vet = (host: string, port: number): Effect.Effect<void, DestinationRefused> =>
      check(host, port).pipe(
        Effect.asVoid,
        Effect.catchTag("DestinationUnresolved", () => Effect.void)
      )

    return { mode: config.privateDestinations, check, vet } as const
  })
}) {}
