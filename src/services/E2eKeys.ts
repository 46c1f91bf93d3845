/**
 * E2eKeys owns the FiSH keys of end-to-end encrypted channels and DMs (issue 7):
 * set and cleared by `belay channel encrypt|decrypt`, sealed at rest by SecretBox,
 * never logged and never returned by any tool. State in PostgreSQL.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { foldCase } from "../actors/irc/CaseMapping.js"
import { Accounts } from "./Accounts.js"
import { NetworkNotFound, Networks } from "./Networks.js"
import { SecretBox } from "./SecretBox.js"

const CHANNEL_PREFIXES = "#&+!"

export class E2eKeys extends Effect.Service<E2eKeys>()("belay/E2eKeys", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const box = yield* SecretBox
    const accounts = yield* Accounts
    const networks = yield* Networks

    const ownedNetwork = (accountName: string, networkId: number) =>
      Effect.gen(function*() {
        const account = yield* accounts.require(accountName)
        const network = yield* networks.owned(account.id, networkId)
        if (Option.isNone(network)) return yield* new NetworkNotFound({ networkId })
        return network.value
      })

    const set = Effect.fn("E2eKeys.set")(function*(accountName: string, networkId: number, target: string, key: string) {
      yield* ownedNetwork(accountName, networkId)
      const kind = CHANNEL_PREFIXES.includes(target[0] ?? "") ? "channel" : "dm"
      const sealed = box.seal("e2e-key", key)
      yield* sql`
        INSERT INTO buffers (network_id, target, target_folded, kind, e2e_key_enc)
        VALUES (${networkId}, ${target}, ${foldCase("rfc1459", target)}, ${kind}, ${sealed})
        ON CONFLICT (network_id, target_folded) DO UPDATE SET e2e_key_enc = EXCLUDED.e2e_key_enc`.pipe(Effect.orDie)
      yield* Effect.logInfo("end-to-end encryption enabled").pipe(Effect.annotateLogs({ networkId, target }))
    })

    const clear = Effect.fn("E2eKeys.clear")(function*(accountName: string, networkId: number, target: string) {
      yield* ownedNetwork(accountName, networkId)
      const rows = yield* sql<{ id: number }>`
        UPDATE buffers SET e2e_key_enc = NULL
        WHERE network_id = ${networkId} AND target_folded = ${foldCase("rfc1459", target)} AND e2e_key_enc IS NOT NULL
        RETURNING id`.pipe(Effect.orDie)
      yield* Effect.logInfo("end-to-end encryption disabled").pipe(Effect.annotateLogs({ networkId, target }))
      return rows.length > 0
    })

    /** Every encrypted target of a network with its key, folded target → key, for the actor. */
    const forNetwork = Effect.fn("E2eKeys.forNetwork")(function*(networkId: number) {
      const rows = yield* sql<{ targetFolded: string; keyEnc: Uint8Array }>`
        SELECT target_folded AS "targetFolded", e2e_key_enc AS "keyEnc" FROM buffers
        WHERE network_id = ${networkId} AND e2e_key_enc IS NOT NULL`.pipe(Effect.orDie)
      return new Map(rows.map((r) => [r.targetFolded, box.open("e2e-key", r.keyEnc)] as const))
    })

    return { set, clear, forNetwork } as const
  })
}) {}
