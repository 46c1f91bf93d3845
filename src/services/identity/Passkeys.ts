/**
 * Passkeys owns the `passkeys` table: the WebAuthn credentials members register in Settings
 * > Passkeys and sign in with — credential id, COSE public key, signature counter,
 * transports, the member's user handle, a name, created and last used. Verifying
 * ceremonies is PasskeyCeremonies' job; this module only stores and reads.
 * State in PostgreSQL; safe to call concurrently (the counter moves by one conditional
 * UPDATE, so two assertions racing with the same counter cannot both be accepted).
 */
import * as Crypto from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Clock, Data, Effect, Option } from "effect"
import { QuotaExceeded } from "../../schema/ToolErrors.js"
import { AccountLimits } from "./AccountLimits.js"

export interface PasskeyListing {
  readonly id: number
  readonly name: string
  readonly createdAt: Date
  readonly lastUsedAt: Date | null
}

export interface StoredPasskey {
  readonly id: number
  readonly accountId: number
  /** Raw credential id (the base64url `id` of the browser's JSON, decoded). */
  readonly credentialId: Buffer
  readonly publicKey: Buffer
  readonly signCount: number
  readonly transports: ReadonlyArray<string>
  readonly userHandle: Buffer
}

export interface NewPasskey {
  readonly accountId: number
  readonly name: string
  readonly credentialId: Buffer
  readonly publicKey: Buffer
  readonly signCount: number
  readonly transports: ReadonlyArray<string>
  readonly userHandle: Buffer
}

export class PasskeyExists extends Data.TaggedError("PasskeyExists")<{}> {
  override get message() {
    return "this passkey is already registered"
  }
}

/** 1–64 characters, none a control character (the name is shown in Settings). */
export const isValidPasskeyName = (name: string): boolean =>
  name.trim() !== "" && [...name].length <= 64 && !/\p{Cc}/u.test(name)

export class Passkeys extends Effect.Service<Passkeys>()("belay/Passkeys", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const limits = yield* AccountLimits

    /**
     * The account's WebAuthn user handle: the one its passkeys already carry, else a new
     * random one (64 bits of randomness is plenty; W3C WebAuthn §14.6.1: no personal data).
     */
    const userHandleFor = Effect.fn("Passkeys.userHandleFor")(function*(accountId: number) {
      const rows = yield* sql<{ userHandle: Buffer }>`
        SELECT user_handle AS "userHandle" FROM passkeys WHERE account_id = ${accountId} ORDER BY id LIMIT 1`.pipe(
        Effect.orDie
      )
      return rows[0]?.userHandle ?? Crypto.randomBytes(16)
    })

    /** Credential ids the account already has, for `excludeCredentials` (§5.4). */
    const credentialIdsOf = Effect.fn("Passkeys.credentialIdsOf")(function*(accountId: number) {
      const rows = yield* sql<{ credentialId: Buffer; transports: ReadonlyArray<string> }>`
        SELECT credential_id AS "credentialId", transports FROM passkeys WHERE account_id = ${accountId}`.pipe(Effect.orDie)
      return rows
    })

    /**
     * Whether the account may start adding a passkey: QuotaExceeded, naming the `passkeys` limit, when it already holds
     * as many as its limit allows. Asked before the ceremony, so the member is not sent through their authenticator
     * for a passkey that cannot be stored; `add` checks again under the account's lock (two ceremonies may race).
     */
    const roomFor = Effect.fn("Passkeys.roomFor")(function*(accountId: number) {
      const max = yield* limits.limitOf(accountId, "passkeys")
      if (max === null) return
      const [row] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM passkeys WHERE account_id = ${accountId}`.pipe(
        Effect.orDie
      )
      if ((row?.n ?? 0) >= max) return yield* new QuotaExceeded({ limit: "passkeys", max })
    })

    const add = Effect.fn("Passkeys.add")(function*(passkey: NewPasskey) {
      const now = yield* Clock.currentTimeMillis
      // The `passkeys` limit (docs/decisions/account-limits.md), counted under the account's lock.
      const held = Effect.map(
        sql<{ n: number }>`SELECT count(*)::int AS n FROM passkeys WHERE account_id = ${passkey.accountId}`,
        (r) => r[0]?.n ?? 0
      )
      const rows = yield* limits.within(passkey.accountId, "passkeys", held, sql<{ id: number }>`
        INSERT INTO passkeys (account_id, credential_id, public_key, sign_count, transports, name, user_handle, created_at)
        VALUES (${passkey.accountId}, ${passkey.credentialId}, ${passkey.publicKey}, ${passkey.signCount},
                ${[...passkey.transports]}, ${passkey.name}, ${passkey.userHandle}, ${new Date(now)})
        ON CONFLICT (credential_id) DO NOTHING RETURNING id`).pipe(Effect.catchTag("SqlError", Effect.die))
      const row = rows[0]
      if (row === undefined) return yield* new PasskeyExists()
      yield* Effect.logInfo("passkey added").pipe(Effect.annotateLogs({ accountId: passkey.accountId, passkeyId: row.id }))
      return row.id
    })

    const list = Effect.fn("Passkeys.list")(function*(accountId: number) {
      return yield* sql<PasskeyListing>`
        SELECT id, name, created_at AS "createdAt", last_used_at AS "lastUsedAt"
        FROM passkeys WHERE account_id = ${accountId} ORDER BY created_at, id`.pipe(Effect.orDie)
    })

    /** Removes one of the account's passkeys; false when it has no such passkey. */
    const remove = Effect.fn("Passkeys.remove")(function*(accountId: number, id: number) {
      const rows = yield* sql<{ id: number }>`
        DELETE FROM passkeys WHERE id = ${id} AND account_id = ${accountId} RETURNING id`.pipe(Effect.orDie)
      if (rows.length > 0) {
        yield* Effect.logInfo("passkey removed").pipe(Effect.annotateLogs({ accountId, passkeyId: id }))
      }
      return rows.length > 0
    })

    const findByCredentialId = Effect.fn("Passkeys.findByCredentialId")(function*(credentialId: Buffer) {
      const rows = yield* sql<StoredPasskey>`
        SELECT id, account_id AS "accountId", credential_id AS "credentialId", public_key AS "publicKey",
               sign_count AS "signCount", transports, user_handle AS "userHandle"
        FROM passkeys WHERE credential_id = ${credentialId}`.pipe(Effect.orDie)
      return Option.fromNullable(rows[0])
    })

    /**
     * A verified assertion: stores the new counter and the time. W3C WebAuthn §7.2 step 22:
     * a counter that does not grow (when either is non-zero) signals a cloned authenticator,
     * so the UPDATE only matches when it grows — or when the authenticator keeps no counter
     * (both zero). False means the assertion must be refused.
     */
    const recordUse = Effect.fn("Passkeys.recordUse")(function*(id: number, newCount: number) {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql<{ id: number }>`
        UPDATE passkeys SET sign_count = ${newCount}, last_used_at = ${new Date(now)}
        WHERE id = ${id} AND (sign_count < ${newCount} OR (sign_count = 0 AND ${newCount} = 0))
        RETURNING id`.pipe(Effect.orDie)
      return rows.length > 0
    })

    /** Account deletion: every passkey of the account, inside the caller's transaction; how many. */
    const removeAllOfAccount = (accountId: number) =>
      Effect.map(sql<{ id: number }>`DELETE FROM passkeys WHERE account_id = ${accountId} RETURNING id`, (rows) => rows.length)

    return { userHandleFor, credentialIdsOf, roomFor, add, list, remove, findByCredentialId, recordUse, removeAllOfAccount } as const
  }),
  dependencies: [AccountLimits.Default]
}) {}
