/**
 * OAuthCodes owns `oauth_codes`, the authorization codes: issue (bound to client_id, the
 * exact redirect_uri and the PKCE challenge; 10 minutes; only the SHA-256 stored) and
 * redemption at the token endpoint.
 *
 * Redemption, after the endpoint has checked body, grant_type and client (none of which
 * touch the code), is one transaction (docs/decisions/oauth.md):
 *   1. claim: `UPDATE … SET spent_at WHERE code_hash = $1 AND spent_at IS NULL RETURNING`.
 *      PostgreSQL lets exactly one concurrent claimant see the row; the rest block on its
 *      lock, then find it spent (20 parallel redemptions → one token).
 *      Nothing claimed: the code is unknown or already spent; a spent code's token is
 *      revoked (RFC 6749 §4.1.2 "SHOULD revoke", RFC 9700 §4.2.4) → invalid_grant;
 *   2. client_id is the one the code was issued to;
 *   3. redirect_uri is byte for byte the authorization's (a loopback port included);
 *   4. the code is younger than 10 minutes;
 *   5. the verifier's S256 equals the challenge (RFC 7636 §4.6), compared in constant time;
 *   6. a `resource` the token request names (already known to be this server's /mcp) is the one the
 *      authorization named, when it named one (RFC 8707 §2.2) → invalid_target;
 *   7. the token is minted, remembering the resource, and linked to the code (so reuse can find it).
 * A failure at 2–6 still commits the claim: the code is spent (the interface, "States and
 * transitions"). The token is OAuthTokens' to mint and revoke, inside this transaction
 * (OAuthTokens.inTransaction announces a revocation once it commits). Time comes only from
 * Effect's Clock.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Either } from "effect"
import type { TokenRequest } from "../../schema/OAuth.js"
import { InvalidGrant, InvalidTarget } from "../../schema/OAuthErrors.js"
import { verifyPkce } from "./Pkce.js"
import { AccountLimits } from "../identity/AccountLimits.js"
import { type IssuedToken, OAuthTokens } from "../identity/OAuthTokens.js"
import { periodicPrune } from "../upkeep/PeriodicPrune.js"
import { sha256, TokenGenerator, TokenGeneratorLive } from "../identity/Tokens.js"

export const OAuthCodeLimits = {
  lifetime: Duration.minutes(10),
  /** Spent and expired codes are kept this long after expiry, so a late replay still revokes. */
  keepAfterExpiry: Duration.days(1),
  pruneEvery: Duration.minutes(10)
} as const

const LIFETIME_MS = Duration.toMillis(OAuthCodeLimits.lifetime)

export interface CodeBinding {
  readonly clientId: string
  readonly accountId: number
  /** As presented at authorization (a loopback URI may carry another port than registered). */
  readonly redirectUri: string
  readonly codeChallenge: string
  /** `<issuer>/mcp` when the authorization named it (RFC 8707); absent when it named none. */
  readonly resource?: string | undefined
}

interface ClaimedCode {
  readonly clientId: string
  readonly accountId: number
  readonly redirectUri: string
  readonly codeChallenge: string
  readonly resource: string | null
  readonly expiresAt: Date
}

/** Why a redemption failed; logged (the code itself never is) and all answered invalid_grant. */
export type RedeemFailure =
  | "unknown-or-spent"
  | "client-mismatch"
  | "redirect-uri-mismatch"
  | "expired"
  | "verifier-mismatch"
  | "resource-mismatch"

const grantFailure = (reason: RedeemFailure) =>
  reason === "resource-mismatch"
    ? new InvalidTarget({ description: "resource differs from the authorization's; the code is spent, start again" })
    : new InvalidGrant({
    description: reason === "unknown-or-spent"
      ? "the code is unknown, expired or already used; start a new authorization"
      : "the code does not match this request; it is spent, start a new authorization"
  })

export class OAuthCodes extends Effect.Service<OAuthCodes>()("belay/OAuthCodes", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const generator = yield* TokenGenerator
    const tokens = yield* OAuthTokens
    const limits = yield* AccountLimits

    /** Mints a code for an approved authorization; the raw value goes to the app once. */
    const issue = Effect.fn("OAuthCodes.issue")(function*(binding: CodeBinding) {
      const now = yield* Clock.currentTimeMillis
      const code = generator.mint("oauth-code")
      // The `apps` limit is kept at approval (docs/decisions/account-limits.md "Apps, push subscriptions, passkeys and
      // sessions: bounded always"): live tokens and the codes that may still become one, so every exchange succeeds.
      const pending = sql<{ n: number }>`
        SELECT count(*)::int AS n FROM oauth_codes
        WHERE account_id = ${binding.accountId} AND spent_at IS NULL AND expires_at > ${new Date(now)}`
      const counted = Effect.zipWith(tokens.liveCount(binding.accountId), pending, (live, codes) => live + (codes[0]?.n ?? 0))
      yield* limits.within(binding.accountId, "apps", counted, sql`
        INSERT INTO oauth_codes (code_hash, client_id, account_id, redirect_uri, code_challenge, resource, created_at,
                                 expires_at)
        VALUES (${sha256(code)}, ${binding.clientId}, ${binding.accountId}, ${binding.redirectUri},
                ${binding.codeChallenge}, ${binding.resource ?? null}, ${new Date(now)}, ${new Date(now + LIFETIME_MS)})`
      ).pipe(Effect.catchTag("SqlError", Effect.die))
      return code
    })

    /** Steps 1–7 above. The request is already decoded, its client known and its resource, if any, this server's. */
    const redeem = Effect.fn("OAuthCodes.redeem")(function*(request: TokenRequest, resource?: string) {
      const now = yield* Clock.currentTimeMillis
      const codeHash = sha256(request.code)
      const outcome = yield* tokens.inTransaction((revoke) =>
        Effect.gen(function*() {
          const claimed = yield* sql<ClaimedCode>`
            UPDATE oauth_codes SET spent_at = ${new Date(now)}
            WHERE code_hash = ${codeHash} AND spent_at IS NULL
            RETURNING client_id AS "clientId", account_id AS "accountId", redirect_uri AS "redirectUri",
                      code_challenge AS "codeChallenge", resource, expires_at AS "expiresAt"`
          const code = claimed[0]
          if (code === undefined) {
            const spent = yield* sql<{ tokenId: number | null }>`
              SELECT token_id AS "tokenId" FROM oauth_codes WHERE code_hash = ${codeHash}`
            const tokenId = spent[0]?.tokenId
            if (tokenId != null) yield* revoke.byId(tokenId)
            return { result: Either.left<RedeemFailure>("unknown-or-spent"), revokedTokenId: tokenId ?? undefined }
          }
          const failure: RedeemFailure | undefined = code.clientId !== request.client_id
            ? "client-mismatch"
            : code.redirectUri !== request.redirect_uri
            ? "redirect-uri-mismatch"
            : now >= code.expiresAt.getTime()
            ? "expired"
            : !verifyPkce(request.code_verifier, code.codeChallenge)
            ? "verifier-mismatch"
            : resource !== undefined && code.resource !== null && resource !== code.resource
            ? "resource-mismatch"
            : undefined
          if (failure !== undefined) return { result: Either.left(failure), revokedTokenId: undefined }
          const token = yield* tokens.issue(code.clientId, code.accountId, code.resource ?? resource)
          yield* sql`UPDATE oauth_codes SET token_id = ${token.tokenId} WHERE code_hash = ${codeHash}`
          return { result: Either.right<IssuedToken>(token), revokedTokenId: undefined }
        })
      ).pipe(Effect.orDie)

      if (Either.isLeft(outcome.result)) {
        yield* Effect.logInfo("authorization code refused").pipe(
          Effect.annotateLogs({
            clientId: request.client_id,
            reason: outcome.result.left,
            ...(outcome.revokedTokenId === undefined ? {} : { revokedTokenId: outcome.revokedTokenId })
          })
        )
        return yield* grantFailure(outcome.result.left)
      }
      yield* Effect.logInfo("access token issued").pipe(
        Effect.annotateLogs({ clientId: request.client_id, tokenId: outcome.result.right.tokenId })
      )
      return outcome.result.right
    })

    const pruneExpired = Effect.fn("OAuthCodes.pruneExpired")(function*() {
      const now = yield* Clock.currentTimeMillis
      const keep = Duration.toMillis(OAuthCodeLimits.keepAfterExpiry)
      yield* sql`DELETE FROM oauth_codes WHERE expires_at < ${new Date(now - keep)}`.pipe(Effect.orDie)
    })

    yield* periodicPrune("oauth codes", OAuthCodeLimits.pruneEvery, pruneExpired())

    return { issue, redeem } as const
  }),
  dependencies: [TokenGeneratorLive, OAuthTokens.Default, AccountLimits.Default]
}) {}
