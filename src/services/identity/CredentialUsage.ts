/**
 * CredentialUsage owns the "last used" time of bearer credentials, which Settings shows for
 * API tokens and authorized apps (docs/decisions/web.md).
 *
 * /mcp must not pay a database write per request (it is measured against a bare node:http
 * server), so a use is only remembered in memory — the latest time per token — and written
 * in one pass every minute, when the layer closes, and whenever a settings page is about to
 * show the times (`flush`), so what a member reads is exact. A crash loses at most a
 * minute of "last used", never a credential (docs/decisions/web.md, "Last used"). Single-threaded JS: the pending map is swapped
 * out whole before it is written, so uses recorded during a flush go to the next one.
 */
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Schedule } from "effect"

export const CredentialUsageLimits = { flushEvery: Duration.minutes(1) } as const

/** Which table a token lives in: `api_tokens` or `oauth_tokens` (apps and password sign-ins). */
export type UsedCredential = "api-token" | "oauth"

export class CredentialUsage extends Effect.Service<CredentialUsage>()("belay/CredentialUsage", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // token id → the time of its latest use, one map per table
    let pending = { "api-token": new Map<number, number>(), "oauth": new Map<number, number>() }

    // The service's Clock, read synchronously: `record` runs on every /mcp request and is
    // one Map write, not an Effect (TestClock still drives it in tests).
    const clock = yield* Effect.clock

    /** Remembers that token `id` authenticated a request now. Synchronous; safe from any fiber. */
    const record = (table: UsedCredential, id: number): void => {
      pending[table].set(id, clock.unsafeCurrentTimeMillis())
    }

    /** Writes every remembered use; a time never moves backwards. */
    const flush = Effect.suspend(() => {
      if (pending["api-token"].size === 0 && pending["oauth"].size === 0) return Effect.void
      const batch = (["api-token", "oauth"] as const).flatMap((table) =>
        [...pending[table]].map(([id, at]) => ({ table, id, at }))
      )
      pending = { "api-token": new Map(), "oauth": new Map() }
      return Effect.forEach(batch, ({ table, id, at }) => {
        const when = new Date(at)
        return table === "api-token"
          ? sql`UPDATE api_tokens SET last_used_at = ${when}
                WHERE id = ${id} AND (last_used_at IS NULL OR last_used_at < ${when})`
          : sql`UPDATE oauth_tokens SET last_used_at = ${when}
                WHERE id = ${id} AND (last_used_at IS NULL OR last_used_at < ${when})`
      }, { discard: true }).pipe(Effect.orDie)
    }).pipe(Effect.withSpan("CredentialUsage.flush"))

    yield* flush.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("writing credential last-used times failed", cause)),
      Effect.repeat(Schedule.spaced(CredentialUsageLimits.flushEvery)),
      Effect.delay(CredentialUsageLimits.flushEvery),
      Effect.forkScoped
    )
    yield* Effect.addFinalizer(() => flush.pipe(Effect.catchAllCause(() => Effect.void)))

    return { record, flush } as const
  })
}) {}
