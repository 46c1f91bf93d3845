/**
 * The newest pages kept in memory (RecentPages) against a real database, over rows stored by the real
 * MessageWriter: every page MessageHistory answers equals the page the index gives (`read` straight from SQL here),
 * whether it came from memory or not, across later batches, the DEPTH bound, a load racing a batch, and a removed
 * network.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { Accounts } from "../../src/services/Accounts.js"
import { MessageHistory, type StoredMessage } from "../../src/services/MessageHistory.js"
import { MessageWriter } from "../../src/services/MessageWriter.js"
import { Networks } from "../../src/services/Networks.js"
import { DEPTH, RecentPages } from "../../src/services/RecentPages.js"
import { eventually } from "../support/Eventually.js"
import { message, seedNetworks as seed, T0 } from "../support/MessageFixtures.js"
import { describeMode, TestDatabaseLive } from "../support/TestDatabase.js"

/** The page straight from the table, oldest first: what any answer must equal. */
const fromTable = (networkId: number, targetFolded: string, before: number | null, limit: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<StoredMessage>`
      SELECT m.id, b.network_id AS "networkId", b.target, m.time, m.kind, m.nick, m.text, m.numeric, m.self,
             m.encryption
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

    it.scoped("restricted to the networks written here (a cluster node), others are read from the table", () =>
      Effect.gen(function*() {
        const { networkIds: [here, elsewhere] } = yield* seed(2)
        const writer = yield* MessageWriter
        const pages = yield* RecentPages
        for (let i = 1; i <= 5; i++) {
          yield* writer.append(message(here!, "#r", `h${i}`, { time: new Date(T0 + i) }))
          yield* writer.append(message(elsewhere!, "#r", `e${i}`, { time: new Date(T0 + i) }))
        }
        yield* writer.flush
        yield* page(here!, "#r", null, 10)
        yield* page(elsewhere!, "#r", null, 10)
        const keptBoth = pages.size()
        pages.restrictTo((networkId) => networkId === here)
        try {
          // Another node stores rows of `elsewhere` straight into the table: this node's answer has them at once.
          const sql = yield* SqlClient.SqlClient
          yield* sql`
            INSERT INTO messages (buffer_id, time, kind, nick, text)
            SELECT id, now(), 'privmsg', 'other', 'from another node' FROM buffers
            WHERE network_id = ${elsewhere!} AND target_folded = '#r'`
          const answered = yield* page(elsewhere!, "#r", null, 10)
          expect(answered).toEqual(yield* fromTable(elsewhere!, "#r", null, 10))
          expect(answered.map((m) => m.text)).toContain("from another node")
          // Forgetting a network drops its pages; the network written here keeps being served from memory.
          pages.forget(elsewhere!)
          expect(pages.size()).toBe(keptBoth - 5)
          expect(yield* page(here!, "#r", null, 10)).toEqual(yield* fromTable(here!, "#r", null, 10))
          expect(pages.size()).toBe(keptBoth - 5)
        } finally {
          pages.restrictTo(() => true)
        }
      }))

  })
})
