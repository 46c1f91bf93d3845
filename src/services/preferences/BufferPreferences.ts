/**
 * BufferPreferences owns `buffer_preferences` (migration 0013): what the member chose for each buffer — pinned, muted,
 * detached, and the notification level (schema/Preferences.ts) — the one store behind the web client's buffer menu,
 * `PUT /api/buffers/{network}/{target}/preferences` and the IRC listener's draft/metadata-2 keys `soju.im/pinned` and
 * `soju.im/muted` (docs/contract.md "Preferences"). A buffer is keyed by its network and its target folded by the
 * network's CASEMAPPING (the caller says which: the actor's status knows it); a choice back at the default deletes the
 * row, so only buffers with a non-default choice have one.
 *
 * Bound: at most BUFFER_PREFERENCES_PER_ACCOUNT rows per account (docs/decisions/account-limits.md: every count a
 * member can grow has a limit). A new row past it is refused with PreferencesFull and nothing changes; changing or
 * clearing an existing row is always allowed. The rows go with their network (ON DELETE CASCADE) and with the account
 * (AccountData.ts erasure steps).
 *
 * Every stored change is announced on `changes` with the choice as stored, and each one becomes a `buffer-preference`
 * frame for every open tab of the account (MemberEvents.publish); the IRC listener turns them into METADATA lines. In
 * a cluster, a change stored on another node arrives through `changedElsewhere` (ClusterEvents.ts).
 *
 * Web Push asks, for every message it hears, what the member chose for its buffer, synchronously (`peek`): the
 * choices of an account are read into memory (`choicesOf`), kept in step by this node's writes and the changes other
 * nodes announce, and read again once HELD_FOR old (a change another node announced while this node's LISTEN was
 * down is then seen within that time).
 *
 * Concurrency rule: state in PostgreSQL; a write is one transaction that holds the account's row (FOR NO KEY UPDATE,
 * as AccountLimits.within does), so the count checked cannot be passed by a concurrent write of the same account. The
 * in-memory choices are changed in synchronous steps only.
 */
import { SqlClient } from "@effect/sql"
import { Data, Duration, Effect, PubSub, Queue } from "effect"
import { type CaseMapping, foldCase } from "../../irc/CaseMapping.js"
import {
  type BufferChoice,
  type BufferChoicePatch,
  type BufferPreference,
  DEFAULT_CHOICE,
  isDefaultChoice,
  type NotifyLevel,
  UNSTORABLE
} from "../../schema/Preferences.js"
import { MemberEvents } from "../events/MemberEvents.js"

/** Buffers of one account with a non-default choice, at most. */
export const BUFFER_PREFERENCES_PER_ACCOUNT = 2000

/** How long the choices read for Web Push are trusted before they are read again. */
export const HELD_FOR = Duration.minutes(1)

/** A target's longest form: a channel or nick is far shorter on every network (RFC 2812 §1.3: 50 for a channel). */
export const TARGET_MAX = 200

/** The account has BUFFER_PREFERENCES_PER_ACCOUNT buffers with a choice already: nothing was stored. */
export class PreferencesFull extends Data.TaggedError("PreferencesFull")<{ readonly max: number }> {
  override get message(): string {
    return `at most ${this.max} buffers of an account keep a choice; set some back to the default first`
  }
}

/** The network is not the account's, or the target cannot name a buffer: nothing was stored. */
export class PreferenceRefused extends Data.TaggedError("PreferenceRefused")<{
  readonly reason: "unknown-network" | "invalid-target"
  readonly message: string
}> {}

/** A change as stored. `origin`: the IRC client session of this node that made it, which hears it by its reply. */
export interface BufferPreferenceChange extends BufferPreference {
  readonly accountId: number
  readonly targetFolded: string
  readonly origin?: number
}

/** Whether `target` can name a buffer: 1–TARGET_MAX characters, none that ends or splits an IRC line or word. */
export const validTarget = (target: string): boolean =>
  target.length > 0 && target.length <= TARGET_MAX && !/[\s\u0000,]/.test(target) && !UNSTORABLE.test(target)

const key = (networkId: number, targetFolded: string) => `${networkId}\n${targetFolded}`

interface Row {
  readonly networkId: number
  readonly target: string
  readonly targetFolded: string
  readonly pinned: boolean
  readonly muted: boolean
  readonly detached: boolean
  readonly notify: NotifyLevel
}

const choiceOf = (row: Row): BufferChoice => ({ pinned: row.pinned, muted: row.muted, detached: row.detached, notify: row.notify })

export class BufferPreferences extends Effect.Service<BufferPreferences>()("belay/BufferPreferences", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* MemberEvents
    const changes = yield* PubSub.unbounded<BufferPreferenceChange>()

    /** Accounts whose choices were read into memory (for Web Push): buffer key → choice, non-default ones only. */
    const held = new Map<number, { readonly readAt: number; readonly choices: Map<string, BufferChoice> }>()
    const clock = yield* Effect.clock
    const fresh = (accountId: number) => {
      const entry = held.get(accountId)
      return entry !== undefined && clock.unsafeCurrentTimeMillis() - entry.readAt < Duration.toMillis(HELD_FOR) ? entry : undefined
    }

    const remember = (change: BufferPreferenceChange) => {
      const choices = held.get(change.accountId)?.choices
      if (choices === undefined) return
      if (isDefaultChoice(change)) choices.delete(key(change.networkId, change.targetFolded))
      else choices.set(key(change.networkId, change.targetFolded), choiceOf(change))
    }

    const columns = sql`
      network_id AS "networkId", target, target_folded AS "targetFolded", pinned, muted, detached, notify`

    /** Every buffer of the account with a choice, by network then target. */
    const list = (accountId: number): Effect.Effect<ReadonlyArray<BufferPreference>> =>
      sql<Row>`SELECT ${columns} FROM buffer_preferences WHERE account_id = ${accountId} ORDER BY network_id, target_folded`.pipe(
        Effect.orDie,
        Effect.map((rows) => rows.map((r) => ({ networkId: r.networkId, target: r.target, ...choiceOf(r) })))
      )

    /** The buffers of one network with a choice (the IRC listener's METADATA SUB and welcome). */
    const ofNetwork = (networkId: number): Effect.Effect<ReadonlyArray<BufferPreference>> =>
      sql<Row>`SELECT ${columns} FROM buffer_preferences WHERE network_id = ${networkId} ORDER BY target_folded`.pipe(
        Effect.orDie,
        Effect.map((rows) => rows.map((r) => ({ networkId: r.networkId, target: r.target, ...choiceOf(r) })))
      )

    /** The choice for one buffer: the default when none is stored. */
    const get = (networkId: number, caseMapping: CaseMapping, target: string): Effect.Effect<BufferChoice> =>
      sql<Row>`
        SELECT ${columns} FROM buffer_preferences
        WHERE network_id = ${networkId} AND target_folded = ${foldCase(caseMapping, target)}`.pipe(
        Effect.orDie,
        Effect.map((rows) => (rows[0] === undefined ? DEFAULT_CHOICE : choiceOf(rows[0])))
      )

    /**
     * Applies `patch` to the buffer's choice (what it leaves out stays) and stores the result: the row is deleted when
     * the result is the default. The choice as stored now. `origin`: the IRC client session that asked (see
     * BufferPreferenceChange).
     */
    const set = (
      accountId: number,
      networkId: number,
      caseMapping: CaseMapping,
      target: string,
      patch: BufferChoicePatch,
      origin?: number
    ): Effect.Effect<BufferPreference, PreferencesFull | PreferenceRefused> =>
      Effect.gen(function*() {
        if (!validTarget(target)) {
          return yield* new PreferenceRefused({
            reason: "invalid-target",
            message: `a target is 1 to ${TARGET_MAX} characters without spaces or commas`
          })
        }
        const targetFolded = foldCase(caseMapping, target)
        const stored = yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT id FROM accounts WHERE id = ${accountId} FOR NO KEY UPDATE`
          const owned = yield* sql<{ id: number }>`SELECT id FROM networks WHERE id = ${networkId} AND account_id = ${accountId}`
          if (owned.length === 0) {
            return yield* new PreferenceRefused({ reason: "unknown-network", message: `network ${networkId} is not one of yours` })
          }
          const before = yield* sql<Row>`
            SELECT ${columns} FROM buffer_preferences WHERE network_id = ${networkId} AND target_folded = ${targetFolded}
            FOR UPDATE`
          const choice: BufferChoice = { ...(before[0] === undefined ? DEFAULT_CHOICE : choiceOf(before[0])), ...definedOf(patch) }
          if (isDefaultChoice(choice)) {
            if (before.length > 0) {
              yield* sql`DELETE FROM buffer_preferences WHERE network_id = ${networkId} AND target_folded = ${targetFolded}`
            }
            return choice
          }
          if (before.length === 0) {
            const counted = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM buffer_preferences WHERE account_id = ${accountId}`
            if ((counted[0]?.n ?? 0) >= BUFFER_PREFERENCES_PER_ACCOUNT) {
              return yield* new PreferencesFull({ max: BUFFER_PREFERENCES_PER_ACCOUNT })
            }
          }
          yield* sql`
            INSERT INTO buffer_preferences (account_id, network_id, target_folded, target, pinned, muted, detached, notify)
            VALUES (${accountId}, ${networkId}, ${targetFolded}, ${target}, ${choice.pinned}, ${choice.muted},
                    ${choice.detached}, ${choice.notify})
            ON CONFLICT (network_id, target_folded) DO UPDATE SET
              target = EXCLUDED.target, pinned = EXCLUDED.pinned, muted = EXCLUDED.muted, detached = EXCLUDED.detached,
              notify = EXCLUDED.notify, updated_at = now()`
          return choice
        })).pipe(Effect.catchTag("SqlError", Effect.die))
        const change: BufferPreferenceChange = {
          accountId,
          networkId,
          target,
          targetFolded,
          ...stored,
          ...(origin !== undefined ? { origin } : {})
        }
        remember(change)
        yield* PubSub.publish(changes, change)
        return { networkId, target, ...stored }
      })

    /**
     * A change stored on another node (ClusterEvents.ts, which sends it without `origin`): kept in memory and announced
     * here as if made here, this very object, which ClusterEvents knows not to send back.
     */
    const changedElsewhere = (change: BufferPreferenceChange): Effect.Effect<void> =>
      Effect.suspend(() => {
        remember(change)
        return Effect.asVoid(PubSub.publish(changes, change))
      })

    /**
     * The account's choices as held in memory, or undefined when they were not read yet or are HELD_FOR old
     * (`choicesOf` reads them).
     */
    const peek = (accountId: number, networkId: number, targetFolded: string): BufferChoice | undefined => {
      const entry = fresh(accountId)
      if (entry === undefined) return undefined
      return entry.choices.get(key(networkId, targetFolded)) ?? DEFAULT_CHOICE
    }

    /** Reads the account's choices into memory unless they are fresh; `peek` answers for it from then on. */
    const choicesOf = (accountId: number): Effect.Effect<void> =>
      fresh(accountId) !== undefined ? Effect.void : Effect.map(
        sql<Row>`SELECT ${columns} FROM buffer_preferences WHERE account_id = ${accountId}`.pipe(Effect.orDie),
        (rows) => {
          // A write that landed while the rows were read was remembered into nothing; the rows read include it.
          if (fresh(accountId) !== undefined) return
          const now = clock.unsafeCurrentTimeMillis()
          // Accounts no message asked about for a while are forgotten, so the memory follows the accounts pushed to.
          for (const [id, entry] of held) if (now - entry.readAt >= Duration.toMillis(HELD_FOR)) held.delete(id)
          held.set(accountId, { readAt: now, choices: new Map(rows.map((r) => [key(r.networkId, r.targetFolded), choiceOf(r)])) })
        }
      )

    // Every open tab of the account hears each change (docs/contract.md "Preferences").
    const heard = yield* PubSub.subscribe(changes)
    yield* Queue.take(heard).pipe(
      Effect.flatMap((c) =>
        Effect.sync(() =>
          events.publish(c.accountId, [{
            type: "buffer-preference",
            networkId: c.networkId,
            target: c.target,
            pinned: c.pinned,
            muted: c.muted,
            detached: c.detached,
            notify: c.notify
          }])
        )
      ),
      Effect.forever,
      Effect.forkScoped
    )

    return { list, ofNetwork, get, set, changes, changedElsewhere, peek, choicesOf } as const
  }),
  dependencies: [MemberEvents.Default]
}) {}

/** The fields a patch sets (an absent or undefined one leaves the stored value). */
const definedOf = (patch: BufferChoicePatch): Partial<BufferChoice> => {
  const out: { -readonly [K in keyof BufferChoice]?: BufferChoice[K] } = {}
  if (patch.pinned !== undefined) out.pinned = patch.pinned
  if (patch.muted !== undefined) out.muted = patch.muted
  if (patch.detached !== undefined) out.detached = patch.detached
  if (patch.notify !== undefined) out.notify = patch.notify
  return out
}

