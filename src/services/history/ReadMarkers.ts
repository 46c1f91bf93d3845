/**
 * ReadMarkers owns `read_markers`, how far the member has read each buffer, and the unread and highlight counts
 * measured against them (docs/decisions/web.md "The web client's server surface"; migration 0005). It is the table's
 * only writer.
 *
 * - `set` moves a buffer's marker forward to a message id, never back: the stored value is max(stored, given), in
 *   one statement (a concurrent `set` of another tab cannot make it go back either: ON CONFLICT re-checks the row it
 *   locked). The buffer must exist on a network of the account. Every accepted `set` is announced on `changes` with
 *   the marker as stored, which MemberEvents turns into a `read-marker` event for every open tab of the member.
 * - `buffers` lists every buffer with history of the account's networks with its last message, its marker and the
 *   counts: `unread`, the PRIVMSG/ACTION/NOTICE after the marker not sent by the member (at most UNREAD_CAP), and
 *   `highlights`, of those, every one in a query plus the channel ones whose text names the member's nick as a
 *   word, compared under the network's CASEMAPPING. Cost: per buffer, one probe of `messages (buffer_id, id)` for
 *   its last message, one of the marker's primary key, and a walk of `(buffer_id, id)` from the marker onwards that
 *   stops after UNREAD_CAP matching rows; a buffer read to its end walks nothing (an empty index range). The text
 *   is matched against the nick's pattern only when it contains the folded nick at all.
 *
 * Concurrency: stateless besides the PubSub; every method is one statement on the shared pool.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option, PubSub } from "effect"
import { type CaseMapping, foldCase } from "../../irc/CaseMapping.js"

/** `unread` counts at most this many messages (the client shows "999+"). */
export const UNREAD_CAP = 999

/** A marker as stored, with the buffer's display name. */
export interface ReadMarker {
  readonly accountId: number
  readonly networkId: number
  readonly target: string
  readonly messageId: number
}

/** Who the member is on a network, for highlights: the current nick (or the configured one) and its CASEMAPPING. */
export interface SelfOnNetwork {
  readonly networkId: number
  readonly nick: string
  readonly caseMapping: CaseMapping
}

export interface BufferState {
  readonly networkId: number
  readonly target: string
  readonly kind: "channel" | "query" | "server"
  readonly lastMessageId: number
  readonly lastMessageAt: Date
  readonly readMessageId: number | null
  readonly unread: number
  readonly highlights: number
}

/** Characters that may appear in a nick (RFC 2812 §2.3.1 letters, digits and specials): a word boundary is any other. */
const NICK_CHAR = "[:alnum:]_\\-\\[\\]\\\\`^{}|~"

/**
 * A PostgreSQL (ARE) regular expression matching `nick`, already folded, as a word of folded text. Every character
 * that is not a letter or digit is escaped (in an ARE, a backslash before a non-alphanumeric character is that
 * character), so a nick is always matched literally.
 */
export const mentionPattern = (foldedNick: string): string => {
  const literal = [...foldedNick].map((c) => (/[\p{L}\p{N}]/u.test(c) ? c : `\\${c}`)).join("")
  return `(^|[^${NICK_CHAR}])${literal}($|[^${NICK_CHAR}])`
}

export class ReadMarkers extends Effect.Service<ReadMarkers>()("belay/ReadMarkers", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const changes = yield* PubSub.unbounded<ReadMarker>()

    /**
     * Moves the marker of the buffer (`targetFolded` with the network's CASEMAPPING) to `messageId` unless it is
     * already there or further. The marker as stored afterwards; None when the account has no such buffer.
     */
    const set = (accountId: number, networkId: number, targetFolded: string, messageId: number) =>
      Effect.gen(function*() {
        // The final SELECT sees the table as it was before the upsert: when the upsert changed nothing, the marker
        // it reads is the stored one, which is then the larger.
        const rows = yield* sql<{ target: string; messageId: number }>`
          WITH buffer AS (
            SELECT b.network_id, b.target_folded, b.target
            FROM buffers b JOIN networks n ON n.id = b.network_id
            WHERE b.network_id = ${networkId} AND b.target_folded = ${targetFolded} AND n.account_id = ${accountId}
          ), moved AS (
            INSERT INTO read_markers (account_id, network_id, target_folded, message_id, updated_at)
            SELECT ${accountId}, network_id, target_folded, ${messageId}, now() FROM buffer
            ON CONFLICT (network_id, target_folded) DO UPDATE
              SET message_id = EXCLUDED.message_id, updated_at = EXCLUDED.updated_at
              WHERE read_markers.message_id < EXCLUDED.message_id
            RETURNING message_id
          )
          SELECT buffer.target,
                 coalesce((SELECT message_id FROM moved), r.message_id) AS "messageId"
          FROM buffer
          LEFT JOIN read_markers r ON r.network_id = buffer.network_id AND r.target_folded = buffer.target_folded`
          .pipe(Effect.orDie)
        const row = rows[0]
        if (row === undefined) return Option.none<ReadMarker>()
        const marker: ReadMarker = { accountId, networkId, target: row.target, messageId: row.messageId }
        yield* PubSub.publish(changes, marker)
        return Option.some(marker)
      })

    /** The text of a message folded as `mapping` folds names, in SQL (the same ranges as CaseMapping.foldCase). */
    const foldedText = sql`CASE v.mapping
      WHEN 'rfc1459' THEN translate(lower(m.text), '[]\\^', '{}|~')
      WHEN 'strict-rfc1459' THEN translate(lower(m.text), '[]\\', '{}|')
      ELSE lower(m.text) END`

    /** Every buffer with history of these networks, the most recently active first. */
    const buffers = (selves: ReadonlyArray<SelfOnNetwork>): Effect.Effect<ReadonlyArray<BufferState>> => {
      if (selves.length === 0) return Effect.succeed([])
      const values = sql.csv(selves.map((self) =>
        sql`(${self.networkId}::bigint, ${self.caseMapping}::text, ${foldCase(self.caseMapping, self.nick)}::text, ${
          mentionPattern(foldCase(self.caseMapping, self.nick))
        }::text)`
      ))
      const statement = sql<Omit<BufferState, "kind"> & { readonly kind: "channel" | "dm" | "server" }>`
        SELECT b.network_id AS "networkId", b.target, b.kind, last.id AS "lastMessageId", last.time AS "lastMessageAt",
               r.message_id AS "readMessageId", u.unread, u.highlights
        FROM (VALUES ${values}) AS v (network_id, mapping, nick, pattern)
        JOIN buffers b ON b.network_id = v.network_id
        CROSS JOIN LATERAL (
          SELECT id, time FROM messages
          WHERE buffer_id BETWEEN b.id AND b.id
          ORDER BY buffer_id DESC, id DESC
          LIMIT 1
        ) AS last
        LEFT JOIN read_markers r ON r.network_id = b.network_id AND r.target_folded = b.target_folded
        CROSS JOIN LATERAL (
          SELECT count(*)::int AS unread,
                 (count(*) FILTER (WHERE b.kind = 'dm' OR (b.kind = 'channel' AND strpos(${foldedText}, v.nick) > 0
                   AND ${foldedText} ~ v.pattern)))::int
                   AS highlights
          FROM (
            SELECT text FROM messages
            WHERE buffer_id BETWEEN b.id AND b.id AND id > coalesce(r.message_id, 0)
              AND kind IN ('privmsg', 'action', 'notice') AND NOT self
            ORDER BY buffer_id, id
            LIMIT ${UNREAD_CAP}
          ) AS m
        ) AS u
        ORDER BY last.id DESC`
      // With the marker a parameter of the lateral walk, the planner guesses its range small and may prefer a
      // bitmap scan of it and a sort, which reads a buffer without a marker whole instead of stopping at the cap;
      // without bitmap scans the walk is the index in order, and LIMIT ends it. JIT compilation would cost more
      // than this statement ever runs (seconds of compiling against milliseconds of work).
      return sql.withTransaction(Effect.gen(function*() {
        yield* sql`SET LOCAL enable_bitmapscan = off`
        yield* sql`SET LOCAL jit = off`
        return yield* statement
      })).pipe(
        Effect.orDie,
        Effect.map((rows) => rows.map((row): BufferState => ({ ...row, kind: row.kind === "dm" ? "query" : row.kind })))
      )
    }

    /** The buffer's marker with the time of the message it names; None when the buffer has none. */
    const get = (networkId: number, targetFolded: string) =>
      sql<{ messageId: number; time: Date | null }>`
        SELECT r.message_id AS "messageId", m.time
        FROM read_markers r LEFT JOIN messages m ON m.id = r.message_id
        WHERE r.network_id = ${networkId} AND r.target_folded = ${targetFolded}`.pipe(
        Effect.orDie,
        Effect.map((rows) => Option.fromNullable(rows[0]))
      )

    return { set, get, buffers, changes } as const
  })
}) {}
