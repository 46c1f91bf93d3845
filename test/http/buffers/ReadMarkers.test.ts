/**
 * Read markers over the browser WebSocket and `GET /api/buffers`, against the whole app (fake network actors, real
 * database, history stored through the real MessageWriter): a marker set in one tab reaches every tab of its member
 * and no one else's, never moves back, bad frames change nothing, and the buffer list counts unread messages and
 * highlights of the member's current nick (docs/decisions/web.md "The web client's server surface").
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import type { BufferKind } from "../../../src/services/history/MessageRow.js"
import { MessageWriter } from "../../../src/services/history/MessageWriter.js"
import type { MessageKind } from "../../../src/schema/Message.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import { describeMode } from "../../support/TestDatabase.js"
import { apiToken, bearer, passwordToken, signedIn } from "../auth/MemberHarness.js"
import { fetchP, jsonOf, type OAuthApp, PASSWORD, postJson, startOAuthApp } from "../oauth/OAuthHarness.js"
import { connect, type Frame, type SocketClient } from "../ws/SocketClient.js"

const networkOf = (app: OAuthApp, account: string, name = `${account}net`, nick = account) =>
  app.service(Networks).add(account, {
    name,
    host: "irc.test",
    port: 6667,
    tls: false,
    tlsInsecure: false,
    nick,
    username: Option.none(),
    realname: Option.none(),
    serverPassword: Option.none(),
    sasl: Option.none(),
    join: []
  }).pipe(Effect.orDie)

interface Line {
  readonly target: string
  readonly nick: string | null
  readonly text: string
  readonly kind?: MessageKind
  readonly self?: boolean
  readonly bufferKind?: BufferKind
}

/** Stores the lines through the real writer, as the actors do; returns their ids, in order. */
const store = (app: OAuthApp, networkId: number, lines: ReadonlyArray<Line>) =>
  Effect.gen(function*() {
    const writer = app.service(MessageWriter)
    const ids: Array<number> = []
    for (const line of lines) {
      yield* writer.append({
        networkId,
        target: line.target,
        targetFolded: line.target.toLowerCase(),
        bufferKind: line.bufferKind ?? (line.target.startsWith("#") ? "channel" : "dm"),
        time: new Date(),
        kind: line.kind ?? "privmsg",
        nick: line.nick,
        text: line.text,
        self: line.self ?? false
      })
      yield* writer.flush
      const [row] = yield* app.sql<{ id: number }>`SELECT max(id) AS id FROM messages`.pipe(Effect.orDie)
      ids.push(row!.id)
    }
    return ids
  })

interface BufferRow {
  readonly networkId: number
  readonly target: string
  readonly kind: string
  readonly lastMessageId: number
  readonly lastMessageAt: string
  readonly readMessageId: number | null
  readonly unread: number
  readonly highlights: number
}

const buffersOf = (url: string, token: string) =>
  Effect.gen(function*() {
    const res = yield* fetchP(`${url}/api/buffers`, { headers: bearer(token) })
    expect(res.status).toBe(200)
    return ((yield* jsonOf(res)).buffers as ReadonlyArray<BufferRow>)
  })

const bufferNamed = (rows: ReadonlyArray<BufferRow>, networkId: number, target: string) => {
  const row = rows.find((r) => r.networkId === networkId && r.target === target)
  if (row === undefined) throw new Error(`no buffer ${target} on ${networkId} in ${JSON.stringify(rows)}`)
  return row
}

const opened = (socket: SocketClient) => Effect.map(socket.next(), (f) => expect(f.type).toBe("hello"))

const isMarker = (f: Frame) => f.type === "read-marker"

const bobToken = (url: string) =>
  Effect.gen(function*() {
    const res = yield* postJson(`${url}/api/auth/login/token`, { username: "bob", password: PASSWORD })
    return (yield* jsonOf(res)).access_token as string
  })

describe(`read markers on ${describeMode}`, () => {
  it.scopedLive("a marker set in one tab reaches every tab of its member, sender included, and no other member's", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const networkId = yield* networkOf(app, "alice")
      const [first] = yield* store(app, networkId, [{ target: "#Belay", nick: "bob", text: "one" }, {
        target: "#belay",
        nick: "bob",
        text: "two"
      }])
      yield* app.service(Accounts).create("bob", PASSWORD).pipe(Effect.orDie)
      const bobNetwork = yield* networkOf(app, "bob")
      const [bobMessage] = yield* store(app, bobNetwork, [{ target: "#bobchan", nick: "carol", text: "hi bob" }])

      const jar = yield* signedIn(app.url)
      const byCookie = yield* connect(app.url, { headers: { ...jar.header(), origin: app.url } })
      const byToken = yield* connect(app.url, { headers: bearer(yield* passwordToken(app.url)) })
      const bob = yield* connect(app.url, { headers: bearer(yield* bobToken(app.url)) })
      for (const socket of [byCookie, byToken, bob]) yield* opened(socket)

      // Any casing of the target names the buffer; the event carries its stored name.
      yield* byCookie.send({ type: "read", networkId, target: "#BELAY", messageId: first })
      for (const socket of [byCookie, byToken]) {
        expect((yield* socket.until(isMarker)).at(-1)).toEqual({ type: "read-marker", networkId, target: "#Belay", messageId: first })
      }

      yield* bob.send({ type: "read", networkId: bobNetwork, target: "#bobchan", messageId: bobMessage })
      const bobFrames = yield* bob.until(isMarker)
      expect(bobFrames.filter(isMarker)).toEqual([
        { type: "read-marker", networkId: bobNetwork, target: "#bobchan", messageId: bobMessage }
      ])
    }))

  it.scopedLive("a marker never moves back, and bad frames get an error on their socket alone and change nothing", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const networkId = yield* networkOf(app, "alice")
      const ids = yield* store(app, networkId, [1, 2, 3].map((n) => ({ target: "#belay", nick: "bob", text: `m${n}` })))
      const [second] = yield* store(app, networkId, [{ target: "#second", nick: "bob", text: "elsewhere" }])
      yield* app.service(Accounts).create("bob", PASSWORD).pipe(Effect.orDie)
      const bobNetwork = yield* networkOf(app, "bob")
      yield* store(app, bobNetwork, [{ target: "#belay", nick: "carol", text: "bob's" }])
      const token = yield* passwordToken(app.url)
      const tab = yield* connect(app.url, { headers: bearer(token) })
      const other = yield* connect(app.url, { headers: bearer(token) })
      yield* opened(tab)
      yield* opened(other)

      yield* tab.send({ type: "read", networkId, target: "#belay", messageId: ids[2] })
      expect((yield* tab.until(isMarker)).at(-1)).toMatchObject({ messageId: ids[2] })
      // An older message: the stored marker stays, and the tabs are told where it is.
      yield* tab.send({ type: "read", networkId, target: "#belay", messageId: ids[0] })
      expect((yield* tab.until(isMarker)).at(-1)).toEqual({ type: "read-marker", networkId, target: "#belay", messageId: ids[2] })

      const bad: ReadonlyArray<unknown> = [
        "not json",
        { type: "read", networkId, target: "#belay" },
        { type: "read", networkId, target: "#belay", messageId: 0 },
        { type: "read", networkId: "1", target: "#belay", messageId: ids[2]! + 10 },
        { type: "read", networkId, target: "", messageId: ids[2]! + 10 },
        { type: "read", networkId, target: "#nowhere", messageId: ids[2]! + 10 },
        { type: "read", networkId: bobNetwork, target: "#belay", messageId: ids[2]! + 10 },
        { type: "read", networkId: 999_999, target: "#belay", messageId: ids[2]! + 10 }
      ]
      for (const frame of bad) {
        yield* tab.send(frame)
        const answer = yield* tab.next()
        expect(answer).toMatchObject({ type: "error", id: null })
        expect(typeof answer.message).toBe("string")
      }
      // The other tab heard of the two accepted frames, then of the next one, and of nothing in between.
      yield* tab.send({ type: "read", networkId, target: "#second", messageId: second })
      expect((yield* other.until((f) => isMarker(f) && f.target === "#second")).filter((f) => f.type !== "network")).toEqual([
        { type: "read-marker", networkId, target: "#belay", messageId: ids[2] },
        { type: "read-marker", networkId, target: "#belay", messageId: ids[2] },
        { type: "read-marker", networkId, target: "#second", messageId: second }
      ])
      const rows = yield* buffersOf(app.url, token)
      expect(bufferNamed(rows, networkId, "#belay").readMessageId).toBe(ids[2])
      const [bobMarkers] = yield* app.sql<{ n: number }>`
        SELECT count(*)::int AS n FROM read_markers WHERE network_id = ${bobNetwork}`.pipe(Effect.orDie)
      expect(bobMarkers!.n).toBe(0)
    }))
})

describe(`GET /api/buffers on ${describeMode}`, () => {
  it.scopedLive("counts unread messages and highlights of the member's current nick after a conversation", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const networkId = yield* networkOf(app, "alice", "libera", "alice")
      // Connected under another nick than the configured one, on an rfc1459 network: `[` and `{` are one letter.
      app.fake.network(networkId).status = { state: "connected", nick: "Ally[x]", caseMapping: "rfc1459" }
      const offline = yield* networkOf(app, "alice", "oftc", "alice")

      const channel = yield* store(app, networkId, [
        { target: "#belay", nick: "bob", text: "hello all" },
        { target: "#belay", nick: "bob", text: "ally{X}: ping" },
        { target: "#belay", nick: "bob", text: "Ally[x]s is not a word of it, nor is xally[x]" },
        { target: "#belay", nick: "Ally[x]", text: "Ally[x] says hi", self: true },
        { target: "#belay", nick: "carol", text: "", kind: "join" },
        { target: "#belay", nick: "bob", text: "ALLY[X]!", kind: "notice" },
        { target: "#belay", nick: "bob", text: "waves at ally[x]", kind: "action" },
        { target: "#belay", nick: "bob", text: "alice is the configured nick, not the current one" }
      ])
      const query = yield* store(app, networkId, [
        { target: "bob", nick: "bob", text: "psst" },
        { target: "bob", nick: "Ally[x]", text: "yes?", self: true },
        { target: "bob", nick: "bob", text: "nothing" }
      ])
      const server = `:server:${networkId}`
      yield* store(app, networkId, [
        { target: server, nick: "irc.test", text: "Welcome", kind: "numeric", bufferKind: "server" },
        { target: server, nick: "irc.test", text: "*** Ally[x]: server notice", kind: "notice", bufferKind: "server" }
      ])
      // Offline: the configured nick is the one that highlights.
      yield* store(app, offline, [{ target: "#oftc", nick: "dan", text: "alice: around?" }])
      yield* app.service(Accounts).create("bob", PASSWORD).pipe(Effect.orDie)
      yield* store(app, yield* networkOf(app, "bob"), [{ target: "#bobonly", nick: "x", text: "bob's" }])

      const token = yield* passwordToken(app.url)
      const rows = yield* buffersOf(app.url, token)
      expect(rows.map((r) => `${r.networkId} ${r.target}`).sort()).toEqual(
        [`${networkId} #belay`, `${networkId} bob`, `${networkId} ${server}`, `${offline} #oftc`].sort()
      )
      expect(bufferNamed(rows, networkId, "#belay")).toMatchObject({
        kind: "channel",
        lastMessageId: channel.at(-1),
        readMessageId: null,
        unread: 6,
        highlights: 3
      })
      expect(bufferNamed(rows, networkId, "bob")).toMatchObject({ kind: "query", lastMessageId: query.at(-1), unread: 2, highlights: 2 })
      expect(bufferNamed(rows, networkId, server)).toMatchObject({ kind: "server", unread: 1, highlights: 0 })
      expect(bufferNamed(rows, offline, "#oftc")).toMatchObject({ kind: "channel", unread: 1, highlights: 1 })
      expect(Number.isNaN(Date.parse(bufferNamed(rows, networkId, "#belay").lastMessageAt))).toBe(false)

      // Read up to the first highlight: the rest counts.
      const tab = yield* connect(app.url, { headers: bearer(token) })
      yield* opened(tab)
      yield* tab.send({ type: "read", networkId, target: "#belay", messageId: channel[1] })
      yield* tab.until(isMarker)
      expect(bufferNamed(yield* buffersOf(app.url, token), networkId, "#belay")).toMatchObject({
        readMessageId: channel[1],
        unread: 4,
        highlights: 2
      })
      // Read to the end: nothing left.
      yield* tab.send({ type: "read", networkId, target: "bob", messageId: query.at(-1) })
      yield* tab.send({ type: "read", networkId, target: "#belay", messageId: channel.at(-1) })
      yield* tab.until((f) => isMarker(f) && f.target === "#belay")
      const after = yield* buffersOf(app.url, token)
      expect(bufferNamed(after, networkId, "#belay")).toMatchObject({ readMessageId: channel.at(-1), unread: 0, highlights: 0 })
      expect(bufferNamed(after, networkId, "bob")).toMatchObject({ unread: 0, highlights: 0 })
    }))

  it.scopedLive("caps unread at 999, and answers 401 to an API token or no credential", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const networkId = yield* networkOf(app, "alice")
      const writer = app.service(MessageWriter)
      for (let i = 0; i < 1200; i++) {
        yield* writer.append({
          networkId,
          target: "#flood",
          targetFolded: "#flood",
          bufferKind: "channel",
          time: new Date(),
          kind: "privmsg",
          nick: "bob",
          text: `line ${i}`,
          self: false
        })
      }
      yield* writer.flush
      const token = yield* passwordToken(app.url)
      expect(bufferNamed(yield* buffersOf(app.url, token), networkId, "#flood")).toMatchObject({ unread: 999, highlights: 0 })

      const api = yield* fetchP(`${app.url}/api/buffers`, { headers: bearer(yield* apiToken(app)) })
      expect(api.status).toBe(401)
      expect(yield* jsonOf(api)).toMatchObject({ error: "invalid_token" })
      expect((yield* fetchP(`${app.url}/api/buffers`)).status).toBe(401)
    }))
})
