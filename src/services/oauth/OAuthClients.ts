/**
 * OAuthClients owns `oauth_clients`, the apps: registered ones (RFC 7591), under the cap of
 * 1,000 pending registrations, and those known by a Client ID Metadata Document, whose row is
 * keyed by the document's URL and holds its last accepted metadata (docs/decisions/oauth.md
 * "Client ID Metadata Documents: a client row keyed by the URL"), under a cap of their own;
 * lookup, approval, and the job that deletes rows left unapproved for an hour (the interface,
 * "States and transitions", "Limits").
 *
 * Time comes only from Effect's Clock: `created_at` is the Clock's time, and a pending
 * registration older than an hour is treated as gone by `lookup` at once, whether or not
 * the prune job (PeriodicPrune) has run yet; tests drive that job with TestClock.
 *
 * Concurrency: state is in PostgreSQL. `register` counts and inserts inside one
 * transaction holding a transaction-scoped advisory lock, so parallel registrations can
 * never push the pending count past the cap.
 */
import * as Crypto from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Option } from "effect"
import type { RegisterRequest } from "../../schema/OAuth.js"
import { TemporarilyUnavailable } from "../../schema/OAuthErrors.js"
import { periodicPrune } from "../upkeep/PeriodicPrune.js"

export const OAuthClientLimits = {
  maxPending: 1000,
  /** Document clients shown to a member but not approved (yet): each costs a member's approval page. */
  maxPendingDocuments: 1000,
  pendingLifetime: Duration.hours(1),
  pruneEvery: Duration.minutes(5)
} as const

const PENDING_MS = Duration.toMillis(OAuthClientLimits.pendingLifetime)
// pg_advisory_xact_lock key for "registering a client" (any constant unique in this app)
const REGISTER_LOCK = 0x0be1a7_0001

export type ClientKind = "registered" | "document"

export interface OAuthClient {
  readonly clientId: string
  readonly kind: ClientKind
  readonly clientName: string
  readonly clientUri: string | null
  readonly logoUri: string | null
  readonly applicationType: "native" | "web" | null
  readonly redirectUris: readonly [string, ...Array<string>]
  readonly createdAt: Date
  readonly approvedAt: Date | null
}

interface ClientRow extends Omit<OAuthClient, "redirectUris"> {
  readonly redirectUris: ReadonlyArray<string>
}

/** A Client ID Metadata Document as accepted (ClientDocument.validateClientDocument): its URL is the client_id. */
export interface DocumentClient {
  readonly clientId: string
  readonly clientName: string
  readonly clientUri?: string | undefined
  readonly logoUri?: string | undefined
  readonly redirectUris: readonly [string, ...Array<string>]
}

const toClient = (row: ClientRow): OAuthClient => {
  const [first, ...rest] = row.redirectUris
  // redirect_uris is validated non-empty before it is stored
  return { ...row, redirectUris: [first ?? "", ...rest] }
}

/**
 * A client_id the caller sent can only name a row if PostgreSQL text can hold it: a NUL would make the query fail
 * (a 500) instead of finding nothing, so such an id is unknown without asking the database.
 */
const storable = (clientId: string): boolean => !clientId.includes("\u0000")

/** A client_id is public, not a secret: 128 random bits, opaque, never chosen by the client. */
const newClientId = () => Crypto.randomBytes(16).toString("base64url")

export class OAuthClients extends Effect.Service<OAuthClients>()("belay/OAuthClients", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const columns = sql`client_id AS "clientId", kind, client_name AS "clientName", client_uri AS "clientUri",
      logo_uri AS "logoUri", application_type AS "applicationType",
      redirect_uris AS "redirectUris", created_at AS "createdAt", approved_at AS "approvedAt"`

    /**
     * Stores a validated registration as pending. Fails with TemporarilyUnavailable while
     * 1,000 unexpired registrations await approval; its `retryAfterSeconds` is when the
     * oldest of them expires.
     */
    const register = Effect.fn("OAuthClients.register")(function*(request: RegisterRequest, registeredIp: string) {
      const now = yield* Clock.currentTimeMillis
      const cutoff = new Date(now - PENDING_MS)
      const result = yield* sql.withTransaction(
        Effect.gen(function*() {
          yield* sql`SELECT pg_advisory_xact_lock(${REGISTER_LOCK})`
          const pending = yield* sql<{ count: number; oldest: Date | null }>`
            SELECT count(*)::int AS count, min(created_at) AS oldest FROM oauth_clients
            WHERE approved_at IS NULL AND kind = 'registered' AND created_at > ${cutoff}`
          const { count = 0, oldest = null } = pending[0] ?? {}
          if (count >= OAuthClientLimits.maxPending) {
            return { _tag: "Full" as const, oldest }
          }
          const rows = yield* sql<ClientRow>`
            INSERT INTO oauth_clients (client_id, client_name, client_uri, application_type, redirect_uris, registered_ip,
                                       created_at)
            VALUES (${newClientId()}, ${request.client_name}, ${request.client_uri ?? null},
                    ${request.application_type ?? null}, ${[...request.redirect_uris]}, ${registeredIp}, ${new Date(now)})
            RETURNING ${columns}`
          return { _tag: "Registered" as const, client: toClient(rows[0]!) }
        })
      ).pipe(Effect.orDie)
      if (result._tag === "Full") {
        const expiresAt = (result.oldest?.getTime() ?? now) + PENDING_MS
        return yield* new TemporarilyUnavailable({
          description: "too many registrations are waiting for approval; try again later",
          retryAfterSeconds: Math.max(1, Math.ceil((expiresAt - now) / 1000))
        })
      }
      yield* Effect.logInfo("oauth client registered").pipe(Effect.annotateLogs({ clientId: result.client.clientId }))
      return result.client
    })

    /**
     * Stores what a metadata document says, for the approval page about to be shown: a new row (pending, like a
     * registration), or the document's newest metadata in the row of its URL; an unapproved row past its hour starts
     * a new hour. Fails with TemporarilyUnavailable while 1,000 unapproved document rows are younger than an hour.
     * A registered client's id never holds `:`, so a URL never names one; the kind guard keeps it so.
     */
    const saveDocument = Effect.fn("OAuthClients.saveDocument")(function*(document: DocumentClient) {
      const now = yield* Clock.currentTimeMillis
      const cutoff = new Date(now - PENDING_MS)
      const result = yield* sql.withTransaction(
        Effect.gen(function*() {
          yield* sql`SELECT pg_advisory_xact_lock(${REGISTER_LOCK})`
          const existing = yield* sql<{ live: boolean }>`
            SELECT (approved_at IS NOT NULL OR created_at > ${cutoff}) AS live FROM oauth_clients
            WHERE client_id = ${document.clientId} AND kind = 'document'`
          if (existing[0]?.live !== true) {
            const pending = yield* sql<{ count: number }>`
              SELECT count(*)::int AS count FROM oauth_clients
              WHERE approved_at IS NULL AND kind = 'document' AND created_at > ${cutoff}`
            if ((pending[0]?.count ?? 0) >= OAuthClientLimits.maxPendingDocuments) return undefined
          }
          const rows = yield* sql<ClientRow>`
            INSERT INTO oauth_clients (client_id, kind, client_name, client_uri, logo_uri, redirect_uris, created_at,
                                       document_fetched_at)
            VALUES (${document.clientId}, 'document', ${document.clientName}, ${document.clientUri ?? null},
                    ${document.logoUri ?? null}, ${[...document.redirectUris]}, ${new Date(now)}, ${new Date(now)})
            ON CONFLICT (client_id) DO UPDATE SET
              client_name = EXCLUDED.client_name, client_uri = EXCLUDED.client_uri, logo_uri = EXCLUDED.logo_uri,
              redirect_uris = EXCLUDED.redirect_uris, document_fetched_at = EXCLUDED.document_fetched_at,
              created_at = CASE WHEN oauth_clients.approved_at IS NULL AND oauth_clients.created_at <= ${cutoff}
                                THEN EXCLUDED.created_at ELSE oauth_clients.created_at END
            WHERE oauth_clients.kind = 'document'
            RETURNING ${columns}`
          return rows[0]
        })
      ).pipe(Effect.orDie)
      if (result === undefined) {
        return yield* new TemporarilyUnavailable({
          description: "too many apps are waiting for approval; try again later"
        })
      }
      return toClient(result)
    })

    /** The client, unless unknown or a pending registration past its hour (then it is gone: invalid_client). */
    const lookup = Effect.fn("OAuthClients.lookup")(function*(clientId: string) {
      if (!storable(clientId)) return Option.none<OAuthClient>()
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql<ClientRow>`
        SELECT ${columns} FROM oauth_clients
        WHERE client_id = ${clientId} AND (approved_at IS NOT NULL OR created_at > ${new Date(now - PENDING_MS)})`.pipe(
        Effect.orDie
      )
      return Option.map(Option.fromNullable(rows[0]), toClient)
    })

    /** Marks the client approved (kept for good); false when it is gone or expired meanwhile. */
    const approve = Effect.fn("OAuthClients.approve")(function*(clientId: string) {
      if (!storable(clientId)) return false
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql<{ clientId: string }>`
        UPDATE oauth_clients SET approved_at = coalesce(approved_at, ${new Date(now)})
        WHERE client_id = ${clientId} AND (approved_at IS NOT NULL OR created_at > ${new Date(now - PENDING_MS)})
        RETURNING client_id AS "clientId"`.pipe(Effect.orDie)
      return rows.length > 0
    })

    /** Deletes registrations left unapproved for an hour; their consents cascade. Returns how many. */
    const pruneExpired = Effect.fn("OAuthClients.pruneExpired")(function*() {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql<{ clientId: string }>`
        DELETE FROM oauth_clients WHERE approved_at IS NULL AND created_at <= ${new Date(now - PENDING_MS)}
        RETURNING client_id AS "clientId"`.pipe(Effect.orDie)
      if (rows.length > 0) {
        yield* Effect.logInfo("expired oauth registrations deleted").pipe(Effect.annotateLogs({ count: rows.length }))
      }
      return rows.length
    })

    yield* periodicPrune("oauth registrations", OAuthClientLimits.pruneEvery, pruneExpired())

    return { register, saveDocument, lookup, approve } as const
  })
}) {}
