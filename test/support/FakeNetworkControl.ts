/**
 * A scriptable stand-in for the network actors (the `NetworkControl` port), for tests
 * of the MCP layer that must not depend on IRC timing. Every call that passes the write
 * gate is recorded; results come from per-network settings the test controls, and
 * failures are the port's own tool failures. Single fiber use per test.
 */
import { Effect, Either, Layer, Option, Ref } from "effect"
import { NetworkControl, type UpstreamView } from "../../src/actors/NetworkApi.js"
import { messageTargetsOfRawLine } from "../../src/irc/RawGuard.js"
import type { ModeList } from "../../src/schema/ChannelMode.js"
import type { ChannelTopic } from "../../src/schema/ChannelTopic.js"
import type { Member } from "../../src/schema/Member.js"
import type { NetworkStatus } from "../../src/schema/Network.js"
import { NO_FEATURES } from "../../src/schema/NetworkEvent.js"
import {
  E2eChannelUseSendMessage,
  LockedDown,
  NotConnected,
  NotInChannel,
  type Refused,
  type Timeout
} from "../../src/schema/ToolErrors.js"

export interface FakeNetwork {
  status: Partial<NetworkStatus>
  members: Map<string, ReadonlyArray<Member>>
  topics: Map<string, ChannelTopic>
  /** By `"<channel> <letter>"`; an empty list when absent. */
  modeLists: Map<string, Either.Either<ModeList, Refused | Timeout>>
  encrypted: Set<string>
  lockedDown: boolean
  /** What `upstream` answers while the network is connected; a view from the status's nick when absent. */
  upstream: UpstreamView | undefined
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
      n = { status: {}, members: new Map(), topics: new Map(), modeLists: new Map(), encrypted: new Set(), lockedDown: false, upstream: undefined }
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
  const gated = <A, E>(method: string, networkId: number, args: ReadonlyArray<unknown>, result: Effect.Effect<A, E>) =>
    Effect.gen(function*() {
      if (statusOf(networkId).state !== "connected") return yield* new NotConnected({ networkId })
      yield* record(method, networkId, ...args)
      return yield* result
    })

  const keyedTarget = (id: number, line: string) =>
    messageTargetsOfRawLine(line, "@+").find((t) => network(id).encrypted.has(t.toLowerCase()))

  const service = NetworkControl.of({
    status: (id) => Effect.sync(() => statusOf(id)),
    statusNow: statusOf,
    upstream: (id) =>
      Effect.sync(() => {
        const status = statusOf(id)
        if (status.state !== "connected" || status.nick === null) return Option.none()
        return Option.some(
          network(id).upstream ?? { nick: status.nick, user: null, host: null, isupport: [], caps: [], away: false }
        )
      }),
    statuses: Effect.sync(() => [...networks.keys()].map(statusOf)),
    // Only the connection: the fake has no channel state changing under the tabs.
    view: (id, deliver) =>
      Effect.sync(() => {
        const status = statusOf(id)
        deliver([{ type: "network", network: { id, name: `network ${id}`, state: status.state, nick: status.nick, features: NO_FEATURES } }])
      }),
    say: (id, kind, target, text) => gated("say", id, [kind, target, text], Effect.void),
    raw: (id, line) =>
      Effect.gen(function*() {
        const keyed = keyedTarget(id, line)
        if (keyed !== undefined) return yield* new E2eChannelUseSendMessage({ networkId: id, target: keyed })
        return yield* gated("raw", id, [line], Effect.void)
      }),
    rawLines: (id, lines) =>
      Effect.gen(function*() {
        for (const line of lines) {
          const keyed = keyedTarget(id, line)
          if (keyed !== undefined) return yield* new E2eChannelUseSendMessage({ networkId: id, target: keyed })
        }
        return yield* gated("rawLines", id, [...lines], Effect.void)
      }),
    join: (id, channel, key) => gated("join", id, [channel, Option.getOrNull(key)], Effect.void),
    part: (id, channel, reason) => gated("part", id, [channel, Option.getOrNull(reason)], Effect.void),
    nick: (id, nick) => gated("nick", id, [nick], Effect.void),
    away: (id, message) => gated("away", id, [Option.getOrNull(message)], Effect.void),
    whois: (id, nick) => gated("whois", id, [nick], Effect.void),
    connect: (id, reconnect) =>
      network(id).lockedDown
        ? Effect.fail(new LockedDown({ networkId: id, host: "irc.test" }))
        : record("connect", id, reconnect),
    disconnect: (id) => record("disconnect", id),
    members: (id, channel) =>
      Effect.suspend(() => {
        const m = network(id).members.get(channel)
        return m ? Effect.succeed(m) : Effect.fail(new NotInChannel({ networkId: id, channel }))
      }),
    topic: (id, channel) =>
      Effect.suspend(() => {
        const t = network(id).topics.get(channel)
        return t ? Effect.succeed(t) : Effect.fail(new NotInChannel({ networkId: id, channel }))
      }),
    setTopic: (id, channel, topic) => gated("setTopic", id, [channel, topic], Effect.void),
    modeList: (id, channel, letter) =>
      gated(
        "modeList",
        id,
        [channel, letter],
        Effect.suspend(() => network(id).modeLists.get(`${channel} ${letter}`) ?? Either.right({ channel, letter, entries: [] }))
      ),
    setModes: (id, channel, changes) =>
      gated("setModes", id, [channel, changes], Effect.succeed([`MODE ${channel} ${changes.map((c) => c.sign + c.letter).join("")}`])),
    isEncrypted: (id, target) => Effect.sync(() => network(id).encrypted.has(target.toLowerCase())),
    encryptedTargetOfRaw: (id, line) => Effect.sync(() => Option.fromNullable(keyedTarget(id, line)))
  })

  return { service, network, calls: Ref.get(calls) } as const
})

export type FakeNetworkControl = Effect.Effect.Success<typeof makeFakeNetworkControl>

/** A layer over a fake the test also holds, so it can script it. */
export const fakeNetworkControlLayer = (fake: FakeNetworkControl) => Layer.succeed(NetworkControl, fake.service)
