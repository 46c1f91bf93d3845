/**
 * CredentialCache remembers recent answers to "whose bearer token is this?" so that
 * /mcp does not query the database twice per request (issue 5 bench: authentication
 * was the largest cost of `tools/list`).
 *
 * Revocation must still take effect at once (interface "States and transitions"), so
 * every writer that can end or narrow a credential — API token revocation, OAuth token
 * revocation, account pause/resume/recovery — calls `invalidate()` after its change is
 * committed. An epoch counter closes the race where a lookup that started before the
 * commit would store a stale answer after the invalidation: answers are stored only if
 * no invalidation happened while they were being read. A short TTL bounds the damage of
 * a change made outside this process (e.g. by hand in psql). Single-threaded JS: no locks.
 */
import { Clock, Effect } from "effect"

const TTL_MS = 5_000
const MAX_ENTRIES = 10_000

interface Entry<A> {
  readonly value: A
  readonly expiresAt: number
}

export class CredentialCache extends Effect.Service<CredentialCache>()("belay/CredentialCache", {
  sync: () => {
    let epoch = 0
    const entries = new Map<string, Entry<unknown>>()

    /** Cached answer for `key`, else `lookup` (stored only if nothing was invalidated meanwhile). */
    const getOrLookup = <A, E>(key: string, lookup: Effect.Effect<A, E>): Effect.Effect<A, E> =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const hit = entries.get(key)
        if (hit && hit.expiresAt > now) return hit.value as A
        const started = epoch
        const value = yield* lookup
        if (started === epoch) {
          if (entries.size >= MAX_ENTRIES) entries.clear()
          entries.set(key, { value, expiresAt: now + TTL_MS })
        }
        return value
      })

    /** Forget everything: a credential or an account changed. */
    const invalidate = Effect.sync(() => {
      epoch++
      entries.clear()
    })

    return { getOrLookup, invalidate } as const
  }
}) {}
