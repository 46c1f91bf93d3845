/**
 * ClientDeliveries owns `client_deliveries` (migration 0007): how far each named IRC client of a member has been
 * delivered a network's messages, so the IRC listener can send a client without CHATHISTORY what arrived since it
 * last saw (docs/contract.md "The IRC client listener", backlog). A watermark only moves forward: the stored value is
 * max(stored, given), in one statement.
 *
 * Concurrency: stateless; every method is one statement on the shared pool.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"

export class ClientDeliveries extends Effect.Service<ClientDeliveries>()("belay/ClientDeliveries", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** The id of the last message delivered to the client; None when this client name never connected. */
    const delivered = (networkId: number, clientName: string): Effect.Effect<Option.Option<number>> =>
      sql<{ messageId: number }>`
        SELECT message_id AS "messageId" FROM client_deliveries
        WHERE network_id = ${networkId} AND client_name = ${clientName}`.pipe(
        Effect.orDie,
        Effect.map((rows) => Option.fromNullable(rows[0]?.messageId))
      )

    /** Moves the client's watermark to `messageId` unless it is already there or further. */
    const advance = (accountId: number, networkId: number, clientName: string, messageId: number): Effect.Effect<void> =>
      sql`
        INSERT INTO client_deliveries (account_id, network_id, client_name, message_id, updated_at)
        VALUES (${accountId}, ${networkId}, ${clientName}, ${messageId}, now())
        ON CONFLICT (network_id, client_name) DO UPDATE
          SET message_id = EXCLUDED.message_id, updated_at = EXCLUDED.updated_at
          WHERE client_deliveries.message_id < EXCLUDED.message_id`.pipe(Effect.orDie, Effect.asVoid)

    return { delivered, advance } as const
  })
}) {}
