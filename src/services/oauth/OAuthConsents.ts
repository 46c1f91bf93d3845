/**
 * OAuthConsents owns `oauth_consents`, the server-side record behind one approval page:
 * the validated authorization request (client, the exact redirect_uri, PKCE challenge,
 * state, the RFC 8707 resource) bound to the browser session that saw the page. The approve/deny POST carries
 * only the record's id, the CSRF token and the decision, so nothing the browser sends can
 * change where the code goes (RFC 9700 §4.7).
 *
 * Single use: `claim` deletes the row it returns (`DELETE … RETURNING`), so of several
 * submissions of one page exactly one proceeds (the others get an error page). A record
 * lives 15 minutes on Effect's Clock. State in PostgreSQL; safe to call concurrently.
 */
import * as Crypto from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Option } from "effect"
import { periodicPrune } from "../upkeep/PeriodicPrune.js"
import { sha256 } from "../identity/Tokens.js"

export const OAuthConsentLimits = {
  lifetime: Duration.minutes(15),
  pruneEvery: Duration.minutes(15)
} as const

const LIFETIME_MS = Duration.toMillis(OAuthConsentLimits.lifetime)

export interface ConsentRequest {
  readonly sessionId: number
  readonly clientId: string
  readonly redirectUri: string
  readonly state?: string | undefined
  readonly codeChallenge: string
  readonly resource?: string | undefined
}

export interface Consent {
  readonly sessionId: number
  readonly clientId: string
  readonly redirectUri: string
  /** Absent when the authorization request had none (then the redirect has none). */
  readonly state?: string
  readonly codeChallenge: string
  /** Absent when the authorization request named no resource. */
  readonly resource?: string
}

export class OAuthConsents extends Effect.Service<OAuthConsents>()("belay/OAuthConsents", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Records a validated request for the approval page; returns the record's raw id. */
    const create = Effect.fn("OAuthConsents.create")(function*(request: ConsentRequest) {
      const now = yield* Clock.currentTimeMillis
      const id = Crypto.randomBytes(32).toString("base64url")
      yield* sql`
        INSERT INTO oauth_consents (id_hash, session_id, client_id, redirect_uri, state, code_challenge, resource,
                                    created_at, expires_at)
        VALUES (${sha256(id)}, ${request.sessionId}, ${request.clientId}, ${request.redirectUri}, ${request.state ?? null},
                ${request.codeChallenge}, ${request.resource ?? null}, ${new Date(now)}, ${new Date(now + LIFETIME_MS)})`.pipe(Effect.orDie)
      return id
    })

    /** Takes the record for good; None when unknown, used, of another session, or expired. */
    const claim = Effect.fn("OAuthConsents.claim")(function*(id: string, sessionId: number) {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql<{
        clientId: string
        redirectUri: string
        state: string | null
        codeChallenge: string
        resource: string | null
        expiresAt: Date
      }>`
        DELETE FROM oauth_consents WHERE id_hash = ${sha256(id)} AND session_id = ${sessionId}
        RETURNING client_id AS "clientId", redirect_uri AS "redirectUri", state, code_challenge AS "codeChallenge",
                  resource, expires_at AS "expiresAt"`.pipe(Effect.orDie)
      const row = rows[0]
      if (row === undefined || row.expiresAt.getTime() <= now) return Option.none<Consent>()
      return Option.some<Consent>({
        sessionId,
        clientId: row.clientId,
        redirectUri: row.redirectUri,
        codeChallenge: row.codeChallenge,
        ...(row.state === null ? {} : { state: row.state }),
        ...(row.resource === null ? {} : { resource: row.resource })
      })
    })

    const pruneExpired = Effect.fn("OAuthConsents.pruneExpired")(function*() {
      const now = yield* Clock.currentTimeMillis
      yield* sql`DELETE FROM oauth_consents WHERE expires_at <= ${new Date(now)}`.pipe(Effect.orDie)
    })

    yield* periodicPrune("oauth consents", OAuthConsentLimits.pruneEvery, pruneExpired())

    return { create, claim } as const
  })
}) {}
