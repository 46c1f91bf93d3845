/**
 * AccountExport: the member's data as one JSON Lines stream (docs/decisions/leaving.md "The export: one JSON Lines
 * stream, a `kind` on every line"), for Settings › Export and `belay account export NAME > FILE`. Every line is
 * `{"kind": K, "<K in camelCase>": {...}}`: first the `archive` line (format, version, the account, when), then the
 * networks (no server password, no SASL: only whether they are set), the channels to join (no keys), nick notes,
 * relay bots, read markers, buffer preferences and the client's settings, uploads (metadata and URL), then each buffer followed by its messages oldest first, and an `end` line with the count of
 * each kind, so a file cut short is told from a whole one. No secret of any kind: no password, token, key or hash.
 *
 * Constant memory: every kind is read in keyset pages of PAGE rows (one short query each, no transaction held open),
 * and a page becomes a few strings that the writer (`writeTo`) hands to the socket only as the socket drains, so the
 * process holds one page at a time however long the history is; the history's pages are rendered to JSON Lines by
 * PostgreSQL, so that little of each is ever alive in the process (CHUNK_CHARS says why that matters). Rows written
 * during the export may or may not be in it; each page is consistent.
 *
 * Concurrency rule: each call of `lines` is its own stream with its own counters; any number may run at once.
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { Chunk, Clock, Data, Effect, Option, Stream } from "effect"
import { toIsoTime } from "../../schema/Ids.js"
import { AppConfig } from "../AppConfig.js"
import { Accounts, AccountNotFound } from "../identity/Accounts.js"
import { uploadPath } from "../uploads/Uploads.js"

/** Rows a query reads: a page of messages is ~300 KB of JSON. */
const PAGE = 1000
export const EXPORT_FORMAT = "belay-account-export"
export const EXPORT_VERSION = 1

export type ExportKind =
  | "archive"
  | "network"
  | "channel"
  | "nick-note"
  | "relay-bot"
  | "read-marker"
  | "buffer-preference"
  | "client-preferences"
  | "upload"
  | "buffer"
  | "message"
  | "end"

const field = (kind: ExportKind) => kind.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())
const line = (kind: ExportKind, value: unknown) => `{"kind":${JSON.stringify(kind)},${JSON.stringify(field(kind))}:${JSON.stringify(value)}}\n`
const iso = (d: Date | null) => (d === null ? null : toIsoTime(d))

interface NetworkRow {
  readonly id: number
  readonly name: string
  readonly host: string
  readonly port: number
  readonly tls: boolean
  readonly tlsInsecure: boolean
  readonly nick: string
  readonly username: string | null
  readonly realname: string | null
  readonly hasServerPassword: boolean
  readonly hasSasl: boolean
  readonly enabled: boolean
  readonly awayMessage: string | null
  readonly createdAt: Date
}

interface BufferRow {
  readonly id: number
  readonly networkId: number
  readonly target: string
  readonly type: string
  readonly lastMessageAt: Date | null
  readonly encrypted: boolean
}

/** The rows `page(after)` answers from `start` on, one chunk a page of PAGE (the last page is shorter). */
const pagedRows = <R, K>(
  start: K,
  page: (after: K) => Effect.Effect<ReadonlyArray<R>, SqlError.SqlError>,
  keyOf: (row: R) => K
): Stream.Stream<R, SqlError.SqlError> =>
  Stream.unfoldChunkEffect(Option.some(start), (after) =>
    Option.isNone(after) ? Effect.succeed(Option.none()) : Effect.map(page(after.value), (rows) => {
      const last = rows[rows.length - 1]
      if (last === undefined) return Option.none()
      return Option.some([Chunk.fromIterable(rows), rows.length < PAGE ? Option.none<K>() : Option.some(keyOf(last))] as const)
    }))

/**
 * What the export may hold in memory is bounded by what survives V8's scavenges: whatever is still alive when one
 * comes (the page being rendered, the string waiting for the socket to drain) is promoted to the old generation, and
 * there it stays, garbage, until a full collection, which V8 runs only once the old generation has grown well past
 * its size (bench I, "Account export", measures the growth by V8 space). Rendered here, a page of history was 1,000
 * row objects, 1,000 records and their JSON, then one string of some 300 K characters: 3 MB allocated and 1–2 MB
 * alive at a time, and exporting 200,000 messages grew `belay serve` by 56 MiB, nearly all of it such pages promoted
 * (first as large objects, the page string being past V8's 128 KiB; cut into small strings, as old-space objects).
 * So PostgreSQL renders the history (`messagesOf`): a page arrives as PAGE / LINES_PER_STRING strings and nothing
 * else, a fifth of the allocation and of what is alive.
 *
 * Strings of other kinds are cut at about CHUNK_CHARS characters, so that none is a large object either.
 */
const CHUNK_CHARS = 16 * 1024

/**
 * Lines of history a query reads. The young generation is 1 MiB when the process is not busy (V8 gives it back,
 * src/services/upkeep/HeapTrim.ts), so a page must be small beside it: what is alive when a scavenge comes is at
 * most a page, and 100 lines are some 60 KB of strings (two-byte where the text is not Latin-1).
 */
const HISTORY_PAGE = 100

/**
 * Lines of history per string PostgreSQL sends: a stored line is at most an IRC line (512 bytes, some 1,000
 * characters once escaped in JSON), so a string stays below V8's large-object size even two-byte.
 */
const LINES_PER_STRING = 25

/** The same, each page rendered as strings of about CHUNK_CHARS characters (lines never split). */
const paged = <R, K>(
  start: K,
  page: (after: K) => Effect.Effect<ReadonlyArray<R>, SqlError.SqlError>,
  keyOf: (row: R) => K,
  render: (row: R) => string
): Stream.Stream<string, SqlError.SqlError> =>
  Stream.mapChunks(pagedRows(start, page, keyOf), (rows) => {
    const out: Array<string> = []
    let text = ""
    for (const row of rows) {
      text += render(row)
      if (text.length >= CHUNK_CHARS) {
        out.push(text)
        text = ""
      }
    }
    if (text !== "") out.push(text)
    return Chunk.unsafeFromArray(out)
  })

export class AccountExport extends Effect.Service<AccountExport>()("belay/AccountExport", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const accounts = yield* Accounts
    const config = yield* AppConfig

    const networksOf = (accountId: number) => sql`SELECT id FROM networks WHERE account_id = ${accountId}`

    const streamFor = (account: { readonly id: number; readonly name: string; readonly status: string; readonly createdAt: Date }) =>
      Stream.suspend(() => {
        const counts: Record<string, number> = {}
        const counted = (kind: ExportKind, value: unknown) => {
          counts[kind] = (counts[kind] ?? 0) + 1
          return line(kind, value)
        }
        const a = account.id

        const networks = paged<NetworkRow, number>(0, (after) =>
          sql<NetworkRow>`
            SELECT id, name, host, port, tls, tls_insecure AS "tlsInsecure", nick, username, realname,
                   server_password_enc IS NOT NULL AS "hasServerPassword", sasl_password_enc IS NOT NULL AS "hasSasl",
                   enabled, away_message AS "awayMessage", created_at AS "createdAt"
            FROM networks WHERE account_id = ${a} AND id > ${after} ORDER BY id LIMIT ${PAGE}`, (r) => r.id, (r) =>
          counted("network", { ...r, createdAt: iso(r.createdAt) }))

        const channels = paged<{ id: number; networkId: number; name: string; hasKey: boolean }, number>(0, (after) =>
          sql`
            SELECT id, network_id AS "networkId", name, key_enc IS NOT NULL AS "hasKey" FROM channels
            WHERE network_id IN (${networksOf(a)}) AND id > ${after} ORDER BY id LIMIT ${PAGE}`, (r) => r.id, (r) =>
          counted("channel", { networkId: r.networkId, name: r.name, hasKey: r.hasKey }))

        /** Rows keyed (network_id, folded name): nick notes, relay bots, read markers. */
        type Keyed = { readonly networkId: number; readonly folded: string }
        const byNetwork = <R extends Keyed>(
          query: (afterNetwork: number, afterFolded: string) => Effect.Effect<ReadonlyArray<R>, SqlError.SqlError>,
          render: (row: R) => string
        ) => paged<R, readonly [number, string]>([0, ""], ([n, f]) => query(n, f), (r) => [r.networkId, r.folded], render)

        const notes = byNetwork<Keyed & { nick: string; note: string; updatedAt: Date }>((n, f) =>
          sql`
            SELECT network_id AS "networkId", nick_folded AS folded, nick, note, updated_at AS "updatedAt" FROM nick_notes
            WHERE network_id IN (${networksOf(a)}) AND (network_id, nick_folded) > (${n}, ${f})
            ORDER BY network_id, nick_folded LIMIT ${PAGE}`, (r) =>
          counted("nick-note", { networkId: r.networkId, nick: r.nick, note: r.note, updatedAt: iso(r.updatedAt) }))

        const bots = byNetwork<Keyed & { nick: string; pattern: string | null; updatedAt: Date }>((n, f) =>
          sql`
            SELECT network_id AS "networkId", nick_folded AS folded, nick, pattern, updated_at AS "updatedAt" FROM relay_bots
            WHERE network_id IN (${networksOf(a)}) AND (network_id, nick_folded) > (${n}, ${f})
            ORDER BY network_id, nick_folded LIMIT ${PAGE}`, (r) =>
          counted("relay-bot", { networkId: r.networkId, nick: r.nick, pattern: r.pattern, updatedAt: iso(r.updatedAt) }))

        const markers = byNetwork<Keyed & { target: string | null; messageId: number; updatedAt: Date }>((n, f) =>
          sql`
            SELECT m.network_id AS "networkId", m.target_folded AS folded, b.target, m.message_id AS "messageId",
                   m.updated_at AS "updatedAt"
            FROM read_markers m LEFT JOIN buffers b ON b.network_id = m.network_id AND b.target_folded = m.target_folded
            WHERE m.network_id IN (${networksOf(a)}) AND (m.network_id, m.target_folded) > (${n}, ${f})
            ORDER BY m.network_id, m.target_folded LIMIT ${PAGE}`, (r) =>
          counted("read-marker", { networkId: r.networkId, target: r.target ?? r.folded, messageId: r.messageId, updatedAt: iso(r.updatedAt) }))

        // What the member chose per buffer and the web client's settings (services/preferences/).
        const choices = byNetwork<Keyed & { target: string; pinned: boolean; muted: boolean; detached: boolean; notify: string }>((n, f) =>
          sql`
            SELECT network_id AS "networkId", target_folded AS folded, target, pinned, muted, detached, notify
            FROM buffer_preferences WHERE account_id = ${a} AND (network_id, target_folded) > (${n}, ${f})
            ORDER BY network_id, target_folded LIMIT ${PAGE}`, (r) =>
          counted("buffer-preference", { networkId: r.networkId, target: r.target, pinned: r.pinned, muted: r.muted, detached: r.detached, notify: r.notify }))
        const settings = Stream.fromIterableEffect(
          Effect.map(sql<{ document: unknown }>`SELECT document FROM client_preferences WHERE account_id = ${a}`,
            (rows) => rows.map((r) => counted("client-preferences", r.document))))
        // The files' metadata and where each is served (the bytes stay at their URL): docs/decisions/uploads.md.
        const files = paged<
          { id: string; name: string; contentType: string; size: number; sha256: Buffer; createdAt: Date },
          string
        >("", (after) =>
          sql`
            SELECT id, name, content_type AS "contentType", size, sha256, created_at AS "createdAt" FROM uploads
            WHERE account_id = ${a} AND id > ${after} ORDER BY id LIMIT ${PAGE}`, (r) => r.id, (r) =>
          counted("upload", {
            id: r.id,
            name: r.name,
            contentType: r.contentType,
            size: r.size,
            sha256: r.sha256.toString("base64url"),
            createdAt: iso(r.createdAt),
            url: `${config.publicBaseUrl._tag === "Some" ? config.publicBaseUrl.value : ""}${uploadPath(r.id, r.name)}`
          }))

        // The history, the one kind that grows without end, is rendered by PostgreSQL (see CHUNK_CHARS): each page
        // arrives as a few strings of LINES_PER_STRING lines (with their count and last id). The record is a
        // message's everywhere (the MCP message record): `id`, `networkId`, `target`, `time` (UTC, milliseconds, as
        // toIsoTime writes it), `kind`, `nick`, `text`, `self`, and `numeric` / `encrypted` only where they apply.
        const messagesOf = (buffer: BufferRow) =>
          Stream.unfoldChunkEffect(Option.some(0), (after: Option.Option<number>) =>
            Option.isNone(after) ? Effect.succeed(Option.none()) : Effect.map(
              sql<{ readonly n: number; readonly last: number; readonly text: string }>`
                WITH page AS (
                  SELECT m.id, '{"kind":"message","message":' || (
                    jsonb_build_object(
                      'id', m.id, 'networkId', ${buffer.networkId}::int8, 'target', ${buffer.target}::text,
                      'time', to_char(m.time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                      'kind', m.kind, 'nick', m.nick, 'text', m.text, 'self', m.self)
                    || CASE WHEN m.numeric IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('numeric', m.numeric) END
                    || CASE WHEN m.encryption = 'plain' THEN '{}'::jsonb
                            ELSE jsonb_build_object('encrypted', m.encryption = 'decrypted') END
                  )::text || '}' || chr(10) AS line
                  FROM messages m WHERE m.buffer_id = ${buffer.id} AND m.id > ${after.value} ORDER BY m.id LIMIT ${HISTORY_PAGE}
                ),
                numbered AS (SELECT id, line, row_number() OVER (ORDER BY id) AS k FROM page)
                SELECT count(*)::int AS n, max(id) AS last, string_agg(line, '' ORDER BY id) AS text
                FROM numbered GROUP BY (k - 1) / ${LINES_PER_STRING} ORDER BY min(id)`,
              (groups) => {
                let n = 0
                let last = 0
                for (const group of groups) {
                  n += group.n
                  last = Math.max(last, group.last)
                }
                if (n === 0) return Option.none()
                counts["message"] = (counts["message"] ?? 0) + n
                return Option.some([
                  Chunk.unsafeFromArray(groups.map((group) => group.text)),
                  n < HISTORY_PAGE ? Option.none<number>() : Option.some(last)
                ] as const)
              }
            ))

        // Buffers a page at a time too; each is followed by its own history.
        const history = Stream.flatMap(
          pagedRows<BufferRow, number>(0, (after) =>
            sql<BufferRow>`
              SELECT id, network_id AS "networkId", target, kind AS type, last_message_at AS "lastMessageAt",
                     e2e_key_enc IS NOT NULL AS encrypted
              FROM buffers WHERE network_id IN (${networksOf(a)}) AND id > ${after} ORDER BY id LIMIT ${PAGE}`,
            (r) => r.id),
          (buffer) =>
            Stream.concat(
              Stream.succeed(counted("buffer", {
                networkId: buffer.networkId,
                target: buffer.target,
                type: buffer.type,
                lastMessageAt: iso(buffer.lastMessageAt),
                encrypted: buffer.encrypted
              })),
              messagesOf(buffer)
            )
        )

        const header = Stream.fromEffect(Effect.map(Clock.currentTimeMillis, (now) =>
          line("archive", {
            format: EXPORT_FORMAT,
            version: EXPORT_VERSION,
            account: { name: account.name, status: account.status, createdAt: iso(account.createdAt) },
            exportedAt: new Date(now).toISOString()
          })))
        const end = Stream.sync(() => line("end", { counts }))
        return [networks, channels, notes, bots, markers, choices, settings, files, history, end].reduce((all, next) => Stream.concat(all, next), header)
      })

    /** The export of account `name`; AccountNotFound before any line when there is none (or it is being deleted). */
    const byName = Effect.fn("AccountExport.byName")(function*(name: string) {
      const account = yield* accounts.require(name)
      return streamFor(account)
    })

    const byId = Effect.fn("AccountExport.byId")(function*(accountId: number) {
      const account = yield* accounts.findById(accountId)
      if (Option.isNone(account)) return yield* new AccountNotFound({ name: `#${accountId}` })
      return streamFor(account.value)
    })

    return { byName, byId } as const
  }),
  dependencies: [Accounts.Default]
}) {}

/**
 * Writes `chunks` to `out` one at a time, waiting for `drain` whenever the socket's buffer is full, so the producer
 * never runs ahead of the peer; fails when the peer goes away mid-way.
 */
export const writeTo = <E>(
  chunks: Stream.Stream<string, E>,
  out: NodeJS.WritableStream & { readonly destroyed: boolean; once: (e: string, f: () => void) => unknown; off: (e: string, f: () => void) => unknown }
): Effect.Effect<void, E | PeerGone> =>
  Stream.runForEach(chunks, (chunk) =>
    Effect.async<void, PeerGone>((resume) => {
      if (out.destroyed) return resume(Effect.fail(new PeerGone()))
      if (out.write(chunk)) return resume(Effect.void)
      const onDrain = () => {
        out.off("close", onClose)
        resume(Effect.void)
      }
      const onClose = () => {
        out.off("drain", onDrain)
        resume(Effect.fail(new PeerGone()))
      }
      out.once("drain", onDrain)
      out.once("close", onClose)
      return Effect.sync(() => {
        out.off("drain", onDrain)
        out.off("close", onClose)
      })
    }))

export class PeerGone extends Data.TaggedError("PeerGone")<{}> {
  override get message() {
    return "the reader of the export went away"
  }
}
