/**
 * Names that resolve privately, under BELAY_PRIVATE_DESTINATIONS=deny (docs/decisions/hosting.md "One destination
 * guard"): generated host names whose resolver answers hold at least one refused address (test/fuzz/support/
 * DestinationCases.ts `refusedAnswer`: loopback, private, CGNAT, link-local, unique-local, multicast, reserved, and
 * IPv6 forms carrying a refused IPv4 address) at any place among public ones, asked with no family, IPv4 only or
 * IPv6 only (a member's source address, BELAY_UPSTREAM_SOURCE). The judge: the guard looks the name up once, and is
 * refused, naming one of the refused addresses of the family in use, exactly when there is one; otherwise it gives
 * the first address of that family. Then names that answer public at the check and private a moment later
 * (rebinding): the second check is refused. Then the real IRC transport: names answering loopback addresses in every
 * form, against a loopback listener with no exception for it: every attempt ends `Refused` with `locked-down:`, and
 * the listener sees no connection at all.
 *
 * Reproducible: fast-check with a fixed seed, printed at the start; FUZZ_SEED overrides it and FUZZ_RUNS (divided by
 * 4) the number of cases. A failure prints the seed and the case.
 */
import * as Net from "node:net"
import { expect, it } from "@effect/vitest"
import { Deferred, Effect, Layer } from "effect"
import fc from "fast-check"
import ipaddr from "ipaddr.js"
import { IrcTransport, IrcTransportLive, type TransportEvent } from "../../src/actors/IrcTransport.js"
import { appConfigFromMap } from "../../src/services/AppConfig.js"
import { DestinationGuard, NameLookup, type NameLookupService } from "../../src/services/egress/DestinationGuard.js"
import { publicAnswer, refusedAnswer, refusedIpv4 } from "./support/DestinationCases.js"

const SEED = process.env.FUZZ_SEED !== undefined && process.env.FUZZ_SEED !== "" ? Number(process.env.FUZZ_SEED) : 20261206
const RUNS = Math.ceil((process.env.FUZZ_RUNS !== undefined && process.env.FUZZ_RUNS !== "" ? Number(process.env.FUZZ_RUNS) : 20_000) / 4)
const DENY = { BELAY_PRIVATE_DESTINATIONS: "deny" }

/** One form per address, for comparing what the guard names with what the resolver answered. */
const normal = (text: string) => ipaddr.parse(text).toNormalizedString()
const familyOf = (text: string): 4 | 6 => (Net.isIPv6(text) ? 6 : 4)

interface NameCase {
  readonly host: string
  readonly answers: ReadonlyArray<string>
  readonly refused: ReadonlySet<string>
  readonly family: 4 | 6 | undefined
}

/** A generated DNS name, never one of the `localhost` names (refused without a lookup: DestinationCases covers them). */
const name = fc.domain().filter((d) => !/(^|\.)localhost\.?$/i.test(d))

const nameCase: fc.Arbitrary<NameCase> = fc.tuple(
  name,
  fc.array(refusedAnswer, { minLength: 1, maxLength: 3 }),
  fc.array(publicAnswer, { maxLength: 3 }),
  fc.constantFrom<4 | 6 | undefined>(undefined, 4, 6),
  fc.nat()
).map(([host, refused, open, family, seed]) => {
  // The refused addresses at any place among the public ones.
  const answers = [...open]
  refused.forEach((r, i) => answers.splice((seed >> (i * 3)) % (answers.length + 1), 0, r))
  return { host, answers, refused: new Set(refused.map(normal)), family }
})

const guardWith = (lookup: NameLookupService) =>
  DestinationGuard.pipe(
    Effect.provide(DestinationGuard.Default.pipe(Layer.provide(appConfigFromMap(DENY)))),
    Effect.provideService(NameLookup, lookup)
  )

it.effect(`names that resolve privately: ${RUNS} names, every answer judged, in the family in use (seed ${SEED})`, () =>
  Effect.gen(function*() {
    console.log(`destination names fuzz: seed ${SEED}, ${RUNS} cases`)
    let current: NameCase | undefined
    let lookups = 0
    // getaddrinfo: every answer in order, or only the family asked for; none of it is ENOTFOUND.
    const guard = yield* guardWith((host, done, family) => {
      lookups++
      const picked = host === current?.host ? current.answers.filter((a) => family === undefined || familyOf(a) === family) : []
      return picked.length === 0 ? done("ENOTFOUND", []) : done(null, picked)
    })
    const failures: Array<string> = []
    const tally = { refused: 0, pinned: 0, unresolved: 0 }
    for (const c of fc.sample(nameCase, { seed: SEED, numRuns: RUNS })) {
      current = c
      lookups = 0
      const candidates = c.answers.filter((a) => c.family === undefined || familyOf(a) === c.family)
      const expectRefused = candidates.some((a) => c.refused.has(normal(a)))
      const outcome = yield* Effect.either(guard.check(c.host, 6697, { family: c.family }))
      const label = `${c.host} family ${c.family ?? "any"} answers ${c.answers.join(",")}`
      if (lookups !== 1) failures.push(`${label}: ${lookups} lookups`)
      if (outcome._tag === "Left" && outcome.left._tag === "DestinationRefused") {
        tally.refused++
        if (!expectRefused) failures.push(`${label}: refused ${outcome.left.address}`)
        else if (!c.refused.has(normal(outcome.left.address))) failures.push(`${label}: named ${outcome.left.address}`)
        else if (!outcome.left.message.includes(outcome.left.address)) failures.push(`${label}: message ${outcome.left.message}`)
      } else if (outcome._tag === "Left") {
        tally.unresolved++
        if (expectRefused || candidates.length > 0) failures.push(`${label}: ${outcome.left.message}`)
      } else {
        tally.pinned++
        if (expectRefused) failures.push(`${label}: allowed ${outcome.right.address}`)
        else if (outcome.right.address === null || normal(outcome.right.address) !== normal(candidates[0]!)) {
          failures.push(`${label}: pinned ${outcome.right.address}`)
        }
      }
      if (failures.length >= 10) break
    }
    console.log(`destination names: ${JSON.stringify(tally)}`)
    expect(failures).toEqual([])
    // Both sides were exercised: the family filter leaves some names with only public addresses.
    expect(tally.refused).toBeGreaterThan(RUNS / 3)
    expect(tally.pinned).toBeGreaterThan(0)
  }))

it.effect(`rebinding: ${Math.ceil(RUNS / 10)} names public at the check, private at the next`, () =>
  Effect.gen(function*() {
    const answers = new Map<string, Array<ReadonlyArray<string>>>()
    const guard = yield* guardWith((host, done) => {
      const next = answers.get(host)?.shift()
      return next === undefined ? done("ENOTFOUND", []) : done(null, next)
    })
    const cases = fc.sample(fc.tuple(name, fc.array(publicAnswer, { minLength: 1, maxLength: 2 }), refusedAnswer), {
      seed: SEED + 1,
      numRuns: Math.ceil(RUNS / 10)
    })
    for (const [host, open, refused] of cases) {
      answers.set(host, [open, [refused, ...open]])
      const first = yield* guard.check(host, 6667)
      expect(first.address === null ? undefined : normal(first.address), host).toBe(normal(open[0]!))
      const second = yield* Effect.flip(guard.check(host, 6667))
      expect(second._tag, `${host} → ${refused}`).toBe("DestinationRefused")
    }
  }))

/** A loopback listener that counts every connection it is offered. */
const loopbackListener = Effect.acquireRelease(
  Effect.async<{ readonly server: Net.Server; readonly port: number; readonly accepted: () => number }>((resume) => {
    let accepted = 0
    const server = Net.createServer((socket) => {
      accepted++
      socket.destroy()
    })
    server.listen(0, "127.0.0.1", () =>
      resume(Effect.succeed({ server, port: (server.address() as Net.AddressInfo).port, accepted: () => accepted })))
  }),
  ({ server }) => Effect.sync(() => server.close())
)

/** Every way a resolver may answer for this machine's loopback: IPv4 anywhere in 127/8, ::1, IPv4-mapped forms. */
const loopbackAnswer: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(fc.nat(255), fc.nat(255), fc.integer({ min: 1, max: 254 })).map(([b, c, d]) => `127.${b}.${c}.${d}`),
  fc.constant("::1"),
  fc.constant("127.0.0.1").map((v4) => `::ffff:${v4}`),
  refusedIpv4.filter(([a]) => a === 127).map(([a, b, c, d]) => `::ffff:${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`)
)

it.scopedLive(`the IRC transport: ${Math.ceil(RUNS / 25)} names answering loopback, and the listener sees nothing`, () =>
  Effect.gen(function*() {
    const listener = yield* loopbackListener
    const answers = new Map<string, ReadonlyArray<string>>()
    const transport = yield* IrcTransport.pipe(
      Effect.provide(IrcTransportLive.pipe(Layer.provide(DestinationGuard.Default), Layer.provide(appConfigFromMap(DENY)))),
      Effect.provideService(NameLookup, (host, done) => done(null, answers.get(host) ?? ["127.0.0.1"]))
    )
    const cases = fc.sample(fc.tuple(name, fc.array(loopbackAnswer, { minLength: 1, maxLength: 3 }), fc.array(publicAnswer, { maxLength: 2 })), {
      seed: SEED + 2,
      numRuns: Math.ceil(RUNS / 25)
    })
    for (const [host, loopback, open] of cases) {
      // Public first: a connect that took the first answer would reach the public one, never the listener; the
      // guard must refuse because of the loopback ones after it all the same.
      answers.set(host, [...open, ...loopback])
      const event = yield* Deferred.make<TransportEvent>()
      transport.open({
        host,
        port: listener.port,
        tls: false,
        tlsInsecure: false,
        nick: "fuzz",
        username: "fuzz",
        realname: "fuzz",
        serverPassword: null,
        sasl: null
      }, (e) => {
        if (e._tag !== "Line") Deferred.unsafeDone(event, Effect.succeed(e))
      })
      const first = yield* Deferred.await(event)
      expect(first._tag, `${host}: ${answers.get(host)!.join(",")}`).toBe("Refused")
      if (first._tag === "Refused") expect(first.reason).toMatch(/^locked-down: /)
    }
    yield* Effect.sleep("200 millis")
    expect(listener.accepted()).toBe(0)
  }))
