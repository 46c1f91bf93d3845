/**
 * The browser WebSocket with the browser's own WebSocket, in headless Chromium (playwright-core): what a Node client
 * cannot prove — that a signed-in page opens `/api/ws` with nothing but its session cookie and the Origin the browser
 * sets (under the pages' CSP, `connect-src 'self'`), receives a nick note set through MCP, calls a tool over it, is
 * closed with 4001 when the session signs out, and that a page of another origin is refused before the upgrade.
 * One test, one browser.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import type { Page } from "playwright-core"
import { Networks } from "../../src/services/networks/Networks.js"
import { apiToken } from "../http/auth/MemberHarness.js"
import { PASSWORD, postJson, startOAuthApp } from "../http/oauth/OAuthHarness.js"
import { CHROMIUM, launchChromium, loopbackListener, newPage } from "../support/Chromium.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** The app as the browser must see it: by name, a secure context. */
const localhostUrl = (url: string) => url.replace("127.0.0.1", "localhost")

/** Opens `/api/ws` from the page; frames and the close land in `window.belaySocket`. */
const openSocket = (page: Page, wsUrl: string) =>
  promise(() =>
    page.evaluate((target) => {
      const state = { frames: [] as Array<Record<string, unknown>>, opened: false, close: null as null | { code: number; reason: string } }
      const ws = new WebSocket(target)
      ws.onopen = () => {
        state.opened = true
      }
      ws.onmessage = (e) => state.frames.push(JSON.parse(String(e.data)) as Record<string, unknown>)
      ws.onclose = (e) => {
        state.close = { code: e.code, reason: e.reason }
      }
      Object.assign(globalThis, { belaySocket: { state, ws } })
    }, wsUrl)
  )

type SocketState = { frames: Array<Record<string, unknown>>; opened: boolean; close: null | { code: number; reason: string } }

const socketState = (page: Page) =>
  promise(() => page.evaluate(() => (globalThis as unknown as { belaySocket: { state: SocketState } }).belaySocket.state))

/** Waits in the page until a frame of `type` arrived; returns it. */
const frameOfType = (page: Page, type: string) =>
  promise(async () => {
    const handle = await page.waitForFunction(
      (t) => (globalThis as unknown as { belaySocket: { state: SocketState } }).belaySocket.state.frames.find((f) => f.type === t),
      type,
      { timeout: 10_000 }
    )
    return (await handle.jsonValue()) as Record<string, unknown>
  })

const closeOf = (page: Page) =>
  promise(async () => {
    const handle = await page.waitForFunction(
      () => (globalThis as unknown as { belaySocket: { state: SocketState } }).belaySocket.state.close,
      undefined,
      { timeout: 10_000 }
    )
    return (await handle.jsonValue()) as { code: number; reason: string }
  })

describe("the browser WebSocket in headless Chromium", () => {
  it.scopedLive.skipIf(CHROMIUM.skip)("a signed-in page opens it with its cookie, hears a nick note set through MCP, calls a tool, gets 4001 at sign-out; another origin is refused", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const url = localhostUrl(app.url)
      const wsUrl = `${url.replace(/^http/, "ws")}/api/ws`
      const networkId = yield* app.service(Networks).add("alice", {
        name: "testnet",
        host: "irc.test",
        port: 6667,
        tls: false,
        tlsInsecure: false,
        nick: "alice",
        username: Option.none(),
        realname: Option.none(),
        serverPassword: Option.none(),
        sasl: Option.none(),
        join: []
      }).pipe(Effect.orDie)
      const browser = yield* launchChromium
      const { page } = yield* newPage(browser)

      yield* promise(() => page.goto(`${url}/login?next=/settings/passkeys`))
      yield* promise(async () => {
        await page.getByLabel("Username").fill("alice")
        await page.getByLabel("Password").fill(PASSWORD)
        await Promise.all([page.waitForURL((u) => u.pathname === "/settings/passkeys"), page.getByRole("button", { name: "Sign in", exact: true }).click()])
      })

      yield* openSocket(page, wsUrl)
      expect(yield* frameOfType(page, "hello")).toEqual({ type: "hello", account: { name: "alice", paused: false }, lastMessageId: null })
      expect(yield* frameOfType(page, "network")).toMatchObject({ network: { id: networkId } })

      const api = yield* apiToken(app)
      yield* postJson(`${url}/mcp`, {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "set_nick_note", arguments: { networkId, nick: "carol", note: "from an agent" } }
      }, { authorization: `Bearer ${api}`, accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18" })
      expect(yield* frameOfType(page, "nick-note")).toEqual({ type: "nick-note", networkId, nick: "carol", note: "from an agent" })

      yield* promise(() =>
        page.evaluate((id) => {
          const socket = (globalThis as unknown as { belaySocket: { ws: WebSocket } }).belaySocket.ws
          socket.send(JSON.stringify({ type: "call", id: "n1", name: "get_nick_note", arguments: { networkId: id, nick: "CAROL" } }))
        }, networkId)
      )
      expect(yield* frameOfType(page, "result")).toEqual({
        type: "result",
        id: "n1",
        isError: false,
        payload: { networkId, nick: "CAROL", note: "from an agent" }
      })

      // Sign-out from the page (cookie, same origin): the socket opened with the session closes with 4001.
      const status = yield* promise(() =>
        page.evaluate(async () => (await fetch("/api/auth/logout", { method: "POST" })).status)
      )
      expect(status).toBe(200)
      expect(yield* closeOf(page)).toEqual({ code: 4001, reason: "credential revoked" })

      // A page of another origin: the browser sends its Origin, the server answers 403, no socket ever opens.
      const other = yield* loopbackListener
      yield* promise(() => page.goto(`http://127.0.0.1:${other.port}/`))
      yield* openSocket(page, wsUrl)
      const refused = yield* closeOf(page)
      expect(refused.code).toBe(1006)
      expect((yield* socketState(page)).opened).toBe(false)
    }), { timeout: 120_000 })
})
