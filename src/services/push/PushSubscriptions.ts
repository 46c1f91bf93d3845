/**
 * PushSubscriptions owns `push_subscriptions` (migrations 0004, 0016): the Web Push subscriptions of the member's
 * browsers (RFC 8030 §4; docs/contract.md "The member's browser surface", Push) and of the member's IRC clients
 * (soju's `soju.im/webpush`; docs/contract.md "The IRC client listener"), each owned by the credential that
 * registered it — a browser session or an OAuth / password-sign-in token; for an IRC client also an API token, or
 * the password as it was at the client's sign-in. It deletes them when that credential ends (the interface, "States
 * and transitions": "push subscriptions registered with it are deleted"): it follows CredentialRevocations (a token
 * revoked; an account changed, which is how a recovery ends what signed in with the old password), and a session's
 * rows go with the session row itself (ON DELETE CASCADE); WebPush deletes those whose push service answers 404 or
 * 410 (RFC 8030 §7.3). A browser's subscription gets the web client's JSON, an IRC client's one IRC line, and only
 * for the network of the connection that registered it (WebPush.ts, IrcPush.ts).
 *
 * It keeps in memory which accounts have a subscription, so that a message of an account without one costs
 * nothing (WebPush asks `has`). Concurrency: state in PostgreSQL plus that set, changed one synchronous step at a
 * time after each committed write; safe to call concurrently. One fiber follows the revocations; another sweeps
 * again when CredentialRevocations says notices from other processes may have been missed. In a cluster the set
 * must hold the subscriptions registered on other nodes too (the node that stores a message sends its push): each
 * account whose subscriptions changed here is announced on `changes`, and ClusterEvents has the other nodes count
 * it again (`changedElsewhere`).
 */
import { SqlClient } from "@effect/sql"
import { Clock, Effect, PubSub, Queue } from "effect"
import { AccountLimits } from "../identity/AccountLimits.js"
import { CredentialRevocations } from "../identity/CredentialRevocations.js"

/** A subscription as the push sender needs it. */
export interface PushSubscription {
  readonly id: number
  readonly accountId: number
  readonly endpoint: string
  /** base64url of the browser's uncompressed P-256 public key (RFC 8291 §3.1, `ua_public`). */
  readonly p256dh: string
  /** base64url of the 16-byte authentication secret (RFC 8291 §3.2). */
  readonly auth: string
}

/** An IRC client's subscription: the line is shaped by the capabilities it had when it registered. */
export interface IrcPushSubscription extends PushSubscription {
  /** Of `server-time` and `message-tags`, those the client had enabled. */
  readonly caps: ReadonlyArray<string>
}

/**
 * Who registered it: a session, or an `oauth_tokens` row (an app's token or a password-sign-in token); an IRC client
 * also by an `api_tokens` row, or by the password, with the account's last recovery (ms) as it was at sign-in.
 */
export type PushOwner =
  | { readonly _tag: "Session"; readonly sessionId: number }
  | { readonly _tag: "Token"; readonly tokenId: number }
  | { readonly _tag: "ApiToken"; readonly tokenId: number }
  | { readonly _tag: "Password"; readonly recoveredAt: number | null }

/** Registered by an IRC client (`WEBPUSH REGISTER`): on this network's connection (null: a control connection). */
export interface IrcRegistration {
  readonly networkId: number | null
  readonly caps: ReadonlyArray<string>
}

/** The capabilities kept with an IRC client's subscription (the only ones its lines depend on). */
export const LINE_CAPS: ReadonlyArray<string> = ["server-time", "message-tags"]

export class PushSubscriptions extends Effect.Service<PushSubscriptions>()("belay/PushSubscriptions", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const revocations = yield* CredentialRevocations
    const limits = yield* AccountLimits

    /** Accounts with at least one subscription → how many. */
    const counts = new Map<number, number>()
    /** Accounts whose subscriptions this process added or deleted. */
    const changes = yield* PubSub.unbounded<number>()
    const count = (accountId: number): Effect.Effect<void> =>
      Effect.map(
        sql<{ n: number }>`SELECT count(*)::int AS n FROM push_subscriptions WHERE account_id = ${accountId}`.pipe(Effect.orDie),
        (rows) => {
          const n = rows[0]?.n ?? 0
          if (n === 0) counts.delete(accountId)
          else counts.set(accountId, n)
        }
      )
    const recount = (accountId: number) => Effect.zipRight(count(accountId), PubSub.publish(changes, accountId))

    // Subscribed before anything is read, so no revocation falls between the sweep below and the follower.
    const revoked = yield* revocations.subscribe
    const resyncs = yield* revocations.resyncs
    const accountChanges = yield* revocations.accountChanges
    /**
     * What signed in with the password before the account's last recovery: `recovered_at` compared at the millisecond,
     * the precision the sign-in kept (Accounts.recoveredAt).
     */
    const passwordEnded = sql`p.password_owner AND a.id = p.account_id
      AND p.password_recovered_at IS DISTINCT FROM date_trunc('milliseconds', a.recovered_at)`
    // Revoked while no event could be heard (Belay was down, or its LISTEN connection was): never used again either.
    const sweepRevoked = Effect.gen(function*() {
      yield* sql`
        DELETE FROM push_subscriptions p USING oauth_tokens o
        WHERE p.oauth_token_id = o.id AND o.revoked_at IS NOT NULL`.pipe(Effect.orDie)
      yield* sql`
        DELETE FROM push_subscriptions p USING api_tokens t
        WHERE p.api_token_id = t.id AND t.revoked_at IS NOT NULL`.pipe(Effect.orDie)
      yield* sql`DELETE FROM push_subscriptions p USING accounts a WHERE ${passwordEnded}`.pipe(Effect.orDie)
      const all = yield* sql<{ accountId: number; n: number }>`
        SELECT account_id AS "accountId", count(*)::int AS n FROM push_subscriptions GROUP BY account_id`.pipe(Effect.orDie)
      counts.clear()
      for (const row of all) counts.set(row.accountId, row.n)
    })
    yield* sweepRevoked

    /**
     * Registers (or moves here) the browser's endpoint — an IRC client's when `irc` says where it registered; its id,
     * or QuotaExceeded (nothing registered) when the account already holds as many others as its
     * `push-subscriptions` limit allows. Browsers and IRC clients count alike.
     */
    const add = Effect.fn("PushSubscriptions.add")(function*(
      accountId: number,
      owner: PushOwner,
      subscription: { readonly endpoint: string; readonly p256dh: string; readonly auth: string },
      irc?: IrcRegistration
    ) {
      const now = yield* Clock.currentTimeMillis
      const sessionId = owner._tag === "Session" ? owner.sessionId : null
      const tokenId = owner._tag === "Token" ? owner.tokenId : null
      const apiTokenId = owner._tag === "ApiToken" ? owner.tokenId : null
      const password = owner._tag === "Password"
      const recoveredAt = owner._tag === "Password" && owner.recoveredAt !== null ? new Date(owner.recoveredAt) : null
      const kind = irc === undefined ? "web" : "irc"
      const networkId = irc?.networkId ?? null
      const caps = irc === undefined ? null : LINE_CAPS.filter((c) => irc.caps.includes(c)).join(" ")
      // The `push-subscriptions` limit (docs/decisions/account-limits.md), under the account's lock; the endpoint being
      // registered again is not counted, so a browser that subscribes anew is never refused.
      const held = Effect.map(
        sql<{ n: number }>`
          SELECT count(*)::int AS n FROM push_subscriptions WHERE account_id = ${accountId} AND endpoint <> ${subscription.endpoint}`,
        (r) => r[0]?.n ?? 0
      )
      const rows = yield* limits.within(accountId, "push-subscriptions", held, Effect.gen(function*() {
        return yield* sql<{ id: number }>`
          INSERT INTO push_subscriptions (account_id, session_id, oauth_token_id, api_token_id, password_owner,
                                          password_recovered_at, kind, network_id, irc_caps, endpoint, p256dh, auth,
                                          created_at)
          VALUES (${accountId}, ${sessionId}, ${tokenId}, ${apiTokenId}, ${password}, ${recoveredAt}, ${kind},
                  ${networkId}, ${caps}, ${subscription.endpoint}, ${subscription.p256dh}, ${subscription.auth},
                  ${new Date(now)})
          ON CONFLICT (endpoint) DO UPDATE SET account_id = EXCLUDED.account_id, session_id = EXCLUDED.session_id,
            oauth_token_id = EXCLUDED.oauth_token_id, api_token_id = EXCLUDED.api_token_id,
            password_owner = EXCLUDED.password_owner, password_recovered_at = EXCLUDED.password_recovered_at,
            kind = EXCLUDED.kind, network_id = EXCLUDED.network_id, irc_caps = EXCLUDED.irc_caps,
            p256dh = EXCLUDED.p256dh, auth = EXCLUDED.auth, created_at = EXCLUDED.created_at
          RETURNING id`
      })).pipe(Effect.catchTag("SqlError", Effect.die))
      yield* recount(accountId)
      const row = rows[0]!
      yield* Effect.logInfo("push subscription registered").pipe(Effect.annotateLogs({ accountId, subscriptionId: row.id }))
      return row.id
    })

    /** The member deletes one of theirs. Returns whether it existed. */
    const remove = Effect.fn("PushSubscriptions.remove")(function*(accountId: number, id: number) {
      const rows = yield* sql<{ id: number }>`
        DELETE FROM push_subscriptions WHERE id = ${id} AND account_id = ${accountId} RETURNING id`.pipe(Effect.orDie)
      yield* recount(accountId)
      return rows.length > 0
    })

    /** The push service no longer knows the endpoint (404 or 410, RFC 8030 §7.3). */
    const gone = Effect.fn("PushSubscriptions.gone")(function*(subscription: PushSubscription) {
      yield* sql`DELETE FROM push_subscriptions WHERE id = ${subscription.id} AND endpoint = ${subscription.endpoint}`.pipe(
        Effect.orDie
      )
      yield* recount(subscription.accountId)
      yield* Effect.logInfo("push subscription gone at its push service; deleted").pipe(
        Effect.annotateLogs({ accountId: subscription.accountId, subscriptionId: subscription.id })
      )
    })

    /** An IRC client unregisters its endpoint (`WEBPUSH UNREGISTER`). Returns whether the account had it. */
    const removeEndpoint = Effect.fn("PushSubscriptions.removeEndpoint")(function*(accountId: number, endpoint: string) {
      const rows = yield* sql<{ id: number }>`
        DELETE FROM push_subscriptions WHERE account_id = ${accountId} AND endpoint = ${endpoint} RETURNING id`.pipe(
        Effect.orDie
      )
      if (rows.length > 0) yield* recount(accountId)
      return rows.length > 0
    })

    /** The account's browsers' subscriptions (the web client's JSON goes to these). */
    const forAccount = Effect.fn("PushSubscriptions.forAccount")(function*(accountId: number) {
      return yield* sql<PushSubscription>`
        SELECT id, account_id AS "accountId", endpoint, p256dh, auth FROM push_subscriptions
        WHERE account_id = ${accountId} AND kind = 'web' ORDER BY id`.pipe(Effect.orDie)
    })

    /** The account's IRC clients' subscriptions registered on a connection to `networkId`. */
    const forIrc = Effect.fn("PushSubscriptions.forIrc")(function*(accountId: number, networkId: number) {
      const rows = yield* sql<PushSubscription & { readonly caps: string | null }>`
        SELECT id, account_id AS "accountId", endpoint, p256dh, auth, irc_caps AS caps FROM push_subscriptions
        WHERE account_id = ${accountId} AND kind = 'irc' AND network_id = ${networkId} ORDER BY id`.pipe(Effect.orDie)
      return rows.map((row): IrcPushSubscription => ({ ...row, caps: (row.caps ?? "").split(" ").filter((c) => c !== "") }))
    })

    const has = (accountId: number): boolean => counts.has(accountId)

    // The credential that registered a subscription ended: its subscriptions go (a session's went with it already).
    yield* Queue.take(revoked).pipe(
      Effect.flatMap((event) => {
        if (!counts.has(event.accountId)) return Effect.void
        const where = event.credential === "oauth"
          ? sql`oauth_token_id = ${event.tokenId}`
          : event.credential === "api-token"
          ? sql`api_token_id = ${event.tokenId}`
          : sql`session_id = ${event.tokenId}`
        return Effect.gen(function*() {
          const rows = yield* sql<{ id: number }>`DELETE FROM push_subscriptions WHERE ${where} RETURNING id`.pipe(Effect.orDie)
          yield* recount(event.accountId)
          if (rows.length > 0) {
            yield* Effect.logInfo("push subscriptions of a revoked credential deleted").pipe(
              Effect.annotateLogs({ accountId: event.accountId, subscriptions: rows.length })
            )
          }
        })
      }),
      Effect.catchAllCause((cause) => Effect.logWarning("push subscriptions of a revoked credential not deleted", cause)),
      Effect.forever,
      Effect.forkScoped
    )
    // An account changed (a recovery among others): what its IRC clients registered with the old password goes.
    yield* Queue.take(accountChanges).pipe(
      Effect.flatMap((accountId) =>
        !counts.has(accountId) ? Effect.void : Effect.gen(function*() {
          const rows = yield* sql<{ id: number }>`
            DELETE FROM push_subscriptions p USING accounts a
            WHERE p.account_id = ${accountId} AND ${passwordEnded} RETURNING p.id`.pipe(Effect.orDie)
          if (rows.length === 0) return
          yield* recount(accountId)
          yield* Effect.logInfo("push subscriptions of a password sign-in ended by a recovery deleted").pipe(
            Effect.annotateLogs({ accountId, subscriptions: rows.length })
          )
        })
      ),
      Effect.catchAllCause((cause) => Effect.logWarning("push subscriptions of a recovered account not deleted", cause)),
      Effect.forever,
      Effect.forkScoped
    )
    yield* Queue.take(resyncs).pipe(
      Effect.zipRight(Queue.takeAll(resyncs)),
      Effect.zipRight(sweepRevoked),
      Effect.catchAllCause((cause) => Effect.logWarning("push subscriptions of revoked credentials not swept", cause)),
      Effect.forever,
      Effect.forkScoped
    )
    /** Another node of the cluster changed the account's subscriptions: counted again (not announced again). */
    const changedElsewhere = count

    return { add, remove, removeEndpoint, gone, forAccount, forIrc, has, changes, changedElsewhere } as const
  }),
  dependencies: [CredentialRevocations.Default, AccountLimits.Default]
}) {}
