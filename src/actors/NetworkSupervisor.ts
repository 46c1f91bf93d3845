/**
 * NetworkSupervisor: runs one NetworkActor per stored network and implements `NetworkControl`, the only way other
 * services reach the actors. It starts an actor for every network at boot and follows `Networks.changes` (add, change
 * and remove without a restart; a changed connection setting replaces the actor, so it reconnects with it); an actor that dies is logged and restarted after a backing-off delay, and a network
 * that no longer exists stops being supervised. On shutdown every actor QUITs in parallel, then the history is
 * flushed, all within SHUTDOWN_BOUND (3 s, inside the process's 5 s).
 * This is the one-process mode; a cluster node runs its networks as entities instead (src/cluster/). How one
 * network's actor is run, asked and stopped is LocalActors.ts, shared by both.
 *
 * Concurrency rule: each network is one supervising fiber (LocalActors.supervise) in a FiberMap keyed by network id
 * (FiberMap.run / remove: starting, stopping and shutdown are interruptions, so actor finalizers always run; dfx
 * `Sharder.ts`: catch every cause, log, go on). One network's failure stays in its own fiber. One fiber follows
 * `Networks.changes`; one more starts the stored networks at boot, in batches, and ends.
 */
import { Effect, FiberId, FiberMap, Layer, PubSub, Queue } from "effect"
import { AppConfig } from "../services/AppConfig.js"
import { E2eKeys } from "../services/networks/E2eKeys.js"
import { ClusterEvents } from "../services/nodes/ClusterEvents.js"
import { NetworkFeed } from "../services/events/NetworkFeed.js"
import { MessageWriter } from "../services/history/MessageWriter.js"
import { Metrics } from "../services/upkeep/Metrics.js"
import { Networks } from "../services/networks/Networks.js"
import { IrcTransport } from "./IrcTransport.js"
import * as LocalActors from "./LocalActors.js"
import { NetworkControl, type NetworkControlService } from "./NetworkApi.js"

/**
 * Actors started in one turn of the event loop at boot: a few tens of milliseconds of work between two turns, about
 * one CONNECT_SPACING (20 ms) on an idle core, so a connect slot falling due meanwhile fires at most a few slots late.
 */
const BOOT_BATCH = 25

/**
 * A network already supervised is not started again. `interruptAs` is not an option of FiberMap.run, which sets it
 * itself on a copy of the options it keeps for the fiber's life (`{ ...options, interruptAs }`): given here, the copy
 * only overwrites a field, so it shares one hidden class in V8. A spread followed by a new field gets one of its own,
 * some 200 bytes a network (bench/results/memory-breakdown.md "At 10,000 networks, per-network objects").
 */
const ONLY_IF_MISSING: { readonly onlyIfMissing: true; readonly interruptAs: FiberId.FiberId } = {
  onlyIfMissing: true,
  interruptAs: FiberId.none
}

/**
 * Lets the event loop run (I/O, timers) before the fiber goes on: `setImmediate` runs after the pending I/O, where
 * Effect.yieldNow may resume within the same microtask run. Not a sleep, so it takes no time on any Clock (TestClock
 * included).
 */
const eventLoopTurn = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

export const make = Effect.gen(function*() {
  const networks = yield* Networks
  const e2eKeys = yield* E2eKeys
  const local = yield* LocalActors.make()
  const supervised = yield* FiberMap.make<number>()

  const start = (networkId: number) => FiberMap.run(supervised, networkId, local.supervise(networkId), ONLY_IF_MISSING)
  const stop = (networkId: number) => FiberMap.remove(supervised, networkId)

  // Shutdown: registered after the FiberMap, so it runs before the FiberMap interrupts the actors (each QUITs with
  // its grace, then the history is flushed, within SHUTDOWN_BOUND).
  yield* Effect.addFinalizer(() => local.shutdown)

  /**
   * A stored network changed (Networks.update). Its connection settings: the actor is replaced by a new one built
   * from the new settings (the old one's scope closes with a QUIT), which connects unless the member disconnected
   * the network. Anything else: the running actor reads its settings again, keeping its connection.
   */
  const changed = (networkId: number, reconnect: boolean) =>
    reconnect ? Effect.asVoid(FiberMap.run(supervised, networkId, local.supervise(networkId))) : local.reconfigure(networkId)

  /**
   * The stored networks whose actors the boot has not started yet: each counts as supervised (NotConnected, not
   * UnknownNetwork) until its turn.
   */
  const booting = new Set<number>()

  // Follow adds, changes and removes; subscribe before listing so a network added meanwhile is not missed.
  const changes = yield* PubSub.subscribe(networks.changes)
  yield* Queue.take(changes).pipe(
    Effect.flatMap((change) => {
      // Made on another node of a cluster: that node tells the network's actor (services/nodes/ClusterEvents.ts).
      if (change.elsewhere === true) return Effect.void
      switch (change._tag) {
        case "Added":
          return start(change.networkId)
        case "Changed":
          // A reconnecting change starts the actor now; the boot must not start it a second time when its turn comes.
          if (change.reconnect) booting.delete(change.networkId)
          return changed(change.networkId, change.reconnect)
        case "Removed":
          booting.delete(change.networkId)
          return stop(change.networkId)
      }
    }),
    Effect.forever,
    Effect.forkScoped
  )
  // Every stored row, channel and end-to-end key in three queries, which the actors take instead of three queries
  // each (Networks.loadAll, E2eKeys.loadAll).
  const ids = yield* networks.loadAll()
  yield* e2eKeys.loadAll(ids)
  for (const networkId of ids) booting.add(networkId)
  /**
   * Starting an actor runs its first steps at once, in the starting fiber's turn (build, Start, a connect slot), about
   * a millisecond each: 10,000 in one go held the event loop for tens of seconds, so /healthz and the HTTP listener
   * (built after this layer) waited for all of them, and the connects whose slots fell due meanwhile went out in one
   * bunch. So the boot starts them in the background, BOOT_BATCH at a time, and lets the event loop run between two
   * batches (`eventLoopTurn`): the listeners come up at once, and the timers fire the connect slots on time.
   */
  const boot = Effect.gen(function*() {
    for (let i = 0; i < ids.length; i += BOOT_BATCH) {
      for (const networkId of ids.slice(i, i + BOOT_BATCH)) {
        // Removed meanwhile: nothing to start.
        if (booting.delete(networkId)) yield* start(networkId)
      }
      yield* eventLoopTurn
    }
    yield* Effect.logInfo("network supervisor started every stored network").pipe(
      Effect.annotateLogs({ networks: ids.length })
    )
  })
  yield* Effect.forkScoped(boot)
  yield* Effect.logInfo("network supervisor started").pipe(Effect.annotateLogs({ networks: ids.length }))

  const service: NetworkControlService = local.control((networkId) =>
    booting.has(networkId) || FiberMap.unsafeHas(supervised, networkId)
  )
  return service
})

/** NetworkControl over the stored networks; needs the IRC transport (IrcTransportLive in production). */
export const NetworkSupervisorLive: Layer.Layer<
  NetworkControl,
  never,
  Networks | MessageWriter | E2eKeys | AppConfig | Metrics | IrcTransport | ClusterEvents | NetworkFeed
> = Layer.scoped(NetworkControl, make)
