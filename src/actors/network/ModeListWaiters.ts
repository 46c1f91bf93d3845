/**
 * ModeListWaiters: the callers of get_mode_list waiting for their answer, by request id, each with a MODE_LIST_TIMEOUT
 * timer started when its query is written. The queries themselves, and which server line answers which, are ModeListRequests.ts (pure, per session);
 * this module holds the callers' Deferreds and answers each exactly once: with the list or the refusal, Timeout at
 * MODE_LIST_TIMEOUT, or NotConnected when the connection ends.
 *
 * Concurrency rule: runs on the actor's dispatcher fiber only, which alone changes `Actor.modeListWaiters`; a
 * timeout arrives through the inbox like every other input.
 */
import { Deferred, Duration, Effect, Either } from "effect"
import type { ModeList } from "../../schema/ChannelMode.js"
import { NotConnected, type Refused, Timeout } from "../../schema/ToolErrors.js"
import { MODE_LIST_TIMEOUT } from "../ReconnectPolicy.js"
import type { Actor, ModeListWaiter, Session } from "./ActorState.js"
import * as ModeLists from "./ModeListRequests.js"
import { disarm, startTimer } from "./Timers.js"

const timerName = (id: ModeLists.RequestId) => `mode-list-${id}`

/** Adds a waiter for a query just registered under `id`; its timeout starts with `startTimeout`. */
export const wait = (a: Actor, id: ModeLists.RequestId, waiter: ModeListWaiter) => {
  const waiters = a.modeListWaiters ?? (a.modeListWaiters = new Map())
  waiters.set(id, waiter)
}

/**
 * Starts a waiter's MODE_LIST_TIMEOUT: when its query's closing fence is written (Outbound.ts may hold it back to pace
 * the connection), so the bound is the server's time to answer. Nothing when the waiter was answered meanwhile.
 */
export const startTimeout = (a: Actor, id: ModeLists.RequestId) =>
  Effect.suspend(() =>
    a.modeListWaiters?.has(id) === true
      ? startTimer(a, timerName(id), MODE_LIST_TIMEOUT, { _tag: "ModeListTimeout", requestId: id })
      : Effect.void
  )

export const answer = (
  a: Actor,
  id: ModeLists.RequestId,
  outcome: Either.Either<ModeList, Refused | Timeout | NotConnected>
) =>
  Effect.suspend(() => {
    const waiter = a.modeListWaiters?.get(id)
    if (waiter === undefined) return Effect.void
    a.modeListWaiters?.delete(id)
    disarm(a, timerName(id))
    return Deferred.complete(waiter.reply, outcome)
  })

/** The connection is gone, and every query with it: each caller still waiting hears NotConnected. */
export const failAll = (a: Actor, s: Session) =>
  Effect.gen(function*() {
    s.modeLists = ModeLists.reset(s.modeLists).state
    // Nobody waiting (nearly always): no error built, since a Schema error validates its fields and captures a stack,
    // which for a server restart dropping 10,000 connections was a twentieth of the core spent on the drops.
    const waiters = a.modeListWaiters
    if (waiters === undefined || waiters.size === 0) return
    const gone = new NotConnected({ networkId: a.networkId })
    for (const id of [...waiters.keys()]) yield* answer(a, id, Either.left(gone))
  })

export const onTimeout = (a: Actor, id: ModeLists.RequestId) =>
  Effect.suspend(() => {
    const waiter = a.modeListWaiters?.get(id)
    if (waiter === undefined) return Effect.void
    // The query stays as an orphan that swallows its late replies (ModeListRequests.expire).
    if (a.session !== undefined) a.session.modeLists = ModeLists.expire(a.session.modeLists, id).state
    const timeout = new Timeout({
      operation: ModeLists.queryName(waiter.channel, waiter.letter),
      seconds: Duration.toSeconds(MODE_LIST_TIMEOUT)
    })
    return answer(a, id, Either.left(timeout))
  })
