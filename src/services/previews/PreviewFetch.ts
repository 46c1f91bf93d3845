/**
 * PreviewFetch owns following a link the way the previews do (docs/decisions/previews.md "Redirects: a few, each
 * judged again"): a GET through GuardedFetch, and for a 301, 302, 303, 307 or 308 with a `Location`, a GET of where
 * it leads — at most `maxRedirects` times, each new URL checked by PreviewUrl and its host by the destination guard
 * again (GuardedFetch asks the guard on every call), all within one `timeout` from the first lookup to the last byte.
 * Stateless; safe from any fiber.
 */
import { Data, Duration, Effect } from "effect"
import type { FetchedResponse, FetchFailed, FetchOptions, GuardedFetch } from "../egress/GuardedFetch.js"
import { redirectTarget } from "./PreviewUrl.js"

/** Why following a link gave no answer: GuardedFetch's reasons, or a redirect that leads nowhere fetchable. */
export class FollowFailed extends Data.TaggedError("FollowFailed")<{
  readonly reason: FetchFailed["reason"] | "redirects"
  readonly detail: string
}> {
  override get message(): string {
    return `${this.reason}: ${this.detail}`
  }
}

/** The last answer, and the URL it came from. */
export interface Followed {
  readonly url: string
  readonly response: FetchedResponse
}

const REDIRECTS: ReadonlySet<number> = new Set([301, 302, 303, 307, 308])

export const followLink = (
  fetcher: Pick<GuardedFetch, "get">,
  url: string,
  options: FetchOptions & { readonly maxRedirects: number }
): Effect.Effect<Followed, FollowFailed> => {
  const hop = (current: string, left: number): Effect.Effect<Followed, FollowFailed> =>
    fetcher.get(current, options).pipe(
      Effect.mapError((e) => new FollowFailed({ reason: e.reason, detail: e.detail })),
      Effect.flatMap((response): Effect.Effect<Followed, FollowFailed> => {
        const location = response.headers.location
        if (!REDIRECTS.has(response.status) || location === undefined) return Effect.succeed({ url: current, response })
        if (left === 0) return Effect.fail(new FollowFailed({ reason: "redirects", detail: `more than ${options.maxRedirects} redirects` }))
        const next = redirectTarget(current, location)
        if (next === undefined) return Effect.fail(new FollowFailed({ reason: "redirects", detail: "a redirect to a URL that is not fetched" }))
        return hop(next, left - 1)
      })
    )
  return hop(url, options.maxRedirects).pipe(
    Effect.timeoutFail({
      duration: options.timeout,
      onTimeout: () => new FollowFailed({ reason: "timeout", detail: `no full answer within ${Duration.format(options.timeout)}` })
    })
  )
}
