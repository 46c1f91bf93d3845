/**
 * BrowserSessions owns `browser_sessions`, the member's sign-in sessions of the browser
 * (the approval page now, the web client later): a 256-bit secret in an HttpOnly cookie,
 * only its SHA-256 stored, an absolute lifetime of 30 days measured on Effect's Clock.
 * Account recovery ends every session of the account through `endAllForAccount`. Every end
 * is notified to the other Belay processes inside its transaction and announced here once
 * committed, on CredentialRevocations (the WebSocket opened with the session closes with
 * 4001); an expired session ends by its `expiresAt`, which its holders watch themselves.
 *
 * It also derives the CSRF token of a form shown inside a session: HMAC-SHA-256 keyed by
 * the session secret over the form's purpose, so the token is bound to the session and to
 * that one form, needs no storage, and is useless without the cookie. State in
 * PostgreSQL; safe to call concurrently.
 */
import * as Crypto from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Option } from "effect"
import { periodicPrune } from "../upkeep/PeriodicPrune.js"
import { AccountLimits } from "./AccountLimits.js"
import { CredentialRevocations } from "./CredentialRevocations.js"
import { constantTimeEqual, sha256, TokenGenerator, TokenGeneratorLive } from "./Tokens.js"

export const BrowserSessionLimits = {
  lifetime: Duration.days(30),
  pruneEvery: Duration.hours(1)
} as const

const LIFETIME_MS = Duration.toMillis(BrowserSessionLimits.lifetime)

export interface BrowserSession {
  readonly sessionId: number
  readonly accountId: number
  /** The end of its absolute lifetime. */
  readonly expiresAt: Date
}

/** The CSRF token for `purpose` (e.g. "consent:<id>") in the session whose secret is `sessionSecret`. */
export const csrfToken = (sessionSecret: string, purpose: string): string =>
  Crypto.createHmac("sha256", sessionSecret).update(`belay-csrf\0${purpose}`).digest("base64url")

export const verifyCsrfToken = (sessionSecret: string, purpose: string, presented: string): boolean =>
  constantTimeEqual(csrfToken(sessionSecret, purpose), presented)

export class BrowserSessions extends Effect.Service<BrowserSessions>()("belay/BrowserSessions", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const generator = yield* TokenGenerator
    const revocations = yield* CredentialRevocations
    const limits = yield* AccountLimits

    const endedEvents = (accountId: number, sessionIds: ReadonlyArray<number>) =>
      sessionIds.map((tokenId) => ({ credential: "session" as const, tokenId, accountId }))

    /** Inside the transaction that ends them: tells the other Belay processes (CredentialRevocations). */
    const notifyEnded = (accountId: number, sessionIds: ReadonlyArray<number>) =>
      revocations.notifyOthers({ revoked: endedEvents(accountId, sessionIds) })

    /** Announces to this process sessions whose end is committed (and was notified with `notifyEnded`). */
    const announceEnded = (accountId: number, sessionIds: ReadonlyArray<number>) => revocations.publish(endedEvents(accountId, sessionIds))

    /** Starts a session; the raw secret goes into the cookie once. */
    const create = Effect.fn("BrowserSessions.create")(function*(accountId: number) {
      const now = yield* Clock.currentTimeMillis
      const secret = generator.mint("session")
      // The `sessions` limit ends the oldest live sessions rather than refuse a sign-in: the member has no page to end
      // them from (docs/decisions/account-limits.md "Sessions: a sign-in at the limit ends the oldest").
      const live = Effect.map(
        sql<{ n: number }>`
          SELECT count(*)::int AS n FROM browser_sessions WHERE account_id = ${accountId} AND expires_at > ${new Date(now)}`,
        (r) => r[0]?.n ?? 0
      )
      const ended = yield* limits.making(accountId, "sessions", live, (excess) =>
        Effect.gen(function*() {
          const oldest = excess === 0 ? [] : yield* sql<{ id: number }>`
            DELETE FROM browser_sessions WHERE id IN (
              SELECT id FROM browser_sessions WHERE account_id = ${accountId} ORDER BY (expires_at > ${new Date(now)}), created_at, id
              LIMIT ${excess})
            RETURNING id`
          if (oldest.length > 0) yield* notifyEnded(accountId, oldest.map((r) => r.id))
          yield* sql`
            INSERT INTO browser_sessions (account_id, token_hash, created_at, expires_at, last_seen_at)
            VALUES (${accountId}, ${sha256(secret)}, ${new Date(now)}, ${new Date(now + LIFETIME_MS)}, ${new Date(now)})`
          return oldest.map((r) => r.id)
        })).pipe(Effect.orDie)
      if (ended.length > 0) yield* announceEnded(accountId, ended)
      yield* Effect.logInfo("browser session started").pipe(Effect.annotateLogs({ accountId, endedOldest: ended.length }))
      return secret
    })

    /** How many live sessions the account has (`belay account show`). */
    const liveCount = Effect.fn("BrowserSessions.liveCount")(function*(accountId: number) {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM browser_sessions WHERE account_id = ${accountId} AND expires_at > ${new Date(now)}`.pipe(
        Effect.orDie
      )
      return rows[0]?.n ?? 0
    })

    /** The live session behind a cookie value, if any. */
    const lookup = Effect.fn("BrowserSessions.lookup")(function*(secret: string) {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql<BrowserSession>`
        SELECT id AS "sessionId", account_id AS "accountId", expires_at AS "expiresAt" FROM browser_sessions
        WHERE token_hash = ${sha256(secret)} AND expires_at > ${new Date(now)}`.pipe(Effect.orDie)
      return Option.fromNullable(rows[0])
    })

    /** Of these session ids, those still live (the browser WebSocket checks its sockets' after a lost LISTEN). */
    const liveAmong = Effect.fn("BrowserSessions.liveAmong")(function*(sessionIds: ReadonlyArray<number>) {
      if (sessionIds.length === 0) return new Set<number>()
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql<{ id: number }>`
        SELECT id FROM browser_sessions WHERE ${sql.in("id", sessionIds)} AND expires_at > ${new Date(now)}`.pipe(Effect.orDie)
      return new Set(rows.map((r) => r.id))
    })

    /** Sign-out: the cookie stops working at once. */
    const end = Effect.fn("BrowserSessions.end")(function*(secret: string) {
      const rows = yield* revocations.commit(
        sql<{ id: number; accountId: number }>`
          DELETE FROM browser_sessions WHERE token_hash = ${sha256(secret)}
          RETURNING id, account_id AS "accountId"`,
        (rows) => ({ revoked: rows.flatMap((row) => endedEvents(row.accountId, [row.id])) })
      ).pipe(Effect.orDie)
      return rows.length > 0
    })

    /**
     * Ends every session of the account inside the caller's transaction, and notifies the other processes in it.
     * Returns the ids ended, for the caller to announce here (`announceEnded`) once its transaction committed.
     */
    const endAllForAccount = (accountId: number) =>
      sql<{ id: number }>`DELETE FROM browser_sessions WHERE account_id = ${accountId} RETURNING id`.pipe(
        Effect.map((rows) => rows.map((r) => r.id)),
        Effect.tap((ids) => notifyEnded(accountId, ids))
      )

    const pruneExpired = Effect.fn("BrowserSessions.pruneExpired")(function*() {
      const now = yield* Clock.currentTimeMillis
      yield* sql`DELETE FROM browser_sessions WHERE expires_at <= ${new Date(now)}`.pipe(Effect.orDie)
    })

    yield* periodicPrune("browser sessions", BrowserSessionLimits.pruneEvery, pruneExpired())

    return { create, liveCount, lookup, liveAmong, end, endAllForAccount, announceEnded } as const
  }),
  dependencies: [TokenGeneratorLive, CredentialRevocations.Default, AccountLimits.Default]
}) {}
