/**
 * OAuthTokens owns `oauth_tokens`, the access tokens issued to apps and the password-sign-in
 * tokens (the same credential without an app): minting (only the SHA-256 of the raw value
 * is stored), the lookup behind authentication, the listing of Settings > Authorized apps,
 * and every kind of revocation — RFC 7009 by the app, logout, revocation of an app in
 * settings, account recovery, and reuse of the code the token came from (RFC 6749 §4.1.2).
 * Tokens never expire (the interface, "OAuth access token").
 *
 * Every revocation is announced on CredentialRevocations once it is committed, so cached
 * authentications drop it at once. A caller that revokes inside its own transaction (code
 * reuse, account recovery) does so through `inTransaction`, which announces only after
 * that transaction commits. State in PostgreSQL; safe to call concurrently.
 */
import { SqlClient, type SqlError, type Statement } from "@effect/sql"
import { Clock, Effect, Option } from "effect"
import { AccountLimits } from "./AccountLimits.js"
import { CredentialRevocations, type CredentialRevoked } from "./CredentialRevocations.js"
import { sha256, TokenGenerator, TokenGeneratorLive } from "./Tokens.js"

export interface IssuedToken {
  readonly tokenId: number
  /** Shown once, in the token response; never stored or logged. */
  readonly accessToken: string
  /** Unix milliseconds (the response gives seconds). */
  readonly createdAt: number
}

export interface OAuthTokenOwner {
  readonly tokenId: number
  readonly accountId: number
  /** The app it was issued to; null for a password-sign-in token. */
  readonly clientId: string | null
  /** `app`: issued to an app; `password`: by `POST /api/auth/login/token` (migration 0003). */
  readonly kind: "app" | "password"
}

/** Settings > Authorized apps: one approved app of a member, with its live tokens folded together. */
export interface AuthorizedApp {
  readonly clientId: string
  readonly clientName: string
  readonly clientUri: string | null
  /** `document`: the client_id is its Client ID Metadata Document's URL, whose host identifies it (migration 0012). */
  readonly kind: "registered" | "document"
  /** The latest approval (token issue) by this member. */
  readonly approvedAt: Date
  readonly lastUsedAt: Date | null
}

/** Settings > Authorized apps: a live password-sign-in token, listed as "Password sign-in". */
export interface PasswordSignIn {
  readonly tokenId: number
  readonly createdAt: Date
  readonly lastUsedAt: Date | null
}

/** Revocations a caller's transaction may make; announced when it commits. */
export interface TransactionRevoker {
  /** The token with this id, if live. */
  readonly byId: (tokenId: number) => Effect.Effect<void, SqlError.SqlError>
  /** Every live token of the account (account recovery). Returns how many. */
  readonly allOfAccount: (accountId: number) => Effect.Effect<number, SqlError.SqlError>
}

export class OAuthTokens extends Effect.Service<OAuthTokens>()("belay/OAuthTokens", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const generator = yield* TokenGenerator
    const revocations = yield* CredentialRevocations
    const limits = yield* AccountLimits

    /** Mints and stores a token; runs inside the caller's transaction when there is one. `resource` is the RFC 8707
     * resource it was issued for (`<issuer>/mcp`), or absent for a client that named none. */
    const issue = Effect.fn("OAuthTokens.issue")(function*(clientId: string, accountId: number, resource?: string | null) {
      const now = yield* Clock.currentTimeMillis
      const accessToken = generator.mint("oauth-token")
      const rows = yield* sql<{ id: number }>`
        INSERT INTO oauth_tokens (token_hash, client_id, account_id, created_at, resource)
        VALUES (${sha256(accessToken)}, ${clientId}, ${accountId}, ${new Date(now)}, ${resource ?? null})
        RETURNING id`.pipe(Effect.orDie)
      return { tokenId: rows[0]!.id, accessToken, createdAt: now } satisfies IssuedToken
    })

    /** The live token whose SHA-256 is `tokenHash`, if any. */
    const authenticate = Effect.fn("OAuthTokens.authenticate")(function*(tokenHash: Buffer) {
      const rows = yield* sql<OAuthTokenOwner>`
        SELECT id AS "tokenId", account_id AS "accountId", client_id AS "clientId", kind FROM oauth_tokens
        WHERE token_hash = ${tokenHash} AND revoked_at IS NULL`.pipe(Effect.orDie)
      return Option.fromNullable(rows[0])
    })

    /**
     * `POST /api/auth/login/token`: a password-sign-in token, the same credential as an app's
     * token without an app (docs/decisions/web.md, "Password-sign-in tokens are OAuth tokens
     * without an app").
     */
    const issueForPassword = Effect.fn("OAuthTokens.issueForPassword")(function*(accountId: number) {
      const now = yield* Clock.currentTimeMillis
      const accessToken = generator.mint("oauth-token")
      // Counted with the apps' tokens (docs/decisions/account-limits.md "Apps, push subscriptions, passkeys and
      // sessions: bounded always"): each is one more credential that speaks for the account.
      const rows = yield* limits.within(accountId, "apps", liveCount(accountId), sql<{ id: number }>`
        INSERT INTO oauth_tokens (token_hash, kind, client_id, account_id, created_at)
        VALUES (${sha256(accessToken)}, 'password', NULL, ${accountId}, ${new Date(now)})
        RETURNING id`).pipe(Effect.catchTag("SqlError", Effect.die))
      return { tokenId: rows[0]!.id, accessToken, createdAt: now } satisfies IssuedToken
    })

    /** The account's live tokens, apps' and password sign-ins' (the `apps` limit), for a count under its lock. */
    const liveCount = (accountId: number) =>
      Effect.map(
        sql<{ n: number }>`SELECT count(*)::int AS n FROM oauth_tokens WHERE account_id = ${accountId} AND revoked_at IS NULL`,
        (rows) => rows[0]?.n ?? 0
      )

    /** Of these token ids, those still live (the browser WebSocket checks its sockets' after a lost LISTEN). */
    const liveAmong = Effect.fn("OAuthTokens.liveAmong")(function*(tokenIds: ReadonlyArray<number>) {
      if (tokenIds.length === 0) return new Set<number>()
      const rows = yield* sql<{ id: number }>`
        SELECT id FROM oauth_tokens WHERE ${sql.in("id", tokenIds)} AND revoked_at IS NULL`.pipe(Effect.orDie)
      return new Set(rows.map((r) => r.id))
    })

    /** The member's approved apps (those with a live token), most recently approved first. */
    const listApps = Effect.fn("OAuthTokens.listApps")(function*(accountId: number) {
      return yield* sql<AuthorizedApp>`
        SELECT o.client_id AS "clientId", c.client_name AS "clientName", c.client_uri AS "clientUri", c.kind,
               max(o.created_at) AS "approvedAt", max(o.last_used_at) AS "lastUsedAt"
        FROM oauth_tokens o JOIN oauth_clients c ON c.client_id = o.client_id
        WHERE o.account_id = ${accountId} AND o.kind = 'app' AND o.revoked_at IS NULL
        GROUP BY o.client_id, c.client_name, c.client_uri, c.kind
        ORDER BY max(o.created_at) DESC, o.client_id`.pipe(Effect.orDie)
    })

    /** The member's live password-sign-in tokens, newest first. */
    const listPasswordSignIns = Effect.fn("OAuthTokens.listPasswordSignIns")(function*(accountId: number) {
      return yield* sql<PasswordSignIn>`
        SELECT id AS "tokenId", created_at AS "createdAt", last_used_at AS "lastUsedAt"
        FROM oauth_tokens
        WHERE account_id = ${accountId} AND kind = 'password' AND revoked_at IS NULL
        ORDER BY created_at DESC, id DESC`.pipe(Effect.orDie)
    })

    const revokeWhere = (where: Statement.Fragment) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        sql<OAuthTokenOwner>`
          UPDATE oauth_tokens SET revoked_at = ${new Date(now)}
          WHERE ${where} AND revoked_at IS NULL
          RETURNING id AS "tokenId", account_id AS "accountId", client_id AS "clientId", kind`)

    const eventsOf = (rows: ReadonlyArray<OAuthTokenOwner>) =>
      rows.map((r): CredentialRevoked => ({ credential: "oauth", tokenId: r.tokenId, accountId: r.accountId }))

    const logRevoked = (rows: ReadonlyArray<OAuthTokenOwner>) =>
      Effect.forEach(rows, (r) =>
        Effect.logInfo("oauth token revoked").pipe(Effect.annotateLogs({ tokenId: r.tokenId, clientId: r.clientId })), {
        discard: true
      })

    /** Revokes, notifying the other processes in the same transaction, and announces it here once committed. */
    const revoke = (where: Statement.Fragment) =>
      revocations.commit(revokeWhere(where), (rows) => ({ revoked: eventsOf(rows) })).pipe(
        Effect.orDie,
        Effect.tap(logRevoked),
        Effect.map((rows) => rows.length)
      )

    /**
     * RFC 7009 §2.2: revokes `rawToken` only if it was issued to `clientId` (another app's
     * token is left alone, and the caller answers 200 all the same). Returns whether a live
     * token was revoked.
     */
    const revokeForApp = Effect.fn("OAuthTokens.revokeForApp")(function*(rawToken: string, clientId: string) {
      return (yield* revoke(sql`token_hash = ${sha256(rawToken)} AND client_id = ${clientId}`)) > 0
    })

    /** Logout: revokes the token the request authenticated with. */
    const revokeById = Effect.fn("OAuthTokens.revokeById")(function*(tokenId: number) {
      return (yield* revoke(sql`id = ${tokenId}`)) > 0
    })

    /** Settings > Authorized apps: every token of one app for one member. Returns how many. */
    const revokeForClient = Effect.fn("OAuthTokens.revokeForClient")(function*(accountId: number, clientId: string) {
      return yield* revoke(sql`account_id = ${accountId} AND client_id = ${clientId}`)
    })

    /** Settings > Authorized apps: one password-sign-in token of this member. Returns whether it was live. */
    const revokePasswordSignIn = Effect.fn("OAuthTokens.revokePasswordSignIn")(function*(accountId: number, tokenId: number) {
      return (yield* revoke(sql`id = ${tokenId} AND account_id = ${accountId} AND kind = 'password'`)) > 0
    })

    /**
     * Runs `body` in one transaction (with the caller's own statements); tokens it revokes
     * through the revoker are announced after the commit, never if it rolls back.
     */
    const inTransaction = <A, E, R>(
      body: (revoke: TransactionRevoker) => Effect.Effect<A, E, R>
    ): Effect.Effect<A, E | SqlError.SqlError, R> =>
      Effect.gen(function*() {
        const revoked: Array<OAuthTokenOwner> = []
        const collect = (where: Statement.Fragment) =>
          Effect.map(revokeWhere(where), (rows) => {
            revoked.push(...rows)
            return rows.length
          })
        const revoker: TransactionRevoker = {
          byId: (tokenId) => Effect.asVoid(collect(sql`id = ${tokenId}`)),
          allOfAccount: (accountId) => collect(sql`account_id = ${accountId}`)
        }
        const result = yield* sql.withTransaction(
          Effect.tap(body(revoker), () => revocations.notifyOthers({ revoked: eventsOf(revoked) }))
        )
        yield* revocations.publish(eventsOf(revoked))
        yield* logRevoked(revoked)
        return result
      })

    return {
      issue,
      issueForPassword,
      liveCount,
      authenticate,
      liveAmong,
      listApps,
      listPasswordSignIns,
      revokeForApp,
      revokeById,
      revokeForClient,
      revokePasswordSignIn,
      inTransaction
    } as const
  }),
  dependencies: [TokenGeneratorLive, CredentialRevocations.Default, AccountLimits.Default]
}) {}
