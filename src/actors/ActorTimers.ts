/**
 * ActorTimers owns the deadlines of every network actor of one supervisor (registration, keepalive, nick regain,
 * rejoin, retry, QUIT grace, mode-list and WHO timeouts): one min-heap, served by one fiber that sleeps on Effect's
 * Clock until the earliest deadline and then calls what is due. A fiber per timer would cost kilobytes each (a
 * fiber copies its FiberRefs when forked); 500 idle networks each holding a sleeping keepalive fiber spent about
 * 5 KiB apiece on it (an idle network is budgeted 64 KiB of heap), where a heap entry costs a few dozen bytes.
 *
 * Concurrency rule: `schedule` and `cancel` are synchronous and may be called from any fiber (the actors'
 * dispatchers); JavaScript runs one fiber step at a time, so the heap needs no lock. Callbacks run on the timers fiber,
 * in deadline order (schedule order among equal deadlines), once the Clock has reached their time and never before;
 * they must not block or throw: actors pass `unsafeOffer` on their unbounded inbox, so a timer only enqueues and the
 * actor's dispatcher alone acts on it.
 *
 * Time comes only from Effect's Clock (docs/architecture.md): under TestClock the fiber sleeps on the test clock, so tests
 * move every actor timer with `TestClock.adjust` as before.
 */
import { Cause, Deferred, Duration, Effect, Exit, type Scope } from "effect"

/** A scheduled callback; pass it to `cancel`. Cancelling one that already ran (or was cancelled) does nothing. */
export interface TimerEntry {
  readonly at: number
}

export interface ActorTimers {
  /** Calls `fire` once the Clock reaches `at` (epoch milliseconds); at once (on the timers fiber) when `at` is past. */
  readonly schedule: (at: number, fire: () => void) => TimerEntry
  readonly cancel: (entry: TimerEntry) => void
}

class Entry implements TimerEntry {
  /** Position in the heap; -1 once run or cancelled. */
  index = -1
  constructor(readonly at: number, readonly seq: number, readonly fire: () => void) {}
}

const before = (a: Entry, b: Entry) => a.at < b.at || (a.at === b.at && a.seq < b.seq)

/** A binary min-heap by (at, seq) whose entries know their index, so cancelling is O(log n). */
class Heap {
  private readonly items: Array<Entry> = []

  get head(): Entry | undefined {
    return this.items[0]
  }

  push(entry: Entry) {
    entry.index = this.items.length
    this.items.push(entry)
    this.up(entry.index)
  }

  remove(entry: Entry) {
    const i = entry.index
    if (i < 0 || this.items[i] !== entry) return
    const last = this.items.pop()!
    entry.index = -1
    if (last === entry) return
    this.items[i] = last
    last.index = i
    this.up(i)
    this.down(last.index)
  }

  private swap(i: number, j: number) {
    const a = this.items[i]!
    const b = this.items[j]!
    this.items[i] = b
    this.items[j] = a
    a.index = j
    b.index = i
  }

  private up(i: number) {
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!before(this.items[i]!, this.items[parent]!)) return
      this.swap(i, parent)
      i = parent
    }
  }

  private down(i: number) {
    const n = this.items.length
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let least = i
      if (l < n && before(this.items[l]!, this.items[least]!)) least = l
      if (r < n && before(this.items[r]!, this.items[least]!)) least = r
      if (least === i) return
      this.swap(i, least)
      i = least
    }
  }
}

export const make: Effect.Effect<ActorTimers, never, Scope.Scope> = Effect.gen(function*() {
  const clock = yield* Effect.clock
  const heap = new Heap()
  let seq = 0
  /** Completed to wake the fiber early, while it waits. */
  let waker: Deferred.Deferred<void> | undefined
  /** The deadline the fiber is sleeping toward (Infinity: none). */
  let sleepingUntil = Number.POSITIVE_INFINITY

  const schedule = (at: number, fire: () => void): TimerEntry => {
    const entry = new Entry(at, seq++, fire)
    heap.push(entry)
    if (at < sleepingUntil && waker !== undefined) {
      sleepingUntil = at
      Deferred.unsafeDone(waker, Exit.void)
    }
    return entry
  }

  const cancel = (entry: TimerEntry) => {
    // Cancelling the earliest entry does not wake the fiber: it wakes at that time, finds nothing due, sleeps again.
    if (entry instanceof Entry) heap.remove(entry)
  }

  /** Runs every entry due at `now`; a callback that throws (a bug) is logged and the others still run. */
  const runDue = (now: number): ReadonlyArray<unknown> => {
    const failures: Array<unknown> = []
    for (let head = heap.head; head !== undefined && head.at <= now; head = heap.head) {
      heap.remove(head)
      try {
        head.fire()
      } catch (error) {
        failures.push(error)
      }
    }
    return failures
  }

  const loop = Effect.gen(function*() {
    for (;;) {
      for (const failure of runDue(clock.unsafeCurrentTimeMillis())) {
        yield* Effect.logError("a timer callback failed", Cause.die(failure))
      }
      const wake = yield* Deferred.make<void>()
      // From here to the wait is one synchronous step: an entry scheduled before it is in the heap, one scheduled
      // after it sees the waker.
      waker = wake
      const head = heap.head
      sleepingUntil = head === undefined ? Number.POSITIVE_INFINITY : head.at
      const delay = sleepingUntil - clock.unsafeCurrentTimeMillis()
      if (head === undefined) yield* Deferred.await(wake)
      else if (delay > 0) yield* Effect.raceFirst(clock.sleep(Duration.millis(delay)), Deferred.await(wake))
      waker = undefined
      sleepingUntil = Number.POSITIVE_INFINITY
    }
  })
  yield* Effect.forkScoped(loop)
  return { schedule, cancel }
})
