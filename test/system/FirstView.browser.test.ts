/**
 * Sign-in to the first channel drawn in headless Chromium against `bin/belay serve` (src/http/ws/FirstView.ts): the
 * socket's hello carries the buffer list and the first buffer's newest page, so the page draws it without a
 * `recent_messages` call and without `GET /api/buffers`; older lines still come on asking. Then the buffer named by
 * the URL's fragment, and the one this browser showed last, are drawn the same way, in a new page each.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { runCli, startBelay } from "../support/BelayProcess.js"
import { CHROMIUM, launchChromium, newPage } from "../support/Chromium.js"
import { testEnvironment } from "../support/TestDatabase.js"
import { log, promise, query, WAIT } from "../support/WebClientPage.js"

const PASSWORD = "correct horse battery staple"

/** What the page sent and received on its socket, and which REST routes it asked. */
const watch = (page: Page) => {
  const seen = { sent: [] as Array<string>, received: [] as Array<string>, requests: [] as Array<string> }
  page.on("websocket", (ws) => {
    ws.on("framesent", (f) => seen.sent.push(String(f.payload)))
    ws.on("framereceived", (f) => seen.received.push(String(f.payload)))
  })
  page.on("request", (r) => seen.requests.push(new URL(r.url()).pathname))
  return seen
}

const line = (page: Page, text: string) => log(page).getByText(text, { exact: true })

/** Stores `count` lines in `target` of the network, oldest first, a minute back. */
const history = (url: string, networkId: number, target: string, count: number) =>
  query(
    url,
    `WITH b AS (
       INSERT INTO buffers (network_id, target, target_folded, kind, last_message_at)
       VALUES ($1, $2, $2, 'channel', now()) RETURNING id)
     INSERT INTO messages (buffer_id, time, kind, nick, text)
     SELECT b.id, now() - interval '1 minute' + g * interval '1 millisecond', 'privmsg', 'archivist', $2 || ' line ' || g
     FROM b, generate_series(1, $3::int) AS g ORDER BY g`,
    [networkId, target, count]
  )

describe("the first channel drawn from the socket's hello", () => {
  it.scopedLive.skipIf(CHROMIUM.skip)("sign-in draws the newest page without a history call; a named or remembered buffer too", () =>
    Effect.gen(function*() {
      const env = yield* testEnvironment()
      const belay = yield* startBelay(env)
      expect((yield* runCli(belay.env, ["account", "add", "alice"], `${PASSWORD}\n`)).code).toBe(0)
      // A network whose server is not there: its history is what the tab shows.
      const added = yield* runCli(belay.env, ["network", "add", "alice", "--name", "quiet", "--host", "127.0.0.1", "--port", "9"])
      expect(added.code).toBe(0)
      const networkId = Number((yield* query(env.DATABASE_URL!, "SELECT id FROM networks WHERE name = 'quiet'"))[0]!.id)
      // #other first, #first after it: #first is the most recently active, the one a new tab opens.
      yield* history(env.DATABASE_URL!, networkId, "#other", 20)
      yield* history(env.DATABASE_URL!, networkId, "#first", 200)
      const url = belay.url.replace("127.0.0.1", "localhost")
      const browser = yield* launchChromium
      const { context, page } = yield* newPage(browser)
      const seen = watch(page)

      yield* promise(async () => {
        await page.goto(`${url}/login?next=/`)
        await page.getByLabel("Username", { exact: true }).fill("alice")
        await page.getByLabel("Password", { exact: true }).fill(PASSWORD)
        await page.getByRole("button", { name: "Sign in", exact: true }).click()
        await line(page, "#first line 200").waitFor({ timeout: WAIT })
      })
      // The newest page (150 lines) came with the hello: no call for it, no buffer list over REST.
      expect(yield* promise(() => line(page, "#first line 51").isVisible())).toBe(true)
      expect(yield* promise(() => line(page, "#first line 50").count())).toBe(0)
      expect(seen.received.find((f) => f.includes(`"type":"hello"`))).toContain(`"first":`)
      expect(seen.sent.filter((f) => f.includes("recent_messages"))).toEqual([])
      expect(seen.requests.filter((p) => p === "/api/buffers")).toEqual([])
      // The page was full: older lines come on asking.
      yield* promise(async () => {
        await page.getByRole("button", { name: "Load older messages" }).click()
        await line(page, "#first line 1").waitFor({ timeout: WAIT })
      })

      // The buffer the URL names, in a new page of the same browser: drawn from the hello as well.
      const named = yield* promise(() => context.newPage())
      const namedSeen = watch(named)
      yield* promise(async () => {
        await named.goto(`${url}/#/b/${networkId}/${encodeURIComponent("#OTHER")}`)
        await line(named, "#other line 20").waitFor({ timeout: WAIT })
      })
      expect(namedSeen.sent.filter((f) => f.includes("recent_messages"))).toEqual([])
      // This browser shows #other last: a page opened without a fragment starts there, again without a call.
      const remembered = yield* promise(() => context.newPage())
      const rememberedSeen = watch(remembered)
      yield* promise(async () => {
        await remembered.goto(`${url}/`)
        await line(remembered, "#other line 20").waitFor({ timeout: WAIT })
      })
      expect(rememberedSeen.sent.filter((f) => f.includes("recent_messages"))).toEqual([])
      expect(rememberedSeen.requests.filter((p) => p === "/api/buffers")).toEqual([])
    }))
})
