/**
 * NodeActors: the network actors this cluster node runs (LocalActors over the node's services), the networks whose
 * entity is on this node, and the port's methods over them — the fast path a node takes for a network it owns.
 * The entity (NetworkEntityLive.ts) starts and stops actors here; the reconciler and ClusterNetworkControl only read.
 *
 * The fence (docs/decisions/several-nodes.md "Several nodes", fencing): a network's actor here may open a socket only while this
 * node holds its shard — in Sharding's view and, when the lock storage is watched (ShardLockWatch.ts), as the storage
 * last confirmed it. Each actor asks right before every socket it opens (LocalActors' `fence`), and a sweep — every
 * SWEEP_INTERVAL, and before a shard lock is released or right after a lock operation failed (ShardLockWatch's
 * `onDoubt`) — destroys the socket of any actor here whose shard lock the storage has not confirmed. A lock still
 * held keeps its socket: an entity closing on a handover or shutdown QUITs within QUIT_GRACE, and nobody else can
 * connect the network meanwhile. Without the watch (the cluster's in-memory test runner) the sweep goes by
 * Sharding's view, sparing the networks whose entity is closing (`closing`).
 *
 * Concurrency rule: `supervised` counts, per network, the entity lives on this node that supervise its actor (a
 * reconnecting Reload starts the next before the last has ended); it is changed only by those fibers, one step at a
 * time, and read synchronously. On shutdown — after every entity of the node has closed, since the entity layer is
 * built on this one — what still runs QUITs and the history is flushed, within SHUTDOWN_BOUND.
 */
import { EntityId, Sharding } from "@effect/cluster"
import { Context, Duration, Effect, Layer, Option, Schedule } from "effect"
import type { IrcTransport } from "../actors/IrcTransport.js"
import * as LocalActors from "../actors/LocalActors.js"
import type { NetworkControlService } from "../actors/NetworkApi.js"
import type { AppConfig } from "../services/AppConfig.js"
import type { E2eKeys } from "../services/networks/E2eKeys.js"
import type { ClusterEvents } from "../services/nodes/ClusterEvents.js"
import type { NetworkFeed } from "../services/events/NetworkFeed.js"
import type { MessageWriter } from "../services/history/MessageWriter.js"
import type { Metrics } from "../services/upkeep/Metrics.js"
import type { Networks } from "../services/networks/Networks.js"
import { entityIdOf, NetworkEntity } from "./NetworkEntity.js"
import { ShardLockWatch } from "./ShardLockWatch.js"

/** How often the sweep looks for actors whose network this node no longer holds (also woken by a lost lock). */
export const SWEEP_INTERVAL = Duration.millis(500)

export interface NodeActorsService {
  readonly local: LocalActors.LocalActors
  /** Whether an entity of this node supervises the network's actor (running, or between two lives). */
  readonly isSupervised: (networkId: number) => boolean
  /** Runs `supervise` counted as one supervision of the network for as long as it runs. */
  readonly supervising: <A, E, R>(networkId: number, supervise: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The fence: whether this node holds the network's shard now (Sharding's view and the watched lock both). */
  readonly holds: (networkId: number) => boolean
  /** Runs `close` (the entity's QUIT on close) with the network marked closing: the sweep leaves its socket alone. */
  readonly closing: <A, E, R>(networkId: number, close: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The port over this node's actors: a network not supervised here is UnknownNetwork to it. */
  readonly control: NetworkControlService
}

export class NodeActors extends Context.Tag("belay/cluster/NodeActors")<NodeActors, NodeActorsService>() {}

export const NodeActorsLive: Layer.Layer<
  NodeActors,
  never,
  | Networks
  | MessageWriter
  | E2eKeys
  | AppConfig
  | Metrics
  | IrcTransport
  | ClusterEvents
  | NetworkFeed
  | Sharding.Sharding
> = Layer.scoped(
  NodeActors,
  Effect.gen(function*() {
    const sharding = yield* Sharding.Sharding
    // Absent when the lock storage is not the watched SQL one (tests on the cluster's in-memory runner).
    const watch = yield* Effect.serviceOption(ShardLockWatch)
    const shardOf = (networkId: number) => {
      const id = EntityId.make(entityIdOf(networkId))
      return sharding.getShardId(id, NetworkEntity.getShardGroup(id))
    }
    const holds = (networkId: number) => {
      const shardId = shardOf(networkId)
      return sharding.hasShardId(shardId) && Option.match(watch, { onNone: () => true, onSome: (w) => w.confirmed(shardId) })
    }

    // closeAtOnce: a network leaving this node is opened by another right after its entity closes.
    const local = yield* LocalActors.make({ closeAtOnce: true, fence: holds })
    const quitting = new Map<number, number>()
    const counts = new Map<number, number>()
    const isSupervised = (networkId: number) => counts.has(networkId)
    yield* Effect.addFinalizer(() => local.shutdown)

    /** Whether an actor here may keep its socket: its shard lock is confirmed (see the top). */
    const keep = Option.match(watch, {
      onNone: () => (networkId: number) => holds(networkId) || quitting.has(networkId),
      onSome: (w) => (networkId: number) => w.confirmed(shardOf(networkId))
    })
    const sweep = Effect.flatMap(local.severUnless(keep), (severed) =>
      severed.length === 0
        ? Effect.void
        : Effect.logWarning("closed the IRC connections of networks whose shard lock this node may have lost").pipe(
          Effect.annotateLogs({ networks: severed.join(",") })
        ))
    if (Option.isSome(watch)) watch.value.onDoubt(sweep)
    yield* Effect.sleep(SWEEP_INTERVAL).pipe(
      Effect.zipRight(sweep),
      Effect.repeat(Schedule.forever),
      Effect.forkScoped
    )
    // Not swept after the node's scope closes: its finalizers QUIT what is left.
    yield* Effect.addFinalizer(() => Effect.sync(() => Option.isSome(watch) && watch.value.onDoubt(Effect.void)))
    return {
      local,
      isSupervised,
      supervising: (networkId, supervise) =>
        Effect.acquireUseRelease(
          Effect.sync(() => {
            counts.set(networkId, (counts.get(networkId) ?? 0) + 1)
          }),
          () => supervise,
          () =>
            Effect.sync(() => {
              const left = (counts.get(networkId) ?? 1) - 1
              if (left > 0) return counts.set(networkId, left)
              counts.delete(networkId)
            })
        ),
      holds,
      closing: (networkId, close) =>
        Effect.acquireUseRelease(
          Effect.sync(() => quitting.set(networkId, (quitting.get(networkId) ?? 0) + 1)),
          () => close,
          () =>
            Effect.sync(() => {
              const left = (quitting.get(networkId) ?? 1) - 1
              if (left > 0) quitting.set(networkId, left)
              else quitting.delete(networkId)
            })
        ),
      control: local.control(isSupervised)
    }
  })
)
