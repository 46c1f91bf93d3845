/**
 * NetworkEntityLive: what a node does with the network entities it owns. An entity's life on this node (from its
 * first message until its shard leaves the node, the node stops, or it loses its shard locks) supervises the
 * network's actor in the entity's scope, so the IRC connection lives and dies with the node's claim on the network
 * (docs/decisions.md "Several nodes": fencing by the cluster's shard locks). The handlers ask that actor through
 * NodeActors' port, exactly as the one-process supervisor would.
 *
 * Concurrency rule: one FiberHandle per entity holds the supervising fiber (Start runs it if missing, Reload with
 * `reconnect` replaces it, Stop clears it). When the entity's scope closes, the actor is first told to QUIT and given
 * QUIT_GRACE to see its socket closed, then the fiber is interrupted and the socket destroyed (closeAtOnce): only
 * after that does the cluster release the shard lock for another node to take. Handlers run concurrently
 * (`concurrency: "unbounded"`); the actor's inbox serializes what reaches IRC. `maxIdleTime: infinity`: an entity
 * is an IRC connection, never reaped for being quiet.
 */
import { Entity } from "@effect/cluster"
import { Cause, Duration, Effect, FiberHandle, Option } from "effect"
import { foldCase } from "../irc/CaseMapping.js"
import type { NetworkEvent } from "../schema/SocketFrame.js"
import { E2eKeys } from "../services/E2eKeys.js"
import { Networks } from "../services/Networks.js"
import { NetworkEntity } from "./NetworkEntity.js"
import { NodeActors } from "./NodeActors.js"

export const NetworkEntityLive = NetworkEntity.toLayer(
  Effect.gen(function*() {
    const { control, local, supervising } = yield* NodeActors
    const e2e = yield* E2eKeys
    const address = yield* Entity.CurrentAddress
    const networkId = Number(address.entityId)

    const handle = yield* FiberHandle.make<void>()
    // Registered after the handle, so it runs first when the scope closes: QUIT while the actor still runs.
    yield* Effect.addFinalizer(() => local.quit(networkId))
    const supervise = supervising(networkId, local.supervise(networkId))
    // An id that names no stored network gets an inert entity: its commands answer UnknownNetwork, as they do in
    // one process, instead of NotConnected while an actor would look for it. (A read that dies is retried by the
    // cluster with its defect policy.)
    if (Option.isSome(yield* (yield* Networks).config(networkId))) yield* FiberHandle.run(handle, supervise)

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
      Start: () => Effect.asVoid(FiberHandle.run(handle, supervise, { onlyIfMissing: true })),
      Reload: ({ payload }) =>
        payload.reconnect ? Effect.asVoid(FiberHandle.run(handle, supervise)) : local.reconfigure(networkId),
      Stop: () => FiberHandle.clear(handle),
      KeysChanged: ({ payload }) => keysChanged(payload.target),
      Status: () => control.status(networkId),
      View: () => view,
      Say: ({ payload }) => control.say(networkId, payload.kind, payload.target, payload.text),
      Raw: ({ payload }) => control.raw(networkId, payload.line),
      Join: ({ payload }) => control.join(networkId, payload.channel, Option.fromNullable(payload.key)),
      Part: ({ payload }) => control.part(networkId, payload.channel, Option.fromNullable(payload.reason)),
      Nick: ({ payload }) => control.nick(networkId, payload.nick),
      Away: ({ payload }) => control.away(networkId, Option.fromNullable(payload.message)),
      Whois: ({ payload }) => control.whois(networkId, payload.nick),
      Connect: ({ payload }) => control.connect(networkId, payload.reconnect),
      Disconnect: () => control.disconnect(networkId),
      Members: ({ payload }) => control.members(networkId, payload.channel),
      Topic: ({ payload }) => control.topic(networkId, payload.channel),
      SetTopic: ({ payload }) => control.setTopic(networkId, payload.channel, payload.topic),
      ModeList: ({ payload }) => control.modeList(networkId, payload.channel, payload.letter),
      SetModes: ({ payload }) => control.setModes(networkId, payload.channel, payload.changes),
      IsEncrypted: ({ payload }) => control.isEncrypted(networkId, payload.target),
      EncryptedTargetOfRaw: ({ payload }) =>
        Effect.map(control.encryptedTargetOfRaw(networkId, payload.line), Option.getOrNull)
    })
  }),
  {
    maxIdleTime: Duration.infinity,
    concurrency: "unbounded",
    // A handler's defect fails that request only; the entity (and its IRC connection) goes on.
    disableFatalDefects: true
  }
)
