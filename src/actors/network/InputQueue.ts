/**
 * InputQueue: a network actor's unbounded inbox (Inbox.ts holds what goes in it). In place of Effect's
 * `Queue.unbounded`: a taker waiting on an empty Queue holds a Deferred and two interrupt handlers on its fiber's
 * stack, and the queue its own linked lists, strategy and shutdown state, for as long as the network idles (about
 * 2 KiB a network in heap snapshots, docs/architecture.md "Memory"). Here the waiting taker is one callback.
 *
 * Concurrency rule: any fiber or callback may offer (`unsafeOffer` never blocks); one fiber only, the actor's
 * dispatcher, takes. JavaScript runs one fiber step at a time, so no lock is needed. The taker waits without an
 * interrupt handler: once its fiber is interrupted the queue has no taker any more (the dispatcher ends with its
 * actor's life), and inputs offered after that are dropped with it.
 */
import { Effect } from "effect"

export class InputQueue<A> {
  private items: Array<A | undefined> = []
  private head = 0
  private taker: ((input: Effect.Effect<A>) => void) | undefined = undefined

  /** Puts `input` at the end, or hands it to the waiting taker. */
  unsafeOffer(input: A): void {
    const taker = this.taker
    if (taker !== undefined) {
      this.taker = undefined
      taker(Effect.succeed(input))
    } else {
      this.items.push(input)
    }
  }

  offer(input: A): Effect.Effect<void> {
    return Effect.sync(() => this.unsafeOffer(input))
  }

  /** The oldest input, waiting for one while there is none. One taker at a time. */
  get take(): Effect.Effect<A> {
    return Effect.async<A>((resume) => {
      if (this.head < this.items.length) {
        resume(Effect.succeed(this.shift()))
      } else {
        this.taker = resume
      }
    })
  }

  private shift(): A {
    const input = this.items[this.head] as A
    this.items[this.head] = undefined
    this.head++
    // Emptied: a fresh array, so an idle actor keeps no backing store of a past burst.
    if (this.head === this.items.length) {
      this.items = []
      this.head = 0
    }
    return input
  }
}
