/**
 * OAuthTokens owns the access tokens issued to apps: minting (only the SHA-256 of the raw
 * value is stored, in `oauth_tokens.token_hash`, where the Authenticator looks it up),
 * and every kind of revocation — RFC 7009 by the app, logout, revocation of an app in
 * settings, and reuse of the code the token came from (RFC 6749 §4.1.2). Tokens never
 * expire (interface "OAuth access token").
 *
 * Revocation takes effect at once: the Authenticator reads the row on every request.
 * Each revocation is then published on `revoked`, for whoever must also act on it (the
 * browser WebSocket closes with 4001, interface "Events" 3); publish happens after the
 * database change is committed. State in PostgreSQL; safe to call concurrently.
 */
import { SqlClient, type Statement } from "@effect/sql"
import { Clock, Effect, PubSub } from "effect"
import { CredentialCache } from "./CredentialCache.js"
import { sha256, TokenGenerator } from "./Tokens.js"

/** One access token stopped working. */
export interface OAuthTokenRevoked {
  readonly tokenId: number
  readonly accountId: number
  readonly clientId: string
}

export interface IssuedToken {
  readonly tokenId: number
  /** Shown once, in the token response; never stored or logged. */
  readonly accessToken: string
  /** Unix milliseconds (the response gives seconds). */
  readonly createdAt: number
}

export class OAuthTokens extends Effect.Service<OAuthTokens>()("belay/OAuthTokens", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const generator = yield* TokenGenerator
    const revoked = yield* PubSub.unbounded<OAuthTokenRevoked>()
    const credentials = yield* CredentialCache

    /** Mints and stores a token; runs inside the caller's transaction when there is one. */
    const issue = Effect.fn("OAuthTokens.issue")(function*(clientId: string, accountId: number) {
      const now = yield* Clock.currentTimeMillis
      const accessToken = generator.mint("oauth-token")
      const rows = yield* sql<{ id: number }>`
        INSERT INTO oauth_tokens (token_hash, client_id, account_id, created_at)
        VALUES (${sha256(accessToken)}, ${clientId}, ${accountId}, ${new Date(now)})
        RETURNING id`.pipe(Effect.orDie)
      return { tokenId: rows[0]!.id, accessToken, createdAt: now } satisfies IssuedToken
    })

    /**
     * Announces revocations that are already committed — and drops cached
     * authentications, so the revoked token fails at /mcp from the next request on.
     */
    const publishRevoked = (events: ReadonlyArray<OAuthTokenRevoked>) =>
      (events.length > 0 ? credentials.invalidate : Effect.void).pipe(Effect.zipRight(Effect.forEach(events, (event) =>
        Effect.logInfo("oauth token revoked").pipe(
          Effect.annotateLogs({ tokenId: event.tokenId, clientId: event.clientId }),
          Effect.zipRight(PubSub.publish(revoked, event))
        ), { discard: true })))

    const revokeWhere = (where: Statement.Fragment) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* sql<OAuthTokenRevoked>`
          UPDATE oauth_tokens SET revoked_at = ${new Date(now)}
          WHERE ${where} AND revoked_at IS NULL
          RETURNING id AS "tokenId", account_id AS "accountId", client_id AS "clientId"`.pipe(Effect.orDie)
        return rows
      })

    /**
     * RFC 7009 §2.2: revokes `rawToken` only if it was issued to `clientId` (another app's
     * token is left alone, and the caller answers 200 all the same, research/oauth.md V-03).
     * Returns whether a live token was revoked.
     */
    const revokeForApp = Effect.fn("OAuthTokens.revokeForApp")(function*(rawToken: string, clientId: string) {
      const rows = yield* revokeWhere(sql`token_hash = ${sha256(rawToken)} AND client_id = ${clientId}`)
      yield* publishRevoked(rows)
      return rows.length > 0
    })

    /** Logout: revokes the token the request authenticated with. */
    const revokeById = Effect.fn("OAuthTokens.revokeById")(function*(tokenId: number) {
      const rows = yield* revokeWhere(sql`id = ${tokenId}`)
      yield* publishRevoked(rows)
      return rows.length > 0
    })

    /** Settings > Authorized apps: every token of one app for one member. Returns how many. */
    const revokeForClient = Effect.fn("OAuthTokens.revokeForClient")(function*(accountId: number, clientId: string) {
      const rows = yield* revokeWhere(sql`account_id = ${accountId} AND client_id = ${clientId}`)
      yield* publishRevoked(rows)
      return rows.length
    })

    /** Revokes inside the caller's transaction; the caller publishes after commit. */
    const revokeByIdInTransaction = (tokenId: number) => revokeWhere(sql`id = ${tokenId}`)

    return {
      issue,
      revokeForApp,
      revokeById,
      revokeForClient,
      revokeByIdInTransaction,
      publishRevoked,
      revoked
    } as const
  })
}) {}
