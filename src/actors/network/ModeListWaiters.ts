/**
 * ModeListWaiters: the callers of get_mode_list waiting for their answer, by request id, each with a MODE_LIST_TIMEOUT
 * timer. The queries themselves, and which server line answers which, are ModeListRequests.ts (pure, per session);
 * this module holds the callers' Deferreds and answers each exactly once: with the list or the refusal, at the
 * timeout, or `not-connected` when the connection ends.
 *
 * Concurrency rule: runs on the actor's dispatcher fiber only, which alone changes `Actor.modeListWaiters`; a
 * timeout arrives through the inbox like every other input.
 */
import { Deferred, Duration, Effect } from "effect"
import { MODE_LIST_TIMEOUT } from "../ReconnectPolicy.js"
import type { Actor, Session } from "./ActorState.js"
import { fail, type ModeListAnswer, NOT_CONNECTED, type Reply, type Result } from "./Inbox.js"
import * as ModeLists from "./ModeListRequests.js"
import { disarm, startTimer } from "./Timers.js"

const timerName = (id: ModeLists.RequestId) => `mode-list-${id}`

/** Adds a waiter for a query just registered under `id`, and starts its timeout. */
export const wait = (a: Actor, id: ModeLists.RequestId, reply: Reply<Result<ModeListAnswer>>) =>
  Effect.suspend(() => {
    a.modeListWaiters.set(id, reply)
    return startTimer(a, timerName(id), MODE_LIST_TIMEOUT, { _tag: "ModeListTimeout", requestId: id })
  })

export const answer = (a: Actor, id: ModeLists.RequestId, result: Result<ModeListAnswer>) =>
  Effect.suspend(() => {
    const reply = a.modeListWaiters.get(id)
    if (reply === undefined) return Effect.void
    a.modeListWaiters.delete(id)
    disarm(a, timerName(id))
    return Deferred.succeed(reply, result)
  })

/** The connection is gone, and every query with it: each caller still waiting hears `not-connected`. */
export const failAll = (a: Actor, s: Session) =>
  Effect.gen(function*() {
    s.modeLists = ModeLists.reset(s.modeLists).state
    for (const id of [...a.modeListWaiters.keys()]) yield* answer(a, id, NOT_CONNECTED)
  })

export const onTimeout = (a: Actor, id: ModeLists.RequestId) =>
  Effect.suspend(() => {
    if (!a.modeListWaiters.has(id)) return Effect.void
    // The query stays as an orphan that swallows its late replies (ModeListRequests.expire).
    if (a.session !== undefined) a.session.modeLists = ModeLists.expire(a.session.modeLists, id).state
    return answer(
      a,
      id,
      fail("timeout", `the server did not answer the list query within ${Duration.format(MODE_LIST_TIMEOUT)}`)
    )
  })
