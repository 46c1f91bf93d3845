import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import {
  Context,
  Effect,
  Exit,
  Fiber,
  Layer,
  Logger,
  LogLevel,
  Option,
  Scope,
  TestClock,
  TestContext,
  TestServices
} from "effect"
import { defaultOptions, layer, type MessageStoreOptions } from "../../src/services/MessageStore.js"
import { MessageStore, type NewMessage } from "../../src/services/MessageStoreApi.js"
import { Metrics } from "../../src/services/Metrics.js"
import { describeMode, TestDatabaseLive } from "../support/TestDatabase.js"

// --- fixtures ---

interface LogLine {
  readonly level: string
  readonly message: string
  readonly annotations: Record<string, unknown>
  readonly cause: string
}

/**
 * A MessageStore built in the current scope, so its writer runs on the test's clock; its
 * log lines (debug and up) are captured.
 */
const startStore = (options: Partial<MessageStoreOptions> = {}) =>
  Effect.gen(function*() {
    const logs: Array<LogLine> = []
    const capture = Logger.make(({ annotations, cause, logLevel, message }) => {
      const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
      logs.push({
        level: logLevel.label,
        message: text,
        annotations: Object.fromEntries(annotations),
        cause: String(cause)
      })
    })
    const context = yield* Layer.build(
      layer({ ...defaultOptions, ...options }).pipe(
        Layer.provide(Logger.add(capture)),
        Layer.provide(Logger.minimumLogLevel(LogLevel.Debug))
      )
    )
    return { store: Context.get(context, MessageStore), logs }
  })

let seq = 0
/** A fresh account with `count` networks. */
const seed = (count = 1) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [account] = yield* sql<{ id: number }>`
      INSERT INTO accounts (name, password_hash) VALUES (${`ms${process.pid}x${++seq}`}, 'x') RETURNING id`
    const networkIds: Array<number> = []
    for (let i = 0; i < count; i++) {
      const [network] = yield* sql<{ id: number }>`
        INSERT INTO networks (account_id, name, host, port, nick)
        VALUES (${account!.id}, ${`net${i}`}, 'irc.example.org', 6697, 'me') RETURNING id`
      networkIds.push(network!.id)
    }
    return { accountId: account!.id, networkIds }
  })

const T0 = Date.UTC(2025, 0, 31, 12, 0, 0)

const message = (networkId: number, target: string, text: string, extra: Partial<NewMessage> = {}): NewMessage => ({
  networkId,
  target,
  targetFolded: target.toLowerCase(),
  bufferKind: target.startsWith(":server:") ? "server" : target.startsWith("#") ? "channel" : "dm",
  time: new Date(T0),
  kind: "privmsg",
  nick: "alice",
  text,
  self: false,
  ...extra
})

/** Texts of a buffer, oldest first, straight from the table. */
const storedTexts = (networkId: number, targetFolded: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ text: string }>`
      SELECT m.text FROM messages m JOIN buffers b ON b.id = m.buffer_id
      WHERE b.network_id = ${networkId} AND b.target_folded = ${targetFolded} ORDER BY m.id`
    return rows.map((r) => r.text)
  })

/** Real (live) time passes: the writer talks to a real database. */
const liveSleep = (millis: number) => TestServices.provideLive(Effect.sleep(millis))

/** Polls until `check` holds, on live time; fails the test after `millis`. */
const eventually = <E, R>(check: Effect.Effect<boolean, E, R>, millis = 10_000, step: Effect.Effect<void> = Effect.void) =>
  Effect.gen(function*() {
    const deadline = Date.now() + millis
    while (!(yield* check)) {
      if (Date.now() > deadline) return yield* Effect.dieMessage("condition not reached in time")
      yield* step
      yield* liveSleep(10)
    }
  })

/** Takes the messages table away (every write fails) until the scope closes or `restore` runs. */
const outage = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  let down = true
  const restore = Effect.suspend(() => {
    if (!down) return Effect.void
    down = false
    return sql`ALTER TABLE messages_offline RENAME TO messages`.pipe(Effect.orDie)
  })
  yield* Effect.acquireRelease(sql`ALTER TABLE messages RENAME TO messages_offline`.pipe(Effect.orDie), () => restore)
  return restore
})

const storedMetric = Effect.gen(function*() {
  const text = yield* (yield* Metrics).render
  const match = /^belay_messages_stored_total (\d+)$/m.exec(text)
  return match ? Number(match[1]) : 0
})

/** Tests that drive time get a TestClock of their own (the layer's one is shared). */
const ownClock = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.provide(self, TestContext.TestContext)

describe(`MessageStore on ${describeMode}`, () => {
  it.layer(Layer.merge(TestDatabaseLive(), Metrics.Default), { timeout: 120_000 })((it) => {
    it.scoped("keeps append order per buffer across interleaved buffers (1,200 rows, 3 buffers)", () =>
      Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const { store } = yield* startStore()
        const before = yield* storedMetric
        const targets = ["#a", "#B", "carol"] as const
        const appended: Record<string, Array<string>> = { "#a": [], "#b": [], "carol": [] }
        for (let i = 0; i < 1200; i++) {
          const target = targets[(i * 7 + (i >> 3)) % 3]!
          const text = `m${i}`
          appended[target.toLowerCase()]!.push(text)
          yield* store.append(message(net!, target, text, { time: new Date(T0 + i) }))
        }
        yield* store.flush
        for (const folded of ["#a", "#b", "carol"]) {
          expect(yield* storedTexts(net!, folded)).toEqual(appended[folded])
          const page = yield* store.recent(net!, folded, { before: Option.none(), limit: 500 })
          expect(page.map((m) => m.text)).toEqual(appended[folded])
          expect(page.map((m) => m.id)).toEqual([...page.map((m) => m.id)].sort((a, b) => a - b))
        }
        expect((yield* storedMetric) - before).toBe(1200)
      }))

    it.scoped("flush resolves at once when nothing is pending, and stores what was appended before it", () =>
      Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const { store } = yield* startStore()
        yield* store.flush
        yield* store.append(message(net!, "#x", "one"))
        yield* store.flush
        expect(yield* storedTexts(net!, "#x")).toEqual(["one"])
      }))

    it.scoped("stores a lone row 100 ms after it was appended, not before (TestClock)", () =>
      ownClock(Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const { store } = yield* startStore()
        yield* store.append(message(net!, "#timer", "tick"))
        // The writer parks on the 100 ms deadline (the only sleep on this fresh clock).
        yield* eventually(Effect.map(TestClock.sleeps(), (s) => s.length > 0))
        yield* TestClock.adjust("99 millis")
        yield* liveSleep(50)
        expect(yield* storedTexts(net!, "#timer")).toEqual([])
        yield* TestClock.adjust("1 millis")
        yield* eventually(Effect.map(storedTexts(net!, "#timer"), (t) => t.length === 1))
        expect(yield* storedTexts(net!, "#timer")).toEqual(["tick"])
      })))

    it.scoped("a batch goes out at 500 pending rows without waiting for the interval (TestClock)", () =>
      ownClock(Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const { store } = yield* startStore()
        for (let i = 0; i < 500; i++) yield* store.append(message(net!, "#full", `r${i}`))
        // The clock never moves: only the size trigger can store these.
        yield* eventually(Effect.map(storedTexts(net!, "#full"), (t) => t.length === 500))
      })))

    it.scoped("recent pages backwards: newest `limit` before `before` (exclusive), oldest first", () =>
      Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const { store } = yield* startStore()
        for (let i = 1; i <= 10; i++) {
          yield* store.append(message(net!, "#Page", `p${i}`, { time: new Date(T0 + i * 1000) }))
        }
        yield* store.append(message(net!, "#other", "noise"))
        yield* store.append(message(net!, `:server:${net}`, "001 welcome", { kind: "numeric", numeric: "001", nick: null }))
        yield* store.flush

        const first = yield* store.recent(net!, "#page", { before: Option.none(), limit: 4 })
        expect(first.map((m) => m.text)).toEqual(["p7", "p8", "p9", "p10"])
        const second = yield* store.recent(net!, "#page", { before: Option.some(first[0]!.id), limit: 4 })
        expect(second.map((m) => m.text)).toEqual(["p3", "p4", "p5", "p6"])
        const third = yield* store.recent(net!, "#page", { before: Option.some(second[0]!.id), limit: 4 })
        expect(third.map((m) => m.text)).toEqual(["p1", "p2"])
        expect(yield* store.recent(net!, "#page", { before: Option.some(third[0]!.id), limit: 4 })).toEqual([])

        const m = first[3]!
        expect(m).toEqual({
          id: m.id,
          networkId: net,
          target: "#Page",
          time: new Date(T0 + 10_000),
          kind: "privmsg",
          nick: "alice",
          text: "p10",
          numeric: null,
          self: false,
          encryption: "plain"
        })
        expect(m.time).toBeInstanceOf(Date)

        const server = yield* store.recent(net!, `:server:${net}`, { before: Option.none(), limit: 100 })
        expect(server.map((s) => [s.kind, s.numeric, s.nick, s.text])).toEqual([["numeric", "001", null, "001 welcome"]])
        expect(yield* store.recent(net!, "#nobody", { before: Option.none(), limit: 100 })).toEqual([])
        expect(yield* store.recent(net! + 10_000, "#page", { before: Option.none(), limit: 100 })).toEqual([])
      }))

    it.scoped("search ANDs terms, filters by network, buffer and nick, newest first, only the account's", () =>
      Effect.gen(function*() {
        const mine = yield* seed(2)
        const [n1, n2] = mine.networkIds
        const theirs = yield* seed()
        const { store } = yield* startStore()
        let t = 0
        const say = (net: number, target: string, nick: string, text: string) =>
          store.append(message(net, target, text, { nick, time: new Date(T0 + ++t * 1000) }))
        yield* say(n1!, "#rust", "Alice", "the quick brown fox")
        yield* say(n1!, "#rust", "bob", "quick test only")
        yield* say(n1!, "#go", "[dan]", "a quick red fox")
        yield* say(n2!, "#rust", "Alice", "quick fox on the other network")
        yield* say(n1!, "dan", "{dan}", "fox says quick")
        yield* say(theirs.networkIds[0]!, "#rust", "Alice", "quick fox of another account")
        yield* store.flush

        const q = (query: string, filters: Partial<Parameters<typeof store.search>[0]> = {}) =>
          Effect.map(
            store.search({
              accountId: mine.accountId,
              query,
              networkId: Option.none(),
              targetFolded: Option.none(),
              nick: Option.none(),
              limit: 50,
              ...filters
            }),
            (rows) => rows.map((r) => r.text)
          )

        expect(yield* q("quick fox")).toEqual([
          "fox says quick",
          "quick fox on the other network",
          "a quick red fox",
          "the quick brown fox"
        ])
        expect(yield* q("FOX Quick", { limit: 2 })).toEqual(["fox says quick", "quick fox on the other network"])
        expect(yield* q("quick fox", { networkId: Option.some(n2!) })).toEqual(["quick fox on the other network"])
        expect(yield* q("quick", { networkId: Option.some(n1!), targetFolded: Option.some("#rust") })).toEqual([
          "quick test only",
          "the quick brown fox"
        ])
        expect(yield* q("quick", { nick: Option.some("ALICE") })).toEqual([
          "quick fox on the other network",
          "the quick brown fox"
        ])
        // RFC 1459 folding: [dan] and {DAN} are the same nick.
        expect(yield* q("fox", { nick: Option.some("{DAN}") })).toEqual(["fox says quick", "a quick red fox"])
        expect(yield* q("\"brown fox\"")).toEqual(["the quick brown fox"])
        expect(yield* q("quick -fox")).toEqual(["quick test only"])
        expect(yield* q("another account")).toEqual([])
        // Nothing a user types is a SQL error; a query without terms finds nothing.
        for (const odd of ["", "   ", "!!!", "\"", "'; DROP TABLE messages; --", "a & b | !c", "fox:*", "(((", "-", "or"]) {
          expect(Array.isArray(yield* q(odd))).toBe(true)
        }
        expect(yield* q("")).toEqual([])
        expect(yield* q("!!!")).toEqual([])
      }))

    it.scoped("listBuffers: channels and DMs with history, newest first, never server buffers", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const mine = yield* seed(2)
        const [n1, n2] = mine.networkIds
        const theirs = yield* seed()
        const { store } = yield* startStore()
        yield* store.append(message(n1!, "#old", "x", { time: new Date(T0 + 1000) }))
        yield* store.append(message(n1!, "#old", "y", { time: new Date(T0 + 5000) }))
        yield* store.append(message(n1!, "Bob", "hi", { time: new Date(T0 + 3000) }))
        yield* store.append(message(n2!, "#new", "z", { time: new Date(T0 + 9000) }))
        yield* store.append(message(n1!, `:server:${n1}`, "motd", { time: new Date(T0 + 20_000), kind: "numeric" }))
        yield* store.append(message(theirs.networkIds[0]!, "#theirs", "t", { time: new Date(T0 + 30_000) }))
        yield* store.flush
        // A buffer row without history (e.g. made by `belay channel encrypt`) is not listed.
        yield* sql`INSERT INTO buffers (network_id, target, target_folded, kind) VALUES (${n1!}, '#empty', '#empty', 'channel')`

        expect(yield* store.listBuffers(mine.accountId, Option.none())).toEqual([
          { networkId: n2, target: "#new", kind: "channel", lastMessageAt: new Date(T0 + 9000) },
          { networkId: n1, target: "#old", kind: "channel", lastMessageAt: new Date(T0 + 5000) },
          { networkId: n1, target: "Bob", kind: "dm", lastMessageAt: new Date(T0 + 3000) }
        ])
        expect((yield* store.listBuffers(mine.accountId, Option.some(n2!))).map((b) => b.target)).toEqual(["#new"])
        expect(yield* store.listBuffers(mine.accountId, Option.some(theirs.networkIds[0]!))).toEqual([])
      }))

    it.scoped("a buffer keeps its first-seen display casing", () =>
      Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const { store } = yield* startStore()
        yield* store.append(message(net!, "#Belay", "one"))
        yield* store.flush
        yield* store.append(message(net!, "#BELAY", "two"))
        yield* store.flush
        const rows = yield* store.recent(net!, "#belay", { before: Option.none(), limit: 10 })
        expect(rows.map((r) => [r.target, r.text])).toEqual([["#Belay", "one"], ["#Belay", "two"]])
      }))

    it.scoped("outage: rows are kept, a warning logged, retried on the clock; nothing lost, order kept", () =>
      ownClock(Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const { logs, store } = yield* startStore()
        yield* store.append(message(net!, "#up", "before"))
        yield* store.flush
        const restore = yield* outage
        for (let i = 0; i < 10; i++) yield* store.append(message(net!, i % 2 ? "#up" : "#down", `a${i}`))
        const flushing = yield* Effect.fork(store.flush)
        yield* eventually(Effect.sync(() => logs.some((l) => l.level === "WARN")))
        const warning = logs.find((l) => l.level === "WARN")!
        expect(warning.message).toContain("could not store messages")
        expect(warning.annotations.error).toMatch(/messages.*does not exist.*42P01/)
        // Still accepting while the database is away.
        for (let i = 10; i < 20; i++) yield* store.append(message(net!, i % 2 ? "#up" : "#down", `a${i}`))
        expect(flushing.unsafePoll()).toBeNull()
        yield* restore
        // Time moves in steps until the backoff lets the writer try again.
        yield* eventually(Effect.sync(() => flushing.unsafePoll() !== null), 10_000, TestClock.adjust("1 second"))
        yield* store.flush
        const all = Array.from({ length: 20 }, (_, i) => `a${i}`)
        expect(yield* storedTexts(net!, "#up")).toEqual(["before", ...all.filter((_, i) => i % 2)])
        expect(yield* storedTexts(net!, "#down")).toEqual(all.filter((_, i) => i % 2 === 0))
        expect(logs.some((l) => l.message.includes("stored again"))).toBe(true)
      })))

    it.scoped("a full buffer makes append wait (one warning), and nothing is lost", () =>
      ownClock(Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const { logs, store } = yield* startStore({ bufferRows: 10, batchRows: 5 })
        const restore = yield* outage
        const appender = yield* Effect.fork(
          Effect.forEach(Array.from({ length: 40 }, (_, i) => i), (i) => store.append(message(net!, "#flood", `f${i}`)), {
            discard: true
          })
        )
        yield* eventually(Effect.sync(() => logs.some((l) => l.message.includes("buffer full"))))
        yield* liveSleep(50)
        expect(appender.unsafePoll()).toBeNull()
        expect(logs.filter((l) => l.message.includes("buffer full"))).toHaveLength(1)
        yield* restore
        yield* eventually(Effect.sync(() => appender.unsafePoll() !== null), 10_000, TestClock.adjust("1 second"))
        yield* store.flush
        expect(yield* storedTexts(net!, "#flood")).toEqual(Array.from({ length: 40 }, (_, i) => `f${i}`))
      })))

    it.scoped("a removed network's rows are dropped (cached buffer id gone); the writer goes on", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { networkIds: [gone, kept] } = yield* seed(2)
        const { logs, store } = yield* startStore()
        yield* store.append(message(gone!, "#a", "a1"))
        yield* store.append(message(kept!, "#b", "b1"))
        yield* store.flush
        yield* sql`DELETE FROM networks WHERE id = ${gone!}`
        yield* store.append(message(gone!, "#a", "a2"))
        yield* store.append(message(kept!, "#b", "b2"))
        yield* store.append(message(gone!, "#never-seen", "a3"))
        yield* store.append(message(kept!, "#b", "b3"))
        yield* store.flush
        expect(yield* storedTexts(kept!, "#b")).toEqual(["b1", "b2", "b3"])
        const [orphans] = yield* sql<{ n: number }>`
          SELECT count(*) AS n FROM buffers WHERE network_id = ${gone!}`
        expect(orphans!.n).toBe(0)
        expect(logs.some((l) => l.level === "DEBUG" && l.message.includes("removed networks"))).toBe(true)
        yield* store.append(message(kept!, "#b", "b4"))
        yield* store.flush
        expect(yield* storedTexts(kept!, "#b")).toEqual(["b1", "b2", "b3", "b4"])
      }))

    it.scoped("a row the database refuses is dropped with a warning, not retried forever; NUL is replaced", () =>
      Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const { logs, store } = yield* startStore()
        yield* store.append(message(net!, "#p", "ok1"))
        // 5001 BC is before PostgreSQL's earliest timestamp: 22008, never accepted.
        yield* store.append(message(net!, "#p", "bad", { time: new Date(Date.UTC(-5000, 0, 1)) }))
        yield* store.append(message(net!, "#p", "nul\u0000byte"))
        yield* store.flush
        expect(yield* storedTexts(net!, "#p")).toEqual(["ok1", "nul\uFFFDbyte"])
        expect(logs.filter((l) => l.message.includes("refused"))).toHaveLength(1)
      }))

    it.effect("closing the scope flushes what is pending", () =>
      ownClock(Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const scope = yield* Scope.make()
        const { store } = yield* Scope.extend(startStore(), scope)
        for (let i = 0; i < 3; i++) yield* store.append(message(net!, "#bye", `b${i}`))
        // The interval never elapses on this clock: only the shutdown flush can store them.
        yield* Scope.close(scope, Exit.void)
        expect(yield* storedTexts(net!, "#bye")).toEqual(["b0", "b1", "b2"])
      })))

    it.scoped("closing the scope while the database is down gives up after the timeout and counts the loss", () =>
      ownClock(Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const scope = yield* Scope.make()
        const { logs, store } = yield* Scope.extend(startStore({ shutdownTimeout: "2 seconds" }), scope)
        yield* outage
        for (let i = 0; i < 4; i++) yield* store.append(message(net!, "#lost", `l${i}`))
        const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
        yield* eventually(Effect.sync(() => closing.unsafePoll() !== null), 10_000, TestClock.adjust("500 millis"))
        yield* Fiber.join(closing)
        const lost = logs.find((l) => l.message.includes("at shutdown"))
        expect(lost?.annotations.lostRows).toBe(4)
      })))
  })
})
