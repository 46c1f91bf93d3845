/**
 * CredentialRevocations announces that credentials stopped working: an API token revoked,
 * an OAuth access token or password-sign-in token revoked (by its app, logout, the
 * authorized-apps page, account recovery, or reuse of the code it came from), a browser
 * session ended (sign-out, account recovery). The interface wants every revocation to take
 * effect at once; the consumers are the credential cache (CredentialCache.ts), the browser
 * WebSocket, which closes the sockets opened with it with 4001, and Web Push, which deletes
 * the subscriptions registered with it (src/http/ws/, PushSubscriptions.ts).
 *
 * Ordering rule: a writer publishes only after its change is committed, so a consumer
 * that re-reads the database on hearing an event sees the revocation. Concurrency: an
 * unbounded PubSub; `publish` never waits, and each subscriber gets every event published
 * after it subscribed, in order.
 */
import { Effect, PubSub, type Queue, type Scope } from "effect"

export interface CredentialRevoked {
  readonly credential: "api-token" | "oauth" | "session"
  /** The row id in `api_tokens`, `oauth_tokens` or `browser_sessions`, according to `credential`. */
  readonly tokenId: number
  readonly accountId: number
}

export class CredentialRevocations extends Effect.Service<CredentialRevocations>()("belay/CredentialRevocations", {
  effect: Effect.gen(function*() {
    const hub = yield* PubSub.unbounded<CredentialRevoked>()

    /** Announces revocations that are already committed. */
    const publish = (revoked: ReadonlyArray<CredentialRevoked>): Effect.Effect<void> =>
      revoked.length === 0 ? Effect.void : Effect.asVoid(PubSub.publishAll(hub, revoked))

    /** Every revocation published from now on, until the scope closes. */
    const subscribe: Effect.Effect<Queue.Dequeue<CredentialRevoked>, never, Scope.Scope> = PubSub.subscribe(hub)

    return { publish, subscribe } as const
  })
}) {}
