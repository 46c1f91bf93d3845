/**
 * NetworkEntityLive: what a node does with the network entities it owns. An entity's life on this node (from its
 * first message until its shard leaves the node, the node stops, or it loses its shard locks) supervises the
 * network's actor in the entity's scope, so the IRC connection lives and dies with the node's claim on the network
 * (docs/decisions/several-nodes.md "Several nodes": fencing by the cluster's shard locks). The handlers ask that actor through
 * NodeActors' port, exactly as the one-process supervisor would.
 *
 * Concurrency rule: one FiberHandle per entity holds the supervising fiber: every handler runs it if missing while
 * the node holds the shard (`ensure`), Reload with `reconnect` replaces it, Stop clears it. When the entity's scope closes, the actor is first told to QUIT and given
 * QUIT_GRACE to see its socket closed, then the fiber is interrupted and the socket destroyed (closeAtOnce): only
 * after that does the cluster release the shard lock for another node to take. Handlers run concurrently
 * (`concurrency: "unbounded"`); the actor's inbox serializes what reaches IRC. `maxIdleTime: infinity`: an entity
 * is an IRC connection, never reaped for being quiet.
 */
import { Entity, Sharding } from "@effect/cluster"
import { Cause, Duration, Effect, FiberHandle, Option } from "effect"
import { foldCase } from "../irc/CaseMapping.js"
import type { NetworkEvent } from "../schema/NetworkEvent.js"
import { type NotConnected, UnknownNetwork } from "../schema/ToolErrors.js"
import { E2eKeys } from "../services/networks/E2eKeys.js"
import { Networks } from "../services/networks/Networks.js"
import { DirectListener } from "./DirectListener.js"
import { NetworkEntity } from "./NetworkEntity.js"
import { NodeActors } from "./NodeActors.js"

const isNotConnected = (e: unknown): e is NotConnected =>
  typeof e === "object" && e !== null && "_tag" in e && e._tag === "NotConnected"

export const NetworkEntityLive = NetworkEntity.toLayer(
  Effect.gen(function*() {
    const { closing, control, holds, local, supervising } = yield* NodeActors
    // Absent on the cluster's in-memory test runner: every command then takes the entity path.
    const direct = yield* Effect.serviceOption(DirectListener)
    const e2e = yield* E2eKeys
    const networks = yield* Networks
    const sharding = yield* Sharding.Sharding
    const address = yield* Entity.CurrentAddress
    const networkId = Number(address.entityId)

    const handle = yield* FiberHandle.make<void>()
    // Registered after the handle, so it runs first when the scope closes: QUIT while the actor still runs.
    // Marked closing: the node's sweep leaves this QUIT its grace while the shard lock is still held (NodeActors.ts).
    yield* Effect.addFinalizer(() => closing(networkId, local.quit(networkId)))
    const supervise = supervising(networkId, local.supervise(networkId))
    /** After Stop (the network was removed) the entity stays inert until told to Start or Reload. */
    let stopped = false

    /**
     * Supervises the network's actor unless it already runs, was stopped, or the node no longer holds the shard.
     * Called by the handlers only, never by the build: the cluster (0.60.2) registers an entity only once its build
     * has returned, and a shard handed over meanwhile closes only registered entities, so an actor started in the
     * build could outlive the node's lock and run beside the next holder's. A handler runs on a registered entity:
     * a handover after this check closes it; one before it is seen by the check.
     */
    const ensure = Effect.suspend(() =>
      stopped || !sharding.hasShardId(address.shardId)
        ? Effect.void
        : Effect.asVoid(FiberHandle.run(handle, supervise, { onlyIfMissing: true }))
    )

    /**
     * A command to a network that is not stored answers UnknownNetwork, as in one process, rather than NotConnected
     * while a just-started supervision looks for it.
     */
    const known = <A, E>(command: Effect.Effect<A, E | NotConnected>): Effect.Effect<A, E | NotConnected | UnknownNetwork> => {
      const stored: Effect.Effect<boolean> = networks.config(networkId).pipe(
        Effect.map(Option.isSome),
        Effect.catchAllCause(() => Effect.succeed(true))
      )
      const recheck = (notConnected: NotConnected): Effect.Effect<never, NotConnected | UnknownNetwork> =>
        local.running(networkId) !== undefined
          ? Effect.fail(notConnected)
          : Effect.flatMap(stored, (isStored): Effect.Effect<never, NotConnected | UnknownNetwork> =>
            isStored ? Effect.fail(notConnected) : Effect.fail(new UnknownNetwork({ networkId })))
      return Effect.zipRight(ensure, Effect.catchIf(command, isNotConnected, recheck))
    }

    /**
     * A key written on some node (E2eKeys): the owner reads it from the store, where it is already, and hands it to
     * its actor; only the target crossed the cluster. A store that cannot be read leaves the actor's keys as they
     * were: its next life reads them whole.
     */
    const keysChanged = (target: string) =>
      e2e.forNetwork(networkId).pipe(
        Effect.map((keys) => {
          const entry = keys.get(foldCase("rfc1459", target))
          local.applyKeyChange(entry === undefined ? { networkId, target } : { networkId, target: entry.target, key: entry.key })
        }),
        Effect.catchAllCause((cause) =>
          Effect.logWarning("could not read an end-to-end key change", Cause.pretty(cause)).pipe(
            Effect.annotateLogs({ networkId })
          )
        )
      )

    const view = Effect.suspend(() => {
      const events: Array<NetworkEvent> = []
      return control.view(networkId, (drawn) => {
        events.push(...drawn)
      }).pipe(
        Effect.as(events),
        Effect.catchAllCause(() => Effect.succeed(events))
      )
    })

    return NetworkEntity.of({
      Start: () =>
        Effect.suspend(() => {
          stopped = false
          return ensure
        }),
      Reload: ({ payload }) =>
        Effect.suspend(() => {
          stopped = false
          if (!payload.reconnect) return Effect.zipRight(ensure, local.reconfigure(networkId))
          // New connection settings: the running actor is replaced (its scope closes with a QUIT).
          return sharding.hasShardId(address.shardId) ? Effect.asVoid(FiberHandle.run(handle, supervise)) : Effect.void
        }),
      Stop: () =>
        Effect.suspend(() => {
          stopped = true
          return FiberHandle.clear(handle)
        }),
      KeysChanged: ({ payload }) => Effect.zipRight(ensure, keysChanged(payload.target)),
      // Answered by the owner, fenced as the listener is: null while the actor does not run here (yet).
      DirectAddress: () =>
        Effect.zipRight(
          ensure,
          Effect.sync(() =>
            Option.isSome(direct) && local.running(networkId) !== undefined && holds(networkId) ? direct.value.address : null
          )
        ),
      Status: () => Effect.zipRight(ensure, control.status(networkId)),
      Upstream: () => Effect.zipRight(ensure, control.upstream(networkId)),
      View: () => Effect.zipRight(ensure, view),
      Say: ({ payload }) => known(control.say(networkId, payload.kind, payload.target, payload.text)),
      Raw: ({ payload }) => known(control.raw(networkId, payload.line)),
      RawLines: ({ payload }) => known(control.rawLines(networkId, payload.lines)),
      Join: ({ payload }) => known(control.join(networkId, payload.channel, Option.fromNullable(payload.key))),
      Part: ({ payload }) => known(control.part(networkId, payload.channel, Option.fromNullable(payload.reason))),
      Nick: ({ payload }) => known(control.nick(networkId, payload.nick)),
      Away: ({ payload }) => known(control.away(networkId, Option.fromNullable(payload.message))),
      Whois: ({ payload }) => known(control.whois(networkId, payload.nick)),
      Connect: ({ payload }) => known(control.connect(networkId, payload.reconnect)),
      Disconnect: () => known(control.disconnect(networkId)),
      Members: ({ payload }) => known(control.members(networkId, payload.channel)),
      Topic: ({ payload }) => known(control.topic(networkId, payload.channel)),
      SetTopic: ({ payload }) => known(control.setTopic(networkId, payload.channel, payload.topic)),
      ModeList: ({ payload }) => known(control.modeList(networkId, payload.channel, payload.letter)),
      SetModes: ({ payload }) => known(control.setModes(networkId, payload.channel, payload.changes)),
      IsEncrypted: ({ payload }) => Effect.zipRight(ensure, control.isEncrypted(networkId, payload.target)),
      EncryptedTargetOfRaw: ({ payload }) =>
        Effect.zipRight(ensure, Effect.map(control.encryptedTargetOfRaw(networkId, payload.line), Option.getOrNull))
    })
  }),
  {
    maxIdleTime: Duration.infinity,
    concurrency: "unbounded",
    // A handler's defect fails that request only; the entity (and its IRC connection) goes on.
    disableFatalDefects: true
  }
)
