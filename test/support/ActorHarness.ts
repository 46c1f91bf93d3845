/**
 * Builds one NetworkActor against a FakeIrcServer with in-memory ports (a NetworkRepo over plain state, the
 * MemoryMessageStore), plus the waits actor tests need (its own, and the fake server's as seen from the actor: a
 * connection registered, none arriving). Everything is scoped to the test.
 *
 * Clock rule (FakeIrcServer.ts): waits here run on the live clock, so a test under `it.scoped` (TestClock) moves
 * the actor's timers with `TestClock.adjust` while these waits still expire in real time.
 */
import { Clock, Deferred, Duration, Effect, Layer, Option, Stream } from "effect"
import * as ActorTimers from "../../src/actors/ActorTimers.js"
import * as ConnectThrottle from "../../src/actors/ConnectThrottle.js"
import { IrcTransport, IrcTransportLive } from "../../src/actors/IrcTransport.js"
import type { SourceRange } from "../../src/net/UpstreamFace.js"
import * as NetworkActor from "../../src/actors/network/NetworkActor.js"
import { appConfigFromMap } from "../../src/services/AppConfig.js"
import { DestinationGuard } from "../../src/services/egress/DestinationGuard.js"
import { type CaseMapping, CaseMappedMap } from "../../src/irc/CaseMapping.js"
import type { NetworkStatus } from "../../src/schema/Network.js"
import type { NetworkConfig, StoredChannel } from "../../src/services/networks/Networks.js"
import type { E2eKeyChange, E2eKeyEntry } from "../../src/services/networks/E2eKeys.js"
import type { FishKey } from "../../src/services/crypto/Fish.js"
import * as FakeIrcServer from "./FakeIrcServer.js"
import * as MemoryMessageStore from "./MemoryMessageStore.js"

const liveClock = Clock.make()

/** Runs `self` bounded by `timeout` of real time (the ambient clock may be TestClock). */
export const live = <A, E>(self: Effect.Effect<A, E>, timeout: Duration.DurationInput = "5 seconds") =>
  self.pipe(
    Effect.timeoutFail({ duration: timeout, onTimeout: () => new Error(`timed out after ${Duration.format(Duration.decode(timeout))}`) }),
    Effect.withClock(liveClock)
  )

export interface MemoryRepo {
  readonly repo: NetworkActor.NetworkRepo
  /** Stored channels by name (as stored), with their keys. */
  readonly channels: Effect.Effect<ReadonlyArray<StoredChannel>>
  readonly enabled: Effect.Effect<boolean>
  readonly awayMessage: Effect.Effect<string | null>
  /** While down, every repo call dies, as Networks' orDie'd SQL does when PostgreSQL is unreachable. */
  readonly setOutage: (down: boolean) => Effect.Effect<void>
}

export const memoryRepo = (config: NetworkConfig, initialChannels: ReadonlyArray<StoredChannel> = []): MemoryRepo => {
  let channels = CaseMappedMap.fromEntries<string | null>("rfc1459", initialChannels.map((c) => [c.name, c.key] as const))
  let enabled = config.enabled
  let away = config.awayMessage
  let down = false
  const guard = <A>(f: () => A): Effect.Effect<A> =>
    Effect.suspend(() => (down ? Effect.dieMessage("database unreachable") : Effect.sync(f)))
  const remap = (mapping: CaseMapping) => {
    channels = channels.withMapping(mapping)
  }
  return {
    repo: {
      config: guard(() => Option.some({ ...config, enabled, awayMessage: away })),
      channels: guard(() => [...channels].map(([name, key]) => ({ name, key }))),
      rememberChannel: (mapping, name, key) =>
        guard(() => {
          remap(mapping)
          const existing = channels.get(name)
          channels = channels.set(name, key === undefined ? (existing ?? null) : key)
        }),
      forgetChannel: (mapping, name) =>
        guard(() => {
          remap(mapping)
          channels = channels.remove(name)
        }),
      setEnabled: (e) =>
        guard(() => {
          enabled = e
        }),
      setAwayMessage: (m) =>
        guard(() => {
          away = m
        })
    },
    channels: Effect.sync(() => [...channels].map(([name, key]) => ({ name, key }))),
    enabled: Effect.sync(() => enabled),
    awayMessage: Effect.sync(() => away),
    setOutage: (d) =>
      Effect.sync(() => {
        down = d
      })
  }
}

export const networkConfig = (server: FakeIrcServer.FakeIrcServer, overrides: Partial<NetworkConfig> = {}): NetworkConfig => ({
  id: 1,
  accountId: 1,
  name: "fake",
  host: server.host,
  port: server.port,
  tls: server.tls,
  tlsInsecure: false,
  nick: "belay",
  username: "belayuser",
  realname: "Belay Test",
  serverPassword: null,
  sasl: null,
  enabled: true,
  awayMessage: null,
  ...overrides
})

export interface Harness {
  readonly actor: NetworkActor.NetworkActor
  readonly store: MemoryMessageStore.MemoryMessageStore
  readonly repo: MemoryRepo
  /** Waits (real time) for a status matching `predicate`. */
  readonly waitStatus: (predicate: (s: NetworkStatus) => boolean, timeout?: Duration.DurationInput) => Effect.Effect<NetworkStatus, Error>
  readonly waitState: (state: NetworkStatus["state"], timeout?: Duration.DurationInput) => Effect.Effect<NetworkStatus, Error>
  /**
   * Sends a command (built with `NetworkActor.Command`) and waits for its answer: its result, or the tool failure the
   * actor answered with; Error when no answer comes within 5 s of real time.
   */
  readonly ask: <A, E>(
    command: (reply: Deferred.Deferred<A, E>) => NetworkActor.Command
  ) => Effect.Effect<A, E | Error>
  /** Waits (real time) until the store holds a message matching `predicate`. */
  readonly waitMessage: (
    predicate: (m: Effect.Effect.Success<MemoryMessageStore.MemoryMessageStore["all"]>[number]) => boolean,
    timeout?: Duration.DurationInput
  ) => Effect.Effect<void, Error>
  /** Publishes an end-to-end key change for this network, as E2eKeys does after storing it; undefined clears. */
  readonly setE2eKey: (target: string, key: FishKey | undefined) => Effect.Effect<void>
}

export interface HarnessOptions {
  readonly config?: Partial<NetworkConfig>
  readonly channels?: ReadonlyArray<StoredChannel>
  readonly allowedHosts?: ReadonlySet<string>
  /**
   * The destination settings the real transport's guard reads (BELAY_PRIVATE_DESTINATIONS,
   * BELAY_DESTINATION_EXCEPTIONS); default: none, so `allow`.
   */
  readonly destinations?: Readonly<Record<string, string>>
  /** BELAY_UPSTREAM_SOURCE as parsed (ActorDeps.upstreamSource); default: none, the node's own address. */
  readonly upstreamSource?: SourceRange
  readonly store?: MemoryMessageStore.MemoryMessageStore
  /** End-to-end keys the network has when the actor starts. */
  readonly e2eKeys?: ReadonlyArray<E2eKeyEntry>
  /** Shared with other actors of the test, as the supervisor shares them (default: the actor's own). */
  readonly timers?: ActorTimers.ActorTimers
  readonly throttle?: ConnectThrottle.ConnectThrottle
  /** Asked before every socket (ActorDeps.fence), as a cluster node's shard fence is; default: none. */
  readonly fence?: () => boolean
}

export const startActor = (server: FakeIrcServer.FakeIrcServer, options: HarnessOptions = {}) =>
  Effect.gen(function*() {
    const store = options.store ?? (yield* MemoryMessageStore.make)
    const repo = memoryRepo(networkConfig(server, options.config), options.channels)
    const transport = yield* IrcTransport.pipe(
      Effect.provide(
        IrcTransportLive.pipe(
          Layer.provide(DestinationGuard.Default),
          Layer.provide(appConfigFromMap({ ...options.destinations }))
        )
      )
    )
    const networkId = options.config?.id ?? 1
    // The supervisor's key router, reduced to this one network: changes go to the attached actor's inbox.
    let deliver: ((change: E2eKeyChange) => void) | undefined
    const actor = yield* NetworkActor.start({
      networkId,
      repo: repo.repo,
      store,
      transport,
      allowedHosts: options.allowedHosts === undefined ? Option.none() : Option.some(options.allowedHosts),
      e2e: {
        load: Effect.succeed(options.e2eKeys ?? []),
        attach: (sink) =>
          Effect.acquireRelease(
            Effect.sync(() => {
              deliver = sink
            }),
            () =>
              Effect.sync(() => {
                deliver = undefined
              })
          )
      },
      timers: options.timers ?? (yield* ActorTimers.make),
      throttle: options.throttle ?? (yield* ConnectThrottle.make()),
      fence: options.fence,
      upstreamSource: options.upstreamSource
    })
    const waitStatus = (predicate: (s: NetworkStatus) => boolean, timeout: Duration.DurationInput = "5 seconds") =>
      live(
        actor.status.changes.pipe(
          Stream.filter(predicate),
          Stream.runHead,
          Effect.flatMap(Option.match({ onNone: () => Effect.die("status stream ended"), onSome: Effect.succeed }))
        ),
        timeout
      ).pipe(
        Effect.catchAll((e) =>
          Effect.flatMap(actor.status.get, (s) =>
            Effect.fail(new Error(`${e.message}; last status ${JSON.stringify(s)}`)))
        )
      )
    const harness: Harness = {
      actor,
      store,
      repo,
      waitStatus,
      waitState: (state, timeout) => waitStatus((s) => s.state === state, timeout),
      ask: <A, E>(command: (reply: Deferred.Deferred<A, E>) => NetworkActor.Command) =>
        Effect.gen(function*() {
          const reply = yield* Deferred.make<A, E>()
          yield* actor.offer(command(reply))
          return yield* live(Deferred.await(reply))
        }),
      waitMessage: (predicate, timeout = "5 seconds") =>
        live(
          Effect.gen(function*() {
            for (;;) {
              if ((yield* store.all).some(predicate)) return
              yield* Effect.sleep("10 millis")
            }
          }),
          timeout
        ),
      setE2eKey: (target, key) =>
        Effect.sync(() => deliver?.(key === undefined ? { networkId, target } : { networkId, target, key }))
    }
    return harness
  })

/** A fresh fake server and an actor started against it. */
export const startWithServer = (serverOptions: FakeIrcServer.FakeIrcServerOptions = {}, harness: HarnessOptions = {}) =>
  Effect.gen(function*() {
    const server = yield* FakeIrcServer.make(serverOptions)
    const h = yield* startActor(server, harness)
    return { server, h }
  })

/** Next connection, registered as `nick` (default: what the client asked for), and the actor connected. */
export const registered = (
  server: FakeIrcServer.FakeIrcServer,
  h: Harness,
  options: { readonly nick?: string; readonly isupport?: ReadonlyArray<string>; readonly register?: FakeIrcServer.RegisterOptions } = {}
) =>
  Effect.gen(function*() {
    const conn = yield* server.nextConnection()
    const registration = yield* conn.register(options.nick, options.isupport, options.register)
    yield* h.waitState("connected")
    return { conn, registration }
  })

/** No new connection arrives within `ms` of real time. */
export const noConnectionWithin = (server: FakeIrcServer.FakeIrcServer, ms: number) =>
  server.nextConnection(Duration.millis(ms)).pipe(
    Effect.flatMap((c) => Effect.fail(new Error(`unexpected connection #${c.id}`))),
    Effect.catchTag("FakeIrcError", () => Effect.void)
  )

export const stateOf = (h: Harness) => Effect.map(h.actor.status.get, (s) => s.state)
