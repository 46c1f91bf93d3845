/**
 * E2eKeys owns the FiSH keys of end-to-end encrypted channels and DMs: set and cleared by
 * `belay channel encrypt|decrypt`, sealed at rest by SecretBox, never logged and never returned by any tool.
 * State in PostgreSQL (`buffers.e2e_key_enc`), keyed by the target folded with rfc1459 since the store does not
 * know the network's CASEMAPPING (E2eCodec.ts explains how lookups stay safe on other mappings).
 *
 * A key is stored normalized (`cbc:…`/`ecb:…`, Fish.formatFishKey) so its cipher mode is explicit whatever later
 * versions choose as the default for bare keys. Every set and clear is published on `changes` after the row is
 * written, carrying the parsed key (its secret Redacted), so the running network actor applies it at once without
 * re-reading the store on every message; on a cluster node set and clear also wait (bounded) until the network's
 * owner has it (`deliverBy`), so a key change is in effect when `belay channel encrypt|decrypt` returns, as in one
 * process. Concurrency: `changes` is an unbounded PubSub; subscribe before reading
 * `forNetwork` and nothing is missed. `loadAll` reads every network's keys in one query at boot; each network's entry
 * is taken once by `forNetwork` and dropped by a set or clear on that network, so what it gives is what the table
 * holds.
 */
import { SqlClient } from "@effect/sql"
import { Data, Effect, Either, Option, PubSub } from "effect"
import { foldCase } from "../../irc/CaseMapping.js"
import { isMiddleParam } from "../../irc/Safety.js"
import { Accounts } from "../identity/Accounts.js"
import { type FishKey, formatFishKey, parseFishKey } from "../crypto/Fish.js"
import { NetworkNotFound, Networks } from "./Networks.js"
import { SecretBox } from "../crypto/SecretBox.js"

const CHANNEL_PREFIXES = "#&+!"

/** One stored key: the target as stored (a channel or a nick) and the parsed key. */
export interface E2eKeyEntry {
  readonly target: string
  readonly key: FishKey
}

/** A key set (`key` present) or cleared (absent) for a target of a network, published once it is stored. */
export interface E2eKeyChange {
  readonly networkId: number
  /** The target as the store holds it. */
  readonly target: string
  readonly key?: FishKey
}

/** The key or the target given to `belay channel encrypt` cannot be used. */
export class InvalidE2eKey extends Data.TaggedError("InvalidE2eKey")<{ readonly message: string }> {}

export class E2eKeys extends Effect.Service<E2eKeys>()("belay/E2eKeys", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const box = yield* SecretBox
    const accounts = yield* Accounts
    const networks = yield* Networks
    const changes = yield* PubSub.unbounded<E2eKeyChange>()
    /**
     * How a change reaches the network where it runs before set/clear return (`deliverBy`; a cluster node: its
     * owner, which may be another node). Alone, the actors here hear `changes` directly.
     */
    let deliver: (change: E2eKeyChange) => Effect.Effect<void> = () => Effect.void
    const deliverBy = (to: (change: E2eKeyChange) => Effect.Effect<void>) =>
      Effect.acquireRelease(Effect.sync(() => void (deliver = to)), () => Effect.sync(() => void (deliver = () => Effect.void)))
    const published = (change: E2eKeyChange) => Effect.zipRight(PubSub.publish(changes, change), Effect.suspend(() => deliver(change)))

    type KeyRow = { readonly target: string; readonly targetFolded: string; readonly keyEnc: Uint8Array }
    /** The boot snapshot (`loadAll`): each started network's keyed rows, taken once; `writes` moves on set and clear. */
    const snapshot = new Map<number, Array<KeyRow>>()
    let writes = 0
    const written = (networkId: number) => {
      writes++
      snapshot.delete(networkId)
    }

    const ownedNetwork = (accountName: string, networkId: number) =>
      Effect.gen(function*() {
        const account = yield* accounts.require(accountName)
        const network = yield* networks.owned(account.id, networkId)
        if (Option.isNone(network)) return yield* new NetworkNotFound({ networkId })
        return network.value
      })

    /** `rawKey` as the member gave it (`cbc:`/`ecb:` prefix optional; a bare key is ECB, see Fish.ts). */
    const set = Effect.fn("E2eKeys.set")(function*(accountName: string, networkId: number, target: string, rawKey: string) {
      // One IRC name, as a PRIVMSG target is: no spaces, commas, CR, LF or NUL, not starting with ':'.
      if (!isMiddleParam(target) || target.includes(",")) {
        return yield* new InvalidE2eKey({ message: `${JSON.stringify(target)} is not a channel or nick name` })
      }
      const parsed = parseFishKey(rawKey)
      if (Either.isLeft(parsed)) return yield* new InvalidE2eKey({ message: parsed.left.message })
      yield* ownedNetwork(accountName, networkId)
      written(networkId)
      const kind = CHANNEL_PREFIXES.includes(target[0] ?? "") ? "channel" : "dm"
      const sealed = box.seal("e2e-key", formatFishKey(parsed.right))
      const rows = yield* sql<{ target: string }>`
        INSERT INTO buffers (network_id, target, target_folded, kind, e2e_key_enc)
        VALUES (${networkId}, ${target}, ${foldCase("rfc1459", target)}, ${kind}, ${sealed})
        ON CONFLICT (network_id, target_folded) DO UPDATE SET e2e_key_enc = EXCLUDED.e2e_key_enc
        RETURNING target`.pipe(Effect.orDie)
      yield* published({ networkId, target: rows[0]?.target ?? target, key: parsed.right })
      // The key is never logged; its mode is not secret and says which clients can read the channel.
      yield* Effect.logInfo("end-to-end encryption enabled").pipe(
        Effect.annotateLogs({ networkId, target, mode: parsed.right.mode })
      )
    })

    const clear = Effect.fn("E2eKeys.clear")(function*(accountName: string, networkId: number, target: string) {
      yield* ownedNetwork(accountName, networkId)
      written(networkId)
      const rows = yield* sql<{ target: string }>`
        UPDATE buffers SET e2e_key_enc = NULL
        WHERE network_id = ${networkId} AND target_folded = ${foldCase("rfc1459", target)} AND e2e_key_enc IS NOT NULL
        RETURNING target`.pipe(Effect.orDie)
      for (const row of rows) yield* published({ networkId, target: row.target })
      yield* Effect.logInfo("end-to-end encryption disabled").pipe(Effect.annotateLogs({ networkId, target }))
      return rows.length > 0
    })

    /**
     * Every keyed target of a network, by target folded with rfc1459. A stored key that no longer parses (never
     * written by this version) is left out with a warning rather than failing the network.
     */
    const forNetwork = Effect.fn("E2eKeys.forNetwork")(function*(networkId: number) {
      const kept = snapshot.get(networkId)
      snapshot.delete(networkId)
      const rows = kept ?? (yield* sql<KeyRow>`
        SELECT target, target_folded AS "targetFolded", e2e_key_enc AS "keyEnc" FROM buffers
        WHERE network_id = ${networkId} AND e2e_key_enc IS NOT NULL`.pipe(Effect.orDie))
      const keys = new Map<string, E2eKeyEntry>()
      for (const row of rows) {
        const parsed = parseFishKey(box.open("e2e-key", row.keyEnc))
        if (Either.isRight(parsed)) keys.set(row.targetFolded, { target: row.target, key: parsed.right })
        else yield* Effect.logWarning("unusable stored end-to-end key ignored").pipe(Effect.annotateLogs({ networkId, target: row.target }))
      }
      return keys
    })

    /**
     * Every keyed target of the networks `networkIds` in one query, kept for their actors' `forNetwork` (at boot,
     * 10,000 networks: one query instead of 10,000 queued before anything else, health checks included).
     */
    const loadAll = Effect.fn("E2eKeys.loadAll")(function*(networkIds: ReadonlyArray<number>) {
      const before = writes
      const rows = yield* sql<KeyRow & { readonly networkId: number }>`
        SELECT network_id AS "networkId", target, target_folded AS "targetFolded", e2e_key_enc AS "keyEnc" FROM buffers
        WHERE e2e_key_enc IS NOT NULL`.pipe(Effect.orDie)
      if (writes !== before) return
      for (const id of networkIds) snapshot.set(id, [])
      for (const row of rows) snapshot.get(row.networkId)?.push(row)
    })

    return { set, clear, forNetwork, loadAll, changes, deliverBy } as const
  }),
  dependencies: [Accounts.Default, Networks.Default, SecretBox.Default]
}) {}
