/**
 * Two complete service stacks (main.ts `Services`) on one database in cluster mode, as two nodes would be: two pools,
 * two LISTEN connections, two MemberEvents, two Web Push senders. What one node stores or changes reaches the other's
 * sources — `stored` (and so the tabs and the IRC listener, each row with its line's client-only tags), RecentPages,
 * nick notes and relay bots, read markers, network changes, actor statuses and channel events, revocations — once, in
 * order; Web Push goes out once for the cluster and not while a tab on either node has the member's attention. A LISTEN
 * link that dies silently is noticed by the heartbeat (caches off), and once it is back the node reads back what it
 * missed without losing a line.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Context, Effect, Layer, Logger, LogLevel, Option, PubSub, Queue, type Scope } from "effect"
import { Services } from "../../../src/main.js"
import type { NetworkStatus } from "../../../src/schema/Network.js"
import type { ServerFrame } from "../../../src/schema/SocketFrame.js"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { ApiTokens } from "../../../src/services/identity/ApiTokens.js"
import { AppConfig } from "../../../src/services/AppConfig.js"
import { BrowserSessions } from "../../../src/services/identity/BrowserSessions.js"
import { ClusterEvents } from "../../../src/services/nodes/ClusterEvents.js"
import { CredentialRevocations } from "../../../src/services/identity/CredentialRevocations.js"
import { DatabaseLive } from "../../../src/services/storage/Database.js"
import { EventChannel } from "../../../src/services/storage/EventChannel.js"
import { MemberEvents, type Subscription } from "../../../src/services/events/MemberEvents.js"
import { MessageHistory } from "../../../src/services/history/MessageHistory.js"
import type { StoredRow } from "../../../src/services/history/MessageRow.js"
import { MessageWriter } from "../../../src/services/history/MessageWriter.js"
import { type NetworkChange, Networks } from "../../../src/services/networks/Networks.js"
import { NickNotes } from "../../../src/services/networks/NickNotes.js"
import { PushSubscriptions } from "../../../src/services/push/PushSubscriptions.js"
import { ReadMarkers } from "../../../src/services/history/ReadMarkers.js"
import { RecentPages } from "../../../src/services/history/RecentPages.js"
import * as LocalPushService from "../../http/push/LocalPushService.js"
import { eventually } from "../../support/Eventually.js"
import { freezingProxy } from "../../support/FreezingProxy.js"
import { message } from "../../support/MessageFixtures.js"
import { serverAddress } from "../../support/PostgresProxy.js"
import { describeMode, settingsFrom, testEnvironment } from "../../support/TestDatabase.js"

// A cluster node needs the key every node shares (docs/decisions/several-nodes.md "Several nodes").
const CLUSTER = { BELAY_CLUSTER_ADDRESS: "127.0.0.1:34431", BELAY_SECRET_KEY: "ab".repeat(32) }

/** One node: the product's services over `env`'s database, built in the caller's scope. */
const startNode = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const settings = yield* settingsFrom(env)
    const context = yield* Layer.build(
      Services.pipe(
        Layer.provideMerge(DatabaseLive),
        Layer.provideMerge(Layer.succeed(AppConfig, settings)),
        Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)),
        Layer.orDie
      )
    )
    const get = <I, S>(tag: Context.Tag<I, S>): S => Context.unsafeGet(context as Context.Context<never>, tag)
    /** Every batch this node's `stored` announces from now on. */
    const stored = yield* PubSub.subscribe(get(MessageWriter).stored)
    return { get, stored } as const
  })

type Node = Effect.Effect.Success<ReturnType<typeof startNode>>

let seq = 0
/** An account with one network, made through `node`. */
const member = (node: Node) =>
  Effect.gen(function*() {
    const name = `node${process.pid}x${++seq}`
    const account = yield* node.get(Accounts).create(name, "a long password").pipe(Effect.orDie)
    const networkId = yield* node.get(Networks).add(name, {
      name: "libera",
      host: "irc.example.org",
      port: 6697,
      tls: true,
      tlsInsecure: false,
      nick: "alice",
      username: Option.none(),
      realname: Option.none(),
      serverPassword: Option.none(),
      sasl: Option.none(),
      join: []
    }).pipe(Effect.orDie)
    return { name, accountId: account.id, networkId } as const
  })

/** Stores `texts` in `target` through the node's writer; the ids, as the database has them. */
const store = (node: Node, networkId: number, target: string, texts: ReadonlyArray<string>, nick = "bob") =>
  Effect.gen(function*() {
    const writer = node.get(MessageWriter)
    for (const text of texts) yield* writer.append(message(networkId, target, text, { nick }))
    yield* writer.flush
    const rows = yield* node.get(SqlClient.SqlClient)<{ id: number }>`
      SELECT m.id FROM messages m JOIN buffers b ON b.id = m.buffer_id
      WHERE b.network_id = ${networkId} AND m.text = ANY(${texts as Array<string>}) ORDER BY m.id`.pipe(Effect.orDie)
    return rows.map((r) => r.id)
  })

/** The rows `node` announced on `stored` so far (after what earlier calls took). */
const announced = (node: Node) =>
  Effect.map(Queue.takeAll(node.stored), (batches) => Chunk.toArray(batches).flatMap((b): ReadonlyArray<StoredRow> => b))

/** Frames of a subscription, decoded, until one satisfies `done` (all of them returned). */
const framesUntil = (subscription: Subscription, done: (frame: ServerFrame) => boolean, what: string) =>
  Effect.gen(function*() {
    const seen: Array<ServerFrame> = []
    for (;;) {
      const events = yield* subscription.take(64).pipe(
        Effect.timeoutFail({ duration: "15 seconds", onTimeout: () => new Error(`${what} never arrived; saw ${JSON.stringify(seen)}`) })
      )
      for (const event of events) {
        const frame = JSON.parse(event.frame) as ServerFrame
        seen.push(frame)
        if (done(frame)) return seen
      }
    }
  })

const status = (networkId: number, nick: string): NetworkStatus => ({
  networkId,
  state: "connected",
  nick,
  lastError: null,
  nextRetryAt: null,
  caseMapping: "rfc1459",
  channelTypes: "#&"
})

const twoNodes = (extra: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const env = yield* testEnvironment({ ...CLUSTER, ...extra })
    const a = yield* startNode(env)
    const b = yield* startNode(env)
    return { env, a, b } as const
  })

const subscribeTab = (node: Node, accountId: number): Effect.Effect<Subscription, never, Scope.Scope> =>
  node.get(MemberEvents).subscribe(accountId)

describe(`cluster events on ${describeMode}`, () => {
  it.scopedLive("a batch stored by one node reaches the other's stream, tabs and newest pages, once and in order", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoNodes()
      const m = yield* member(a)
      const tabOnB = yield* subscribeTab(b, m.accountId)
      const first = yield* store(a, m.networkId, "#belay", ["one", "two"])
      // B reads the buffer's newest page, which RecentPages keeps from then on.
      const page = yield* b.get(MessageHistory).recent(m.networkId, "#belay", { before: Option.none(), limit: 50 })
      expect(page.map((r) => r.id)).toEqual(first)

      const texts = Array.from({ length: 120 }, (_, i) => `line ${i}`)
      const ids = yield* store(a, m.networkId, "#belay", texts)
      expect(ids).toHaveLength(120)
      const frames = yield* framesUntil(tabOnB, (f) => f.type === "message" && f.message.id === ids[ids.length - 1], "the last line on B's tab")
      const messageIds = frames.flatMap((f) => (f.type === "message" ? [f.message.id] : []))
      expect(messageIds).toEqual([...first, ...ids])

      // B's stream: every row once, in order, as relayed (not stored by B).
      const onB: Array<StoredRow> = []
      yield* eventually("B's stream has every row", Effect.map(announced(b), (rows) => onB.push(...rows)), (n) => n >= 122)
      expect(onB.map((r) => r.id)).toEqual([...first, ...ids])
      expect(onB.map((r) => r.text)).toEqual(["one", "two", ...texts])
      // A's own stream has them once too (its own notices were skipped).
      expect((yield* announced(a)).map((r) => r.id)).toEqual([...first, ...ids])

      // The newest page B keeps in memory has the relayed rows, without a read.
      const kept = b.get(RecentPages).page(m.networkId, "#belay", Option.none(), 50)
      expect(Option.map(kept, (p) => p.map((r) => r.id))).toEqual(Option.some([...first, ...ids].slice(-50)))

      // Nothing arrives twice.
      yield* Effect.sleep("500 millis")
      expect(yield* announced(b)).toEqual([])
    }), { timeout: 120_000 })

  it.scopedLive("another node's rows come with the client-only tags of their lines, as that node announced them", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoNodes()
      const m = yield* member(a)
      const writer = a.get(MessageWriter)
      const lines = [
        ["server tags only", "@time=2025-01-31T12:00:00.000Z;msgid=up-1 :bob!b@h PRIVMSG #belay :server tags only"],
        ["a reply", "@msgid=up-2;+draft/reply=up-1;+vendor/x=1 :bob!b@h PRIVMSG #belay :a reply"],
        ["no tags", ":bob!b@h PRIVMSG #belay :no tags"]
      ] as const
      for (const [text, raw] of lines) yield* writer.append(message(m.networkId, "#belay", text, { nick: "bob", raw }))
      yield* writer.flush
      const onA: Array<StoredRow> = []
      yield* eventually("A announces the rows", Effect.map(announced(a), (rows) => onA.push(...rows)), (n) => n >= 3)
      const onB: Array<StoredRow> = []
      yield* eventually("B relays the rows", Effect.map(announced(b), (rows) => onB.push(...rows)), (n) => n >= 3)
      expect(onB.map((r) => r.clientTags)).toEqual([undefined, { "+draft/reply": "up-1", "+vendor/x": "1" }, undefined])
      expect(onB).toEqual(onA)
    }), { timeout: 120_000 })

  it.scopedLive("a redaction on one node reaches the other's tabs and the page it keeps in memory", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoNodes()
      const m = yield* member(a)
      const tabOnB = yield* subscribeTab(b, m.accountId)
      const writer = a.get(MessageWriter)
      yield* writer.append(message(m.networkId, "#belay", "keep me", { nick: "bob", msgid: "up-0" }))
      yield* writer.append(message(m.networkId, "#belay", "take it back", { nick: "bob", msgid: "up-1" }))
      yield* writer.flush
      const kept = yield* b.get(MessageHistory).recent(m.networkId, "#belay", { before: Option.none(), limit: 50 })
      expect(kept.map((r) => [r.text, r.msgid, r.redacted])).toEqual([["keep me", "up-0", false], ["take it back", "up-1", false]])

      yield* writer.redact({ networkId: m.networkId, target: "#belay", targetFolded: "#belay", msgid: "up-1" })
      const frames = yield* framesUntil(tabOnB, (f) => f.type === "redaction", "the redaction")
      expect(frames.at(-1)).toEqual({ type: "redaction", networkId: m.networkId, target: "#belay", messageId: kept[1]!.id })
      // B answers from the page it kept, now with the message redacted.
      const page = b.get(RecentPages).page(m.networkId, "#belay", Option.none(), 50)
      expect(Option.map(page, (p) => p.map((r) => [r.text, r.redacted]))).toEqual(Option.some([["keep me", false], ["", true]]))
      // A tab that was away and resumes on B (`?since=` the newest id it saw) is sent it from what A stored.
      expect(yield* b.get(MessageHistory).redactedSince(m.accountId, kept[1]!.id, 10))
        .toEqual([{ networkId: m.networkId, target: "#belay", messageId: kept[1]!.id }])
      expect(yield* b.get(MessageHistory).redactedSince(m.accountId, kept[1]!.id + 1, 10)).toEqual([])
    }), { timeout: 120_000 })

  it.scopedLive("notes, relay bots, read markers, network changes, statuses, channel events and revocations cross", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoNodes()
      const m = yield* member(a)
      const tabOnB = yield* subscribeTab(b, m.accountId)
      const networkChangesOnB = yield* PubSub.subscribe(b.get(Networks).changes)
      const [id] = yield* store(a, m.networkId, "#belay", ["hello"])
      yield* framesUntil(tabOnB, (f) => f.type === "message", "the message")

      yield* a.get(NickNotes).set(m.networkId, "rfc1459", "Bob", "met at FOSDEM")
      yield* framesUntil(tabOnB, (f) => f.type === "nick-note" && f.nick === "Bob" && f.note === "met at FOSDEM", "the nick note")

      // B has the network's (no) relay bots in memory; a mark made on A replaces them.
      expect((yield* b.get(NickNotes).relayBots(m.networkId)).size).toBe(0)
      yield* a.get(NickNotes).setRelayBot(m.networkId, "rfc1459", "Relay", true, Option.none())
      yield* framesUntil(tabOnB, (f) => f.type === "relay-bot" && f.nick === "Relay" && f.marked, "the relay-bot mark")
      expect([...(yield* b.get(NickNotes).relayBots(m.networkId)).keys()]).toEqual(["relay"])

      yield* a.get(ReadMarkers).set(m.accountId, m.networkId, "#belay", id!)
      yield* framesUntil(tabOnB, (f) => f.type === "read-marker" && f.messageId === id, "the read marker")

      const events = a.get(ClusterEvents).actorEvents
      events.status(m.accountId, "libera", status(m.networkId, "alice_"))
      yield* framesUntil(tabOnB, (f) => f.type === "network" && f.network.nick === "alice_", "the network status")

      // A learns that B has a tab of the account, and then sends it the actor's channel events.
      yield* eventually("A knows of B's tab", Effect.sync(() => a.get(MemberEvents).listeningElsewhere(m.accountId)), (x) => x)
      expect(events.listening(m.accountId)).toBe(true)
      events.publish(m.accountId, [{
        type: "topic",
        networkId: m.networkId,
        channel: "#belay",
        topic: "cluster day",
        setBy: "carol",
        setAt: null
      }])
      yield* framesUntil(tabOnB, (f) => f.type === "topic" && f.topic === "cluster day", "the topic")
      // A channel drawn whole with many members is longer than one notice: sent in parts, received whole.
      const members = Array.from({ length: 600 }, (_, i) => ({ nick: `member${i}`, prefix: "", modes: [], away: false }))
      events.publish(m.accountId, [{
        type: "channel",
        networkId: m.networkId,
        channel: "#big",
        joined: true,
        topic: { topic: "", setBy: null, setAt: null },
        members
      }])
      const big = yield* framesUntil(tabOnB, (f) => f.type === "channel" && f.channel === "#big", "the big channel")
      const drawn = big[big.length - 1]!
      expect(drawn.type === "channel" && drawn.joined ? drawn.members.length : 0).toBe(600)

      yield* a.get(Networks).update(m.accountId, m.networkId, { name: "libera2" }).pipe(Effect.orDie)
      const changes: Array<NetworkChange> = []
      yield* eventually("B hears the edit", Effect.map(Queue.takeAll(networkChangesOnB), (c) => changes.push(...c)), () =>
        changes.some((c) => c._tag === "Changed"))
      // The network's addition (made on A before B subscribed, heard after), then the edit; flagged as made elsewhere.
      expect(changes).toEqual([
        { _tag: "Added", networkId: m.networkId, elsewhere: true },
        { _tag: "Changed", networkId: m.networkId, reconnect: false, elsewhere: true }
      ] satisfies Array<NetworkChange>)

      // A revocation made on A reaches B's consumers (its sockets close with 4001 on it).
      const revokedOnB = yield* b.get(CredentialRevocations).subscribe
      const session = yield* a.get(BrowserSessions).create(m.accountId)
      const row = Option.getOrThrow(yield* b.get(BrowserSessions).lookup(session))
      yield* a.get(BrowserSessions).end(session)
      const heard = yield* Queue.take(revokedOnB).pipe(Effect.timeout("10 seconds"), Effect.orDie)
      expect(heard).toEqual({ credential: "session", tokenId: row.sessionId, accountId: m.accountId })

      yield* a.get(Networks).remove(m.name, m.networkId).pipe(Effect.orDie)
      yield* framesUntil(tabOnB, (f) => f.type === "network-removed" && f.networkId === m.networkId, "the removal")
    }), { timeout: 120_000 })

  it.scopedLive("channel events from a node of another release: each checked, what this build cannot draw left out", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoNodes()
      const m = yield* member(a)
      const tabOnB = yield* subscribeTab(b, m.accountId)
      let q = 0
      /** A notice as a node this build never met sends it, NOTIFYed straight into the channel. */
      const notify = (body: Record<string, unknown>) =>
        a.get(SqlClient.SqlClient)`SELECT pg_notify('belay_events', ${
          JSON.stringify({ o: "a-node-of-another-release", q: ++q, ...body })
        })`.pipe(Effect.orDie)
      yield* notify({
        t: "e",
        a: m.accountId,
        e: [
          { type: "reaction", networkId: m.networkId, target: "#belay", emoji: "👍" },
          { type: "away", networkId: String(m.networkId), away: false },
          { type: "member", networkId: m.networkId, channel: "#belay", nick: "bob", member: { nick: "bob" } },
          { type: "away", networkId: m.networkId, away: true },
          null
        ]
      })
      yield* notify({ t: "e", a: m.accountId, e: "not a list" })
      yield* notify({ t: "e", a: m.accountId, e: [{ type: "away", networkId: m.networkId, away: false }] })
      const frames = yield* framesUntil(tabOnB, (f) => f.type === "away" && !f.away, "the second away event")
      expect(frames.filter((f) => ["away", "member", "reaction"].includes(f.type))).toEqual([
        { type: "away", networkId: m.networkId, away: true },
        { type: "away", networkId: m.networkId, away: false }
      ])
      // B is still at work: an event of its own build from A reaches the tab.
      yield* eventually("A knows of B's tab", Effect.sync(() => a.get(MemberEvents).listeningElsewhere(m.accountId)), (x) => x)
      a.get(ClusterEvents).actorEvents.publish(m.accountId, [{ type: "network-removed", networkId: m.networkId }])
      yield* framesUntil(tabOnB, (f) => f.type === "network-removed", "the removal")
    }), { timeout: 120_000 })

  it.scopedLive("Web Push goes out once for the cluster, and not while a tab on another node is focused", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoNodes()
      const m = yield* member(a)
      const push = yield* LocalPushService.make
      const browser = push.subscription("phone")
      // Registered through B: A, which stores the messages, learns of it.
      const session = yield* b.get(BrowserSessions).create(m.accountId)
      const row = Option.getOrThrow(yield* b.get(BrowserSessions).lookup(session))
      yield* b.get(PushSubscriptions).add(m.accountId, { _tag: "Session", sessionId: row.sessionId }, {
        endpoint: browser.json.endpoint,
        p256dh: browser.json.keys.p256dh,
        auth: browser.json.keys.auth
      })
      yield* eventually("A counts B's subscription", Effect.sync(() => a.get(PushSubscriptions).has(m.accountId)), (x) => x)

      yield* store(a, m.networkId, "bob", ["are you there?"])
      const first = yield* push.next
      expect(first.path).toBe(browser.path)
      // Both nodes heard the message; only the one that stored it sent.
      expect(yield* Effect.timeoutOption(push.next, "2 seconds")).toEqual(Option.none())

      // A focused tab on B keeps A from sending.
      const tabOnB = yield* subscribeTab(b, m.accountId)
      tabOnB.setFocused(true)
      yield* eventually("A knows B's tab is focused", Effect.sync(() => a.get(MemberEvents).anyFocused(m.accountId)), (x) => x)
      yield* store(a, m.networkId, "bob", ["still there?"])
      expect(yield* Effect.timeoutOption(push.next, "2 seconds")).toEqual(Option.none())

      tabOnB.setFocused(false)
      yield* eventually("A knows no tab is focused", Effect.sync(() => a.get(MemberEvents).anyFocused(m.accountId)), (x) => !x)
      yield* store(a, m.networkId, "bob", ["hello?"])
      expect((yield* push.next).path).toBe(browser.path)
      expect(yield* Effect.timeoutOption(push.next, "2 seconds")).toEqual(Option.none())
    }), { timeout: 120_000 })

  it.scopedLive("an IRC client's subscription registered through one node is pushed once, as a line, and goes on revocation", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoNodes()
      const m = yield* member(a)
      const push = yield* LocalPushService.make
      const phone = push.subscription("goguma")
      yield* a.get(ApiTokens).create(m.name, "phone", "read-write").pipe(Effect.orDie)
      const tokenId = (yield* a.get(SqlClient.SqlClient)<{ id: number }>`
        SELECT id FROM api_tokens WHERE account_id = ${m.accountId} AND name = 'phone'`.pipe(Effect.orDie))[0]!.id
      // Registered through B (WEBPUSH REGISTER on B's listener): A, which stores the messages, learns of it.
      yield* b.get(PushSubscriptions).add(m.accountId, { _tag: "ApiToken", tokenId }, {
        endpoint: phone.json.endpoint,
        p256dh: phone.json.keys.p256dh,
        auth: phone.json.keys.auth
      }, { networkId: m.networkId, caps: ["message-tags"] })
      yield* eventually("A counts B's subscription", Effect.sync(() => a.get(PushSubscriptions).has(m.accountId)), (x) => x)

      const [id] = yield* store(a, m.networkId, "bob", ["are you there?"], "bob")
      const pushed = yield* push.next
      expect(pushed.path).toBe(phone.path)
      expect(LocalPushService.decrypt(phone.keys, pushed.body)).toMatch(new RegExp(`^@msgid=${id} :bob PRIVMSG \\S+ :are you there\\?$`))
      expect(yield* Effect.timeoutOption(push.next, "2 seconds")).toEqual(Option.none())

      // The API token revoked through B: the subscription goes, and A no longer counts it.
      yield* b.get(ApiTokens).revoke(m.name, "phone").pipe(Effect.orDie)
      yield* eventually("A forgets the subscription", Effect.sync(() => a.get(PushSubscriptions).has(m.accountId)), (x) => !x)
      const left = yield* a.get(SqlClient.SqlClient)<{ n: number }>`
        SELECT count(*)::int AS n FROM push_subscriptions WHERE account_id = ${m.accountId}`.pipe(Effect.orDie)
      expect(left[0]!.n).toBe(0)
    }), { timeout: 120_000 })

  it.scopedLive("a silently dead LISTEN is noticed by the heartbeat; back, the node reads what it missed, once", () =>
    Effect.gen(function*() {
      const env = yield* testEnvironment(CLUSTER)
      const proxy = yield* freezingProxy(serverAddress(env.DATABASE_URL!))
      const a = yield* startNode(env)
      // B reaches the database through the proxy: its pool and its LISTEN connection.
      const b = yield* startNode({ ...env, DATABASE_URL: proxy.url(env.DATABASE_URL!) })
      const m = yield* member(a)
      const channelOfB = b.get(EventChannel)
      const tabOnB = yield* subscribeTab(b, m.accountId)
      const before = yield* store(a, m.networkId, "#belay", ["before 1", "before 2"])
      yield* framesUntil(tabOnB, (f) => f.type === "message" && f.message.id === before[1], "the lines before")
      yield* b.get(MessageHistory).recent(m.networkId, "#belay", { before: Option.none(), limit: 50 })
      expect(Option.isSome(b.get(RecentPages).page(m.networkId, "#belay", Option.none(), 50))).toBe(true)
      const generation = channelOfB.state().generation

      yield* proxy.freeze
      yield* eventually("B notices the dead LISTEN", Effect.sync(() => channelOfB.state().listening), (x) => !x, "20 seconds")
      // Meanwhile nothing is answered from memory that a lost notice could have changed.
      expect(b.get(RecentPages).page(m.networkId, "#belay", Option.none(), 50)).toEqual(Option.none())
      expect(b.get(CredentialRevocations).listenState().listening).toBe(false)
      const during = yield* store(a, m.networkId, "#belay", Array.from({ length: 30 }, (_, i) => `during ${i}`))

      yield* proxy.thaw
      yield* eventually("B listens again", Effect.sync(() => channelOfB.state()), (s) => s.listening && s.generation > generation, "30 seconds")
      // The tab that may have missed channel events resumes (1013, then `?since=`).
      yield* tabOnB.overflowed.pipe(Effect.timeout("20 seconds"), Effect.orDie)
      const after = yield* store(a, m.networkId, "#belay", ["after"])
      const everything = [...before, ...during, ...after]
      const collected: Array<StoredRow> = []
      yield* eventually("every line on B", Effect.map(announced(b), (more) => collected.push(...more)), (n) => n >= everything.length)
      expect(collected.map((r) => r.id)).toEqual(everything)

      // Pages are trusted again, and the newest one B keeps has every line.
      yield* b.get(MessageHistory).recent(m.networkId, "#belay", { before: Option.none(), limit: 50 })
      const yetAnother = yield* store(a, m.networkId, "#belay", ["latest"])
      yield* eventually("B keeps the latest line", Effect.sync(() => b.get(RecentPages).page(m.networkId, "#belay", Option.none(), 50)), (p) =>
        Option.isSome(p) && p.value[p.value.length - 1]?.id === yetAnother[0])
      yield* Effect.sleep("500 millis")
      const last = yield* announced(b)
      expect([...collected.map((r) => r.id), ...last.map((r) => r.id)]).toEqual([...everything, ...yetAnother])
    }), { timeout: 120_000 })
})
