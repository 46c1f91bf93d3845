// Runs on the live Clock: the reads' kept statuses age by STATUS_FRESH and STATUS_SERVED, and the cluster's runner
// works on it.
// ClusterNetworkControl's reads of a network owned by another node, over @effect/cluster's in-memory TestRunner: this
// node runs no actor (a NodeActors whose `running` knows none), and the network's entity is a scripted owner that
// counts the Status asks it answers and can hold one back. What is asserted is what a read answers and when, and how
// many asks reach the owner (docs/decisions/several-nodes.md "A remote network's status"). Commands to that network, with a real
// direct listener on loopback whose address the scripted entity gives: which path each takes (docs/decisions/several-nodes.md
// "Several nodes", the direct path), and that it forgets the kept status as the entity path does.
import { TestRunner } from "@effect/cluster"
import { describe, expect, it } from "@effect/vitest"
import * as Crypto from "node:crypto"
import { Context, Deferred, Duration, Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
import { NetworkControl, type NetworkControlService } from "../../src/actors/NetworkApi.js"
import { ClusterNetworkControlLive, STATUS_FRESH, STATUS_SERVED } from "../../src/cluster/ClusterNetworkControl.js"
import { listen } from "../../src/cluster/DirectListener.js"
import { DirectPeers, make as makePeers } from "../../src/cluster/DirectPeers.js"
import type { DirectAddress } from "../../src/cluster/DirectWire.js"
import { NetworkEntity } from "../../src/cluster/NetworkEntity.js"
import { NodeActors, type NodeActorsService } from "../../src/cluster/NodeActors.js"
import type { NetworkStatus } from "../../src/schema/Network.js"

const NETWORK = 7

const statusNamed = (nick: string): NetworkStatus => ({
  networkId: NETWORK,
  state: "connected",
  nick,
  nextRetryAt: null,
  lastError: null,
  caseMapping: "rfc1459",
  channelTypes: "#&"
})

/** Past `d` on the live clock, with room for the runner's scheduling. */
const past = (d: Duration.Duration) => Effect.sleep(Duration.sum(d, Duration.millis(150)))

/**
 * A node that runs no actor, and the network's owner as a script: its status (what Status answers; a Nick command
 * changes it, as the owner's actor would), the asks it answered, and `holdNext`, which makes the next Status take its
 * answer at once but give it only when released.
 */
const startNode = (direct?: { readonly address: DirectAddress; readonly secret: Buffer }) => Effect.gen(function*() {
  const owner = {
    status: statusNamed("alpha"),
    asked: 0,
    held: undefined as Deferred.Deferred<void> | undefined,
    /** DirectAddress asks, and the Say commands that came through the entity. */
    addressAsked: 0,
    saidViaEntity: 0
  }
  const holdNext = Effect.map(Deferred.make<void>(), (release) => {
    owner.held = release
    return release
  })
  const unused = Object.fromEntries(
    [...NetworkEntity.protocol.requests.keys()].map((tag) => [tag, () => Effect.die(`${tag} is not scripted`)])
  )
  const entity = NetworkEntity.toLayer(
    {
      ...unused,
      Status: () =>
        Effect.suspend(() => {
          owner.asked++
          const answer = owner.status
          const release = owner.held
          owner.held = undefined
          return release === undefined ? Effect.succeed(answer) : Effect.as(Deferred.await(release), answer)
        }),
      Nick: ({ payload }: { readonly payload: { readonly nick: string } }) =>
        Effect.sync(() => {
          owner.status = { ...owner.status, nick: payload.nick }
        }),
      DirectAddress: () =>
        Effect.sync(() => {
          owner.addressAsked++
          return direct?.address ?? null
        }),
      Say: () => Effect.sync(() => void owner.saidViaEntity++)
    } as never,
    // As the real entity (NetworkEntityLive.ts): a held Status does not hold up the command.
    { concurrency: "unbounded" }
  )
  const noActors = Layer.succeed(
    NodeActors,
    { local: { running: () => undefined }, control: {} } as unknown as NodeActorsService
  )
  const scope = yield* Scope.make()
  yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
  const peers = direct === undefined ? Layer.empty : Layer.scoped(DirectPeers, makePeers(direct.secret))
  const node = Layer.merge(ClusterNetworkControlLive, entity).pipe(
    Layer.provide(Layer.merge(noActors, peers)),
    Layer.provideMerge(TestRunner.layer)
  )
  const context = yield* Layer.buildWithScope(node, scope)
  const control: NetworkControlService = Context.get(context, NetworkControl)
  return { control, owner, holdNext }
})

describe("ClusterNetworkControl: a network's status read on a node that does not run it", () => {
  it.scopedLive("a burst of reads answers the kept status at once and asks the owner once, in the background", () =>
    Effect.gen(function*() {
      const { control, owner, holdNext } = yield* startNode()
      expect(yield* control.status(NETWORK)).toEqual(statusNamed("alpha"))
      expect(owner.asked).toBe(1)

      yield* past(STATUS_FRESH)
      owner.status = statusNamed("beta")
      const release = yield* holdNext
      // The owner is slow to answer: no read of the burst waits for it.
      const burst = yield* Effect.all(Array.from({ length: 10 }, () => control.status(NETWORK)), {
        concurrency: "unbounded"
      }).pipe(Effect.timeout("500 millis"))
      expect(burst.map((s) => s.nick)).toEqual(Array(10).fill("alpha"))
      expect(owner.asked).toBe(2)

      yield* Deferred.succeed(release, undefined)
      yield* Effect.sleep("100 millis")
      expect((yield* control.status(NETWORK)).nick).toBe("beta")
      expect(owner.asked).toBe(2)
    }))

  it.scopedLive("a read after a command through this node sees it, though an ask from before answers later", () =>
    Effect.gen(function*() {
      const { control, owner, holdNext } = yield* startNode()
      expect((yield* control.status(NETWORK)).nick).toBe("alpha")
      yield* past(STATUS_FRESH)
      // An ask begins (its answer taken before the command), and is held.
      const release = yield* holdNext
      const early = yield* Effect.fork(control.status(NETWORK))
      yield* Effect.sleep("100 millis")
      expect(owner.asked).toBe(2)

      yield* control.nick(NETWORK, "gamma")
      expect((yield* control.status(NETWORK)).nick).toBe("gamma")
      // The ask from before the command answers now; it is not what the next reads are given.
      yield* Deferred.succeed(release, undefined)
      expect((yield* Fiber.join(early)).nick).toBe("alpha")
      yield* Effect.sleep("100 millis")
      expect((yield* control.status(NETWORK)).nick).toBe("gamma")
    }))

  it.scopedLive("a status kept longer than STATUS_SERVED is not answered: the read waits for the owner", () =>
    Effect.gen(function*() {
      const { control, owner, holdNext } = yield* startNode()
      expect((yield* control.status(NETWORK)).nick).toBe("alpha")
      owner.status = statusNamed("delta")
      yield* past(STATUS_SERVED)
      const release = yield* holdNext
      const read = yield* Effect.fork(control.status(NETWORK))
      yield* Effect.sleep("200 millis")
      expect(Option.isNone(yield* Fiber.poll(read))).toBe(true)
      yield* Deferred.succeed(release, undefined)
      expect((yield* Fiber.join(read)).nick).toBe("delta")
      expect(owner.asked).toBe(2)
    }))
})

describe("ClusterNetworkControl: a command to a network another node runs", () => {
  it.scopedLive("goes to the owner's listener, asked once; a refusal takes the entity path and forgets the listener", () =>
    Effect.gen(function*() {
      const secret = Crypto.randomBytes(32)
      let accepting = true
      const said: Array<string> = []
      const listener = yield* listen({
        host: "127.0.0.1",
        port: 0,
        secret,
        accepts: () => accepting,
        // Only `say` is reached: the listener calls the one method the command names (DirectWire's `execute`).
        control: {
          say: (_networkId: number, _kind: string, _target: string, text: string) => Effect.sync(() => void said.push(text))
        } as unknown as NetworkControlService
      })
      const { control, owner } = yield* startNode({ address: listener.address, secret })
      yield* control.say(NETWORK, "privmsg", "#belay", "one")
      yield* control.say(NETWORK, "privmsg", "#belay", "two")
      expect(said).toEqual(["one", "two"])
      expect(owner.addressAsked).toBe(1)
      expect(owner.saidViaEntity).toBe(0)

      // The listener no longer runs the network: the command goes through the entity, and the listener is asked
      // for again by the next command.
      accepting = false
      yield* control.say(NETWORK, "privmsg", "#belay", "three")
      expect(said).toEqual(["one", "two"])
      expect(owner.saidViaEntity).toBe(1)
      accepting = true
      yield* control.say(NETWORK, "privmsg", "#belay", "four")
      expect(said).toEqual(["one", "two", "four"])
      expect(owner.addressAsked).toBe(2)
    }))

  it.scopedLive("through the listener, forgets the kept status: the next read asks the owner", () =>
    Effect.gen(function*() {
      const secret = Crypto.randomBytes(32)
      const listener = yield* listen({
        host: "127.0.0.1",
        port: 0,
        secret,
        accepts: () => true,
        control: { say: () => Effect.void } as unknown as NetworkControlService
      })
      const { control, owner } = yield* startNode({ address: listener.address, secret })
      // The first command asks for the listener; the second takes the kept one.
      yield* control.say(NETWORK, "privmsg", "#belay", "one")
      expect((yield* control.status(NETWORK)).nick).toBe("alpha")
      expect(owner.asked).toBe(1)
      owner.status = statusNamed("epsilon")
      yield* control.say(NETWORK, "privmsg", "#belay", "two")
      expect((yield* control.status(NETWORK)).nick).toBe("epsilon")
      expect(owner.asked).toBe(2)
    }))
})
