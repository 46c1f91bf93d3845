/**
 * AccountDeletion owns `account_deletions` and the account's way out (docs/decisions/leaving.md "Deleting an account: a
 * marker row, then a resumable job"):
 *
 * - `begin` marks the account, in one transaction that also revokes every API, OAuth and password-sign-in token, ends
 *   every browser session, removes every passkey and pending code and disables every network; the other processes hear
 *   it over NOTIFY when it commits (CredentialRevocations), and this one right after. From that commit Accounts answers
 *   for the account nowhere, so what authenticates by it fails, open WebSockets close with 4001 and IRC clients are
 *   closed (CredentialCheck: "This account no longer exists"); every network is announced removed, so its actor QUITs
 *   on whichever node runs it (Networks.changes, as `network remove`).
 * - The job then deletes what the account owns, kind by kind (AccountData.ts), in batches, then its networks, then the
 *   account row, which frees the name and takes the marker with it. It runs at once after `begin`, at start-up, and
 *   every JOB_INTERVAL on every process while it saw a marker on its last look, so a crash anywhere is resumed by
 *   whichever process looks next. Having seen none, it waits for a mark to be announced (`begin` here, another
 *   process's notice of it, a LISTEN connection back after a loss) and looks at least every IDLE_INTERVAL: a look opens
 *   a pool connection, a backend process of several MB that an idle service would otherwise always hold
 *   (docs/architecture.md "Memory").
 *
 * Concurrency rule: one job fiber per process takes the marked accounts one at a time. Between processes a lease
 * (`claimed_by`, `claimed_until`, on the database's clock, which every node shares) lets one work on an account; it is
 * renewed after every batch and expires LEASE after a crash. Two processes on one account would only repeat deletes
 * of rows already gone: every step is idempotent, so the lease saves work, it does not guard correctness.
 */
import * as Crypto from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Option, Queue } from "effect"
import { AccountNotFound } from "../identity/Accounts.js"
import { ApiTokens } from "../identity/ApiTokens.js"
import { BrowserSessions } from "../identity/BrowserSessions.js"
import { CredentialRevocations } from "../identity/CredentialRevocations.js"
import { OAuthTokens } from "../identity/OAuthTokens.js"
import { Passkeys } from "../identity/Passkeys.js"
import { Networks } from "../networks/Networks.js"
import { erasureSteps } from "./AccountData.js"

/** How long a process that stopped renewing keeps an account it was deleting: a SIGKILL is resumed after this. */
export const DELETION_LEASE = Duration.seconds(10)
/** How often every process looks for a deletion nobody holds (a crashed one's, once its lease ran out). */
export const DELETION_JOB_INTERVAL = Duration.seconds(5)
/**
 * How often a process that saw no marker still looks, announced or not: a marker whose notice it missed without a
 * LISTEN loss to tell it (one inserted by hand, or by a Belay that announced nothing).
 */
export const DELETION_IDLE_INTERVAL = Duration.minutes(10)
/** Networks a statement deletes (each announced removed); what hung from them is gone by then. */
const NETWORK_BATCH = 100

export interface DeletionStarted {
  readonly accountId: number
  readonly networks: number
}

export class AccountDeletion extends Effect.Service<AccountDeletion>()("belay/AccountDeletion", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const oauthTokens = yield* OAuthTokens
    const apiTokens = yield* ApiTokens
    const sessions = yield* BrowserSessions
    const passkeys = yield* Passkeys
    const revocations = yield* CredentialRevocations
    const networks = yield* Networks
    const steps = erasureSteps(sql)
    /** This process, as the holder of a lease. */
    const holder = Crypto.randomUUID()
    const wake = yield* Queue.sliding<void>(1)
    const leaseSeconds = Duration.toSeconds(DELETION_LEASE)
    /** The job's passes, one at a time in this process (the periodic one and any asked for). */
    const onePass = yield* Effect.makeSemaphore(1)

    /** Marks the account and revokes everything that speaks for it, at once; the job deletes the rest. */
    const begin = Effect.fn("AccountDeletion.begin")(function*(name: string) {
      const marked = yield* oauthTokens.inTransaction((revoke) =>
        Effect.gen(function*() {
          const rows = yield* sql<{ accountId: number }>`
            INSERT INTO account_deletions (account_id)
            SELECT id FROM accounts WHERE name = ${name}
              AND NOT EXISTS (SELECT 1 FROM account_deletions d WHERE d.account_id = accounts.id)
            RETURNING account_id AS "accountId"`
          const accountId = rows[0]?.accountId
          if (accountId === undefined) return Option.none()
          yield* revoke.allOfAccount(accountId)
          const endedSessions = yield* sessions.endAllForAccount(accountId)
          const revokedApiTokens = yield* apiTokens.revokeAllOfAccount(accountId)
          yield* passkeys.removeAllOfAccount(accountId)
          // A code not yet exchanged would otherwise still become a token.
          yield* sql`DELETE FROM oauth_codes WHERE account_id = ${accountId}`
          const disabled = yield* networks.disableAllOfAccount(accountId)
          yield* revocations.notifyOthers({ revoked: revokedApiTokens, accountsChanged: [accountId] })
          return Option.some({ accountId, endedSessions, revokedApiTokens, networks: disabled.length })
        })
      ).pipe(Effect.orDie)
      if (Option.isNone(marked)) return yield* new AccountNotFound({ name })
      const { accountId, endedSessions, revokedApiTokens } = marked.value
      yield* sessions.announceEnded(accountId, endedSessions)
      yield* revocations.announce({ revoked: revokedApiTokens, accountsChanged: [accountId] })
      yield* networks.stopAllOfAccount(accountId)
      yield* Effect.logInfo("account deletion started; the account is unusable from now on").pipe(
        Effect.annotateLogs({ account: name, accountId })
      )
      yield* Queue.offer(wake, undefined)
      return { accountId, networks: marked.value.networks } satisfies DeletionStarted
    })

    /** Takes or renews the lease on the account's deletion; false when another process holds it (or it is done). */
    const claim = (accountId: number) =>
      Effect.map(
        sql<{ accountId: number }>`
          UPDATE account_deletions
          SET claimed_by = ${holder}, claimed_until = now() + make_interval(secs => ${leaseSeconds})
          WHERE account_id = ${accountId}
            AND (claimed_until IS NULL OR claimed_until < now() OR claimed_by = ${holder})
          RETURNING account_id AS "accountId"`,
        (rows) => rows.length > 0
      )

    /** Deletes one marked account to the end, unless another process holds it or takes it over meanwhile. */
    const finish = (accountId: number) =>
      Effect.gen(function*() {
        if (!(yield* claim(accountId))) return
        // Said again: the process that marked it may have died before it could.
        yield* networks.stopAllOfAccount(accountId)
        const counts: Record<string, number> = {}
        const erase = (kind: string, batch: number, once: Effect.Effect<number, unknown>) =>
          Effect.gen(function*() {
            for (;;) {
              const n = yield* once
              if (n > 0) counts[kind] = (counts[kind] ?? 0) + n
              if (!(yield* claim(accountId))) return false
              if (n < batch) return true
            }
          })
        for (const step of steps) {
          if (!(yield* erase(step.kind, step.batch, step.erase(accountId)))) return
        }
        if (!(yield* erase("networks", NETWORK_BATCH, networks.removeSomeOfAccount(accountId, NETWORK_BATCH)))) return
        // Last: the name is free, and the marker goes with the row (ON DELETE CASCADE).
        const gone = yield* sql<{ name: string }>`DELETE FROM accounts WHERE id = ${accountId} RETURNING name`
        yield* Effect.logInfo("account deleted").pipe(
          Effect.annotateLogs({ accountId, account: gone[0]?.name ?? null, deleted: counts })
        )
      })

    /**
     * One look at every deletion nobody holds, each finished in turn; what fails is retried on the next look. True
     * when it saw a marker (held by another process or not) or failed: then the next look comes JOB_INTERVAL later.
     */
    const look = onePass.withPermits(1)(Effect.gen(function*() {
      const markers = yield* sql<{ accountId: number; free: boolean }>`
        SELECT account_id AS "accountId",
               (claimed_until IS NULL OR claimed_until < now() OR claimed_by = ${holder}) AS free
        FROM account_deletions
        ORDER BY requested_at, account_id`
      for (const { accountId, free } of markers) if (free) yield* finish(accountId)
      return markers.length > 0
    })).pipe(Effect.catchAllCause((cause) =>
      Effect.as(Effect.logWarning("account deletion interrupted; resumed on the next look", cause), true)
    ))
    const resume = Effect.asVoid(look)

    // Another process's `begin` arrives as its account's change; after a LISTEN loss, notices may have been missed.
    // Subscribed before the first look, so a mark made while it runs still wakes the next one.
    const wakeOn = <A>(changes: Queue.Dequeue<A>) =>
      Queue.take(changes).pipe(Effect.zipRight(Queue.offer(wake, undefined)), Effect.forever, Effect.forkScoped)
    yield* wakeOn(yield* revocations.accountChanges)
    yield* wakeOn(yield* revocations.resyncs)

    // Wall-clock time, not Effect's Clock: the lease it waits out is PostgreSQL's `now()`, so a test that moves the
    // TestClock a day (an OAuth token's lifetime) must not make this job look thousands of times in between.
    const wallClockPause = (interval: Duration.Duration) =>
      Effect.async<void>((resume) => {
        const timer = setTimeout(() => resume(Effect.void), Duration.toMillis(interval))
        timer.unref()
        return Effect.sync(() => clearTimeout(timer))
      })
    const nextLook = (sawMarkers: boolean) =>
      Effect.race(Queue.take(wake), wallClockPause(sawMarkers ? DELETION_JOB_INTERVAL : DELETION_IDLE_INTERVAL))
    yield* look.pipe(Effect.flatMap(nextLook), Effect.forever, Effect.forkScoped)

    /** Accounts being deleted (ids), for `belay account list` and the tests. */
    const pendingIds = Effect.map(
      sql<{ accountId: number }>`SELECT account_id AS "accountId" FROM account_deletions ORDER BY account_id`.pipe(
        Effect.orDie
      ),
      (rows) => rows.map((r) => r.accountId)
    )

    return { begin, resume, pendingIds } as const
  }),
  dependencies: [
    OAuthTokens.Default,
    ApiTokens.Default,
    BrowserSessions.Default,
    Passkeys.Default,
    CredentialRevocations.Default,
    Networks.Default
  ]
}) {}
