/**
 * Hostile channel-event lists as another node's notice carries them (src/schema/NetworkEvent.ts `KnownNetworkEvents`,
 * decoded by ClusterEvents and the network entity's `View`): generated events of every kind, shuffled with events of
 * kinds this build does not know, events with one member removed or of the wrong type (a string id, a fraction, an
 * unknown state, a member without its fields, a time that is not ISO-8601), and any JSON value. The decode never throws
 * and never fails for a list; it keeps exactly the well-formed events, in order, as the same values, and an extra
 * member a newer release adds to an event does not cost the event.
 *
 * Reproducible: fast-check with a fixed seed, printed at the start; FUZZ_SEED overrides it, FUZZ_RUNS scales the count.
 */
import { expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import fc from "fast-check"
import { KnownNetworkEvents, type NetworkEvent } from "../../src/schema/NetworkEvent.js"

const SEED = process.env.FUZZ_SEED !== undefined && process.env.FUZZ_SEED !== "" ? Number(process.env.FUZZ_SEED) : 616161
const RUNS = process.env.FUZZ_RUNS !== undefined && process.env.FUZZ_RUNS !== "" ? Number(process.env.FUZZ_RUNS) : 10_000

const decode = Schema.decodeUnknownEither(KnownNetworkEvents)

const id = fc.integer({ min: 1, max: 2 ** 31 - 1 })
const text = fc.string({ maxLength: 12 })
const time = fc.date({ min: new Date(0), max: new Date(Date.UTC(2100, 0)), noInvalidDate: true }).map((d) => d.toISOString())
const member = fc.record({
  nick: text,
  prefix: fc.constantFrom("", "@", "+", "@+"),
  modes: fc.array(fc.constantFrom("o", "v", "h"), { maxLength: 3 }),
  away: fc.boolean()
})
const topic = { topic: text, setBy: fc.option(text, { nil: null }), setAt: fc.option(time, { nil: null }) }

/** Well-formed events of every kind, as plain JSON (what arrives from another node). */
const wellFormed: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.record({
    type: fc.constant("network"),
    network: fc.record({
      id,
      name: text,
      state: fc.constantFrom("connected", "connecting", "backoff", "offline"),
      nick: fc.option(text, { nil: null }),
      features: fc.record({ tags: fc.boolean(), redaction: fc.boolean(), multiline: fc.boolean() })
    })
  }),
  fc.record({ type: fc.constant("network-removed"), networkId: id }),
  fc.record({
    type: fc.constant("channel"),
    networkId: id,
    channel: text,
    joined: fc.constant(true),
    topic: fc.record(topic),
    members: fc.array(member, { maxLength: 4 })
  }),
  fc.record({ type: fc.constant("channel"), networkId: id, channel: text, joined: fc.constant(false) }),
  fc.record({ type: fc.constant("member"), networkId: id, channel: text, nick: text, member: fc.option(member, { nil: null }) }),
  fc.record({ type: fc.constant("topic"), networkId: id, channel: text, ...topic }),
  fc.record({ type: fc.constant("away"), networkId: id, away: fc.boolean() }),
  fc.record({ type: fc.constant("typing"), networkId: id, target: text, nick: text, state: fc.constantFrom("active", "paused", "done") })
)

/** A value no well-formed event has at the top level of an event: a wrong type for `networkId` and the rest. */
const wrongValue = fc.oneof(
  fc.constant("7"),
  fc.constant(7.5),
  fc.constant(null),
  fc.constant(Number.MAX_SAFE_INTEGER + 0.5),
  fc.array(fc.integer(), { maxLength: 2 })
)

/** A well-formed event broken in one way that makes it one this build cannot draw. */
const broken: fc.Arbitrary<unknown> = fc.tuple(wellFormed, fc.nat(), wrongValue, fc.string({ minLength: 1, maxLength: 10 })).map(
  ([event, pick, value, kind]) => {
    const keys = Object.keys(event).filter((k) => k !== "type")
    const key = keys[pick % keys.length]!
    switch (pick % 4) {
      case 0: {
        // A kind of a newer release.
        return { ...event, type: `future-${kind}` }
      }
      case 1: {
        // A member missing.
        const { [key]: _gone, ...rest } = event
        return rest
      }
      case 2: {
        // The id (or the network view) of the wrong type.
        const target = "networkId" in event ? "networkId" : "network"
        return { ...event, [target]: value }
      }
      default: {
        // An object without the members any of the event's own objects has, where it has a string, a number, a
        // boolean, a list, an object or null.
        return { ...event, [key]: { value: event[key] } }
      }
    }
  }
)

/** A stray list entry: any JSON that is not an object with a `type` this build knows. */
const stray = fc.jsonValue({ maxDepth: 2 }).filter((v) =>
  typeof v !== "object" || v === null || Array.isArray(v) || !("type" in v)
)

type Entry = { readonly keep: boolean; readonly value: unknown }

const entry: fc.Arbitrary<Entry> = fc.oneof(
  wellFormed.map((value) => ({ keep: true, value })),
  // An extra member a newer release adds: the event is still drawn.
  fc.tuple(wellFormed, fc.jsonValue({ maxDepth: 1 })).map(([event, extra]) => ({ keep: true, value: { ...event, addedLater: extra } })),
  broken.map((value) => ({ keep: false, value })),
  stray.map((value) => ({ keep: false, value }))
)

it(`channel-event lists from another node: ${RUNS} generated lists (seed ${SEED})`, () => {
  console.info(`belay fuzz: network events, seed ${SEED}`)
  fc.assert(
    fc.property(fc.array(entry, { maxLength: 12 }), (entries) => {
      // As the notice arrives: parsed from its JSON text.
      const sent = JSON.parse(JSON.stringify(entries.map((e) => e.value))) as ReadonlyArray<unknown>
      const decoded = decode(sent)
      expect(Either.isRight(decoded)).toBe(true)
      const kept: ReadonlyArray<NetworkEvent> = Either.getOrThrow(decoded)
      const expected = sent.filter((_, i) => entries[i]!.keep)
      expect(kept).toEqual(expected)
      // The very values sent, not copies stripped of what a newer release added.
      kept.forEach((event, i) => expect(event).toBe(expected[i]))
    }),
    { seed: SEED, numRuns: RUNS }
  )
})
