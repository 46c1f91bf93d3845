/**
 * Link previews as a member sees them (docs/contract.md "Link previews"): headless Chromium (playwright-core) against
 * `bin/belay serve` under BELAY_PRIVATE_DESTINATIONS=deny, a real IRC server (ngircd) and a local web page, both
 * opened by BELAY_DESTINATION_EXCEPTIONS. carol posts a link to the page in a channel; the web client draws a card
 * under her message with the page's title, description and image, the image loaded from Belay's own origin through
 * the proxy. The page and its image were each fetched once, by Belay: the browser never asked the site. Then the
 * approval page of an app known by its Client ID Metadata Document (an https site with the suite's own CA, trusted
 * through NODE_EXTRA_CA_CERTS) shows the document's logo through the same proxy, beside "not verified", and the
 * page's Content-Security-Policy lets exactly that image load (no violation reported).
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { createRequire } from "node:module"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runCli, startBelay } from "../support/BelayProcess.js"
import { CHROMIUM, launchChromium, newPage } from "../support/Chromium.js"
import { NGIRCD, ngircd, peer } from "../support/Ngircd.js"
import { tempDir, testEnvironment } from "../support/TestDatabase.js"
import { buffers, log, promise, WAIT } from "../support/WebClientPage.js"
import { ogPage, PAGE_CA, startPageServer, TINY_PNG } from "../services/previews/PageServer.js"

const PASSWORD = "correct horse battery staple"
const CHANNEL = "#previews"
const SHOTS = Path.resolve(import.meta.dirname, "../../test-output/screenshots")
const AXE_SOURCE = Fs.readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

describe("link previews in headless Chromium, through ngircd", () => {
  it.scopedLive.skipIf(CHROMIUM.skip || NGIRCD.skip)(
    "a link in a message gets a card with the page's title, description and proxied image; an app's logo on the approval page too",
    () =>
    Effect.gen(function*() {
      const irc = yield* ngircd
      const site = yield* startPageServer()
      const image = site.serve("/picture.png", { kind: "body", headers: { "content-type": "image/png" }, body: TINY_PNG })
      const link = site.serve("/article", {
        kind: "body",
        body: ogPage({ title: "Belay ships link previews", description: "Fetched once, by the bouncer.", image })
      })
      const apps = yield* startPageServer({ tls: true })
      const caFile = Path.join(yield* tempDir("belay-ca-"), "ca.pem")
      Fs.writeFileSync(caFile, PAGE_CA)
      const env = yield* testEnvironment({
        BELAY_PRIVATE_DESTINATIONS: "deny",
        BELAY_DESTINATION_EXCEPTIONS: `127.0.0.1:${irc.port},127.0.0.1:${site.port},127.0.0.1:${apps.port}`,
        NODE_EXTRA_CA_CERTS: caFile
      })
      const belay = yield* startBelay(env)
      expect((yield* runCli(belay.env, ["account", "add", "alice"], `${PASSWORD}\n`)).code).toBe(0)
      const url = belay.url.replace("127.0.0.1", "localhost")
      const browser = yield* launchChromium
      const { page } = yield* newPage(browser)
      const pageErrors: Array<string> = []
      page.on("pageerror", (e) => pageErrors.push(e.message))
      const browserAsked: Array<string> = []
      page.on("request", (request) => {
        const port = new URL(request.url()).port
        if (port === String(site.port) || port === String(apps.port)) browserAsked.push(request.url())
      })
      const cspViolations: Array<string> = []
      page.on("console", (m) => {
        if (m.text().includes("Content Security Policy")) cspViolations.push(m.text())
      })

      yield* promise(async () => {
        await page.goto(`${url}/`)
        await page.getByLabel("Username", { exact: true }).fill("alice")
        await page.getByLabel("Password", { exact: true }).fill(PASSWORD)
        await Promise.all([page.waitForURL((u) => u.pathname === "/"), page.getByRole("button", { name: "Sign in", exact: true }).click()])
        await page.getByRole("heading", { name: "Networks" }).waitFor({ timeout: WAIT })
        await page.getByLabel("Name", { exact: true }).fill("ngircd")
        await page.getByLabel("Server", { exact: true }).fill("127.0.0.1")
        await page.getByLabel("Port", { exact: true }).fill(String(irc.port))
        await page.getByLabel("Use TLS", { exact: true }).uncheck()
        await page.getByLabel("Nick", { exact: true }).fill("belaybot")
        await page.getByLabel("Channels to join", { exact: true }).fill(CHANNEL)
        await page.getByRole("button", { name: "Add network" }).click()
        await buffers(page).getByRole("link", { name: CHANNEL, exact: true }).click({ timeout: WAIT })
        await page.getByRole("heading", { name: CHANNEL, level: 1 }).waitFor({ timeout: WAIT })
      })
      const carol = yield* peer(irc.port, "carol")
      yield* carol.send(`JOIN ${CHANNEL}`)
      yield* carol.send(`PRIVMSG ${CHANNEL} :have a look: ${link}`)

      const card = yield* promise(async () => {
        const card = log(page).getByRole("link", { name: /Belay ships link previews/ })
        await card.waitFor({ timeout: WAIT })
        await card.getByText("Fetched once, by the bouncer.").waitFor({ timeout: WAIT })
        const img = card.locator("img")
        await img.waitFor({ timeout: WAIT })
        // The image arrived and decoded: its natural width is the PNG's.
        await page.waitForFunction((el) => {
          const image = el as unknown as { readonly complete: boolean; readonly naturalWidth: number } | null
          return image !== null && image.complete && image.naturalWidth > 0
        }, await img.elementHandle(), { timeout: WAIT })
        return {
          href: await card.getAttribute("href"),
          src: await img.getAttribute("src"),
          site: await card.getByText("127.0.0.1", { exact: true }).count()
        }
      })
      // The card to axe, light and dark (serious and critical violations inside it), and its screenshots.
      Fs.mkdirSync(SHOTS, { recursive: true })
      const violations = yield* promise(async () => {
        const found: Array<string> = []
        // Expressions, not functions: this file is compiled without the DOM's types; the engine goes in through
        // DevTools, so the page's CSP stays as served.
        await page.evaluate(AXE_SOURCE)
        for (const scheme of ["light", "dark"] as const) {
          await page.emulateMedia({ colorScheme: scheme })
          await page.evaluate("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
          const result = await page.evaluate(
            "axe.run('.preview', { resultTypes: ['violations'] }).then((r) => r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id + ': ' + v.help))"
          ) as ReadonlyArray<string>
          found.push(...result.map((v) => `${scheme}: ${v}`))
          await page.locator(".preview").screenshot({ path: Path.join(SHOTS, `link-preview-${scheme === "light" ? "desktop" : "dark"}.png`) })
        }
        await page.emulateMedia({ colorScheme: "light" })
        return found
      })
      expect(violations).toEqual([])

      // Turned off in the member's synced preferences (as from another browser): the card goes; on again, it is back.
      const toggled = yield* promise(async () => {
        const set = (on: boolean) =>
          page.evaluate(async (linkPreviews) =>
            (await fetch("/api/preferences/client", {
              method: "PUT",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ linkPreviews })
            })).status, on)
        const card = log(page).getByRole("link", { name: /Belay ships link previews/ })
        const off = await set(false)
        await card.waitFor({ state: "detached", timeout: WAIT })
        const on = await set(true)
        await card.waitFor({ timeout: WAIT })
        return [off, on]
      })
      expect(toggled).toEqual([200, 200])
      expect(card.href).toBe(link)
      expect(card.src?.startsWith("/api/previews/image?")).toBe(true)
      expect(card.site).toBe(1)
      expect(site.hits("/article")).toBe(1)
      expect(site.hits("/picture.png")).toBe(1)

      // The approval page of an app known by its metadata document: its logo, through the proxy, allowed by the CSP.
      const logo = apps.serve("/logo.png", { kind: "body", headers: { "content-type": "image/png" }, body: TINY_PNG })
      const clientId = `${apps.origin}/client.json`
      apps.serve("/client.json", {
        kind: "body",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ client_id: clientId, client_name: "Logo App", redirect_uris: ["https://app.example/cb"], logo_uri: logo })
      })
      const challenge = Crypto.createHash("sha256").update(Crypto.randomBytes(32).toString("base64url")).digest("base64url")
      const authorize = `${url}/oauth/authorize?${new URLSearchParams({
        response_type: "code",
        client_id: clientId,
        redirect_uri: "https://app.example/cb",
        code_challenge: challenge,
        code_challenge_method: "S256"
      }).toString()}`
      const approval = yield* promise(async () => {
        const response = await page.goto(authorize)
        const img = page.getByRole("img", { name: "The app's logo" })
        await img.waitFor({ timeout: WAIT })
        await page.waitForFunction((el) => {
          const image = el as unknown as { readonly complete: boolean; readonly naturalWidth: number } | null
          return image !== null && image.complete && image.naturalWidth > 0
        }, await img.elementHandle(), { timeout: WAIT })
        return {
          csp: response?.headers()["content-security-policy"] ?? "",
          logoRow: await page.locator("dd", { has: img }).innerText()
        }
      })
      expect(approval.csp).toContain(`img-src ${url}/api/previews/image;`)
      expect(approval.logoRow).toContain("(not verified)")
      expect(apps.hits("/logo.png")).toBe(1)
      expect(cspViolations).toEqual([])
      expect(browserAsked).toEqual([])
      expect(pageErrors).toEqual([])
    }))
})
