/**
 * MessageHistory owns the reads of the message history that MessageWriter stores: a
 * buffer's recent messages (recent_messages), full-text search (search_messages) and the
 * buffers with history (list_buffers). Which networks an account has is Networks' to say.
 *
 * Concurrency: stateless; every read is one statement on the shared pool (plus the
 * account's networks), so reads never wait for the writer's batches beyond the pool.
 * SQL errors are defects at this edge.
 *
 * Search (CONTRACT "Semantics"): the message text only — the speaker has its own `nick`
 * filter — through `websearch_to_tsquery('simple', …)` over `messages.tsv`: bare terms
 * are ANDed, a "quoted phrase" is matched as a phrase (`or` and `-term` follow web-search
 * syntax), no user input can make it a SQL error, and a query without any term finds
 * nothing. The nick filter compares with RFC 1459 folding (ASCII lower case plus []\~ ≡
 * {}|^), the default CASEMAPPING — an approximation on networks that announce another one.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import type { Encryption, MessageKind } from "./MessageWriter.js"
import { Networks } from "./Networks.js"

export interface StoredMessage {
  readonly id: number
  readonly networkId: number
  readonly target: string
  readonly time: Date
  readonly kind: MessageKind
  readonly nick: string | null
  readonly text: string
  readonly numeric: string | null
  readonly self: boolean
  readonly encryption: Encryption
}

export interface BufferSummary {
  readonly networkId: number
  readonly target: string
  readonly kind: "channel" | "dm"
  readonly lastMessageAt: Date | null
}

export interface SearchQuery {
  readonly accountId: number
  /** Full-text over the message text; every term must match (ANDed). */
  readonly query: string
  readonly networkId: Option.Option<number>
  /** Folded target (with the network's CASEMAPPING) when filtering by buffer. */
  readonly targetFolded: Option.Option<string>
  readonly nick: Option.Option<string>
  readonly limit: number
}

export class MessageHistory extends Effect.Service<MessageHistory>()("belay/MessageHistory", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const networks = yield* Networks

    /** The account's networks, narrowed to `networkId` when given (empty when it is not the account's). */
    const networksOf = (accountId: number, networkId: Option.Option<number>) =>
      Effect.map(networks.listForAccount(accountId), (owned) => {
        const ids = owned.map((n) => n.id)
        return Option.match(networkId, { onNone: () => ids, onSome: (id) => ids.filter((n) => n === id) })
      })

    /** Oldest first; `before` is exclusive (an id from a previous page). */
    const recent = Effect.fn("MessageHistory.recent")(function*(
      networkId: number,
      targetFolded: string,
      page: { readonly before: Option.Option<number>; readonly limit: number }
    ) {
      if (page.limit <= 0) return []
      const before = Option.match(page.before, { onNone: () => sql``, onSome: (id) => sql`AND m.id < ${id}` })
      return yield* sql<StoredMessage>`
        SELECT * FROM (
          SELECT m.id, b.network_id AS "networkId", b.target, m.time, m.kind, m.nick, m.text, m.numeric, m.self,
                 m.encryption
          FROM buffers b JOIN messages m ON m.buffer_id = b.id
          WHERE b.network_id = ${networkId} AND b.target_folded = ${targetFolded} ${before}
          ORDER BY m.id DESC
          LIMIT ${page.limit}
        ) AS page
        ORDER BY id`.pipe(Effect.orDie)
    })

    /** Newest first, across every buffer of the account unless filtered. */
    const search = Effect.fn("MessageHistory.search")(function*(query: SearchQuery) {
      if (query.limit <= 0 || query.query.trim() === "") return []
      const ids = yield* networksOf(query.accountId, query.networkId)
      if (ids.length === 0) return []
      const target = Option.match(query.targetFolded, {
        onNone: () => sql``,
        onSome: (t) => sql`AND b.target_folded = ${t}`
      })
      const nick = Option.match(query.nick, {
        onNone: () => sql``,
        onSome: (n) => sql`AND translate(lower(m.nick), '[]\\~', '{}|^') = translate(lower(${n}), '[]\\~', '{}|^')`
      })
      return yield* sql<StoredMessage>`
        SELECT m.id, b.network_id AS "networkId", b.target, m.time, m.kind, m.nick, m.text, m.numeric, m.self,
               m.encryption
        FROM messages m
        JOIN buffers b ON b.id = m.buffer_id
        WHERE ${sql.in("b.network_id", ids)}
          AND m.tsv @@ websearch_to_tsquery('simple', ${query.query})
          ${target} ${nick}
        ORDER BY m.id DESC
        LIMIT ${query.limit}`.pipe(Effect.orDie)
    })

    /** Channels and DMs with history (server pseudo-buffers excluded), most recent first. */
    const listBuffers = Effect.fn("MessageHistory.listBuffers")(function*(
      accountId: number,
      networkId: Option.Option<number>
    ) {
      const ids = yield* networksOf(accountId, networkId)
      if (ids.length === 0) return []
      return yield* sql<BufferSummary>`
        SELECT b.network_id AS "networkId", b.target, b.kind, b.last_message_at AS "lastMessageAt"
        FROM buffers b
        WHERE ${sql.in("b.network_id", ids)} AND b.kind IN ('channel', 'dm')
          AND EXISTS (SELECT 1 FROM messages m WHERE m.buffer_id = b.id)
        ORDER BY b.last_message_at DESC NULLS LAST, b.network_id, b.target_folded`.pipe(Effect.orDie)
    })

    return { recent, search, listBuffers } as const
  }),
  dependencies: [Networks.Default]
}) {}
