/**
 * A scriptable stand-in for the network actors (the `NetworkControl` port), for tests
 * of the MCP layer that must not depend on IRC timing. Every call is recorded; results
 * come from per-network settings the test controls. Single fiber use per test.
 */
import { Effect, Layer, Option, Ref } from "effect"
import {
  type CommandResult,
  type MemberInfo,
  type ModeListEntry,
  NetworkControl,
  type NetworkStatus,
  type TopicInfo
} from "../../src/actors/NetworkApi.js"
import { messageTargetsOfRawLine } from "../../src/irc/RawGuard.js"

export interface FakeNetwork {
  status: Partial<NetworkStatus>
  members: Map<string, ReadonlyArray<MemberInfo>>
  topics: Map<string, TopicInfo>
  modeLists: Map<string, CommandResult<{ channel: string; letter: string; entries: ReadonlyArray<ModeListEntry> }>>
  encrypted: Set<string>
  lockedDown: boolean
}

export interface RecordedCall {
  readonly method: string
  readonly networkId: number
  readonly args: ReadonlyArray<unknown>
}

export const makeFakeNetworkControl = Effect.gen(function*() {
  const networks = new Map<number, FakeNetwork>()
  const calls = yield* Ref.make<ReadonlyArray<RecordedCall>>([])

  const network = (id: number): FakeNetwork => {
    let n = networks.get(id)
    if (!n) {
      n = { status: {}, members: new Map(), topics: new Map(), modeLists: new Map(), encrypted: new Set(), lockedDown: false }
      networks.set(id, n)
    }
    return n
  }

  const statusOf = (id: number): NetworkStatus => ({
    networkId: id,
    state: "offline",
    nick: null,
    nextRetryAt: null,
    lastError: null,
    caseMapping: "rfc1459",
    channelTypes: "#&",
    ...network(id).status
  })

  const record = (method: string, networkId: number, ...args: ReadonlyArray<unknown>) =>
    Ref.update(calls, (c) => [...c, { method, networkId, args }])

  /** The write gate every real command applies: the socket is up. */
  const gated = <A extends object>(method: string, networkId: number, args: ReadonlyArray<unknown>, result: () => CommandResult<A>) =>
    Effect.gen(function*() {
      if (statusOf(networkId).state !== "connected") return { ok: false, error: "not-connected" } as const
      yield* record(method, networkId, ...args)
      return result()
    })

  const ok = () => ({ ok: true }) as const

  const service = NetworkControl.of({
    status: (id) => Effect.sync(() => statusOf(id)),
    statuses: Effect.sync(() => [...networks.keys()].map(statusOf)),
    say: (id, kind, target, text) => gated("say", id, [kind, target, text], ok),
    raw: (id, line) => gated("raw", id, [line], ok),
    join: (id, channel, key) => gated("join", id, [channel, Option.getOrNull(key)], ok),
    part: (id, channel, reason) => gated("part", id, [channel, Option.getOrNull(reason)], ok),
    nick: (id, nick) => gated("nick", id, [nick], ok),
    away: (id, message) => gated("away", id, [Option.getOrNull(message)], ok),
    whois: (id, nick) => gated("whois", id, [nick], ok),
    connect: (id, reconnect) =>
      network(id).lockedDown
        ? Effect.succeed({ ok: false, error: "locked-down" } as const)
        : Effect.as(record("connect", id, reconnect), { ok: true } as const),
    disconnect: (id) => Effect.as(record("disconnect", id), { ok: true } as const),
    members: (id, channel) =>
      Effect.sync(() => {
        const m = network(id).members.get(channel)
        return m ? { ok: true, members: m } as const : { ok: false, error: "not-in-channel" } as const
      }),
    topic: (id, channel) =>
      Effect.sync(() => {
        const t = network(id).topics.get(channel)
        return t ? { ok: true, topic: t } as const : { ok: false, error: "not-in-channel" } as const
      }),
    setTopic: (id, channel, topic) => gated("setTopic", id, [channel, topic], ok),
    modeList: (id, channel, letter) =>
      gated("modeList", id, [channel, letter], () =>
        network(id).modeLists.get(`${channel} ${letter}`) ?? { ok: true, channel, letter, entries: [] }),
    setModes: (id, channel, changes) =>
      gated("setModes", id, [channel, changes], () => ({
        ok: true,
        lines: [`MODE ${channel} ${changes.map((c) => c.sign + c.letter).join("")}`]
      })),
    isEncrypted: (id, target) => Effect.sync(() => network(id).encrypted.has(target.toLowerCase())),
    encryptedTargetOfRaw: (id, line) =>
      Effect.sync(() =>
        Option.fromNullable(messageTargetsOfRawLine(line, "@+").find((t) => network(id).encrypted.has(t.toLowerCase())))
      )
  })

  return { service, network, calls: Ref.get(calls) } as const
})

export type FakeNetworkControl = Effect.Effect.Success<typeof makeFakeNetworkControl>

/** A layer over a fake the test also holds, so it can script it. */
export const fakeNetworkControlLayer = (fake: FakeNetworkControl) => Layer.succeed(NetworkControl, fake.service)
