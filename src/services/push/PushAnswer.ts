/**
 * PushAnswer: what one push service's answer means for the subscription it was sent to, one rule for the web's
 * notifications (WebPush.ts) and IRC clients' (IrcPush.ts). 404 or 410: the push service no longer knows the
 * subscription (RFC 8030 §7.3), so it is deleted; an address the destination guard refuses will not become
 * acceptable, so it is deleted as a 410 would; an unreachable push service or another refusal is logged and the
 * subscription kept (the next notification tries again). No state of its own.
 */
import { Effect, type Either } from "effect"
import type { FetchFailed } from "../egress/GuardedFetch.js"

/**
 * Settles `answer` (the status, or why there was none) of a send to subscription `subscriptionId`: logs under
 * `label`, runs `gone` when the subscription is to be deleted, and tells whether the push service took it.
 */
export const settlePushAnswer = <R>(
  label: string,
  subscriptionId: number,
  answer: Either.Either<number, FetchFailed>,
  gone: Effect.Effect<void, never, R>
): Effect.Effect<boolean, never, R> => {
  if (answer._tag === "Left" && answer.left.reason === "destination") {
    return Effect.logWarning(`${label}: the endpoint's address is refused; subscription removed`).pipe(
      Effect.annotateLogs({ subscriptionId, error: answer.left.message }),
      Effect.zipRight(gone),
      Effect.as(false)
    )
  }
  if (answer._tag === "Left") {
    return Effect.logWarning(`${label}: the push service could not be reached`).pipe(
      Effect.annotateLogs({ subscriptionId, error: String(answer.left) }),
      Effect.as(false)
    )
  }
  const status = answer.right
  if (status === 404 || status === 410) return Effect.as(gone, false)
  if (status < 200 || status >= 300) {
    return Effect.logWarning(`${label}: the push service refused a notification`).pipe(
      Effect.annotateLogs({ subscriptionId, status }),
      Effect.as(false)
    )
  }
  return Effect.succeed(true)
}
