/**
 * Authenticator owns the one question every request to /mcp asks: whose bearer
 * token is this, and what may it do? Both credentials go through here — API tokens
 * (scope fixed at creation) and OAuth access tokens (always read-write, interface
 * "Authentication" 3) — and a paused account is narrowed to read (interface 5).
 * Every request is authenticated again: no cache, so a revocation takes effect at once.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { ApiTokens, type TokenScope } from "./ApiTokens.js"
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
    const apiTokens = yield* ApiTokens

    const statusOf = (accountId: number) =>
      sql<{ status: string }>`SELECT status FROM accounts WHERE id = ${accountId}`.pipe(
        Effect.orDie,
        Effect.map((rows) => rows[0]?.status === "paused")
      )

    const principal = (accountId: number, credential: Principal["credential"], grantedScope: TokenScope, oauthTokenId: number | null) =>
      Effect.map(statusOf(accountId), (paused): Principal => ({
        accountId,
        credential,
        grantedScope,
        paused,
        scope: paused ? "read" : grantedScope,
        oauthTokenId
      }))

    /** The principal behind an `Authorization` header value, if it is a live credential. */
    const authenticate = Effect.fn("Authenticator.authenticate")(function*(authorization: string | undefined) {
      const match = authorization?.match(/^Bearer +(\S+) *$/i)
      const raw = match?.[1]
      if (!raw || !PLAUSIBLE_TOKEN.test(raw)) return Option.none<Principal>()
      const api = yield* apiTokens.authenticate(raw)
      if (Option.isSome(api)) return Option.some(yield* principal(api.value.accountId, "api-token", api.value.scope, null))
      const rows = yield* sql<{ id: number; accountId: number }>`
        SELECT id, account_id AS "accountId" FROM oauth_tokens
        WHERE token_hash = ${sha256(raw)} AND revoked_at IS NULL`.pipe(Effect.orDie)
      const oauth = rows[0]
      if (!oauth) return Option.none<Principal>()
      return Option.some(yield* principal(oauth.accountId, "oauth", "read-write", oauth.id))
    })

    return { authenticate } as const
  })
}) {}
