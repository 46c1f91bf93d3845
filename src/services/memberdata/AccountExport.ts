/**
 * AccountExport: the member's data as one JSON Lines stream (docs/decisions/leaving.md "The export: one JSON Lines
 * stream, a `kind` on every line"), for Settings › Export and `belay account export NAME > FILE`. Every line is
 * `{"kind": K, "<K in camelCase>": {...}}`: first the `archive` line (format, version, the account, when), then the
 * networks (no server password, no SASL: only whether they are set), the channels to join (no keys), nick notes,
 * relay bots, read markers, then each buffer followed by its messages oldest first, and an `end` line with the count of
 * each kind, so a file cut short is told from a whole one. No secret of any kind: no password, token, key or hash.
 *
 * Constant memory: every kind is read in keyset pages of PAGE rows (one short query each, no transaction held open),
 * and a page becomes one string that the writer (`writeTo`) hands to the socket only when the socket has drained, so
 * the process holds one page at a time however long the history is. Rows written during the export may or may not be
 * in it; each page is consistent.
 *
 * Concurrency rule: each call of `lines` is its own stream with its own counters; any number may run at once.
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { Chunk, Clock, Data, Effect, Option, Stream } from "effect"
import { toIsoTime } from "../../schema/Ids.js"
import { Accounts, AccountNotFound } from "../identity/Accounts.js"

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

interface MessageRow {
  readonly id: number
  readonly time: Date
  readonly kind: string
  readonly nick: string | null
  readonly text: string
  readonly numeric: string | null
  readonly self: boolean
  readonly encryption: string
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

/** The same, each page rendered as one string. */
const paged = <R, K>(
  start: K,
  page: (after: K) => Effect.Effect<ReadonlyArray<R>, SqlError.SqlError>,
  keyOf: (row: R) => K,
  render: (row: R) => string
): Stream.Stream<string, SqlError.SqlError> =>
  Stream.mapChunks(pagedRows(start, page, keyOf), (rows) => {
    let text = ""
    for (const row of rows) text += render(row)
    return Chunk.of(text)
  })

export class AccountExport extends Effect.Service<AccountExport>()("belay/AccountExport", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const accounts = yield* Accounts

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

        const messagesOf = (buffer: BufferRow) =>
          paged<MessageRow, number>(0, (after) =>
            sql<MessageRow>`
              SELECT id, time, kind, nick, text, numeric, self, encryption FROM messages
              WHERE buffer_id = ${buffer.id} AND id > ${after} ORDER BY id LIMIT ${PAGE}`, (r) => r.id, (m) =>
            counted("message", {
              id: m.id,
              networkId: buffer.networkId,
              target: buffer.target,
              time: toIsoTime(m.time),
              kind: m.kind,
              nick: m.nick,
              text: m.text,
              self: m.self,
              ...(m.numeric !== null ? { numeric: m.numeric } : {}),
              ...(m.encryption !== "plain" ? { encrypted: m.encryption === "decrypted" } : {})
            }))

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
        return [networks, channels, notes, bots, markers, history, end].reduce((all, next) => Stream.concat(all, next), header)
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
