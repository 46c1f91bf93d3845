/**
 * The web client as an installed app would run it, in headless Chromium against `bin/belay serve`: after sign-in the
 * page links the manifest, Chromium parses it without errors and finds the page installable but for the test's
 * incognito context (DevTools `Page.getAppManifest`, `Page.getInstallabilityErrors`), the service worker controls the
 * page, and with the network gone a reload still draws the client from the worker's shell — its top bar and the
 * "Buffers" navigation, saying it is reconnecting — where without the worker the browser would show its error page.
 * The worker still has its push and notification-click handlers.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runCli, startBelay } from "../support/BelayProcess.js"
import { CHROMIUM, launchChromium, newPage, untilInPage } from "../support/Chromium.js"
import { testEnvironment } from "../support/TestDatabase.js"
import { buffers, promise, WAIT } from "../support/WebClientPage.js"

const PASSWORD = "correct horse battery staple"

describe("the web client, installable and offline, in headless Chromium", () => {
  it.scopedLive.skipIf(CHROMIUM.skip)("manifest parsed and installable; offline, a reload draws the cached shell", () =>
    Effect.gen(function*() {
      const env = yield* testEnvironment()
      const belay = yield* startBelay(env)
      expect((yield* runCli(belay.env, ["account", "add", "alice"], `${PASSWORD}\n`)).code).toBe(0)
      // localhost: a secure context, as service workers and installation need.
      const url = belay.url.replace("127.0.0.1", "localhost")
      const browser = yield* launchChromium
      const { context, page } = yield* newPage(browser)
      const pageErrors: Array<string> = []
      page.on("pageerror", (e) => pageErrors.push(e.message))

      yield* promise(async () => {
        await page.goto(`${url}/`)
        await page.getByLabel("Username", { exact: true }).fill("alice")
        await page.getByLabel("Password", { exact: true }).fill(PASSWORD)
        await Promise.all([page.waitForURL((u) => u.pathname === "/"), page.getByRole("button", { name: "Sign in", exact: true }).click()])
        await buffers(page).waitFor()
      })

      yield* promise(async () => {
        expect(await page.locator("link[rel=manifest]").getAttribute("href")).toBe("/app.webmanifest")
        const cdp = await context.newCDPSession(page)
        const manifest = await cdp.send("Page.getAppManifest", {})
        expect(manifest.errors).toEqual([])
        expect(manifest.url).toBe(`${url}/app.webmanifest`)
        // The worker registers at start and takes the page; then the install criteria hold.
        await untilInPage(page, "navigator.serviceWorker.controller !== null", WAIT)
        const { installabilityErrors } = await cdp.send("Page.getInstallabilityErrors", {})
        // Playwright's contexts are incognito, which Chromium names among the reasons; any other would be ours
        // (a missing or unsuitable icon, a manifest field, no worker).
        expect(installabilityErrors.filter((e) => e.errorId !== "in-incognito")).toEqual([])
        const worker = await (await fetch(`${belay.url}/sw.js`)).text()
        for (const handler of ["push", "notificationclick", "fetch"]) expect(worker).toContain(`"${handler}"`)
      })

      // A reload with the worker in control keeps the shell and its files; then offline, the shell comes from it.
      yield* promise(async () => {
        await page.reload()
        await buffers(page).waitFor({ timeout: WAIT })
        await untilInPage(page, "caches.open('belay-shell-v1').then((c) => c.keys()).then((k) => k.length >= 3)", WAIT)
        await context.setOffline(true)
        await page.reload()
        await page.getByRole("banner").getByText("Belay", { exact: true }).waitFor({ timeout: WAIT })
        await buffers(page).waitFor({ timeout: WAIT })
        await page.getByRole("status").filter({ hasText: /Reconnecting|Disconnected|Connecting/ }).first().waitFor({ timeout: WAIT })
        await context.setOffline(false)
      })
      expect(pageErrors).toEqual([])
    }))
})
