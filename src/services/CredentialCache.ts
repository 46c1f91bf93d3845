/**
 * CredentialCache remembers recent answers to "whose bearer token is this?" so that /mcp
 * does not query the database for every request: authentication is otherwise the largest
 * cost of a cheap call such as `tools/list`.
 *
 * Revocation must still take effect at once (the interface, "States and transitions"):
 * the cache consumes CredentialRevocations and drops a revoked credential before it
 * answers again. Account status (pause, resume) narrows every credential of an account,
 * so Accounts calls `forgetAccount` after such a change is committed. An epoch counter
 * closes the race where a lookup that started before a revocation or status change would
 * store a stale answer after it: answers are stored only if nothing was dropped while they
 * were being read. A short TTL bounds the life of a change made outside this process (by
 * hand in psql).
 *
 * Concurrency: single-threaded JS, no locks. Revocations wait in the cache's own
 * subscription and are applied, in order, at the start of the next lookup, so no fiber
 * and no timing is involved: a lookup that begins after `publish` returned sees them.
 */
import { Chunk, Clock, Effect, Option, Queue } from "effect"
import { CredentialRevocations, type CredentialRevoked } from "./CredentialRevocations.js"

const TTL_MS = 5_000
const MAX_ENTRIES = 10_000

/** What the cache must know of a cached answer to drop it when its credential is revoked. */
export interface CachedCredential {
  readonly credential: CredentialRevoked["credential"]
  readonly tokenId: number
  readonly accountId: number
}

interface Entry {
  readonly value: Option.Option<CachedCredential>
  readonly expiresAt: number
}

const credentialKey = (c: { readonly credential: string; readonly tokenId: number }) => `${c.credential}:${c.tokenId}`

export class CredentialCache extends Effect.Service<CredentialCache>()("belay/CredentialCache", {
  scoped: Effect.gen(function*() {
    const revocations = yield* (yield* CredentialRevocations).subscribe
    let epoch = 0
    /** Token hash → answer; negative answers are cached too. */
    const entries = new Map<string, Entry>()
    /** credential:tokenId → token hash, for dropping a revoked credential. */
    const byCredential = new Map<string, string>()

    const drop = (key: string) => {
      const entry = entries.get(key)
      if (entry !== undefined && Option.isSome(entry.value)) byCredential.delete(credentialKey(entry.value.value))
      entries.delete(key)
    }

    const applyRevocations = Effect.map(Queue.takeAll(revocations), (revoked) => {
      if (Chunk.isEmpty(revoked)) return
      epoch++
      for (const event of revoked) {
        const key = byCredential.get(credentialKey(event))
        if (key !== undefined) drop(key)
      }
    })

    /** The cached answer for `key` (a token hash), else `lookup`'s, stored unless something was dropped meanwhile. */
    const getOrLookup = <A extends CachedCredential, E>(
      key: string,
      lookup: Effect.Effect<Option.Option<A>, E>
    ): Effect.Effect<Option.Option<A>, E> =>
      Effect.gen(function*() {
        yield* applyRevocations
        const now = yield* Clock.currentTimeMillis
        const hit = entries.get(key)
        // Only `lookup` of this same key stored it, so the value has its type.
        if (hit !== undefined && hit.expiresAt > now) return hit.value as Option.Option<A>
        const started = epoch
        const value = yield* lookup
        yield* applyRevocations
        if (started === epoch) {
          if (entries.size >= MAX_ENTRIES) {
            entries.clear()
            byCredential.clear()
          }
          drop(key)
          entries.set(key, { value, expiresAt: now + TTL_MS })
          if (Option.isSome(value)) byCredential.set(credentialKey(value.value), key)
        }
        return value
      })

    /** Drops every answer about the account's credentials: its status changed. */
    const forgetAccount = (accountId: number): Effect.Effect<void> =>
      Effect.sync(() => {
        epoch++
        for (const [key, entry] of entries) {
          if (Option.isSome(entry.value) && entry.value.value.accountId === accountId) drop(key)
        }
      })

    return { getOrLookup, forgetAccount } as const
  }),
  dependencies: [CredentialRevocations.Default]
}) {}
