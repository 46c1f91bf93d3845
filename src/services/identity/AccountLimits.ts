/**
 * AccountLimits owns `account_limits` (migration 0010) and the rule every count a member can grow obeys
 * (docs/decisions/account-limits.md): what each limit is for an account — the operator's override, else the
 * deployment's setting (BELAY_ACCOUNT_MAX_NETWORKS, BELAY_NETWORK_MAX_CHANNELS), else the fixed bound of FIXED_BOUNDS —
 * and `within`, the one way something counted is created: in one transaction that locks the account's row, counts
 * what the account holds, refuses with QuotaExceeded at the limit, and only then creates.
 *
 * Concurrency rule: state in PostgreSQL only. Two creations for one account (on one node or several) serialise on the
 * account row's lock (FOR NO KEY UPDATE, which leaves the foreign-key checks of other inserts free), so the count one
 * reads cannot be passed by the other; what another account does never waits.
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { Data, Effect, Option } from "effect"
import { LIMIT_NAMES, type LimitName, QuotaExceeded } from "../../schema/ToolErrors.js"
import { AppConfig } from "../AppConfig.js"

/**
 * The counts bounded on every deployment, hosted or not (docs/decisions/account-limits.md "Apps, push subscriptions,
 * passkeys and sessions: bounded always"). `apps` counts live OAuth tokens: each approval of an app and each
 * password sign-in mints one.
 */
export const FIXED_BOUNDS = {
  apps: 50,
  "push-subscriptions": 50,
  passkeys: 20,
  sessions: 50
} as const

/** The most an override may set a count bounded always to: raised, never unbounded. */
export const OVERRIDE_CEILING = 10_000

/** The largest count any limit may be set to (BELAY_ACCOUNT_MAX_NETWORKS takes the same bound). */
export const LIMIT_MAX = 1_000_000

/** Each limit as it applies to one account; null: none. */
export type EffectiveLimits = { readonly [K in LimitName]: number | null }

/** Where each limit comes from: `override` (belay account limits), `setting` (the environment), `fixed`, `none`. */
export type LimitSource = "override" | "setting" | "fixed" | "none"

/** An override as `belay account limits` gives it: a count, `unlimited` (networks and channels only), or `default`. */
export type LimitValue = number | "unlimited" | "default"

export class InvalidLimit extends Data.TaggedError("InvalidLimit")<{ readonly message: string }> {}

const COLUMNS: { readonly [K in LimitName]: string } = {
  networks: "max_networks",
  channels: "max_channels",
  apps: "max_apps",
  "push-subscriptions": "max_push_subscriptions",
  passkeys: "max_passkeys",
  sessions: "max_sessions",
  uploads: "max_upload_mib"
}

/** Only these may be unlimited; the others are bounded always. */
const MAY_BE_UNLIMITED: ReadonlySet<LimitName> = new Set(["networks", "channels", "uploads"])

/** Stored for `unlimited` (the column's CHECK allows it only where the limit may be unlimited). */
const UNLIMITED = -1

type OverrideRow = { readonly [K in LimitName]: number | null }

export class AccountLimits extends Effect.Service<AccountLimits>()("belay/AccountLimits", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig

    const fromSettings = (limit: LimitName): { readonly max: number | null; readonly source: LimitSource } => {
      if (limit === "networks" || limit === "channels" || limit === "uploads") {
        const setting = limit === "networks"
          ? config.accountMaxNetworks
          : limit === "channels"
          ? config.networkMaxChannels
          : config.accountMaxUploadMib
        return Option.isSome(setting) ? { max: setting.value, source: "setting" } : { max: null, source: "none" }
      }
      return { max: FIXED_BOUNDS[limit], source: "fixed" }
    }

    const overrideRow = (accountId: number) =>
      Effect.map(
        sql<OverrideRow>`
          SELECT max_networks AS "networks", max_channels AS "channels", max_apps AS "apps",
                 max_push_subscriptions AS "push-subscriptions", max_passkeys AS "passkeys", max_sessions AS "sessions",
                 max_upload_mib AS "uploads"
          FROM account_limits WHERE account_id = ${accountId}`,
        (rows) => rows[0]
      )

    const resolve = (row: OverrideRow | undefined, limit: LimitName) => {
      const stored = row?.[limit] ?? null
      if (stored === null) return fromSettings(limit)
      return { max: stored === UNLIMITED ? null : stored, source: "override" as const }
    }

    /** Every limit of the account with where it comes from (`belay account show`). */
    const describe = Effect.fn("AccountLimits.describe")(function*(accountId: number) {
      const row = yield* overrideRow(accountId).pipe(Effect.orDie)
      return Object.fromEntries(LIMIT_NAMES.map((limit) => [limit, resolve(row, limit)])) as {
        readonly [K in LimitName]: { readonly max: number | null; readonly source: LimitSource }
      }
    })

    /** Every limit as it applies to the account now. */
    const of = Effect.fn("AccountLimits.of")(function*(accountId: number) {
      const row = yield* overrideRow(accountId).pipe(Effect.orDie)
      return Object.fromEntries(LIMIT_NAMES.map((limit) => [limit, resolve(row, limit).max])) as EffectiveLimits
    })

    /** One limit of the account; null: none. */
    const limitOf = (accountId: number, limit: LimitName): Effect.Effect<number | null> =>
      Effect.map(overrideRow(accountId).pipe(Effect.orDie), (row) => resolve(row, limit).max)

    /**
     * Sets overrides (`belay account limits NAME --networks N …`): a count, `unlimited` where allowed, or `default`
     * (the override is dropped). Checked whole before anything is written, so a bad value changes nothing.
     */
    const set = Effect.fn("AccountLimits.set")(
      function*(accountId: number, changes: { readonly [K in LimitName]?: LimitValue | undefined }) {
        const columns: Record<string, number | null> = {}
        for (const limit of LIMIT_NAMES) {
          const value = changes[limit]
          if (value === undefined) continue
          if (value === "default") columns[COLUMNS[limit]] = null
          else if (value === "unlimited") {
            if (!MAY_BE_UNLIMITED.has(limit)) {
              return yield* new InvalidLimit({ message: `${limit} is bounded always; give a number up to ${OVERRIDE_CEILING}` })
            }
            columns[COLUMNS[limit]] = UNLIMITED
          } else {
            const ceiling = MAY_BE_UNLIMITED.has(limit) ? LIMIT_MAX : OVERRIDE_CEILING
            const floor = limit === "sessions" ? 1 : 0
            if (!Number.isInteger(value) || value < floor || value > ceiling) {
              return yield* new InvalidLimit({ message: `${limit} must be a whole number from ${floor} to ${ceiling}` })
            }
            columns[COLUMNS[limit]] = value
          }
        }
        if (Object.keys(columns).length === 0) return
        yield* sql`
          INSERT INTO account_limits ${sql.insert({ account_id: accountId, ...columns })}
          ON CONFLICT (account_id) DO UPDATE SET ${sql.update({ ...columns, updated_at: new Date() })}`.pipe(Effect.orDie)
        yield* Effect.logInfo("account limits changed").pipe(Effect.annotateLogs({ accountId, ...columns }))
      }
    )

    /**
     * The account's row locked for the rest of the caller's transaction, then its `limit` and what `counted` counts
     * now. Only inside a transaction (`within` opens one); outside, the lock would end with the statement.
     */
    const measure = (accountId: number, limit: LimitName, counted: Effect.Effect<number, SqlError.SqlError>) =>
      Effect.gen(function*() {
        yield* sql`SELECT id FROM accounts WHERE id = ${accountId} FOR NO KEY UPDATE`
        const max = resolve(yield* overrideRow(accountId), limit).max
        return { max, count: yield* counted }
      })

    /**
     * Creates with `create` only while `counted` (what the account holds now) is below `limit`, in one transaction
     * that holds the account's row; at the limit: QuotaExceeded, nothing created.
     */
    const within = <A, E, R>(
      accountId: number,
      limit: LimitName,
      counted: Effect.Effect<number, SqlError.SqlError>,
      create: Effect.Effect<A, E, R>
    ): Effect.Effect<A, E | QuotaExceeded | SqlError.SqlError, R> =>
      sql.withTransaction(Effect.gen(function*() {
        const { count, max } = yield* measure(accountId, limit, counted)
        if (max !== null && count >= max) return yield* new QuotaExceeded({ limit, max })
        return yield* create
      }))

    /**
     * Like `within`, for a count that makes room rather than refuse (browser sessions: sign-in ends the oldest,
     * docs/decisions/account-limits.md): `create` is told how many are over once it is added.
     */
    const making = <A, E, R>(
      accountId: number,
      limit: LimitName,
      counted: Effect.Effect<number, SqlError.SqlError>,
      create: (excess: number) => Effect.Effect<A, E, R>
    ): Effect.Effect<A, E | SqlError.SqlError, R> =>
      sql.withTransaction(Effect.gen(function*() {
        const { count, max } = yield* measure(accountId, limit, counted)
        return yield* create(max === null ? 0 : Math.max(0, count + 1 - max))
      }))

    return { describe, of, limitOf, set, within, making } as const
  })
}) {}
