/**
 * NetworkChangeRelay: a change written on this node — a network added, edited or removed (Networks.changes: the
 * admin socket, /api/networks, connect/disconnect settings) or an end-to-end key set or cleared (E2eKeys `deliverBy`) —
 * is told to the network's entity, wherever it runs: `Start`, `Reload` (reconnecting when the connection settings
 * changed), `Stop`, `KeysChanged` (the target only: the owner reads the key from the store). Each is what the
 * one-process supervisor does on the same change (NetworkSupervisor.ts).
 *
 * A message lost to a failover loses nothing: the next owner builds its actor from the store, and the reconciler
 * starts what is stored.
 *
 * Concurrency rule: one fiber takes the network changes in order and forks each message, bounded by RELAY_TIMEOUT,
 * so one network in failover holds up no other; a key change is told by the fiber that wrote it, which waits for the
 * owner's answer (KEY_DELIVERY_TIMEOUT).
 */
import type { Sharding } from "@effect/cluster"
import { Duration, Effect, Layer, PubSub, Queue } from "effect"
import { E2eKeys } from "../services/networks/E2eKeys.js"
import { type NetworkChange, Networks } from "../services/networks/Networks.js"
import { entityIdOf, NetworkEntity } from "./NetworkEntity.js"

const RELAY_TIMEOUT = Duration.seconds(30)
/** How long `belay channel encrypt|decrypt` waits for the network's owner to apply the key (a failover: it reads the store). */
const KEY_DELIVERY_TIMEOUT = Duration.seconds(5)

export const NetworkChangeRelayLive: Layer.Layer<never, never, Sharding.Sharding | Networks | E2eKeys> = Layer
  .scopedDiscard(
    Effect.gen(function*() {
      const networks = yield* Networks
      const e2e = yield* E2eKeys
      const makeClient = yield* NetworkEntity.client

      const relay = (networkId: number, what: string, message: Effect.Effect<void, unknown>) =>
        message.pipe(
          Effect.timeout(RELAY_TIMEOUT),
          Effect.catchAllCause((cause) =>
            Effect.logInfo(`could not tell the network's node of a change (${what}); it reads the store on start`, cause)
              .pipe(Effect.annotateLogs({ networkId }))
          ),
          Effect.forkScoped
        )

      const onNetwork = (change: NetworkChange) => {
        // Heard from another node (services/nodes/ClusterEvents.ts): the node that made the change has told the owner.
        if (change.elsewhere === true) return Effect.void
        const owner = makeClient(entityIdOf(change.networkId))
        switch (change._tag) {
          case "Added":
            return relay(change.networkId, "added", owner.Start())
          case "Changed":
            return relay(change.networkId, "changed", owner.Reload({ reconnect: change.reconnect }))
          case "Removed":
            return relay(change.networkId, "removed", owner.Stop())
        }
      }

      const networkChanges = yield* PubSub.subscribe(networks.changes)
      yield* Queue.take(networkChanges).pipe(Effect.flatMap(onNetwork), Effect.forever, Effect.forkScoped)
      // Awaited by the writer (E2eKeys `deliverBy`): a key change is in effect on the owner when the admin command
      // returns, so a send through any node after it is encrypted (or not) as the member just said.
      yield* e2e.deliverBy((change) =>
        makeClient(entityIdOf(change.networkId)).KeysChanged({ target: change.target }).pipe(
          Effect.timeout(KEY_DELIVERY_TIMEOUT),
          Effect.catchAllCause((cause) =>
            Effect.logInfo("could not tell the network's node of a change (end-to-end key); it reads the store on start", cause)
              .pipe(Effect.annotateLogs({ networkId: change.networkId }))
          )
        )
      )
    })
  )
