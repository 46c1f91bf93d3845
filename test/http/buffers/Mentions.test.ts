/**
 * `GET /api/mentions` and `GET /api/buffers/context` (src/http/buffers/MentionRoutes.ts) against the whole app (fake
 * network actors, real database, history stored through the real MessageWriter): the mentions are the lines of
 * others naming the member's nick on each of their networks as a word — not their own lines, not another word holding
 * the nick, not another member's networks — newest first and bounded, paged back with `before` (disjoint pages to
 * the first); the context is the lines of one buffer around one message, with whether more lies on either side; a bad
 * parameter is 400 and another member's network 404.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { MessageWriter } from "../../../src/services/history/MessageWriter.js"
import type { MessageKind } from "../../../src/schema/Message.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import { describeMode } from "../../support/TestDatabase.js"
import { bearer, passwordToken } from "../auth/MemberHarness.js"
import { fetchP, jsonOf, type OAuthApp, PASSWORD, startOAuthApp } from "../oauth/OAuthHarness.js"

const networkOf = (app: OAuthApp, account: string, name: string, nick: string) =>
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
}

/** Stores the lines through the real writer in one batch; returns their ids, in order. */
const store = (app: OAuthApp, networkId: number, lines: ReadonlyArray<Line>) =>
  Effect.gen(function*() {
    const writer = app.service(MessageWriter)
    const [before] = yield* app.sql<{ id: number | null }>`SELECT max(id) AS id FROM messages`.pipe(Effect.orDie)
    for (const line of lines) {
      yield* writer.append({
        networkId,
        target: line.target,
        targetFolded: line.target.toLowerCase(),
        bufferKind: line.target.startsWith("#") ? "channel" : "dm",
        time: new Date(),
        kind: line.kind ?? "privmsg",
        nick: line.nick,
        text: line.text,
        self: line.self ?? false
      })
    }
    yield* writer.flush
    const rows = yield* app.sql<{ id: number }>`SELECT id FROM messages WHERE id > ${Number(before?.id ?? 0)} ORDER BY id`.pipe(Effect.orDie)
    expect(rows).toHaveLength(lines.length)
    return rows.map((r) => Number(r.id))
  })

interface Found {
  readonly id: number
  readonly networkId: number
  readonly target: string
  readonly nick: string | null
  readonly text: string
}

const get = (url: string, token: string, path: string) =>
  Effect.gen(function*() {
    const res = yield* fetchP(`${url}${path}`, { headers: bearer(token) })
    return { status: res.status, body: yield* jsonOf(res), cache: res.headers.get("cache-control") }
  })

describe(`mentions and context on ${describeMode}`, () => {
  it.scopedLive("mentions: others' lines naming the member's nick as a word, on each of their networks, newest first", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const libera = yield* networkOf(app, "alice", "libera", "alice")
      const oftc = yield* networkOf(app, "alice", "oftc", "al_ice")
      yield* app.service(Accounts).create("bob", PASSWORD).pipe(Effect.orDie)
      const bobs = yield* networkOf(app, "bob", "bobnet", "bob")
      const [hey, , , , ping] = yield* store(app, libera, [
        { target: "#belay", nick: "bob", text: "hey alice, look at this" },
        { target: "#belay", nick: "bob", text: "malice aforethought" },
        { target: "#belay", nick: "alice", text: "alice here", self: true },
        { target: "#belay", nick: "bob", text: "nothing to see" },
        { target: "#other", nick: "carol", text: "ALICE: ping", kind: "notice" }
      ])
      const [onOftc] = yield* store(app, oftc, [
        { target: "#debian", nick: "dave", text: "al_ice: your patch landed" },
        { target: "#debian", nick: "dave", text: "alice is not my nick here" }
      ])
      yield* store(app, bobs, [{ target: "#bobchan", nick: "carol", text: "alice, this is bob's network" }])

      const token = yield* passwordToken(app.url)
      const all = yield* get(app.url, token, "/api/mentions")
      expect(all.status).toBe(200)
      expect(all.cache).toBe("no-store")
      const messages = all.body.messages as ReadonlyArray<Found>
      expect(messages.map((m) => m.id)).toEqual([onOftc, ping, hey])
      expect(messages[0]).toMatchObject({ networkId: oftc, target: "#debian", nick: "dave" })
      expect(messages[2]).toMatchObject({ networkId: libera, target: "#belay", text: "hey alice, look at this" })

      const one = yield* get(app.url, token, "/api/mentions?limit=1")
      expect((one.body.messages as ReadonlyArray<Found>).map((m) => m.id)).toEqual([onOftc])
      for (const bad of ["0", "101", "ten", "-1", "1.5"]) {
        const res = yield* get(app.url, token, `/api/mentions?limit=${bad}`)
        expect(res.status).toBe(400)
        expect(res.body.error).toBe("invalid_request")
      }
      expect((yield* fetchP(`${app.url}/api/mentions`)).status).toBe(401)
    }))

  it.scopedLive("mentions paged with before: disjoint consecutive pages, newest first, through rows that are not mentions, to the start", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const libera = yield* networkOf(app, "alice", "libera", "alice")
      const oftc = yield* networkOf(app, "alice", "oftc", "alice")
      // The member's own lines name their nick too: the search finds them, the highlight rule leaves them out, so a
      // page of 2 over these 16 reads past more than MENTION_ROUNDS searches' worth of them.
      const own = Array.from({ length: 16 }, (_, i): Line => ({ target: "#belay", nick: "alice", text: `alice ${i}`, self: true }))
      const [first] = yield* store(app, libera, [{ target: "#belay", nick: "bob", text: "alice: first" }])
      yield* store(app, libera, own)
      const mentions = [first!]
      for (let i = 2; i <= 7; i++) {
        const [id] = yield* store(app, i % 2 === 0 ? oftc : libera, [
          { target: "#belay", nick: "bob", text: `alice: mention ${i}` },
          { target: "#belay", nick: "bob", text: `no one ${i}` }
        ])
        mentions.push(id!)
      }
      const newestFirst = [...mentions].reverse()

      const token = yield* passwordToken(app.url)
      const pages: Array<ReadonlyArray<number>> = []
      let path = "/api/mentions?limit=2"
      for (let i = 0; i < 20; i++) {
        const page = yield* get(app.url, token, path)
        expect(page.status).toBe(200)
        pages.push((page.body.messages as ReadonlyArray<Found>).map((m) => m.id))
        const next = page.body.nextBefore as number | null
        if (next === null) break
        expect(next).toBeLessThanOrEqual(Math.min(...pages.at(-1)!))
        path = `/api/mentions?limit=2&before=${next}`
      }
      // Consecutive, disjoint, newest first, each at most the limit; the last page ends at the first mention.
      expect(pages.flat()).toEqual(newestFirst)
      expect(pages[0]).toEqual(newestFirst.slice(0, 2))
      for (const page of pages) expect(page.length).toBeLessThanOrEqual(2)
      expect(pages.some((page) => page.length === 0), JSON.stringify(pages)).toBe(true)
      expect(pages.at(-1)!.at(-1) ?? first).toBe(first)

      // The default page is all seven; a page below the first mention is empty, and the start.
      const whole = yield* get(app.url, token, "/api/mentions")
      expect((whole.body.messages as ReadonlyArray<Found>).map((m) => m.id)).toEqual(newestFirst)
      expect(whole.body.nextBefore).toBeNull()
      const below = yield* get(app.url, token, `/api/mentions?before=${first}`)
      expect(below.body).toMatchObject({ messages: [], nextBefore: null })
      for (const bad of ["0", "-1", "x", "1.5", "99999999999999999"]) {
        expect((yield* get(app.url, token, `/api/mentions?before=${bad}`)).status).toBe(400)
      }
    }))

  it.scopedLive("context: the lines around a message, with whether more lies on either side; other buffers left out", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const libera = yield* networkOf(app, "alice", "libera", "alice")
      const lines: Array<Line> = []
      for (let i = 1; i <= 60; i++) {
        lines.push({ target: "#ctx", nick: "bob", text: `line ${i}` })
        if (i % 10 === 0) lines.push({ target: "#elsewhere", nick: "bob", text: `noise ${i}` })
      }
      const ids = yield* store(app, libera, lines)
      const idOf = (text: string) => ids[lines.findIndex((l) => l.text === text)]!
      const token = yield* passwordToken(app.url)
      const texts = (body: Record<string, unknown>) => (body.messages as ReadonlyArray<Found>).map((m) => m.text)

      const middle = yield* get(app.url, token, `/api/buffers/context?networkId=${libera}&target=%23CTX&around=${idOf("line 30")}&limit=5`)
      expect(middle.status).toBe(200)
      expect(texts(middle.body)).toEqual(["line 25", "line 26", "line 27", "line 28", "line 29", "line 30", "line 31", "line 32", "line 33", "line 34", "line 35"])
      expect(middle.body).toMatchObject({ networkId: libera, target: "#CTX", around: idOf("line 30"), hasOlder: true, hasNewer: true })

      const end = yield* get(app.url, token, `/api/buffers/context?networkId=${libera}&target=%23ctx&around=${idOf("line 58")}&limit=5`)
      expect(texts(end.body)).toEqual(["line 53", "line 54", "line 55", "line 56", "line 57", "line 58", "line 59", "line 60"])
      expect(end.body).toMatchObject({ hasOlder: true, hasNewer: false })

      const start = yield* get(app.url, token, `/api/buffers/context?networkId=${libera}&target=%23ctx&around=${idOf("line 2")}`)
      expect(texts(start.body).slice(0, 3)).toEqual(["line 1", "line 2", "line 3"])
      expect(texts(start.body)).toHaveLength(2 + 25)
      expect(start.body).toMatchObject({ hasOlder: false, hasNewer: true })

      yield* app.service(Accounts).create("bob", PASSWORD).pipe(Effect.orDie)
      const bobs = yield* networkOf(app, "bob", "bobnet", "bob")
      const foreign = yield* get(app.url, token, `/api/buffers/context?networkId=${bobs}&target=%23ctx&around=1`)
      expect(foreign.status).toBe(404)
      for (
        const query of [
          `networkId=${libera}&around=${idOf("line 2")}`,
          `networkId=${libera}&target=%23ctx`,
          `networkId=x&target=%23ctx&around=1`,
          `networkId=${libera}&target=%23ctx&around=1&limit=101`,
          `networkId=${libera}&target=%23c%0Dtx&around=1`
        ]
      ) expect((yield* get(app.url, token, `/api/buffers/context?${query}`)).status).toBe(400)
    }))
})
