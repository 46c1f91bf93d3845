// ShardLockWatch over the cluster's in-memory RunnerStorage, with lock operations made to fail on demand: what the
// fence trusts after acquire, refresh, release and a failed operation (which in 0.60.2's SQL storage drops every lock
// of the node, docs/decisions/several-nodes.md "Several nodes").
import { ClusterError, RunnerAddress, RunnerStorage, ShardId } from "@effect/cluster"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option } from "effect"
import { watch } from "../../src/cluster/ShardLockWatch.js"

const address = RunnerAddress.make("127.0.0.1", 1)
const shard = (id: number) => ShardId.make("default", id)

/** The in-memory storage, whose refresh fails while `failing` is set and whose acquire can be held on a Deferred. */
const scripted = Effect.gen(function*() {
  const memory = yield* RunnerStorage.makeMemory
  const control = { failing: false, hold: Option.none<Deferred.Deferred<void>>() }
  /** What reached the storage's releases and the node's sweep, in order. */
  const events: Array<string> = []
  const storage: typeof memory = {
    ...memory,
    release: (a, shardId) => Effect.zipRight(Effect.sync(() => events.push(`release ${shardId.id}`)), memory.release(a, shardId)),
    acquire: (a, shardIds) =>
      Effect.zipRight(
        Option.match(control.hold, { onNone: () => Effect.void, onSome: Deferred.await }),
        memory.acquire(a, shardIds)
      ),
    refresh: (a, shardIds) =>
      Effect.suspend(() =>
        control.failing ? Effect.fail(new ClusterError.PersistenceError({ cause: "lock connection lost" })) : memory.refresh(a, shardIds)
      )
  }
  const { storage: watched, watch: fence } = yield* watch(storage)
  fence.onDoubt(Effect.sync(() => events.push("sweep")))
  return { control, events, watched, fence }
})

describe("ShardLockWatch", () => {
  it.effect("trusts what the storage confirmed, forgets every lock and sweeps when an operation fails, and trusts again on the next refresh", () =>
    Effect.gen(function*() {
      const { control, events, fence, watched } = yield* scripted
      expect(fence.confirmed(shard(1))).toBe(false)
      yield* watched.acquire(address, [shard(1), shard(2)])
      expect([fence.confirmed(shard(1)), fence.confirmed(shard(2)), fence.confirmed(shard(3))]).toEqual([true, true, false])

      control.failing = true
      const failed = yield* Effect.either(watched.refresh(address, [shard(1), shard(2)]))
      expect(failed._tag).toBe("Left")
      expect([fence.confirmed(shard(1)), fence.confirmed(shard(2))]).toEqual([false, false])
      expect(events).toEqual(["sweep"])

      control.failing = false
      yield* watched.refresh(address, [shard(1), shard(2)])
      expect([fence.confirmed(shard(1)), fence.confirmed(shard(2))]).toEqual([true, true])
    }))

  it.effect("a released shard is untrusted and swept before its release reaches the storage; releaseAll forgets all", () =>
    Effect.gen(function*() {
      const { events, fence, watched } = yield* scripted
      yield* watched.acquire(address, [shard(1), shard(2), shard(3)])
      yield* watched.release(address, shard(2))
      expect(events).toEqual(["sweep", "release 2"])
      expect([fence.confirmed(shard(1)), fence.confirmed(shard(2)), fence.confirmed(shard(3))]).toEqual([true, false, true])
      yield* watched.releaseAll(address)
      expect([fence.confirmed(shard(1)), fence.confirmed(shard(3))]).toEqual([false, false])
    }))

  it.effect("a result read before a failed operation confirms nothing", () =>
    Effect.gen(function*() {
      const { control, fence, watched } = yield* scripted
      const gate = yield* Deferred.make<void>()
      control.hold = Option.some(gate)
      const acquiring = yield* Effect.fork(watched.acquire(address, [shard(7)]))
      yield* Effect.yieldNow()
      control.failing = true
      yield* Effect.either(watched.refresh(address, []))
      yield* Deferred.succeed(gate, undefined)
      expect(yield* Fiber.join(acquiring)).toEqual([shard(7)])
      expect(fence.confirmed(shard(7))).toBe(false)
    }))
})
