/**
 * CredentialRevocations announces that credentials stopped working: an API token revoked,
 * an OAuth access token or password-sign-in token revoked (by its app, logout, the
 * authorized-apps page, account recovery, or reuse of the code it came from), a browser
 * session ended (sign-out, account recovery); and that an account's status changed (pause
 * narrows every credential of it). The interface wants every revocation to take effect at
 * once; the consumers are the credential cache (CredentialCache.ts), the browser
 * WebSocket, which closes the sockets opened with it with 4001, and Web Push, which deletes
 * the subscriptions registered with it (src/http/ws/, PushSubscriptions.ts).
 *
 * Across processes (docs/decisions/secrets.md, "Revocation is immediate across processes"): the
 * writer's transaction also NOTIFYs every other Belay process on the database
 * (RevocationChannel.ts, `commit` here); each process LISTENs (EventChannel.ts) and
 * republishes what others announced to its own consumers, skipping its own notices (already
 * published here). While the LISTEN connection is down (or, in cluster mode, missed its
 * heartbeat) `listenState` says so and the cache answers nothing from memory; once it is
 * back, `resyncs` tells the other consumers to re-read what they hold.
 * Handling is idempotent all the same (closing a closed socket, deleting deleted rows).
 *
 * Ordering rule: local consumers hear an event only after its change is committed, so a
 * consumer that re-reads the database on hearing it sees the revocation. Concurrency:
 * unbounded PubSubs; `publish` never waits, and each subscriber gets every event published
 * after it subscribed, in order. Notices from other processes are published synchronously
 * as the LISTEN connection reads them.
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { Effect, Either, PubSub, type Queue, Runtime, type Scope } from "effect"
import { EventChannel, type ListenState } from "../storage/EventChannel.js"
import { accountPayload, CHANNEL, type CredentialRevoked, parseNotice, revokedPayloads } from "./RevocationChannel.js"

export type { CredentialRevoked }

export type { ListenState }

/** What a change announces: credentials it ended, and accounts whose status it changed. */
export interface Announcement {
  readonly revoked?: ReadonlyArray<CredentialRevoked>
  readonly accountsChanged?: ReadonlyArray<number>
}

export class CredentialRevocations extends Effect.Service<CredentialRevocations>()("belay/CredentialRevocations", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const channel = yield* EventChannel
    /** This process (this service instance) on the channel. */
    const origin = channel.origin
    const hub = yield* PubSub.unbounded<CredentialRevoked>()
    const accountHub = yield* PubSub.unbounded<number>()
    const resyncHub = yield* PubSub.unbounded<void>()
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())

    /** Announces to this process's consumers revocations that are already committed. */
    const publish = (revoked: ReadonlyArray<CredentialRevoked>): Effect.Effect<void> =>
      revoked.length === 0 ? Effect.void : Effect.asVoid(PubSub.publishAll(hub, revoked))

    /** Announces to this process's consumers a change already committed (and notified with `notifyOthers`). */
    const publishAll = (announcement: Announcement): Effect.Effect<void> =>
      Effect.zipRight(publish(announcement.revoked ?? []), Effect.asVoid(PubSub.publishAll(accountHub, announcement.accountsChanged ?? [])))

    /**
     * Tells the other processes, inside the caller's transaction: PostgreSQL delivers the notices when (and only
     * if) it commits.
     */
    const notifyOthers = (announcement: Announcement): Effect.Effect<void, SqlError.SqlError> => {
      const payloads = [
        ...revokedPayloads(origin, announcement.revoked ?? []),
        ...(announcement.accountsChanged ?? []).map((id) => accountPayload(origin, id))
      ]
      return channel.notify(CHANNEL, payloads)
    }

    /**
     * Runs `change` in one transaction with the NOTIFY of what it announces, then publishes it here. Nested in a
     * caller's transaction, the notices go out when that one commits.
     */
    const commit = <A, E, R>(
      change: Effect.Effect<A, E, R>,
      announce: (result: A) => Announcement
    ): Effect.Effect<A, E | SqlError.SqlError, R> =>
      Effect.gen(function*() {
        const result = yield* sql.withTransaction(Effect.tap(change, (a) => notifyOthers(announce(a))))
        yield* publishAll(announce(result))
        return result
      })

    const onPayload = (payload: string) => {
      const notice = parseNotice(payload)
      if (Either.isLeft(notice)) {
        // Not Belay's, or a newer Belay's: nothing is known to have been revoked.
        runFork(Effect.logWarning("ignored a notice on the revocation channel").pipe(Effect.annotateLogs({ why: notice.left })))
        return
      }
      if (notice.right.origin === origin) return
      if (notice.right._tag === "Revoked") for (const event of notice.right.revoked) hub.unsafeOffer(event)
      else accountHub.unsafeOffer(notice.right.accountId)
    }

    yield* channel.subscribe(CHANNEL, onPayload)
    yield* channel.watch({
      // Notices sent while the connection was down were lost.
      onListening: (generation) => {
        if (generation > 1) resyncHub.unsafeOffer(undefined)
      },
      onLost: () => undefined
    })

    /** Every revocation published from now on, until the scope closes. */
    const subscribe: Effect.Effect<Queue.Dequeue<CredentialRevoked>, never, Scope.Scope> = PubSub.subscribe(hub)
    /** Every account whose status changes from now on. */
    const accountChanges: Effect.Effect<Queue.Dequeue<number>, never, Scope.Scope> = PubSub.subscribe(accountHub)
    /** One element each time LISTEN is back after a loss: what a consumer holds may have been revoked meanwhile. */
    const resyncs: Effect.Effect<Queue.Dequeue<void>, never, Scope.Scope> = PubSub.subscribe(resyncHub)
    const listenState = (): ListenState => channel.state()

    return { publish, announce: publishAll, notifyOthers, commit, subscribe, accountChanges, resyncs, listenState } as const
  }),
  dependencies: [EventChannel.Default]
}) {}
