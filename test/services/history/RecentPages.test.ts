/**
 * The newest pages kept in memory (RecentPages) against a real database, over rows stored by the real
 * MessageWriter: every page MessageHistory answers equals the page the index gives (`read` straight from SQL here),
 * whether it came from memory or not, across later batches, the DEPTH bound, a load racing a batch, and a removed
 * network.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { MessageHistory, type StoredMessage } from "../../../src/services/history/MessageHistory.js"
import { MessageWriter } from "../../../src/services/history/MessageWriter.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import type { StoredRow } from "../../../src/services/history/MessageRow.js"
import { DEPTH, RecentPages } from "../../../src/services/history/RecentPages.js"
import { eventually } from "../../support/Eventually.js"
import { message, seedNetworks as seed, T0 } from "../../support/MessageFixtures.js"
import { describeMode, TestDatabaseLive } from "../../support/TestDatabase.js"

/** The page straight from the table, oldest first: what any answer must equal. */
const fromTable = (networkId: number, targetFolded: string, before: number | null, limit: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<StoredMessage>`
      SELECT m.id, b.network_id AS "networkId", b.target, m.time, m.kind, m.nick, m.text, m.numeric, m.self,
             m.encryption, m.msgid, m.reply_to AS "replyTo", m.redacted
      FROM messages m JOIN buffers b ON b.id = m.buffer_id
      WHERE b.network_id = ${networkId} AND b.target_folded = ${targetFolded}
        ${before === null ? sql`` : sql`AND m.id < ${before}`}
      ORDER BY m.id DESC LIMIT ${limit}`
    return [...rows].reverse()
  })

const page = (networkId: number, targetFolded: string, before: number | null, limit: number) =>
  Effect.flatMap(MessageHistory, (history) =>
    history.recent(networkId, targetFolded, { before: Option.fromNullable(before), limit }))

describe(`RecentPages on ${describeMode}`, () => {
  it.layer(
    Layer.mergeAll(MessageWriter.Default, MessageHistory.Default, RecentPages.Default, Networks.Default, Accounts.Default).pipe(
      Layer.provideMerge(TestDatabaseLive())
    ),
    { timeout: 120_000 }
  )((it) => {
    it.scoped("every page equals the table's, before and after later batches, and the buffer keeps its first name", () =>
      Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const writer = yield* MessageWriter
        const pages = yield* RecentPages
        for (let i = 1; i <= 30; i++) yield* writer.append(message(net!, "#Kept", `k${i}`, { time: new Date(T0 + i) }))
        yield* writer.flush

        const before = pages.size()
        const first = yield* page(net!, "#kept", null, 10)
        expect(first).toEqual(yield* fromTable(net!, "#kept", null, 10))
        // The newest page read from the table is kept.
        expect(pages.size()).toBe(before + 10)

        // Later rows, one spelled "#KEPT": the kept page grows and still shows the buffer's name.
        for (let i = 31; i <= 40; i++) {
          yield* writer.append(message(net!, i === 35 ? "#KEPT" : "#Kept", `k${i}`, { time: new Date(T0 + i) }))
        }
        yield* writer.flush
        expect(pages.size()).toBe(before + 20)
        const newest = yield* page(net!, "#kept", null, 15)
        expect(newest.map((m) => m.text)).toEqual(Array.from({ length: 15 }, (_, i) => `k${26 + i}`))
        expect(newest).toEqual(yield* fromTable(net!, "#kept", null, 15))
        expect(new Set(newest.map((m) => m.target))).toEqual(new Set(["#Kept"]))

        // Paging back through what is kept, and past the start of the buffer.
        const older = yield* page(net!, "#kept", newest[0]!.id, 20)
        expect(older).toEqual(yield* fromTable(net!, "#kept", newest[0]!.id, 20))
        const oldest = yield* page(net!, "#kept", older[0]!.id, 20)
        expect(oldest.map((m) => m.text)).toEqual(["k1", "k2", "k3", "k4", "k5"])
      }))

    it.scoped("a page asked again while its buffer is unchanged is the same array; a stored row or another page makes a new one", () =>
      Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const writer = yield* MessageWriter
        for (let i = 1; i <= 12; i++) yield* writer.append(message(net!, "#same", `s${i}`, { time: new Date(T0 + i) }))
        yield* writer.flush
        yield* page(net!, "#same", null, 5) // loads the buffer into memory
        const kept = yield* page(net!, "#same", null, 5)
        expect(yield* page(net!, "#same", null, 5)).toBe(kept)
        const wider = yield* page(net!, "#same", null, 6)
        expect(wider).not.toBe(kept)
        expect(wider.slice(1)).toEqual(kept)

        yield* writer.append(message(net!, "#same", "s13", { time: new Date(T0 + 13) }))
        yield* writer.flush
        const after = yield* page(net!, "#same", null, 6)
        expect(after).not.toBe(wider)
        expect(after.map((m) => m.text)).toEqual(["s8", "s9", "s10", "s11", "s12", "s13"])
        expect(after).toEqual(yield* fromTable(net!, "#same", null, 6))
      }))

    it.scoped("a buffer longer than DEPTH keeps its newest DEPTH; pages below them come from the index", () =>
      Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const writer = yield* MessageWriter
        const pages = yield* RecentPages
        const total = DEPTH + 120
        for (let i = 1; i <= total; i++) yield* writer.append(message(net!, "#deep", `d${i}`))
        yield* writer.flush

        const before = pages.size()
        expect(yield* page(net!, "#deep", null, 100)).toEqual(yield* fromTable(net!, "#deep", null, 100))
        expect(pages.size()).toBe(before + 100)
        // A larger newest page than what is kept is read, and kept instead: the largest the interface allows is DEPTH.
        expect(yield* page(net!, "#deep", null, 500)).toEqual(yield* fromTable(net!, "#deep", null, 500))
        expect(pages.size()).toBe(before + DEPTH)
        expect(yield* page(net!, "#deep", null, 250)).toEqual(yield* fromTable(net!, "#deep", null, 250))
        // A page reaching below what is kept is read from the table, and is the same page.
        const all = yield* fromTable(net!, "#deep", null, total)
        const deep = all[200]!.id
        expect(yield* page(net!, "#deep", deep, 150)).toEqual(yield* fromTable(net!, "#deep", deep, 150))

        // New rows push the oldest kept ones out; the count stays at DEPTH.
        for (let i = 1; i <= 7; i++) yield* writer.append(message(net!, "#deep", `e${i}`))
        yield* writer.flush
        expect(pages.size()).toBe(before + DEPTH)
        expect(yield* page(net!, "#deep", null, 500)).toEqual(yield* fromTable(net!, "#deep", null, 500))
      }))

    it.scoped("a load that races a batch keeps every row once", () =>
      Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const writer = yield* MessageWriter
        const pages = yield* RecentPages
        for (let i = 1; i <= 5; i++) yield* writer.append(message(net!, "#race", `r${i}`))
        yield* writer.flush
        const loaded = yield* fromTable(net!, "#race", null, DEPTH)

        // A load begins; a batch is stored before it installs what it read, which already holds r4 and r5.
        const install = pages.beginLoad(net!, "#race", DEPTH)
        expect(Option.isSome(install)).toBe(true)
        const base = loaded[4]!
        const extra = (n: number): StoredMessage & { targetFolded: string } => ({
          ...base,
          id: base.id + n,
          text: `x${n}`,
          targetFolded: "#race"
        })
        pages.stored([{ ...loaded[3]!, targetFolded: "#race" }, { ...base, targetFolded: "#race" }, extra(1), extra(2)])
        // While it loads, nothing is answered from memory.
        expect(Option.isNone(pages.page(net!, "#race", Option.none(), 10))).toBe(true)
        Option.getOrThrow(install)(loaded)
        const kept = Option.getOrThrow(pages.page(net!, "#race", Option.none(), 10))
        expect(kept.map((m) => m.text)).toEqual(["r1", "r2", "r3", "r4", "r5", "x1", "x2"])
        // A batch that repeats what is kept changes nothing.
        pages.stored([extra(2)].map((m) => ({ ...m, text: "again" })))
        expect(Option.getOrThrow(pages.page(net!, "#race", Option.none(), 10)).map((m) => m.text)).toEqual(
          ["r1", "r2", "r3", "r4", "r5", "x1", "x2"]
        )
      }))

    it.scoped("a removed network's pages are dropped; a target without history is not kept", () =>
      Effect.gen(function*() {
        const { accountId, networkIds: [net] } = yield* seed()
        const writer = yield* MessageWriter
        const pages = yield* RecentPages
        const networks = yield* Networks
        const accounts = yield* Accounts
        for (let i = 1; i <= 12; i++) yield* writer.append(message(net!, "#gone", `g${i}`))
        yield* writer.flush
        const before = pages.size()
        expect((yield* page(net!, "#gone", null, 5)).length).toBe(5)
        expect(pages.size()).toBe(before + 5)
        expect(yield* page(net!, "#nobody-here", null, 5)).toEqual([])
        expect(pages.size()).toBe(before + 5)

        const name = Option.getOrThrow(yield* accounts.findById(accountId)).name
        yield* networks.remove(name, net!)
        // Removal reaches RecentPages through Networks' change feed, one fiber hop away.
        yield* eventually("the removed network's pages dropped", Effect.sync(() => pages.size()), (n) => n === before)
        expect(yield* page(net!, "#gone", null, 5)).toEqual([])
      }))

    it.scoped("another node's rows keep the page in memory, and it stays right across a handover", () =>
      Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const writer = yield* MessageWriter
        const pages = yield* RecentPages
        const sql = yield* SqlClient.SqlClient
        for (let i = 1; i <= 3; i++) yield* writer.append(message(net!, "#h", `seed${i}`, { time: new Date(T0 + i) }))
        yield* writer.flush
        const [buffer] = yield* sql<{ id: number }>`SELECT id FROM buffers WHERE network_id = ${net!} AND target_folded = '#h'`
        /** A row another node stores (straight SQL here), with the id it took earlier when given. */
        const store = (text: string, id?: number) =>
          (id === undefined
            ? sql<{ id: number }>`
              INSERT INTO messages (buffer_id, time, kind, nick, text)
              VALUES (${buffer!.id}, now(), 'privmsg', 'bob', ${text}) RETURNING id`
            : sql<{ id: number }>`
              INSERT INTO messages (id, buffer_id, time, kind, nick, text) OVERRIDING SYSTEM VALUE
              VALUES (${id}, ${buffer!.id}, now(), 'privmsg', 'bob', ${text}) RETURNING id`).pipe(
              Effect.map((rows) => rows[0]!.id)
            )
        const takeId = Effect.map(
          sql<{ id: number }>`SELECT nextval(pg_get_serial_sequence('messages', 'id'))::int AS id`,
          (rows) => rows[0]!.id
        )
        /**
         * What ClusterEvents does with another node's notice: the rows read back are shown to RecentPages, then
         * relayed, those at or below the newest relayed id left out as AnnouncedMarks leaves them out in a cluster.
         */
        let announced = 0
        const relay = (first: number, last: number) =>
          Effect.gen(function*() {
            const rows = yield* sql<StoredRow & { targetFolded: string }>`
              SELECT m.id, b.network_id AS "networkId", b.target, b.target_folded AS "targetFolded",
                     b.kind AS "bufferKind", m.time, m.kind, m.nick, m.text, m.numeric, m.self, m.encryption,
                 m.msgid, m.reply_to AS "replyTo", m.redacted
              FROM messages m JOIN buffers b ON b.id = m.buffer_id
              WHERE m.id BETWEEN ${first} AND ${last} AND b.network_id = ${net!} ORDER BY m.id`
            pages.heard(rows)
            const fresh = rows.filter((r) => r.id > announced)
            if (fresh.length > 0) announced = fresh[fresh.length - 1]!.id
            yield* writer.relay(fresh)
          })
        const texts = (rows: ReadonlyArray<StoredMessage>) => rows.map((m) => m.text)

        // Node b writes; this node (not running the network) keeps the page once read, and b's rows reach it.
        const b1 = yield* store("b1")
        yield* relay(b1, b1)
        expect(yield* page(net!, "#h", null, 10)).toEqual(yield* fromTable(net!, "#h", null, 10))
        const b2 = yield* store("b2")
        const b3 = yield* store("b3")
        yield* relay(b2, b3)
        const kept = pages.page(net!, "#h", Option.none(), 10)
        expect(Option.map(kept, texts)).toEqual(Option.some(["seed1", "seed2", "seed3", "b1", "b2", "b3"]))
        expect(Option.getOrThrow(kept)).toEqual(yield* fromTable(net!, "#h", null, 10))

        // A handover to node c: b's last batch took its id first but commits after c's first batch, which is
        // relayed first; then b's is never relayed (its id is below c's), only heard.
        const straggler = yield* takeId
        const c1 = yield* store("c1")
        yield* relay(c1, c1)
        expect(Option.map(pages.page(net!, "#h", Option.none(), 10), texts)).toEqual(
          Option.some(["seed1", "seed2", "seed3", "b1", "b2", "b3", "c1"])
        )
        yield* store("b-late", straggler)
        yield* relay(straggler, straggler)
        const after = yield* page(net!, "#h", null, 10)
        expect(texts(after)).toEqual(["seed1", "seed2", "seed3", "b1", "b2", "b3", "b-late", "c1"])
        expect(after).toEqual(yield* fromTable(net!, "#h", null, 10))
        // Kept again from that read, and served from memory.
        expect(pages.page(net!, "#h", Option.none(), 10)).toEqual(Option.some(after))

        // This node takes the network over (its own writer stores), while c's last batch, which took its id before
        // this node's row, commits after it: heard, never relayed; the page drops it and reads the table again.
        const late = yield* takeId
        yield* writer.append(message(net!, "#h", "mine", { time: new Date(T0 + 100) }))
        yield* writer.flush
        expect(Option.map(pages.page(net!, "#h", Option.none(), 3), texts)).toEqual(Option.some(["b-late", "c1", "mine"]))
        yield* store("c-late", late)
        yield* relay(late, late)
        expect(pages.page(net!, "#h", Option.none(), 3)).toEqual(Option.none())
        const taken = yield* page(net!, "#h", null, 4)
        expect(texts(taken)).toEqual(["b-late", "c1", "c-late", "mine"])
        expect(taken).toEqual(yield* fromTable(net!, "#h", null, 4))
      }))

    it.scoped("a row that commits while its buffer loads, below the load's newest, is merged in order", () =>
      Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const writer = yield* MessageWriter
        const pages = yield* RecentPages
        const sql = yield* SqlClient.SqlClient
        for (let i = 1; i <= 4; i++) yield* writer.append(message(net!, "#l", `l${i}`, { time: new Date(T0 + i) }))
        yield* writer.flush
        const rows = yield* fromTable(net!, "#l", null, 10)
        const [buffer] = yield* sql<{ id: number }>`SELECT id FROM buffers WHERE network_id = ${net!} AND target_folded = '#l'`
        // The load saw every row but the third; that one commits afterwards, heard from its notice, never relayed.
        const install = Option.getOrThrow(pages.beginLoad(net!, "#l", 10))
        yield* sql`DELETE FROM messages WHERE id = ${rows[2]!.id}`
        const loadSaw = rows.filter((_, i) => i !== 2)
        yield* sql`
          INSERT INTO messages (id, buffer_id, time, kind, nick, text) OVERRIDING SYSTEM VALUE
          VALUES (${rows[2]!.id}, ${buffer!.id}, now(), 'privmsg', 'bob', 'late')`
        const [late] = yield* sql<StoredRow & { targetFolded: string }>`
          SELECT m.id, b.network_id AS "networkId", b.target, b.target_folded AS "targetFolded",
                 b.kind AS "bufferKind", m.time, m.kind, m.nick, m.text, m.numeric, m.self, m.encryption,
                 m.msgid, m.reply_to AS "replyTo", m.redacted
          FROM messages m JOIN buffers b ON b.id = m.buffer_id WHERE m.id = ${rows[2]!.id}`
        pages.heard([late!])
        install(loadSaw)
        const kept = Option.getOrThrow(pages.page(net!, "#l", Option.none(), 10))
        expect(kept.map((m) => m.text)).toEqual(["l1", "l2", "late", "l4"])
        expect(kept.map((m) => m.id)).toEqual((yield* fromTable(net!, "#l", null, 10)).map((m) => m.id))
      }))

  })
})
