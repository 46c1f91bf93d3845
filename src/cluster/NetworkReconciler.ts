/**
 * NetworkReconciler: every RECONCILE_INTERVAL, each node starts the stored networks whose shard it holds and that no
 * entity of it supervises yet (`Start` to the entity, which is itself). This is what brings a network back after
 * its node dies, on whichever node takes its shard — the cluster starts an entity only when a message reaches it,
 * and its own keep-alive rows do not survive a rebalance (docs/decisions/several-nodes.md "Several nodes").
 *
 * Concurrency rule: one fiber per node; each pass reads the network ids once and sends at most START_CONCURRENCY
 * Starts at a time, each bounded by START_TIMEOUT, so a slow start delays only the next pass.
 */
import type { Sharding } from "@effect/cluster"
import { Duration, Effect, Layer, Schedule } from "effect"
import { Networks } from "../services/networks/Networks.js"
import { entityIdOf, NetworkEntity } from "./NetworkEntity.js"
import { NodeActors } from "./NodeActors.js"

export const RECONCILE_INTERVAL = Duration.seconds(1)
const START_TIMEOUT = Duration.seconds(10)
const START_CONCURRENCY = 16

export const NetworkReconcilerLive: Layer.Layer<never, never, Sharding.Sharding | Networks | NodeActors> = Layer
  .scopedDiscard(
    Effect.gen(function*() {
      const networks = yield* Networks
      // `holds`: the node's fence (false while it shuts down, or while its shard locks are in doubt).
      const { holds, isSupervised } = yield* NodeActors
      const makeClient = yield* NetworkEntity.client

      const start = (networkId: number) =>
        makeClient(entityIdOf(networkId)).Start().pipe(
          Effect.timeout(START_TIMEOUT),
          Effect.catchAllCause((cause) =>
            Effect.logDebug("could not start a network on this node; next pass", cause).pipe(
              Effect.annotateLogs({ networkId })
            )
          )
        )

      let failing = false
      const pass = Effect.gen(function*() {
        const ids = yield* networks.allIds()
        failing = false
        const missing = ids.filter((networkId) => holds(networkId) && !isSupervised(networkId))
        if (missing.length === 0) return
        yield* Effect.logDebug("starting the networks this node holds").pipe(Effect.annotateLogs({ networks: missing.length }))
        yield* Effect.forEach(missing, start, { concurrency: START_CONCURRENCY, discard: true })
      }).pipe(
        Effect.catchAllCause((cause) =>
          Effect.suspend(() => {
            // Once per outage: the database being away is said by the pool and the cluster already.
            if (failing) return Effect.void
            failing = true
            return Effect.logWarning("could not reconcile this node's networks", cause)
          })
        )
      )
      yield* pass.pipe(Effect.repeat(Schedule.spaced(RECONCILE_INTERVAL)), Effect.forkScoped)
    })
  )
