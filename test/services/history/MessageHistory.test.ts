/**
 * MessageHistory against a real database (embedded, or TEST_DATABASE_URL), over rows stored by the real
 * MessageWriter: paging of recent messages, search (the message text only; terms ANDed, quoted phrases as phrases;
 * the filters; only the account's networks) and the buffer listing.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { MessageHistory, type SearchQuery } from "../../../src/services/history/MessageHistory.js"
import { MessageWriter } from "../../../src/services/history/MessageWriter.js"
import { message, seedNetworks as seed, T0 } from "../../support/MessageFixtures.js"
import { describeMode, TestDatabaseLive } from "../../support/TestDatabase.js"

/** Search texts, newest first, over every network of `accountId` unless `filters` narrow it. */
const searchTexts = (accountId: number, query: string, filters: Partial<SearchQuery> = {}) =>
  Effect.flatMap(MessageHistory, (history) =>
    Effect.map(
      history.search({
        accountId,
        query,
        networkId: Option.none(),
        targetFolded: Option.none(),
        nick: Option.none(),
        limit: 50,
        ...filters
      }),
      (rows) => rows.map((r) => r.text)
    ))

describe(`MessageHistory on ${describeMode}`, () => {
  it.layer(Layer.mergeAll(MessageWriter.Default, MessageHistory.Default).pipe(Layer.provideMerge(TestDatabaseLive())), {
    timeout: 120_000
  })((it) => {
    it.scoped("recent pages backwards: newest `limit` before `before` (exclusive), oldest first", () =>
      Effect.gen(function*() {
        const { networkIds: [net] } = yield* seed()
        const writer = yield* MessageWriter
        const history = yield* MessageHistory
        for (let i = 1; i <= 10; i++) {
          yield* writer.append(message(net!, "#Page", `p${i}`, { time: new Date(T0 + i * 1000) }))
        }
        yield* writer.append(message(net!, "#other", "noise"))
        yield* writer.append(message(net!, `:server:${net}`, "001 welcome", { kind: "numeric", numeric: "001", nick: null }))
        yield* writer.flush

        const first = yield* history.recent(net!, "#page", { before: Option.none(), limit: 4 })
        expect(first.map((m) => m.text)).toEqual(["p7", "p8", "p9", "p10"])
        const second = yield* history.recent(net!, "#page", { before: Option.some(first[0]!.id), limit: 4 })
        expect(second.map((m) => m.text)).toEqual(["p3", "p4", "p5", "p6"])
        const third = yield* history.recent(net!, "#page", { before: Option.some(second[0]!.id), limit: 4 })
        expect(third.map((m) => m.text)).toEqual(["p1", "p2"])
        expect(yield* history.recent(net!, "#page", { before: Option.some(third[0]!.id), limit: 4 })).toEqual([])

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
          encryption: "plain",
          msgid: null,
          replyTo: null,
          redacted: false
        })
        expect(m.time).toBeInstanceOf(Date)

        const server = yield* history.recent(net!, `:server:${net}`, { before: Option.none(), limit: 100 })
        expect(server.map((s) => [s.kind, s.numeric, s.nick, s.text])).toEqual([["numeric", "001", null, "001 welcome"]])
        expect(yield* history.recent(net!, "#nobody", { before: Option.none(), limit: 100 })).toEqual([])
        expect(yield* history.recent(net! + 10_000, "#page", { before: Option.none(), limit: 100 })).toEqual([])
      }))

    it.scoped("search ANDs terms, filters by network, buffer and nick, newest first, only the account's", () =>
      Effect.gen(function*() {
        const mine = yield* seed(2)
        const [n1, n2] = mine.networkIds
        const theirs = yield* seed()
        const writer = yield* MessageWriter
        let t = 0
        const say = (net: number, target: string, nick: string, text: string) =>
          writer.append(message(net, target, text, { nick, time: new Date(T0 + ++t * 1000) }))
        yield* say(n1!, "#rust", "Alice", "the quick brown fox")
        yield* say(n1!, "#rust", "bob", "quick test only")
        yield* say(n1!, "#go", "[dan]", "a quick red fox")
        yield* say(n2!, "#rust", "Alice", "quick fox on the other network")
        yield* say(n1!, "dan", "{dan}", "fox says quick")
        yield* say(theirs.networkIds[0]!, "#rust", "Alice", "quick fox of another account")
        yield* writer.flush
        const q = (query: string, filters: Partial<SearchQuery> = {}) => searchTexts(mine.accountId, query, filters)

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
        expect(yield* q("quick -fox")).toEqual(["quick test only"])
        expect(yield* q("another account")).toEqual([])
        // Another account's network, named explicitly, finds nothing either.
        expect(yield* q("quick", { networkId: Option.some(theirs.networkIds[0]!) })).toEqual([])
        // Nothing a user types is a SQL error; a query without terms finds nothing.
        for (const odd of ["", "   ", "!!!", "\"", "'; DROP TABLE messages; --", "a & b | !c", "fox:*", "(((", "-", "or"]) {
          expect(Array.isArray(yield* q(odd))).toBe(true)
        }
        expect(yield* q("")).toEqual([])
        expect(yield* q("!!!")).toEqual([])
      }))

    it.scoped("search within times: before finds the newest matches before it past any number of newer ones; after and both", () =>
      Effect.gen(function*() {
        const { accountId, networkIds: [net] } = yield* seed()
        const writer = yield* MessageWriter
        // 400 matches a second apart, with a line that does not match between each: the newest 100 are all after
        // the `before` below, so a bound applied to the newest matches would find nothing.
        for (let i = 0; i < 400; i++) {
          yield* writer.append(message(net!, "#chat", `pancake number ${i}`, { nick: "bob", time: new Date(T0 + i * 2000) }))
          yield* writer.append(message(net!, "#chat", `waffle ${i}`, { nick: "bob", time: new Date(T0 + i * 2000 + 1000) }))
        }
        yield* writer.flush
        const at = (i: number) => new Date(T0 + i * 2000)
        const q = (filters: Partial<SearchQuery>) => searchTexts(accountId, "pancake", { limit: 3, ...filters })

        expect(yield* q({ before: at(150) })).toEqual(["pancake number 150", "pancake number 149", "pancake number 148"])
        // Inclusive at the millisecond: one millisecond earlier leaves 150 out.
        expect(yield* q({ before: new Date(at(150).getTime() - 1) })).toEqual([
          "pancake number 149",
          "pancake number 148",
          "pancake number 147"
        ])
        expect(yield* q({ after: at(397) })).toEqual(["pancake number 399", "pancake number 398", "pancake number 397"])
        expect(yield* q({ after: at(10), before: at(11), limit: 50 })).toEqual(["pancake number 11", "pancake number 10"])
        expect(yield* q({ before: new Date(T0 - 1) })).toEqual([])
        expect(yield* q({ after: at(400) })).toEqual([])
        expect(yield* q({ after: at(20), before: at(10) })).toEqual([])
        // One buffer narrows by id; across buffers the bounds are tested on each row, with the same answers.
        const inChat = { networkId: Option.some(net!), targetFolded: Option.some("#chat") }
        expect(yield* q({ ...inChat, before: at(150) })).toEqual(["pancake number 150", "pancake number 149", "pancake number 148"])
        expect(yield* q({ ...inChat, after: at(10), before: at(11), limit: 50 })).toEqual(["pancake number 11", "pancake number 10"])
      }))

    it.scoped("search matches the message text only, never the speaker's nick; a quoted phrase as a phrase", () =>
      Effect.gen(function*() {
        const { accountId, networkIds: [net] } = yield* seed()
        const writer = yield* MessageWriter
        let t = 0
        const say = (nick: string, text: string) =>
          writer.append(message(net!, "#chat", text, { nick, time: new Date(T0 + ++t * 1000) }))
        yield* say("zebra", "hello there")
        yield* say("bob", "zebra crossing ahead")
        yield* say("carol", "ahead of the crossing")
        yield* writer.flush
        const q = (query: string) => searchTexts(accountId, query)

        // "zebra" spoke first, but only the message that says "zebra" matches.
        expect(yield* q("zebra")).toEqual(["zebra crossing ahead"])
        // Terms are ANDed over the text alone: the speaker's nick does not complete a match.
        expect(yield* q("zebra hello")).toEqual([])
        expect(yield* q("crossing ahead")).toEqual(["ahead of the crossing", "zebra crossing ahead"])
        // A quoted phrase must appear as such, in order, within the text (not across nick and text).
        expect(yield* q("\"crossing ahead\"")).toEqual(["zebra crossing ahead"])
        expect(yield* q("\"ahead crossing\"")).toEqual([])
        expect(yield* q("\"zebra hello\"")).toEqual([])
        expect(yield* q("\"zebra crossing\" ahead")).toEqual(["zebra crossing ahead"])
      }))

    it.scoped("listBuffers: channels and DMs with history, newest first, never server buffers", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const mine = yield* seed(2)
        const [n1, n2] = mine.networkIds
        const theirs = yield* seed()
        const writer = yield* MessageWriter
        const history = yield* MessageHistory
        yield* writer.append(message(n1!, "#old", "x", { time: new Date(T0 + 1000) }))
        yield* writer.append(message(n1!, "#old", "y", { time: new Date(T0 + 5000) }))
        yield* writer.append(message(n1!, "Bob", "hi", { time: new Date(T0 + 3000) }))
        yield* writer.append(message(n2!, "#new", "z", { time: new Date(T0 + 9000) }))
        yield* writer.append(message(n1!, `:server:${n1}`, "motd", { time: new Date(T0 + 20_000), kind: "numeric" }))
        yield* writer.append(message(theirs.networkIds[0]!, "#theirs", "t", { time: new Date(T0 + 30_000) }))
        yield* writer.flush
        // A buffer row without history (e.g. made by `belay channel encrypt`) is not listed.
        yield* sql`INSERT INTO buffers (network_id, target, target_folded, kind) VALUES (${n1!}, '#empty', '#empty', 'channel')`

        expect(yield* history.listBuffers(mine.accountId, Option.none())).toEqual([
          { networkId: n2, target: "#new", kind: "channel", lastMessageAt: new Date(T0 + 9000) },
          { networkId: n1, target: "#old", kind: "channel", lastMessageAt: new Date(T0 + 5000) },
          { networkId: n1, target: "Bob", kind: "dm", lastMessageAt: new Date(T0 + 3000) }
        ])
        expect((yield* history.listBuffers(mine.accountId, Option.some(n2!))).map((b) => b.target)).toEqual(["#new"])
        expect(yield* history.listBuffers(mine.accountId, Option.some(theirs.networkIds[0]!))).toEqual([])
      }))
  })
})
