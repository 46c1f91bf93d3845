/**
 * StatusCell: the public status of one network actor (NetworkApi's `status`), read with `get` and followed with
 * `changes` (the current value, then every one published). In place of a SubscriptionRef, whose PubSub, semaphore
 * and their closures cost about 2.7 KiB for as long as the network lives (heap snapshots; the interface budgets an
 * idle network 32 KiB of the whole service): the value is a plain field, and the PubSub that `changes` reads exists
 * only once somebody has followed the status (the tests' harness does; the services only `get` it).
 *
 * Concurrency rule: `set` is called only by the actor's dispatcher (ActorState.publish); `get` and `changes` from any
 * fiber. JavaScript runs one fiber step at a time, so a reader sees a whole status; a follower subscribes before it
 * reads the current value, so it may see a value twice but never misses one.
 */
import { Effect, PubSub, Stream } from "effect"
import type { NetworkStatus } from "../../schema/Network.js"

export class StatusCell {
  private hub: PubSub.PubSub<NetworkStatus> | undefined = undefined

  constructor(private value: NetworkStatus) {}

  /** The status last published. */
  get get(): Effect.Effect<NetworkStatus> {
    return Effect.sync(() => this.value)
  }

  /** The status last published, read at once (NetworkApi's `statusNow`). */
  get now(): NetworkStatus {
    return this.value
  }

  /** The current status, then every status published after it. */
  get changes(): Stream.Stream<NetworkStatus> {
    return Stream.unwrapScoped(Effect.suspend(() => {
      this.hub ??= Effect.runSync(PubSub.unbounded<NetworkStatus>())
      return Effect.map(PubSub.subscribe(this.hub), (queue) => Stream.concat(Stream.succeed(this.value), Stream.fromQueue(queue)))
    }))
  }

  set(status: NetworkStatus): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.value = status
      return this.hub === undefined ? Effect.void : Effect.asVoid(PubSub.publish(this.hub, status))
    })
  }
}
