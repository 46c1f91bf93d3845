/**
 * The events a network's actor sends the member's tabs, as another node's NOTIFY or the network entity's `View`
 * carries them (src/schema/NetworkEvent.ts): every kind the actors make is accepted as it is; in a list, an event of a
 * kind or shape this build does not know is left out and the others are kept, in order.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import { toIsoTime } from "../../src/schema/Ids.js"
import { isNetworkEvent, KnownNetworkEvents, type NetworkEvent } from "../../src/schema/NetworkEvent.js"

const decodeList = Schema.decodeUnknownEither(KnownNetworkEvents)
const encodeList = Schema.encodeSync(KnownNetworkEvents)

const bob = { nick: "bob", prefix: "@", modes: ["o"], away: false }

/** One of each kind, shaped as LiveView, the actors and ClusterEvents make them. */
const everyKind: ReadonlyArray<NetworkEvent> = [
  {
    type: "network",
    network: { id: 7, name: "libera", state: "connected", nick: "alice", features: { tags: true, redaction: false, multiline: true } }
  },
  { type: "network", network: { id: 7, name: "libera", state: "backoff", nick: null, features: { tags: false, redaction: false, multiline: false } } },
  { type: "network-removed", networkId: 7 },
  {
    type: "channel",
    networkId: 7,
    channel: "#belay",
    joined: true,
    topic: { topic: "cluster day", setBy: "carol", setAt: toIsoTime(new Date(Date.UTC(2026, 11, 7))) },
    members: [bob, { nick: "dan", prefix: "", modes: [], away: true }]
  },
  { type: "channel", networkId: 7, channel: "#belay", joined: false },
  { type: "member", networkId: 7, channel: "#belay", nick: "bob", member: bob },
  { type: "member", networkId: 7, channel: "#belay", nick: "bob", member: null },
  { type: "topic", networkId: 7, channel: "#belay", topic: "", setBy: null, setAt: null },
  { type: "away", networkId: 7, away: true },
  { type: "typing", networkId: 7, target: "#belay", nick: "bob", state: "active" }
]

describe("NetworkEvent", () => {
  it("accepts every kind the actors make, unchanged, and encodes a list as it is", () => {
    for (const event of everyKind) expect(isNetworkEvent(event), JSON.stringify(event)).toBe(true)
    const decoded = decodeList(JSON.parse(JSON.stringify(everyKind)))
    expect(decoded).toEqual(Either.right(everyKind))
    expect(encodeList(everyKind)).toEqual(everyKind)
  })

  it("leaves out what it cannot draw and keeps the rest, in order", () => {
    const strays: ReadonlyArray<unknown> = [
      { type: "reaction", networkId: 7, target: "#belay" }, // a kind of a newer release
      { type: "away", networkId: "7", away: true }, // an id as a string
      { type: "away", networkId: 7.5, away: true },
      { type: "channel", networkId: 7, channel: "#belay", joined: true }, // drawn whole without members or topic
      { type: "topic", networkId: 7, channel: "#belay", topic: "t", setBy: null, setAt: "yesterday" },
      { type: "member", networkId: 7, channel: "#belay", nick: "bob", member: { nick: "bob" } },
      { type: "typing", networkId: 7, target: "#belay", nick: "bob", state: "typing" },
      { type: "network", network: { id: 7, name: "libera", state: "asleep", nick: null, features: { tags: false, redaction: false, multiline: false } } },
      null,
      42,
      "away",
      []
    ]
    for (const stray of strays) expect(isNetworkEvent(stray), JSON.stringify(stray)).toBe(false)
    const mixed = everyKind.flatMap((event, i) => [strays[i % strays.length], event])
    expect(decodeList([...strays, ...mixed])).toEqual(Either.right(everyKind))
  })

  it("refuses a list that is not a list", () => {
    for (const value of [null, {}, "[]", { type: "away", networkId: 7, away: true }]) {
      expect(Either.isLeft(decodeList(value)), JSON.stringify(value)).toBe(true)
    }
  })
})
