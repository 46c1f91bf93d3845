import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import fc from "fast-check"
import { appConfigFromMap } from "../../../src/services/AppConfig.js"
import { DestinationGuard, NameLookup, type NameLookupService } from "../../../src/services/egress/DestinationGuard.js"
import { refusedHost } from "../../fuzz/support/DestinationCases.js"

/** A resolver with fixed answers; a name it does not know is NXDOMAIN. Counts the lookups it answered. */
const fakeResolver = (answers: Record<string, ReadonlyArray<string> | (() => ReadonlyArray<string>)>) => {
  const asked: Array<string> = []
  const lookup: NameLookupService = (host, done) => {
    asked.push(host)
    const answer = answers[host]
    if (answer === undefined) return done("ENOTFOUND", [])
    done(null, typeof answer === "function" ? answer() : answer)
  }
  return { lookup, asked }
}

const guardWith = (env: Record<string, string>, lookup: NameLookupService) =>
  DestinationGuard.pipe(
    Effect.provide(DestinationGuard.Default.pipe(Layer.provide(appConfigFromMap(env)))),
    Effect.provideService(NameLookup, lookup)
  )

const DENY = { BELAY_PRIVATE_DESTINATIONS: "deny" }

describe("DestinationGuard", () => {
  it.effect("deny: every literal form of a refused address is refused, naming the address and its class", () =>
    Effect.gen(function*() {
      const resolver = fakeResolver({})
      const guard = yield* guardWith(DENY, resolver.lookup)
      for (const host of ["127.1", "0x7f.1", "2130706433", "[::1]", "[::ffff:127.0.0.1]", "localhost", "LocalHost."]) {
        const refused = yield* Effect.flip(guard.check(host, 6667))
        expect(refused._tag).toBe("DestinationRefused")
        expect(refused.message).toMatch(/loopback/)
      }
      const metadata = yield* Effect.flip(guard.check("169.254.169.254", 80))
      expect(metadata).toMatchObject({ _tag: "DestinationRefused", address: "169.254.169.254", addressClass: "link-local" })
      expect(metadata.message).toContain("169.254.169.254 is a link-local address")
      // No literal and no localhost name was ever asked of the resolver.
      expect(resolver.asked).toEqual([])
    }))

  it.effect("deny: a name is resolved once, every answer judged, and the address checked is the one to use", () =>
    Effect.gen(function*() {
      let calls = 0
      const resolver = fakeResolver({
        "irc.example.org": ["8.8.4.4", "2001:4860:4860::8844"],
        "inside.example": ["10.0.0.5"],
        "mixed.example": ["8.8.8.8", "192.168.0.9"],
        // Rebinding: public at the first answer, loopback after.
        "rebind.example": () => (calls++ === 0 ? ["8.8.8.8"] : ["127.0.0.1"])
      })
      const guard = yield* guardWith(DENY, resolver.lookup)
      expect(yield* guard.check("irc.example.org", 6697)).toEqual({
        name: "irc.example.org",
        port: 6697,
        address: "8.8.4.4",
        family: 4
      })
      expect(yield* Effect.flip(guard.check("inside.example", 6667))).toMatchObject({
        address: "10.0.0.5",
        addressClass: "private"
      })
      expect(yield* Effect.flip(guard.check("mixed.example", 6667))).toMatchObject({
        address: "192.168.0.9",
        addressClass: "private"
      })
      // The first connect gets the public address to use; the next one asks again and is refused.
      expect((yield* guard.check("rebind.example", 6667)).address).toBe("8.8.8.8")
      expect(yield* Effect.flip(guard.check("rebind.example", 6667))).toMatchObject({ addressClass: "loopback" })
      expect(yield* Effect.flip(guard.check("nowhere.example", 6667))).toMatchObject({
        _tag: "DestinationUnresolved",
        reason: "ENOTFOUND"
      })
    }))

  it.effect("deny: exceptions open a name on its port, or an address range", () =>
    Effect.gen(function*() {
      const resolver = fakeResolver({ "ircd.lan": ["192.168.1.20"] })
      const guard = yield* guardWith(
        { ...DENY, BELAY_DESTINATION_EXCEPTIONS: "ircd.lan:6667,127.0.0.1/32:6697" },
        resolver.lookup
      )
      expect((yield* guard.check("ircd.lan", 6667)).address).toBe("192.168.1.20")
      expect(yield* Effect.flip(guard.check("ircd.lan", 6697))).toMatchObject({ _tag: "DestinationRefused" })
      expect((yield* guard.check("127.0.0.1", 6697)).address).toBe("127.0.0.1")
      expect((yield* guard.check("[::ffff:127.0.0.1]", 6697)).address).toBe("::ffff:7f00:1")
      expect(yield* Effect.flip(guard.check("127.0.0.1", 6667))).toMatchObject({ _tag: "DestinationRefused" })
    }))

  it.effect("deny: vet refuses what check refuses, and lets a name that does not resolve yet be stored", () =>
    Effect.gen(function*() {
      const guard = yield* guardWith(DENY, fakeResolver({ "inside.example": ["fd00::1"] }).lookup)
      expect(yield* Effect.flip(guard.vet("inside.example", 6667))).toMatchObject({ addressClass: "unique-local" })
      yield* guard.vet("not-yet.example", 6667)
      yield* guard.vet("8.8.8.8", 6667)
    }))

  it.effect("a family: the name resolved for that family alone, IPv4-first names still give IPv6, none is a clear error", () =>
    Effect.gen(function*() {
      // A resolver that answers as getaddrinfo does: everything, IPv4 first, unless a family is asked for.
      const asked: Array<readonly [string, 4 | 6 | undefined]> = []
      const answers: Record<string, ReadonlyArray<string>> = {
        "dual.example": ["8.8.8.8", "2001:4860:4860::8888"],
        "v4only.example": ["8.8.4.4"],
        "privatev6.example": ["8.8.8.8", "fd00::7"]
      }
      const lookup: NameLookupService = (host, done, family) => {
        asked.push([host, family])
        const all = answers[host]
        if (all === undefined) return done("ENOTFOUND", [])
        const picked = all.filter((a) => family === undefined || (a.includes(":") ? 6 : 4) === family)
        return picked.length === 0 ? done("ENOTFOUND", []) : done(null, picked)
      }
      for (const env of [DENY, {}]) {
        asked.length = 0
        const guard = yield* guardWith(env, lookup)
        expect(yield* guard.check("dual.example", 6697, { family: 6 })).toEqual({
          name: "dual.example",
          port: 6697,
          address: "2001:4860:4860::8888",
          family: 6
        })
        expect((yield* guard.check("dual.example", 6697, { family: 4 })).address).toBe("8.8.8.8")
        const none = yield* Effect.flip(guard.check("v4only.example", 6697, { family: 6 }))
        expect(none).toMatchObject({ _tag: "DestinationUnresolved", host: "v4only.example" })
        expect(none.message).toBe("could not resolve v4only.example: no IPv6 address (ENOTFOUND)")
        // A literal of the other family is refused for it, without a lookup.
        const literal = yield* Effect.flip(guard.check("8.8.8.8", 6697, { family: 6 }))
        expect(literal.message).toContain("8.8.8.8 is not an IPv6 address")
        expect((yield* guard.check("[2001:4860:4860::8888]", 6697, { family: 6 })).address).toBe("2001:4860:4860::8888")
        expect(asked).toEqual([["dual.example", 6], ["dual.example", 4], ["v4only.example", 6]])
      }
      // Only the family used is judged: its private address is refused for IPv6, its public one is fine for IPv4.
      const guard = yield* guardWith(DENY, lookup)
      expect(yield* Effect.flip(guard.check("privatev6.example", 6667, { family: 6 }))).toMatchObject({
        _tag: "DestinationRefused",
        address: "fd00::7",
        addressClass: "unique-local"
      })
      expect((yield* guard.check("privatev6.example", 6667, { family: 4 })).address).toBe("8.8.8.8")
      // A resolver that answers more than asked: only the family asked for is used.
      const sloppy = yield* guardWith(DENY, (_host, done) => done(null, ["8.8.8.8"]))
      expect(yield* Effect.flip(sloppy.check("sloppy.example", 6667, { family: 6 }))).toMatchObject({
        _tag: "DestinationUnresolved",
        reason: "no IPv6 address"
      })
    }))

  it.effect("allow (self-hosted default): nothing refused, nothing resolved, connect by name", () =>
    Effect.gen(function*() {
      const resolver = fakeResolver({})
      const guard = yield* guardWith({}, resolver.lookup)
      expect(guard.mode).toBe("allow")
      expect(yield* guard.check("127.0.0.1", 6667)).toEqual({ name: "127.0.0.1", port: 6667, address: null, family: null })
      expect(yield* guard.check("[::1]", 6667)).toMatchObject({ name: "::1", address: null })
      expect(resolver.asked).toEqual([])
    }))

  it.effect("hosted means deny unless the operator says otherwise", () =>
    Effect.gen(function*() {
      const hosted = { BELAY_HOSTED: "true", PUBLIC_BASE_URL: "https://belay.example", BELAY_SERVER_NAME: "one" }
      expect((yield* guardWith(hosted, fakeResolver({}).lookup)).mode).toBe("deny")
      expect((yield* guardWith({ ...hosted, BELAY_PRIVATE_DESTINATIONS: "allow" }, fakeResolver({}).lookup)).mode)
        .toBe("allow")
    }))
})

describe("DestinationGuard against generated forms", () => {
  it.effect("deny: 5,000 refused addresses in every form a resolver reads, each refused without a lookup", () =>
    Effect.gen(function*() {
      const resolver = fakeResolver({})
      const guard = yield* guardWith(DENY, resolver.lookup)
      const hosts = fc.sample(refusedHost, { numRuns: 5_000, seed: 20261206 })
      for (const host of hosts) {
        const outcome = yield* Effect.either(guard.check(host, 6667))
        expect(outcome._tag, host).toBe("Left")
        if (outcome._tag === "Left") expect(outcome.left._tag, host).toBe("DestinationRefused")
      }
      expect(resolver.asked).toEqual([])
    }))
})
