/**
 * NodeActors: the network actors this cluster node runs (LocalActors over the node's services), the networks whose
 * entity is on this node, and the port's methods over them — the fast path a node takes for a network it owns.
 * The entity (NetworkEntityLive.ts) starts and stops actors here; the reconciler and ClusterNetworkControl only read.
 *
 * The node's RecentPages keep only the pages of the networks supervised here (their history is written here, by
 * this node's MessageWriter), and forget a network's pages when its supervision here starts or ends.
 *
 * Concurrency rule: `supervised` counts, per network, the entity lives on this node that supervise its actor (a
 * reconnecting Reload starts the next before the last has ended); it is changed only by those fibers, one step at a
 * time, and read synchronously. On shutdown — after every entity of the node has closed, since the entity layer is
 * built on this one — what still runs QUITs and the history is flushed, within SHUTDOWN_BOUND.
 */
import { Context, Effect, Layer } from "effect"
import type { IrcTransport } from "../actors/IrcTransport.js"
import * as LocalActors from "../actors/LocalActors.js"
import type { NetworkControlService } from "../actors/NetworkApi.js"
import type { AppConfig } from "../services/AppConfig.js"
import type { E2eKeys } from "../services/E2eKeys.js"
import type { ClusterEvents } from "../services/ClusterEvents.js"
import type { NetworkFeed } from "../services/NetworkFeed.js"
import type { MessageWriter } from "../services/MessageWriter.js"
import type { Metrics } from "../services/Metrics.js"
import type { Networks } from "../services/Networks.js"
import { RecentPages } from "../services/RecentPages.js"

export interface NodeActorsService {
  readonly local: LocalActors.LocalActors
  /** Whether an entity of this node supervises the network's actor (running, or between two lives). */
  readonly isSupervised: (networkId: number) => boolean
  /** Runs `supervise` counted as one supervision of the network for as long as it runs. */
  readonly supervising: <A, E, R>(networkId: number, supervise: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The port over this node's actors: a network not supervised here is UnknownNetwork to it. */
  readonly control: NetworkControlService
}

export class NodeActors extends Context.Tag("belay/cluster/NodeActors")<NodeActors, NodeActorsService>() {}

export const NodeActorsLive: Layer.Layer<
  NodeActors,
  never,
  Networks | MessageWriter | E2eKeys | AppConfig | Metrics | IrcTransport | ClusterEvents | NetworkFeed | RecentPages
> = Layer.scoped(
  NodeActors,
  Effect.gen(function*() {
    // closeAtOnce: a network leaving this node is opened by another right after its entity closes.
    const local = yield* LocalActors.make({ closeAtOnce: true })
    const counts = new Map<number, number>()
    const isSupervised = (networkId: number) => counts.has(networkId)
    const pages = yield* RecentPages
    pages.restrictTo(isSupervised)
    yield* Effect.addFinalizer(() => local.shutdown)
    return {
      local,
      isSupervised,
      supervising: (networkId, supervise) =>
        Effect.acquireUseRelease(
          Effect.sync(() => {
            const count = (counts.get(networkId) ?? 0) + 1
            counts.set(networkId, count)
            // Pages kept from an earlier stay here missed what other nodes stored since.
            if (count === 1) pages.forget(networkId)
          }),
          () => supervise,
          () =>
            Effect.sync(() => {
              const left = (counts.get(networkId) ?? 1) - 1
              if (left > 0) return counts.set(networkId, left)
              counts.delete(networkId)
              pages.forget(networkId)
            })
        ),
      control: local.control(isSupervised)
    }
  })
)
