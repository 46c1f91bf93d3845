/**
 * Timers: a network actor's named deadlines (retry, registration, keepalive, regain, rejoin, quit, who, send, one per
 * get_mode_list query), each an entry in the supervisor's shared ActorTimers whose only effect is to put an input in
 * the actor's inbox when due. Arming a name again replaces its deadline.
 *
 * A timer is armed for an absolute time read when the dispatcher arms it: the deadline is then exactly the published
 * one (nextRetryAt), whenever the timers fiber gets to it.
 *
 * Concurrency rule: `arm` and `disarm` run on the actor's dispatcher fiber only, which alone changes `Actor.timers`;
 * the callback runs on the ActorTimers fiber and only enqueues (`unsafeOffer` on the unbounded inbox), so the
 * dispatcher alone acts on an expiry. An expiry that names an ended session is ignored there.
 */
import { Duration, Effect } from "effect"
import { type Actor, now } from "./ActorState.js"
import type { Input } from "./Inbox.js"

export const arm = (a: Actor, name: string, at: number, input: Input) => {
  disarm(a, name)
  a.timers.set(name, a.deps.timers.schedule(at, () => a.inbox.unsafeOffer(input)))
}

export const disarm = (a: Actor, name: string) => {
  const entry = a.timers.get(name)
  if (entry === undefined) return
  a.deps.timers.cancel(entry)
  a.timers.delete(name)
}

/** Arms `name` for `delay` from now (Effect's Clock). */
export const startTimer = (a: Actor, name: string, delay: Duration.Duration, input: Input) =>
  Effect.flatMap(now, (t) => Effect.sync(() => arm(a, name, t + Duration.toMillis(delay), input)))

/** The timers bound to one connection, disarmed when it ends. */
const SESSION_TIMERS = ["registration", "keepalive", "regain", "rejoin", "quit", "who", "send"] as const

export const disarmSessionTimers = (a: Actor) => {
  for (const name of SESSION_TIMERS) disarm(a, name)
}

/** Every timer of the actor, at the end of its life: none may stay behind in the shared ActorTimers. */
export const disarmAll = (a: Actor) => {
  for (const entry of a.timers.values()) a.deps.timers.cancel(entry)
  a.timers.clear()
}
