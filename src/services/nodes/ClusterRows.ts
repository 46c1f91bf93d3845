/**
 * ClusterRows: the rows another node of a cluster stored, read back from the database as MessageWriter.relay takes them
 * (ClusterEvents.ts: the rows of a batch's notice, and the pages of a catch-up after a loss), each with the client-only
 * tags its line came with, as the node that stored it announced them (StoredAnnouncer.ts), so that the member's IRC
 * clients hear the same message on every node (docs/contract.md "The IRC client listener": client tags).
 *
 * The tags are not a column: they are read from the row's `raw` line with TaggedMessages.relayedClientTags, the
 * storing node's own function and bound (4094 bytes, a tag past it dropped whole). `raw` is sent over only when it can
 * hold a client-only tag: the statement applies relayedClientTags' cheap test (a tag key starting with `+`, i.e. `@+`
 * at the start of the line or `;+` before its first space; a tag value cannot hold a raw `;` or space), so a row whose
 * line has no tags or only the server's (`@time=…;msgid=…`) costs a look at its tags in PostgreSQL and nothing on the
 * wire (docs/decisions/irc-listener.md "Client tags, REDACT and multiline upstream" has the cost measured).
 *
 * Concurrency rule: no state; each read is one statement on the pool.
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { relayedClientTags } from "../../irc/TaggedMessages.js"
import type { StoredRow } from "../history/MessageRow.js"

/** A row read back, as MessageWriter.relay takes it. */
export type ReadRow = StoredRow & { readonly targetFolded: string }

/** A row as the statement gives it: `raw` only where it may hold a client-only tag, else null. */
type Selected = Omit<ReadRow, "clientTags"> & { readonly raw: string | null }

/** The row without `raw`, with the client-only tags of its line when it has any (StoredAnnouncer's `withClientTags`). */
const withClientTags = ({ raw, ...row }: Selected): ReadRow => {
  const clientTags = raw === null ? undefined : relayedClientTags(raw)
  return clientTags === undefined ? row : { ...row, clientTags }
}

export const makeClusterRows = (sql: SqlClient.SqlClient) => {
  // `split_part(raw, ' ', 1)` is the line's first word, its tags: the text after it may hold `;+` of its own.
  const columns = sql`
    m.id, b.network_id AS "networkId", b.target, b.target_folded AS "targetFolded", b.kind AS "bufferKind", m.time,
    m.kind, m.nick, m.text, m.numeric, m.self, m.encryption, m.msgid, m.reply_to AS "replyTo", m.redacted,
    CASE WHEN m.raw LIKE '@+%' OR (m.raw LIKE '@%' AND split_part(m.raw, ' ', 1) LIKE '%;+%') THEN m.raw END AS raw`

  /** The rows of ids `first`..`last` (inclusive) of `networkIds` (every network when empty), ids ascending. */
  const batch = (networkIds: ReadonlyArray<number>, first: number, last: number) =>
    sql<Selected>`
      SELECT ${columns} FROM messages m JOIN buffers b ON b.id = m.buffer_id
      WHERE m.id BETWEEN ${first} AND ${last}${networkIds.length === 0 ? sql`` : sql` AND ${sql.in("b.network_id", networkIds)}`}
      ORDER BY m.id`.pipe(Effect.map((rows) => rows.map(withClientTags)))

  /** At most `limit` rows above id `floor`, ids ascending. */
  const after = (floor: number, limit: number) =>
    sql<Selected>`
      SELECT ${columns} FROM messages m JOIN buffers b ON b.id = m.buffer_id
      WHERE m.id > ${floor} ORDER BY m.id LIMIT ${limit}`.pipe(Effect.map((rows) => rows.map(withClientTags)))

  return { batch, after } as const
}
