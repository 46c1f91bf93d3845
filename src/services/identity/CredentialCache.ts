/**
 * CredentialCache remembers recent answers to "whose bearer token is this?" so that /mcp
 * does not query the database for every request: authentication is otherwise the largest
 * cost of a cheap call such as `tools/list` (docs/decisions/secrets.md, "Revocation is immediate
 * across processes", has the figures).
 *
 * Revocation must still take effect at once (the interface, "States and transitions"), in
 * every Belay process on the database: the cache consumes CredentialRevocations, which
 * carries this process's revocations and account status changes (pause, resume) and, over
 * LISTEN/NOTIFY, every other process's, and drops what they name before it answers again.
 * While the LISTEN connection is down notices may be lost, so the cache answers nothing from
 * memory and stores nothing; when LISTEN is back (a new generation) it starts empty. An epoch
 * counter closes the race where a lookup that started before a revocation or status change
 * would store a stale answer after it: answers are stored only if nothing was dropped while
 * they were being read. A short TTL bounds the life of a change made by hand in psql, which
 * announces nothing.
 *
 * Misses of one key share one lookup: when an entry expires under load every connection misses at once, and each
 * would read the database for the same answer. A miss joins a lookup of its key only if that started in the current
 * epoch (nothing was dropped since), so a request that begins after a revocation never takes an answer read before
 * it; one that joins began, as the lookup did, before any revocation it could miss.
 *
 * Concurrency: single-threaded JS, no locks. Notices wait in the cache's own subscriptions
 * and are applied, in order, at the start of the next lookup, so no fiber and no timing is
 * involved: a lookup that begins after a notice was published (here, or as the LISTEN
 * connection read it) sees it.
 */
import { Cause, Chunk, Deferred, Effect, Exit, Option, Queue } from "effect"
import type { LazyArg } from "effect/Function"
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
    const announcements = yield* CredentialRevocations
    // The service's Clock, read synchronously, so that an answer from memory is an Exit (Effect.succeed) that /mcp
    // sends without a fiber (docs/decisions/http-and-mcp.md "Answers from memory are sent without a fiber").
    const clock = yield* Effect.clock
    const revocations = yield* announcements.subscribe
    const accountChanges = yield* announcements.accountChanges
    let epoch = 0
    /** The LISTEN generation the entries were stored under. */
    let generation = announcements.listenState().generation
    /** Token hash → answer; negative answers are cached too. */
    const entries = new Map<string, Entry>()
    /** credential:tokenId → token hash, for dropping a revoked credential. */
    const byCredential = new Map<string, string>()

    const drop = (key: string) => {
      const entry = entries.get(key)
      if (entry !== undefined && Option.isSome(entry.value)) byCredential.delete(credentialKey(entry.value.value))
      entries.delete(key)
    }

    /** Drops every answer about the account's credentials: its status changed. */
    const forgetAccount = (accountId: number) => {
      for (const [key, entry] of entries) {
        if (Option.isSome(entry.value) && entry.value.value.accountId === accountId) drop(key)
      }
    }

    const clear = () => {
      entries.clear()
      byCredential.clear()
    }

    /** Applies the notices heard since the last call; whether answers from memory may be given and stored now. */
    const applyNotices = Effect.map(Effect.zip(Queue.takeAll(revocations), Queue.takeAll(accountChanges)), ([revoked, accounts]) => {
      if (!Chunk.isEmpty(revoked) || !Chunk.isEmpty(accounts)) epoch++
      for (const event of revoked) {
        const key = byCredential.get(credentialKey(event))
        if (key !== undefined) drop(key)
      }
      for (const accountId of accounts) forgetAccount(accountId)
      const state = announcements.listenState()
      if (state.generation !== generation) {
        // LISTEN was lost and is back: what was revoked meanwhile was never heard.
        epoch++
        generation = state.generation
        clear()
      }
      return state.listening
    })

    /** Lookups under way, by key, with the epoch each started in. At most one per key; gone when it ends. */
    const underWay = new Map<string, { readonly epoch: number; readonly done: Deferred.Deferred<Option.Option<CachedCredential>, unknown> }>()

    const waiting = (queue: Queue.Dequeue<unknown>) => {
      const size = queue.unsafeSize()
      return Option.isSome(size) && size.value > 0
    }

    /**
     * The answer in memory for `key` when it may be given without another step: no notice waits to be applied, LISTEN
     * is up in the generation the entries belong to, and the entry is fresh. It reads the same state `getOrLookup`'s
     * first step would after applying nothing, so it answers exactly as that would; it only saves the Effect steps
     * of draining two empty queues, which on a cheap call such as tools/list were a visible share of its time.
     */
    const freshHit = (key: string, now: number): Option.Option<CachedCredential> | undefined => {
      if (waiting(revocations) || waiting(accountChanges)) return undefined
      const state = announcements.listenState()
      if (!state.listening || state.generation !== generation) return undefined
      const hit = entries.get(key)
      return hit !== undefined && hit.expiresAt > now ? hit.value : undefined
    }

    /**
     * The cached answer for `key` (a token hash), else `lookup`'s, stored unless something was dropped meanwhile. The
     * cache is read when this is called (a hit is an Exit, Effect.succeed); run the Effect at once. `lookup` is made
     * only on a miss: a hit, most requests, builds nothing it would not use.
     */
    const getOrLookup = <A extends CachedCredential, E>(
      key: string,
      lookup: LazyArg<Effect.Effect<Option.Option<A>, E>>
    ): Effect.Effect<Option.Option<A>, E> => {
      const hit = freshHit(key, clock.unsafeCurrentTimeMillis())
      // Only `lookup` of this same key stored it, so the value has its type.
      return hit !== undefined ? Effect.succeed(hit as Option.Option<A>) : lookupAndStore(key, lookup())
    }

    const lookupAndStore = <A extends CachedCredential, E>(
      key: string,
      lookup: Effect.Effect<Option.Option<A>, E>
    ): Effect.Effect<Option.Option<A>, E> =>
      Effect.gen(function*() {
        if (!(yield* applyNotices)) return yield* lookup
        const now = clock.unsafeCurrentTimeMillis()
        const hit = entries.get(key)
        // Only `lookup` of this same key stored it, so the value has its type.
        if (hit !== undefined && hit.expiresAt > now) return hit.value as Option.Option<A>
        const joined = underWay.get(key)
        if (joined !== undefined && joined.epoch === epoch) {
          // Its failure is this request's too; only its interruption (the request that started it went away) sends
          // this one to the database itself. Only `lookup` of this same key completes it, so the value has its type.
          const exit = (yield* Effect.exit(Deferred.await(joined.done))) as Exit.Exit<Option.Option<A>, E>
          return yield* (Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause) ? lookup : exit)
        }
        const started = epoch
        const done = yield* Deferred.make<Option.Option<CachedCredential>, unknown>()
        underWay.set(key, { epoch: started, done })
        const value = yield* Effect.onExit(lookup, (exit) => {
          if (underWay.get(key)?.done === done) underWay.delete(key)
          return Deferred.done(done, exit)
        })
        const listening = yield* applyNotices
        if (listening && started === epoch) {
          if (entries.size >= MAX_ENTRIES) clear()
          drop(key)
          entries.set(key, { value, expiresAt: now + TTL_MS })
          if (Option.isSome(value)) byCredential.set(credentialKey(value.value), key)
        }
        return value
      })

    return { getOrLookup } as const
  }),
  dependencies: [CredentialRevocations.Default]
}) {}
