/**
 * An upload as a person makes one: headless Chromium (playwright-core) against `bin/belay serve` and ngircd, with a
 * bare-socket IRC client (carol) in the channel. A file dropped on the composer shows a progress bar while it goes
 * (the upload is throttled through the DevTools protocol so that the bar is there to be seen), its link is sent to
 * the channel — carol receives it, the page shows it — and fetching the link returns the very bytes with the headers
 * of docs/contract.md "Uploads". A file over BELAY_UPLOAD_MAX_BYTES is refused with a message saying so, and nothing
 * is stored or sent.
 */
import { randomBytes } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { runCli, startBelay } from "../support/BelayProcess.js"
import { CHROMIUM, launchChromium, newPage } from "../support/Chromium.js"
import { NGIRCD, ngircd, peer } from "../support/Ngircd.js"
import { testEnvironment } from "../support/TestDatabase.js"
import { buffers, composer, expectValue, log, promise, query, WAIT } from "../support/WebClientPage.js"

const PASSWORD = "correct horse battery staple"
const CHANNEL = "#files"
const MAX = 4 * 1024 * 1024

const joined = (nick: string) => (line: string) =>
  line.startsWith(`:${nick}!`) && (line.endsWith(` JOIN ${CHANNEL}`) || line.endsWith(` JOIN :${CHANNEL}`))

/**
 * Drops a file named `name` on the composer, as a drag from the desktop does: `bytes`, or `size` zero bytes made in the
 * page. Written as page source: the test's TypeScript has no DOM.
 */
const dropFile = (page: Page, name: string, type: string, content: { readonly bytes: Buffer } | { readonly size: number }) =>
  promise(async () => {
    const data = "bytes" in content
      ? `Uint8Array.from(atob(${JSON.stringify(content.bytes.toString("base64"))}), (c) => c.charCodeAt(0))`
      : `new Uint8Array(${content.size})`
    const transfer = await page.evaluateHandle(`(() => {
      const dt = new DataTransfer()
      dt.items.add(new File([${data}], ${JSON.stringify(name)}, { type: ${JSON.stringify(type)} }))
      return dt
    })()`)
    await composer(page).dispatchEvent("dragover", { dataTransfer: transfer })
    await composer(page).dispatchEvent("drop", { dataTransfer: transfer })
  })

/** Every frame, what a progress bar in the page shows (its accessible name and value), until `stopSampling`. */
const startSampling = (page: Page) =>
  promise(() =>
    page.evaluate(`(() => {
      window.samples = []
      window.sampling = true
      const tick = () => {
        const bar = document.querySelector("progress")
        if (bar !== null) window.samples.push([bar.getAttribute("aria-label") ?? "", bar.value])
        if (window.sampling) requestAnimationFrame(tick)
      }
      requestAnimationFrame(tick)
    })()`)
  )
const stopSampling = (page: Page) =>
  promise(() => page.evaluate(`(() => { window.sampling = false; return window.samples })()`) as Promise<Array<[string, number]>>)

describe("uploads from the web client in headless Chromium, through ngircd", () => {
  it.scopedLive.skipIf(CHROMIUM.skip || NGIRCD.skip)(
    "a dropped file shows a progress bar, its link reaches the channel, and the link serves the bytes safely",
    () =>
      Effect.gen(function*() {
        const irc = yield* ngircd
        const env = yield* testEnvironment({ BELAY_UPLOAD_MAX_BYTES: String(MAX) })
        const belay = yield* startBelay(env)
        expect((yield* runCli(belay.env, ["account", "add", "alice"], `${PASSWORD}\n`)).code).toBe(0)
        const url = belay.url.replace("127.0.0.1", "localhost")
        const browser = yield* launchChromium
        const { page } = yield* newPage(browser)
        const pageErrors: Array<string> = []
        page.on("pageerror", (e) => pageErrors.push(e.message))

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
          await buffers(page).getByRole("link", { name: CHANNEL, exact: true }).waitFor({ timeout: WAIT })
        })
        const carol = yield* peer(irc.port, "carol")
        yield* carol.send(`JOIN ${CHANNEL}`)
        yield* carol.waitFor(joined("carol"))
        yield* promise(async () => {
          await buffers(page).getByRole("link", { name: CHANNEL, exact: true }).click()
          await page.getByRole("heading", { name: CHANNEL, level: 1 }).waitFor({ timeout: WAIT })
          await composer(page).fill("a draft that stays")
        })

        // 3 MiB at 2 MiB/s: the bar is there for over a second, and moves.
        const cdp = yield* promise(() => page.context().newCDPSession(page))
        yield* promise(async () => {
          await cdp.send("Network.enable")
          await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 2 * 1024 * 1024 })
        })
        const bytes = randomBytes(3 * 1024 * 1024)
        yield* startSampling(page)
        yield* dropFile(page, "holiday photo.png", "image/png", { bytes })
        // The link reaches carol once the file is stored; the bar is gone when the link has been sent.
        const line = yield* carol.waitFor((l) => l.startsWith(":belaybot!") && l.includes(` PRIVMSG ${CHANNEL} :`))
        yield* promise(() => page.getByRole("progressbar", { name: "Uploading holiday photo.png" }).waitFor({ state: "detached", timeout: WAIT }))
        const seen = yield* stopSampling(page)
        expect(seen.length).toBeGreaterThan(0)
        expect(new Set(seen.map(([label]) => label))).toEqual(new Set(["Uploading holiday photo.png"]))
        expect(seen.some(([, v]) => v < 1)).toBe(true)
        // Throttled, the bar moves through the upload rather than jumping to the end.
        expect(seen.some(([, v]) => v > 0 && v < 1)).toBe(true)
        console.log(`upload progress: ${seen.length} frames, ${new Set(seen.map(([, v]) => v.toFixed(2))).size} values`)
        yield* promise(() => cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 }))

        // The link is in the channel, for carol and on the page; the draft is as it was.
        const link = line.slice(line.indexOf(` PRIVMSG ${CHANNEL} :`) + ` PRIVMSG ${CHANNEL} :`.length)
        expect(link).toMatch(new RegExp(`^${url}/uploads/[A-Za-z0-9_-]{22}/holiday%20photo\\.png$`))
        yield* promise(async () => {
          await log(page).getByText(link).first().waitFor({ timeout: WAIT })
          await expectValue(composer(page), "a draft that stays")
        })

        // The link serves the bytes, with the headers of an image: inline, nosniff, the sandbox, ranges.
        const served = yield* promise(async () => {
          const res = await fetch(link)
          return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) }
        })
        expect(served.status).toBe(200)
        expect(served.body.equals(bytes)).toBe(true)
        expect(served.headers.get("content-type")).toBe("image/png")
        expect(served.headers.get("x-content-type-options")).toBe("nosniff")
        expect(served.headers.get("content-disposition")).toMatch(/^inline; filename="holiday photo.png"/)
        expect(served.headers.get("content-security-policy")).toMatch(/^sandbox; default-src 'none'/)
        const part = yield* promise(async () => {
          const res = await fetch(link, { headers: { range: "bytes=1000-1999" } })
          return { status: res.status, body: Buffer.from(await res.arrayBuffer()) }
        })
        expect(part.status).toBe(206)
        expect(part.body.equals(bytes.subarray(1000, 2000))).toBe(true)

        // Too large: refused with a sentence saying so; nothing stored, nothing sent.
        yield* dropFile(page, "huge.bin", "application/octet-stream", { size: MAX + 1 })
        yield* promise(() => page.getByText("The file is too large: this server takes files up to 4 MiB.").waitFor({ timeout: WAIT }))
        const rows = yield* query(env.DATABASE_URL!, "SELECT name, size FROM uploads ORDER BY created_at")
        expect(rows.map((r) => [r.name, Number(r.size)])).toEqual([["holiday photo.png", bytes.length]])
        const sent = (yield* carol.received).filter((l) => l.startsWith(":belaybot!") && l.includes(` PRIVMSG ${CHANNEL} :`))
        expect(sent).toHaveLength(1)
        expect(pageErrors).toEqual([])
      }),
    { timeout: 120_000 }
  )
})
