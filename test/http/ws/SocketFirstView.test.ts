/**
 * The browser WebSocket's first view (src/http/ws/FirstView.ts) against the whole app (fake network actors, real
 * database): with `?first=` the hello carries the member's networks, every buffer as GET /api/buffers lists them and
 * the newest page of the buffer the tab opens first, the one it names or the server's pick; never another member's;
 * without `first`, the hello of before.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { FIRST_PAGE, parseFirst } from "../../../src/http/ws/FirstView.js"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { MessageWriter } from "../../../src/services/history/MessageWriter.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import { describeMode } from "../../support/TestDatabase.js"
import { bearer, passwordToken } from "../auth/MemberHarness.js"
import { fetchP, type OAuthApp, PASSWORD, startOAuthApp } from "../oauth/OAuthHarness.js"
import { connect, type Frame } from "./SocketClient.js"

const networkOf = (app: OAuthApp, account: string) =>
  app.service(Networks).add(account, {
    name: `${account}net`,
    host: "irc.test",
    port: 6667,
    tls: false,
    tlsInsecure: false,
    nick: account,
    username: Option.none(),
    realname: Option.none(),
    serverPassword: Option.none(),
    sasl: Option.none(),
    join: []
  }).pipe(Effect.orDie)

/** Stores `texts` in `target` through the real writer, as the actors do. */
const store = (app: OAuthApp, networkId: number, target: string, texts: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const writer = app.service(MessageWriter)
    for (const text of texts) {
      yield* writer.append({
        networkId,
        target,
        targetFolded: target.toLowerCase(),
        bufferKind: "channel",
        time: new Date(),
        kind: "privmsg",
        nick: "bob",
        text,
        self: false
      })
    }
    yield* writer.flush
  })

interface First {
  readonly networks: ReadonlyArray<{ readonly id: number; readonly name: string }>
  readonly buffers: ReadonlyArray<{ readonly networkId: number; readonly target: string; readonly unread: number }>
  readonly open: {
    readonly networkId: number
    readonly target: string
    readonly limit: number
    readonly page: { readonly messages: ReadonlyArray<{ readonly id: number; readonly text: string }> }
  } | null
}

const hello = (app: OAuthApp, token: string, query: string) =>
  Effect.gen(function*() {
    const socket = yield* connect(app.url, { headers: bearer(token), query })
    const frame: Frame = yield* socket.next()
    expect(frame.type).toBe("hello")
    yield* socket.close
    return frame as Frame & { readonly first?: First }
  })

const texts = (first: First | undefined) => first?.open?.page.messages.map((m) => m.text)

describe(`the socket's first view on ${describeMode}`, () => {
  it("reads ?first=: absent, the server's pick, or a network id and a target", () => {
    expect(parseFirst(null)).toEqual(Option.none())
    for (const pick of ["", "#belay", ":#belay", "x:#belay", "1:", "1", "-1:#belay", "1234567890123456:#a", `1:${"x".repeat(1024)}`]) {
      expect(parseFirst(pick), JSON.stringify(pick.slice(0, 20))).toEqual(Option.some({ _tag: "Pick" }))
    }
    expect(parseFirst("7:#Belay")).toEqual(Option.some({ _tag: "Named", networkId: 7, target: "#Belay" }))
    expect(parseFirst("7::server:7")).toEqual(Option.some({ _tag: "Named", networkId: 7, target: ":server:7" }))
    expect(parseFirst(`1:${"x".repeat(1021)}`)).toEqual(Option.some({ _tag: "Named", networkId: 1, target: "x".repeat(1021) }))
  })

  it.scopedLive("hello carries the networks, the buffers as GET /api/buffers lists them, and the page of the buffer opened first", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const networkId = yield* networkOf(app, "alice")
      yield* app.service(Accounts).create("bob", PASSWORD).pipe(Effect.orDie)
      const bobNetwork = yield* networkOf(app, "bob")
      yield* store(app, bobNetwork, "#secret", ["bob's own line"])
      // #belay holds one line more than a page; #later is the most recently active.
      const belay = Array.from({ length: FIRST_PAGE + 1 }, (_, i) => `belay line ${i + 1}`)
      yield* store(app, networkId, "#belay", belay)
      yield* store(app, networkId, "#later", ["later 1", "later 2"])
      const token = yield* passwordToken(app.url)

      // No `first`: the hello of before.
      expect((yield* hello(app, token, "")).first).toBeUndefined()

      // The server's pick: the most recently active channel, whole; the buffers as the REST route lists them.
      const picked = (yield* hello(app, token, "?first=")).first!
      expect(picked.networks).toMatchObject([{ id: networkId, name: "alicenet" }])
      const rest = yield* fetchP(`${app.url}/api/buffers`, { headers: bearer(token) })
      expect(picked.buffers).toEqual(((yield* Effect.promise(() => rest.json())) as { buffers: unknown }).buffers)
      expect(picked.buffers.map((b) => b.target)).toEqual(["#later", "#belay"])
      expect(picked.open).toMatchObject({ networkId, target: "#later", limit: FIRST_PAGE })
      expect(texts(picked)).toEqual(["later 1", "later 2"])

      // A buffer it names, compared as the network compares names: its newest page, oldest first.
      const named = (yield* hello(app, token, `?${new URLSearchParams({ first: `${networkId}:#BELAY` })}`)).first!
      expect(named.open).toMatchObject({ networkId, target: "#belay", limit: FIRST_PAGE })
      expect(texts(named)).toEqual(belay.slice(1))

      // Another member's buffer, one that does not exist, or a name that does not read: the server's pick, and
      // nothing of bob's anywhere.
      for (const first of [`${bobNetwork}:#secret`, `${networkId}:#nowhere`, "#belay", "x".repeat(2000)]) {
        const frame = yield* hello(app, token, `?${new URLSearchParams({ first })}`)
        expect(frame.first?.open?.target, first.slice(0, 20)).toBe("#later")
        expect(JSON.stringify(frame)).not.toContain("secret")
      }
    }))

  it.scopedLive("a member with no history: the first network's server buffer, empty; with no network, nothing to open", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const token = yield* passwordToken(app.url)
      expect((yield* hello(app, token, "?first=")).first).toEqual({ networks: [], buffers: [], open: null })
      const networkId = yield* networkOf(app, "alice")
      const first = (yield* hello(app, token, "?first=")).first!
      expect(first.buffers).toEqual([])
      expect(first.open).toEqual({
        networkId,
        target: `:server:${networkId}`,
        limit: FIRST_PAGE,
        page: { networkId, target: `:server:${networkId}`, messages: [] }
      })
    }))
})
