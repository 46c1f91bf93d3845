/**
 * Authenticator owns the one question every request to /mcp asks: whose bearer
 * token is this, and what may it do? Both credentials go through here — API tokens
 * (scope fixed at creation) and OAuth access tokens (always read-write, interface
 * "Authentication" 3) — and a paused account is narrowed to read (interface 5).
 * Every request is authenticated again; answers are cached briefly by CredentialCache,
 * which every revoking writer invalidates, so a revocation still takes effect at once.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import type { TokenScope } from "./ApiTokens.js"
import { AppConfig } from "./AppConfig.js"
import { CredentialCache } from "./CredentialCache.js"
import { sha256 } from "./Tokens.js"

export interface Principal {
  readonly accountId: number
  readonly credential: "api-token" | "oauth"
  /** The scope the token was granted. */
  readonly grantedScope: TokenScope
  readonly paused: boolean
  /** What the request may do now: read when the account is paused. */
  readonly scope: TokenScope
  /** The OAuth access token's row id, for logout; null for API tokens. */
  readonly oauthTokenId: number | null
}

/** Bearer tokens are base64url-ish opaque strings; anything else is not worth a query. */
const PLAUSIBLE_TOKEN = /^[\x21-\x7e]{16,512}$/

export class Authenticator extends Effect.Service<Authenticator>()("belay/Authenticator", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const cache = yield* CredentialCache

    interface CredentialRow {
      readonly credential: Principal["credential"]
      readonly id: number
      readonly accountId: number
      readonly scope: TokenScope
      readonly status: string
    }

    /**
     * One round trip for both credential kinds and the account status. API tokens are
     * refused on hosted deployments at every entry point, even ones minted earlier.
     */
    const lookup = (hash: Buffer) =>
      sql<CredentialRow>`
        SELECT 'api-token' AS credential, t.id, t.account_id AS "accountId", t.scope, a.status
        FROM api_tokens t JOIN accounts a ON a.id = t.account_id
        WHERE t.token_hash = ${hash} AND t.revoked_at IS NULL AND ${!config.hosted}
        UNION ALL
        SELECT 'oauth' AS credential, o.id, o.account_id AS "accountId", 'read-write' AS scope, a.status
        FROM oauth_tokens o JOIN accounts a ON a.id = o.account_id
        WHERE o.token_hash = ${hash} AND o.revoked_at IS NULL`.pipe(
        Effect.orDie,
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (row): Principal => {
          const paused = row.status === "paused"
          return {
            accountId: row.accountId,
            credential: row.credential,
            grantedScope: row.scope,
            paused,
            scope: paused ? "read" : row.scope,
            oauthTokenId: row.credential === "oauth" ? row.id : null
          }
        }))
      )

    /** The principal behind an `Authorization` header value, if it is a live credential. */
    const authenticate = (authorization: string | undefined): Effect.Effect<Option.Option<Principal>> => {
      const match = authorization?.match(/^Bearer +(\S+) *$/i)
      const raw = match?.[1]
      if (!raw || !PLAUSIBLE_TOKEN.test(raw)) return Effect.succeed(Option.none())
      const hash = sha256(raw)
      return cache.getOrLookup(hash.toString("base64"), lookup(hash))
    }

    return { authenticate } as const
  })
}) {}
