/**
 * ShardLockWatch: which shard locks the cluster's lock storage last confirmed this node holds, kept by wrapping the
 * cluster's RunnerStorage. It is half of a network's fence (NodeActors.ts `holds`: the cluster's own view,
 * Sharding.hasShardId, is the other half) — docs/decisions/several-nodes.md "Several nodes", fencing.
 *
 * Why: in @effect/cluster 0.60.2 (SqlRunnerStorage), any lock operation that fails, times out or is interrupted
 * (acquire, refresh, release) rebuilds the node's lock connection, and the old connection's finalizer runs
 * `pg_advisory_unlock_all()`: every shard lock of the node is gone at once, while Sharding still counts the shards
 * as held and keeps their entities (so their IRC connections) open until its next refresh, up to
 * shardLockRefreshInterval later; meanwhile a joining node may take those shards and connect the same networks. So
 * on any failed lock operation the watch forgets every lock at once and runs the node's sweep (NodeActors.ts), and
 * trusts a lock again only when a later operation confirms it. A release runs the sweep before it reaches the
 * storage, so no socket of a shard outlives its lock.
 *
 * Concurrency rule: the table changes only in the step right after a storage operation ends (or, for a release,
 * before it starts), and is read synchronously. An operation's result is applied only if no operation failed since it
 * began (`failures`), so a result read before the lock connection was rebuilt never confirms a lock that is gone.
 */
import { RunnerStorage, type ShardId } from "@effect/cluster"
import { Context, Effect, Layer } from "effect"

export interface ShardLockWatchService {
  /** Whether the storage last confirmed this node's lock on the shard, and no lock operation has failed since. */
  readonly confirmed: (shardId: ShardId.ShardId) => boolean
  /**
   * Sets what runs, and is awaited, whenever locks stop being trusted: before a release reaches the storage, and
   * right after a lock operation failed (the storage is then already dropping every lock). The node's sweep goes
   * here (NodeActors.ts), so a socket is closed before its lock can be taken.
   */
  readonly onDoubt: (sweep: Effect.Effect<void>) => void
}

export class ShardLockWatch extends Context.Tag("belay/cluster/ShardLockWatch")<ShardLockWatch, ShardLockWatchService>() {}

type Storage = Context.Tag.Service<RunnerStorage.RunnerStorage>

/** The watch over `storage`, and `storage` wrapped so that every lock operation keeps the watch. */
export const watch = (storage: Storage) =>
  Effect.gen(function*() {
    const held = new Set<string>()
    let failures = 0
    let sweep: Effect.Effect<void> = Effect.void
    const doubt = Effect.suspend(() => sweep)

    /** Runs a lock operation; on success applies `confirm` unless some operation failed meanwhile. */
    const observed = <A, E>(operation: Effect.Effect<A, E>, confirm: (result: A) => void): Effect.Effect<A, E> =>
      Effect.suspend(() => {
        const since = failures
        return operation.pipe(
          Effect.tap((result) =>
            Effect.sync(() => {
              if (failures === since) confirm(result)
            })
          ),
          // Interruption included: the storage rebuilds its lock connection on it too.
          Effect.onError(() =>
            Effect.suspend(() => {
              failures++
              held.clear()
              return doubt
            })
          )
        )
      })

    const wrapped: Storage = {
      ...storage,
      acquire: (address, shardIds) =>
        observed(storage.acquire(address, shardIds), (acquired) => {
          for (const shardId of acquired) held.add(shardId.toString())
        }),
      refresh: (address, shardIds) => {
        const asked = [...shardIds]
        return observed(storage.refresh(address, asked), (kept) => {
          const still = new Set(kept.map((shardId) => shardId.toString()))
          for (const shardId of asked) {
            const key = shardId.toString()
            if (still.has(key)) held.add(key)
            else held.delete(key)
          }
        })
      },
      release: (address, shardId) =>
        Effect.suspend(() => {
          // Not ours from the moment it is given up, and nothing of it left open when the lock goes.
          held.delete(shardId.toString())
          return Effect.zipRight(doubt, observed(storage.release(address, shardId), () => {}))
        }),
      releaseAll: (address) =>
        Effect.suspend(() => {
          held.clear()
          return Effect.zipRight(doubt, observed(storage.releaseAll(address), () => {}))
        })
    }

    const service: ShardLockWatchService = {
      confirmed: (shardId) => held.has(shardId.toString()),
      onDoubt: (effect) => {
        sweep = effect
      }
    }
    return { storage: wrapped, watch: service }
  })

/** The RunnerStorage below it, watched: provides the wrapped RunnerStorage and its ShardLockWatch. */
export const ShardLockWatchLive: Layer.Layer<
  RunnerStorage.RunnerStorage | ShardLockWatch,
  never,
  RunnerStorage.RunnerStorage
> = Layer.effectContext(
  Effect.gen(function*() {
    const { storage, watch: service } = yield* watch(yield* RunnerStorage.RunnerStorage)
    return Context.make(RunnerStorage.RunnerStorage, storage).pipe(Context.add(ShardLockWatch, service))
  })
)
