/**
 * Accounts owns `accounts`, the members: name, argon2id password hash, status (active |
 * paused), password checks for sign-in, and account recovery, which revokes every OAuth
 * app and ends every browser session (the interface, "States and transitions"; a plain
 * password change does neither). Recovery is one transaction across the three tables,
 * each written by its owner (OAuthTokens, BrowserSessions) inside it.
 * All state is in PostgreSQL; methods are safe to call concurrently.
 */
import { hash, verify } from "@node-rs/argon2"
import { SqlClient } from "@effect/sql"
import { Data, Effect, Option } from "effect"
import { BrowserSessions } from "./BrowserSessions.js"
import { CredentialRevocations } from "./CredentialRevocations.js"
import { OAuthTokens } from "./OAuthTokens.js"

export type AccountStatus = "active" | "paused"

export interface Account {
  readonly id: number
  readonly name: string
  readonly status: AccountStatus
  readonly createdAt: Date
}

export class AccountNotFound extends Data.TaggedError("AccountNotFound")<{ readonly name: string }> {
  override get message() {
    return `no account named ${JSON.stringify(this.name)}`
  }
}
export class AccountExists extends Data.TaggedError("AccountExists")<{ readonly name: string }> {
  override get message() {
    return `an account named ${JSON.stringify(this.name)} already exists`
  }
}
export class InvalidAccountInput extends Data.TaggedError("InvalidAccountInput")<{ readonly message: string }> {}

export const ACCOUNT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/
const MIN_PASSWORD = 8
const MAX_PASSWORD = 1024

// OWASP's argon2id baseline (m=19 MiB, t=2, p=1).
// algorithm 2 = Argon2id (the package exports it as an ambient const enum).
const ARGON2 = { algorithm: 2, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const
// Verified against when the account does not exist, so a miss costs the same as a hit.
const DUMMY_HASH = "$argon2id$v=19$m=19456,t=2,p=1$b1NIdofJhgG3nshWvbYgBA$sQgnYlWeoptTXbE6PSB5f7tR8Xi/WyrRvYzfgBYq4VA"

interface AccountRow {
  readonly id: number
  readonly name: string
  readonly status: AccountStatus
  readonly createdAt: Date
}

const validatePassword = (password: string) =>
  password.length < MIN_PASSWORD || password.length > MAX_PASSWORD
    ? Effect.fail(new InvalidAccountInput({ message: `password must be ${MIN_PASSWORD} to ${MAX_PASSWORD} characters` }))
    : Effect.void

export class Accounts extends Effect.Service<Accounts>()("belay/Accounts", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // Pausing narrows every credential to read, which must reach /mcp at once, in every
    // process: the change is announced, and cached authentications of the account dropped.
    const revocations = yield* CredentialRevocations
    const tokens = yield* OAuthTokens
    const sessions = yield* BrowserSessions

    const hashPassword = (password: string) => Effect.promise(() => hash(password, ARGON2))
    /**
     * An account being deleted is no account to anyone from the transaction that marked it (docs/decisions/leaving.md
     * "Deleting an account: a marker row, then a resumable job"): not found by name or id, no sign-in, no change; its
     * name stays taken (`create` still conflicts) until the deletion job removes the row.
     */
    const live = sql`NOT EXISTS (SELECT 1 FROM account_deletions d WHERE d.account_id = accounts.id)`

    const findByName = Effect.fn("Accounts.findByName")(function*(name: string) {
      const rows = yield* sql<AccountRow>`
        SELECT id, name, status, created_at AS "createdAt" FROM accounts WHERE name = ${name} AND ${live}`.pipe(Effect.orDie)
      return Option.fromNullable(rows[0])
    })

    const require = (name: string) =>
      findByName(name).pipe(
        Effect.flatMap(Option.match({ onNone: () => Effect.fail(new AccountNotFound({ name })), onSome: Effect.succeed }))
      )

    const findById = Effect.fn("Accounts.findById")(function*(id: number) {
      const rows = yield* sql<AccountRow>`
        SELECT id, name, status, created_at AS "createdAt" FROM accounts WHERE id = ${id} AND ${live}`.pipe(Effect.orDie)
      return Option.fromNullable(rows[0])
    })

    const create = Effect.fn("Accounts.create")(function*(name: string, password: string) {
      if (!ACCOUNT_NAME.test(name)) {
        return yield* new InvalidAccountInput({
          message: "account name must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        })
      }
      yield* validatePassword(password)
      const passwordHash = yield* hashPassword(password)
      const rows = yield* sql<AccountRow>`
        INSERT INTO accounts (name, password_hash) VALUES (${name}, ${passwordHash})
        ON CONFLICT (name) DO NOTHING
        RETURNING id, name, status, created_at AS "createdAt"`.pipe(Effect.orDie)
      const row = rows[0]
      if (!row) return yield* new AccountExists({ name })
      yield* Effect.logInfo("account created").pipe(Effect.annotateLogs("account", name))
      return row
    })

    const list = Effect.fn("Accounts.list")(function*() {
      return yield* sql<AccountRow>`
        SELECT id, name, status, created_at AS "createdAt" FROM accounts WHERE ${live} ORDER BY name`.pipe(Effect.orDie)
    })

    const setStatus = Effect.fn("Accounts.setStatus")(function*(name: string, status: AccountStatus) {
      const rows = yield* revocations.commit(
        sql<AccountRow>`
          UPDATE accounts SET status = ${status} WHERE name = ${name} AND ${live}
          RETURNING id, name, status, created_at AS "createdAt"`,
        (rows) => ({ accountsChanged: rows.map((r) => r.id) })
      ).pipe(Effect.orDie)
      const row = rows[0]
      if (!row) return yield* new AccountNotFound({ name })
      yield* Effect.logInfo("account status changed").pipe(Effect.annotateLogs({ account: name, status }))
      return row
    })

    /** Some(account) when the password matches; constant work whether or not the name exists. */
    const verifyPassword = Effect.fn("Accounts.verifyPassword")(function*(name: string, password: string) {
      const rows = yield* sql<AccountRow & { readonly passwordHash: string }>`
        SELECT id, name, status, created_at AS "createdAt", password_hash AS "passwordHash"
        FROM accounts WHERE name = ${name} AND ${live}`.pipe(Effect.orDie)
      const row = rows[0]
      const ok = yield* Effect.promise(() => verify(row?.passwordHash ?? DUMMY_HASH, password).catch(() => false))
      if (!row || !ok) return Option.none<Account>()
      return Option.some<Account>({ id: row.id, name: row.name, status: row.status, createdAt: row.createdAt })
    })

    /**
     * When the account was last recovered (None: no such account). What signed in with the password before that
     * must end: recovery is the one password change that signs everything out (docs/contract.md).
     */
    const recoveredAt = Effect.fn("Accounts.recoveredAt")(function*(id: number) {
      const rows = yield* sql<{ recoveredAt: Date | null }>`
        SELECT recovered_at AS "recoveredAt" FROM accounts WHERE id = ${id} AND ${live}`.pipe(Effect.orDie)
      return Option.map(Option.fromNullable(rows[0]), (r) => r.recoveredAt?.getTime() ?? null)
    })

    /** A normal password change: sessions and apps stay signed in. */
    const changePassword = Effect.fn("Accounts.changePassword")(function*(name: string, password: string) {
      yield* validatePassword(password)
      const passwordHash = yield* hashPassword(password)
      const rows = yield* sql<{ id: number }>`
        UPDATE accounts SET password_hash = ${passwordHash}, password_changed_at = now()
        WHERE name = ${name} AND ${live} RETURNING id`.pipe(Effect.orDie)
      if (!rows[0]) return yield* new AccountNotFound({ name })
    })

    /**
     * Account recovery: new password, every browser session ended and every OAuth app
     * token revoked (interface: "account recovery → revoked (every app)").
     */
    const recover = Effect.fn("Accounts.recover")(function*(name: string, password: string) {
      yield* validatePassword(password)
      const passwordHash = yield* hashPassword(password)
      // The other processes are notified inside the transaction, this one once it commits (OAuthTokens.inTransaction).
      const result = yield* tokens.inTransaction((revoke) =>
        Effect.gen(function*() {
          const rows = yield* sql<{ id: number }>`
            UPDATE accounts SET password_hash = ${passwordHash}, password_changed_at = now(), recovered_at = now()
            WHERE name = ${name} AND ${live} RETURNING id`
          const account = rows[0]
          if (!account) return Option.none<{ accountId: number; revokedApps: number; endedSessions: ReadonlyArray<number> }>()
          const revokedApps = yield* revoke.allOfAccount(account.id)
          const endedSessions = yield* sessions.endAllForAccount(account.id)
          // The account changed too: what signed in with the old password (an IRC client) must end.
          yield* revocations.notifyOthers({ accountsChanged: [account.id] })
          return Option.some({ accountId: account.id, revokedApps, endedSessions })
        })
      ).pipe(Effect.orDie)
      if (Option.isNone(result)) return yield* new AccountNotFound({ name })
      yield* sessions.announceEnded(result.value.accountId, result.value.endedSessions)
      yield* revocations.announce({ accountsChanged: [result.value.accountId] })
      yield* Effect.logInfo("account recovered; every app token revoked").pipe(
        Effect.annotateLogs({ account: name, revokedApps: result.value.revokedApps })
      )
      return { accountId: result.value.accountId, revokedApps: result.value.revokedApps }
    })

    return { findByName, findById, require, create, list, setStatus, verifyPassword, recoveredAt, changePassword, recover } as const
  }),
  dependencies: [CredentialRevocations.Default, OAuthTokens.Default, BrowserSessions.Default]
}) {}
