/**
 * ApiTokens owns `api_tokens`, the tokens members mint for programs: 256 random bits
 * shown once, only a SHA-256 hash stored, scope fixed at creation, soft revocation (the
 * row stays listed with its revoked marker, and the revocation is announced on
 * CredentialRevocations once committed). Refused on hosted deployments (the interface,
 * "Authentication" 2). State in PostgreSQL; safe to call concurrently.
 */
import { SqlClient } from "@effect/sql"
import { Data, Effect, Option } from "effect"
import { AppConfig } from "../AppConfig.js"
import { Accounts } from "./Accounts.js"
import { CredentialRevocations } from "./CredentialRevocations.js"
import { sha256, TokenGenerator, TokenGeneratorLive } from "./Tokens.js"

export type TokenScope = "read" | "read-write"

export interface ApiTokenListing {
  readonly name: string
  readonly scope: TokenScope
  readonly createdAt: Date
  readonly lastUsedAt: Date | null
  readonly revokedAt: Date | null
}

export interface ApiTokenOwner {
  readonly tokenId: number
  readonly accountId: number
  readonly scope: TokenScope
}

export class ApiTokensDisabled extends Data.TaggedError("ApiTokensDisabled")<{}> {
  override get message() {
    return "API tokens are not offered on a hosted deployment (BELAY_HOSTED=true); use OAuth"
  }
}
export class TokenNameTaken extends Data.TaggedError("TokenNameTaken")<{ readonly name: string }> {
  override get message() {
    return `a token named ${JSON.stringify(this.name)} already exists on this account`
  }
}
export class TokenNotFound extends Data.TaggedError("TokenNotFound")<{ readonly name: string }> {
  override get message() {
    return `no token named ${JSON.stringify(this.name)} on this account`
  }
}
export class InvalidTokenName extends Data.TaggedError("InvalidTokenName")<{}> {
  override get message() {
    return "token name must be 1-64 printable characters"
  }
}

const TOKEN_NAME = /^[\x21-\x7e](?:[\x20-\x7e]{0,62}[\x21-\x7e])?$/

export class ApiTokens extends Effect.Service<ApiTokens>()("belay/ApiTokens", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const accounts = yield* Accounts
    const generator = yield* TokenGenerator
    const revocations = yield* CredentialRevocations

    /** Returns the raw token; it is never stored and cannot be shown again. */
    const create = Effect.fn("ApiTokens.create")(function*(accountName: string, name: string, scope: TokenScope) {
      if (config.hosted) return yield* new ApiTokensDisabled()
      if (!TOKEN_NAME.test(name)) return yield* new InvalidTokenName()
      const account = yield* accounts.require(accountName)
      const raw = generator.mint("api")
      const rows = yield* sql<{ id: number }>`
        INSERT INTO api_tokens (account_id, name, scope, token_hash) VALUES (${account.id}, ${name}, ${scope}, ${sha256(raw)})
        ON CONFLICT (account_id, name) DO NOTHING RETURNING id`.pipe(Effect.orDie)
      if (!rows[0]) return yield* new TokenNameTaken({ name })
      yield* Effect.logInfo("api token created").pipe(Effect.annotateLogs({ account: accountName, token: name, scope }))
      return raw
    })

    const list = Effect.fn("ApiTokens.list")(function*(accountName: string) {
      const account = yield* accounts.require(accountName)
      return yield* sql<ApiTokenListing>`
        SELECT name, scope, created_at AS "createdAt", last_used_at AS "lastUsedAt", revoked_at AS "revokedAt"
        FROM api_tokens WHERE account_id = ${account.id} ORDER BY created_at, id`.pipe(Effect.orDie)
    })

    /** Soft revocation: the row stays; the token stops authenticating immediately. */
    const revoke = Effect.fn("ApiTokens.revoke")(function*(accountName: string, name: string) {
      const account = yield* accounts.require(accountName)
      const rows = yield* revocations.commit(
        sql<{ id: number }>`
          UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now())
          WHERE account_id = ${account.id} AND name = ${name} RETURNING id`,
        (rows) => ({ revoked: rows.map((r) => ({ credential: "api-token" as const, tokenId: r.id, accountId: account.id })) })
      ).pipe(Effect.orDie)
      const row = rows[0]
      if (!row) return yield* new TokenNotFound({ name })
      yield* Effect.logInfo("api token revoked").pipe(Effect.annotateLogs({ account: accountName, token: name }))
    })

    /**
     * The live API token whose SHA-256 is `tokenHash`, if any. Hosted deployments refuse
     * API tokens at every entry point, including ones minted earlier. Lookup is by hash:
     * no comparison of the secret itself happens in JS.
     */
    const authenticate = Effect.fn("ApiTokens.authenticate")(function*(tokenHash: Buffer) {
      if (config.hosted) return Option.none<ApiTokenOwner>()
      const rows = yield* sql<ApiTokenOwner>`
        SELECT id AS "tokenId", account_id AS "accountId", scope FROM api_tokens
        WHERE token_hash = ${tokenHash} AND revoked_at IS NULL`.pipe(Effect.orDie)
      return Option.fromNullable(rows[0])
    })

    /** Of these token ids, those still live (the IRC listener checks its sessions' after a lost LISTEN). */
    const liveAmong = Effect.fn("ApiTokens.liveAmong")(function*(tokenIds: ReadonlyArray<number>) {
      if (tokenIds.length === 0 || config.hosted) return new Set<number>()
      const rows = yield* sql<{ id: number }>`
        SELECT id FROM api_tokens WHERE ${sql.in("id", tokenIds)} AND revoked_at IS NULL`.pipe(Effect.orDie)
      return new Set(rows.map((r) => r.id))
    })

    /**
     * Revokes every live token of the account inside the caller's transaction (account deletion), and answers what to
     * announce: the caller notifies the other processes in that transaction and announces here once it committed.
     */
    const revokeAllOfAccount = (accountId: number) =>
      Effect.map(
        sql<{ id: number }>`
          UPDATE api_tokens SET revoked_at = now() WHERE account_id = ${accountId} AND revoked_at IS NULL RETURNING id`,
        (rows) => rows.map((r) => ({ credential: "api-token" as const, tokenId: r.id, accountId }))
      )

    return { create, list, revoke, authenticate, liveAmong, revokeAllOfAccount } as const
  }),
  dependencies: [Accounts.Default, TokenGeneratorLive, CredentialRevocations.Default]
}) {}
