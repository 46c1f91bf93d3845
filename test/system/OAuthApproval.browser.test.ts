/**
 * The approval in a real browser: headless Chromium (Debian's /usr/bin/chromium, or
 * BELAY_TEST_CHROMIUM) driven by playwright-core signs in with username and password, reads
 * the approval page and clicks Approve; the 303 must then reach a native app's loopback
 * listener on an ephemeral port. This is what an HTTP client cannot prove: that the pages'
 * CSP (no `form-action`, which browsers apply to the redirect after a form POST too) does not
 * block it, that a browser's own Origin / Sec-Fetch-Site satisfy the same-origin check, and
 * that another origin cannot frame the page. Without Chromium the tests skip, except under
 * CI=true, where they fail (SystemBinary).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ConsoleMessage } from "playwright-core"
import {
  authorizeUrl,
  jsonOf,
  mcpStatus,
  PASSWORD,
  pkcePair,
  redeem,
  registerClient,
  startOAuthApp
} from "../http/oauth/OAuthHarness.js"
import { CHROMIUM, framed, launchChromium as launch, loopbackListener } from "../support/Chromium.js"

describe("OAuth approval in headless Chromium", () => {
  it.scopedLive.skipIf(CHROMIUM.skip)("sign in, approve, and the 303 reaches the loopback app; the code redeems; deny sends access_denied", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const listener = yield* loopbackListener
      const browser = yield* launch
      const context = yield* Effect.acquireRelease(
        Effect.promise(() => browser.newContext()),
        (c) => Effect.promise(() => c.close())
      )
      const page = yield* Effect.promise(() => context.newPage())
      const console: Array<string> = []
      page.on("console", (m: ConsoleMessage) => console.push(m.text()))
      const approvalPosts: Array<Record<string, string>> = []
      page.on("request", (r) => {
        if (r.method() === "POST" && r.url().endsWith("/oauth/authorize")) {
          r.allHeaders().then((h) => approvalPosts.push(h), () => undefined)
        }
      })

      const client = yield* registerClient(app.url, {
        client_name: "Browser Test App",
        client_uri: "https://app.example/about",
        redirect_uris: ["http://127.0.0.1/callback"]
      })
      const { verifier, challenge } = pkcePair()
      const redirectUri = `http://127.0.0.1:${listener.port}/callback`
      const state = "st-" + Math.random().toString(36).slice(2)
      const authorize = authorizeUrl(app.url, { client_id: client.client_id, redirect_uri: redirectUri, code_challenge: challenge, state })

      yield* Effect.promise(async () => {
        await page.goto(authorize)
        await page.fill("input[name=username]", "alice")
        await page.fill("input[name=password]", PASSWORD)
        await Promise.all([page.waitForURL((u) => u.pathname === "/oauth/authorize"), page.click("button[type=submit]")])
      })
      const text = yield* Effect.promise(() => page.innerText("main"))
      expect(text).toContain("Browser Test App")
      expect(text).toContain("app.example")
      expect(text).toContain("Full access")
      expect(text).toContain(`http://127.0.0.1:${listener.port}`)
      yield* Effect.promise(() => page.screenshot({ path: "/tmp/belay-approval.png", fullPage: true }))

      yield* Effect.promise(() =>
        Promise.all([page.waitForURL((u) => u.port === String(listener.port)), page.click("button[value=approve]")])
      )
      const callback = new URL(page.url())
      expect(callback.pathname).toBe("/callback")
      expect(listener.hits.some((h) => h.startsWith("/callback?code="))).toBe(true)
      expect(callback.searchParams.get("state")).toBe(state)
      expect(callback.searchParams.get("iss")).toBe(app.url)
      expect(console.filter((m) => /Content Security Policy|form-action/i.test(m))).toEqual([])

      const token = yield* redeem(app.url, {
        clientId: client.client_id,
        code: callback.searchParams.get("code")!,
        redirectUri,
        verifier
      })
      expect(token.status).toBe(200)
      expect(yield* mcpStatus(app.url, (yield* jsonOf(token)).access_token as string)).toBe(200)

      // Under the pages' Referrer-Policy: no-referrer, Chromium sends `Origin: null` with the
      // form POST (Fetch "append a request Origin header"); Sec-Fetch-Site is what proves it
      // same-origin, which is why the check falls back to it.
      const posted = approvalPosts[0]!
      expect(posted.origin).toBe("null")
      expect(posted["sec-fetch-site"]).toBe("same-origin")

      // Approved before: the page shows again (signed in now), and Deny reaches the app as access_denied.
      yield* Effect.promise(async () => {
        await page.goto(authorize)
        await Promise.all([page.waitForURL((u) => u.port === String(listener.port)), page.click("button[value=deny]")])
      })
      const denied = new URL(page.url())
      expect(Object.fromEntries(denied.searchParams)).toEqual({ error: "access_denied", state, iss: app.url })
    }))

  it.scopedLive.skipIf(CHROMIUM.skip)("another origin cannot frame the approval flow (frame-ancestors 'none', X-Frame-Options)", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const listener = yield* loopbackListener
      const browser = yield* launch
      const page = yield* Effect.promise(() => browser.newPage())
      const client = yield* registerClient(app.url)
      const { challenge } = pkcePair()
      const authorize = authorizeUrl(app.url, { client_id: client.client_id, redirect_uri: "http://127.0.0.1/cb", code_challenge: challenge })
      const frame = yield* framed(page, listener.port, authorize)
      // Chromium replaced the refused frame with its error page.
      expect(frame.url).toBe("chrome-error://chromewebdata/")
      expect(frame.text).not.toContain("Sign in to Belay")
    }))
})
