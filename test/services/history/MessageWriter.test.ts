/**
 * MessageWriter against a real database (embedded, or TEST_DATABASE_URL): append order per buffer, the batch
 * triggers on TestClock, outages, a full inbox, removed networks, refused rows and shutdown. Reads are
 * MessageHistory's (MessageHistory.test.ts); here rows are checked straight in the tables.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import {
  Chunk,
  Context,
  Effect,
  Exit,
  Fiber,
  Layer,
  Logger,
  LogLevel,
  Option,
  PubSub,
  Queue,
  Redacted,
  Schedule,
  Scope,
  TestClock,
  TestContext,
  TestServices
} from "effect"
import { AppConfig } from "../../../src/services/AppConfig.js"
import { SqlLive } from "../../../src/services/storage/Database.js"
import {
  defaultOptions,
  MessageWriter,
  messageWriterWith,
  type MessageWriterOptions
} from "../../../src/services/history/MessageWriter.js"
import { EventChannel } from "../../../src/services/storage/EventChannel.js"
import { Metrics } from "../../../src/services/upkeep/Metrics.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import { RecentPages } from "../../../src/services/history/RecentPages.js"
import { eventually } from "../../support/Eventually.js"
import { postgresProxy, serverAddress } from "../../support/PostgresProxy.js"
import { message, seedNetworks as seed, storedTexts, T0 } from "../../support/MessageFixtures.js"
import { describeMode, TestDatabaseLive } from "../../support/TestDatabase.js"

// --- fixtures ---

interface LogLine {
  readonly level: string
  readonly message: string
  readonly annotations: Record<string, unknown>
  readonly cause: string
}

/**
 * A MessageWriter built in the current scope, so its writer runs on the test's clock; its
 * log lines (debug and up) are captured.
 */
const startWriter = (options: Partial<MessageWriterOptions> = {}, sql?: Layer.Layer<SqlClient.SqlClient, unknown>) =>
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
    const writer = messageWriterWith({ ...defaultOptions, ...options }).pipe(
      Layer.provide(Logger.add(capture)),
      Layer.provide(Logger.minimumLogLevel(LogLevel.Debug))
    )
    const context = yield* Layer.build(sql === undefined ? writer : writer.pipe(Layer.provide(sql), Layer.orDie))
    return { store: Context.get(context, MessageWriter), logs }
  })

/** Ids and texts of a buffer, in id order, straight from the table. */
const storedRows = (networkId: number, targetFolded: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ id: number; text: string }>`
      SELECT m.id, m.text FROM messages m JOIN buffers b ON b.id = m.buffer_id
      WHERE b.network_id = ${networkId} AND b.target_folded = ${targetFolded} ORDER BY m.id`
  })

/** Real (live) time passes: the writer talks to a real database. */
const liveSleep = (millis: number) => TestServices.provideLive(Effect.sleep(millis))

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

describe(`MessageWriter on ${describeMode}`, () => {
  it.layer(Layer.mergeAll(Metrics.Default, Networks.Default, RecentPages.Default, EventChannel.Default).pipe(Layer.provideMerge(TestDatabaseLive())), {
    timeout: 120_000
  })((it) => {
    it.scoped("keeps append order per buffer across interleaved buffers (1,200 rows, 3 buffers)", () =>
      Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const { store } = yield* startWriter()
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
          const rows = yield* storedRows(net!, folded)
          expect(rows.map((r) => r.text)).toEqual(appended[folded])
          // Ids grow with append order: id order and append order agree.
          expect(rows.map((r) => r.id)).toEqual([...rows.map((r) => r.id)].sort((a, b) => a - b))
        }
        expect((yield* storedMetric) - before).toBe(1200)
      }))

    it.scoped("flush resolves at once when nothing is pending, and stores what was appended before it", () =>
      Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const { store } = yield* startWriter()
        yield* store.flush
        yield* store.append(message(net!, "#x", "one"))
        yield* store.flush
        expect(yield* storedTexts(net!, "#x")).toEqual(["one"])
      }))

    it.scoped("stores a lone row 100 ms after it was appended, not before (TestClock)", () =>
      ownClock(Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const { store } = yield* startWriter()
        yield* store.append(message(net!, "#timer", "tick"))
        // The writer parks on the 100 ms deadline (the only sleep on this fresh clock).
        yield* eventually("the writer waiting on the clock", TestClock.sleeps(), (s) => s.length > 0, "10 seconds")
        yield* TestClock.adjust("99 millis")
        yield* liveSleep(50)
        expect(yield* storedTexts(net!, "#timer")).toEqual([])
        yield* TestClock.adjust("1 millis")
        yield* eventually("the row stored", storedTexts(net!, "#timer"), (t) => t.length === 1, "10 seconds")
        expect(yield* storedTexts(net!, "#timer")).toEqual(["tick"])
      })))

    it.scoped("a batch goes out at 500 pending rows without waiting for the interval (TestClock)", () =>
      ownClock(Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const { store } = yield* startWriter()
        for (let i = 0; i < 500; i++) yield* store.append(message(net!, "#full", `r${i}`))
        // The clock never moves: only the size trigger can store these.
        yield* eventually("500 rows stored", storedTexts(net!, "#full"), (t) => t.length === 500, "10 seconds")
      })))

    it.scoped("a buffer keeps its first-seen display casing", () =>
      Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const { store } = yield* startWriter()
        yield* store.append(message(net!, "#Belay", "one"))
        yield* store.flush
        yield* store.append(message(net!, "#BELAY", "two"))
        yield* store.flush
        const sql = yield* SqlClient.SqlClient
        const buffers = yield* sql<{ target: string }>`
          SELECT target FROM buffers WHERE network_id = ${net!} AND target_folded = '#belay'`
        expect(buffers.map((b) => b.target)).toEqual(["#Belay"])
        expect(yield* storedTexts(net!, "#belay")).toEqual(["one", "two"])
      }))

    it.scoped("outage: rows are kept, a warning logged, retried on the clock; nothing lost, order kept", () =>
      ownClock(Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const { logs, store } = yield* startWriter()
        yield* store.append(message(net!, "#up", "before"))
        yield* store.flush
        const restore = yield* outage
        for (let i = 0; i < 10; i++) yield* store.append(message(net!, i % 2 ? "#up" : "#down", `a${i}`))
        const flushing = yield* Effect.fork(store.flush)
        yield* eventually("a warning", Effect.sync(() => logs), (ls) => ls.some((l) => l.level === "WARN"), "10 seconds")
        const warning = logs.find((l) => l.level === "WARN")!
        expect(warning.message).toContain("could not store messages")
        expect(warning.annotations.error).toMatch(/messages.*does not exist.*42P01/)
        // Still accepting while the database is away.
        for (let i = 10; i < 20; i++) yield* store.append(message(net!, i % 2 ? "#up" : "#down", `a${i}`))
        expect(flushing.unsafePoll()).toBeNull()
        yield* restore
        // Time moves in steps until the backoff lets the writer try again.
        yield* eventually("the flush done", Effect.sync(() => flushing.unsafePoll() !== null), (done) => done, "10 seconds", TestClock.adjust("1 second"))
        yield* store.flush
        const all = Array.from({ length: 20 }, (_, i) => `a${i}`)
        expect(yield* storedTexts(net!, "#up")).toEqual(["before", ...all.filter((_, i) => i % 2)])
        expect(yield* storedTexts(net!, "#down")).toEqual(all.filter((_, i) => i % 2 === 0))
        expect(logs.some((l) => l.message.includes("stored again"))).toBe(true)
      })))

    it.scoped("a full buffer makes append wait (one warning), and nothing is lost", () =>
      ownClock(Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const { logs, store } = yield* startWriter({ bufferRows: 10, batchRows: 5 })
        const restore = yield* outage
        const appender = yield* Effect.fork(
          Effect.forEach(Array.from({ length: 40 }, (_, i) => i), (i) => store.append(message(net!, "#flood", `f${i}`)), {
            discard: true
          })
        )
        yield* eventually("the buffer-full warning", Effect.sync(() => logs.some((l) => l.message.includes("buffer full"))), (w) => w, "10 seconds")
        yield* liveSleep(50)
        expect(appender.unsafePoll()).toBeNull()
        expect(logs.filter((l) => l.message.includes("buffer full"))).toHaveLength(1)
        yield* restore
        yield* eventually("the appends done", Effect.sync(() => appender.unsafePoll() !== null), (done) => done, "10 seconds", TestClock.adjust("1 second"))
        yield* store.flush
        expect(yield* storedTexts(net!, "#flood")).toEqual(Array.from({ length: 40 }, (_, i) => `f${i}`))
      })))

    it.scoped("a removed network's rows are dropped (cached buffer id gone); the writer goes on", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { networkIds: [gone, kept] } = yield* seed(2)
        const { logs, store } = yield* startWriter()
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
        const { logs, store } = yield* startWriter()
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
        const { store } = yield* Scope.extend(startWriter(), scope)
        for (let i = 0; i < 3; i++) yield* store.append(message(net!, "#bye", `b${i}`))
        // The interval never elapses on this clock: only the shutdown flush can store them.
        yield* Scope.close(scope, Exit.void)
        expect(yield* storedTexts(net!, "#bye")).toEqual(["b0", "b1", "b2"])
      })))

    it.scoped("a batch whose commit answer is lost is stored once and announced once with its ids", () =>
      ownClock(Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        // The writer reaches the test database through a proxy that swallows the answer of one committed batch.
        const settings = yield* AppConfig
        const direct = Redacted.value(Option.getOrThrow(settings.databaseUrl))
        const proxy = yield* postgresProxy(serverAddress(direct))
        const throughProxy = Layer.succeed(AppConfig, {
          ...settings,
          databaseUrl: Option.some(Redacted.make(proxy.url(new URL(direct).pathname.slice(1))))
        })
        const { logs, store } = yield* startWriter({}, SqlLive.pipe(Layer.provide(throughProxy)))
        const announced = yield* PubSub.subscribe(store.stored)
        const texts = Array.from({ length: 10 }, (_, i) => `r${i}`)
        for (const text of texts) yield* store.append(message(net!, "#unsure", text))
        const cut = yield* Effect.fork(proxy.loseNextAnswer("INSERT INTO messages"))
        const flushing = yield* Effect.fork(store.flush)
        yield* eventually("the flush done", Effect.sync(() => flushing.unsafePoll() !== null), (done) => done, "20 seconds", TestClock.adjust("1 second"))
        expect(cut.unsafePoll()).not.toBeNull()
        const rows = yield* storedRows(net!, "#unsure")
        expect(rows.map((r) => r.text)).toEqual(texts)
        const heard = Chunk.toReadonlyArray(yield* Queue.takeAll(announced)).flat()
        expect(heard.map((r) => [r.id, r.text])).toEqual(rows.map((r) => [r.id, r.text]))
        expect(logs.some((l) => l.message.includes("had been stored; not storing it again"))).toBe(true)
      })))

    it.scoped("two writers on one database: another writer's batch between a lost answer and the retry stores nothing twice", () =>
      ownClock(Effect.gen(function*() {
        const { networkIds: [net, other] } = yield* seed(2)
        // Writer A reaches the database through a proxy that swallows one committed batch's answer; writer B (another
        // node, docs/decisions/several-nodes.md "Several nodes") stores a batch of its own before A retries.
        const settings = yield* AppConfig
        const direct = Redacted.value(Option.getOrThrow(settings.databaseUrl))
        const proxy = yield* postgresProxy(serverAddress(direct))
        const throughProxy = Layer.succeed(AppConfig, {
          ...settings,
          databaseUrl: Option.some(Redacted.make(proxy.url(new URL(direct).pathname.slice(1))))
        })
        const a = yield* startWriter({ retry: Schedule.spaced("10 seconds") }, SqlLive.pipe(Layer.provide(throughProxy)))
        const b = yield* startWriter()
        const announced = yield* PubSub.subscribe(a.store.stored)
        const texts = Array.from({ length: 10 }, (_, i) => `a${i}`)
        for (const text of texts) yield* a.store.append(message(net!, "#shared", text))
        const cut = yield* Effect.fork(proxy.loseNextAnswer("INSERT INTO messages"))
        const flushing = yield* Effect.fork(a.store.flush)
        yield* eventually("A's answer lost", Effect.sync(() => cut.unsafePoll() !== null), (done) => done, "20 seconds")
        yield* eventually(
          "A waiting to retry",
          Effect.sync(() => a.logs.some((l) => l.message.includes("keeping them and retrying"))),
          (seen) => seen,
          "20 seconds"
        )
        yield* b.store.append(message(other!, "#shared", "b0"))
        yield* b.store.flush
        expect((yield* storedRows(other!, "#shared")).map((r) => r.text)).toEqual(["b0"])
        yield* eventually("A's flush done", Effect.sync(() => flushing.unsafePoll() !== null), (done) => done, "20 seconds", TestClock.adjust("10 seconds"))
        const rows = yield* storedRows(net!, "#shared")
        expect(rows.map((r) => r.text)).toEqual(texts)
        const heard = Chunk.toReadonlyArray(yield* Queue.takeAll(announced)).flat()
        expect(heard.map((r) => [r.id, r.text])).toEqual(rows.map((r) => [r.id, r.text]))
        // B's batch pruned none of A's keys: A's batch key is still there, and so is B's.
        const sql = yield* SqlClient.SqlClient
        const [bRow] = yield* storedRows(other!, "#shared")
        for (const id of [rows[0]!.id, bRow!.id]) {
          const [keys] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM message_batches WHERE ${id}::bigint = ANY(ids)`
          expect(keys!.n).toBe(1)
        }
      })))

    it.scoped("closing the scope while the database is down gives up after the timeout and counts the loss", () =>
      ownClock(Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const scope = yield* Scope.make()
        const { logs, store } = yield* Scope.extend(startWriter({ shutdownTimeout: "2 seconds" }), scope)
        yield* outage
        for (let i = 0; i < 4; i++) yield* store.append(message(net!, "#lost", `l${i}`))
        const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
        yield* eventually("the scope closed", Effect.sync(() => closing.unsafePoll() !== null), (done) => done, "10 seconds", TestClock.adjust("500 millis"))
        yield* Fiber.join(closing)
        const lost = logs.find((l) => l.message.includes("at shutdown"))
        expect(lost?.annotations.lostRows).toBe(4)
      })))
  })
})
