/**
 * The web client at `/` as a person uses it: headless Chromium (playwright-core) against `bin/belay serve` and a real
 * IRC server (ngircd), with a bare-socket IRC client (carol) on the other side. Everything is found the way a screen
 * reader finds it — the "Buffers" navigation and its links named by target, the `log` region, the "Message" textbox,
 * the connection `status` — so the accessible names are tested by every step.
 *
 * One test, in order: sign in; add a network from the Networks page; /join a channel from the server buffer; carol's
 * line appears live; a line from the composer, /me and /msg reach carol; a nick note is saved and a search finds
 * carol's line; older history (put in the database before
 * the join) comes back when scrolling up, with a day separator; a second tab shares the draft (localStorage) and the
 * read marker (server); Belay restarts while the tab is offline, lines arrive after the restart, and the tab catches
 * up on reconnecting with each line once; a phone-sized viewport still shows the composer and a one-row top bar; the
 * network is removed; sign-out from the phone's Account menu. Along the way, the member list draws each status symbol
 * (@, +) beside its nick, never over it. Screenshots of the main views go to test-output/screenshots (not in the
 * repository).
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Locator, Page } from "playwright-core"
import { runCli, startBelay } from "../support/BelayProcess.js"
import { CHROMIUM, launchChromium, newPage } from "../support/Chromium.js"
import { eventually } from "../support/Eventually.js"
import { NGIRCD, ngircd, peer } from "../support/Ngircd.js"
import { testEnvironment } from "../support/TestDatabase.js"
import { buffers, composer, expectValue, log, promise, query, WAIT } from "../support/WebClientPage.js"

const PASSWORD = "correct horse battery staple"
const CHANNEL = "#web"
const HISTORY = 400
const SHOTS = Path.resolve(import.meta.dirname, "../../test-output/screenshots")
const shot = (page: Page, name: string) =>
  promise(async () => {
    Fs.mkdirSync(SHOTS, { recursive: true })
    await page.screenshot({ path: Path.join(SHOTS, `${name}.png`) })
  })

const lineInLog = (page: Page, text: string): Locator => log(page).getByText(text, { exact: true })

/**
 * Where a member's status symbol and nick are drawn: the boxes of their text (a Range over each), not of the elements
 * holding them — a glyph wider than its element spills over the next one, and only its text's box shows it.
 */
const textBoxes = (member: Locator) =>
  member.evaluate((button) => {
    const box = (el: ReturnType<typeof button.querySelector>) => {
      const range = button.ownerDocument.createRange()
      range.selectNodeContents(el!)
      const r = range.getBoundingClientRect()
      return { left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width }
    }
    return { prefix: box(button.querySelector(".prefix")), name: box(button.querySelector(".name")) }
  })

/**
 * The page's top bar as drawn: its height, and the band every visible item of it shares (the lowest top and the
 * highest bottom among them: the items are on one row when the first is above the second).
 */
const topBar = (page: Page) =>
  page.getByRole("banner").evaluate((bar) => {
    const items = [...bar.querySelectorAll(":scope > *, :scope > .account-actions > *")]
      .map((el) => el.getBoundingClientRect())
      .filter((r) => r.width > 0 && r.height > 0)
    return {
      height: bar.getBoundingClientRect().height,
      items: items.length,
      lowestTop: Math.max(...items.map((r) => r.top)),
      highestBottom: Math.min(...items.map((r) => r.bottom)),
      tallest: Math.max(...items.map((r) => r.height)),
      right: Math.max(...items.map((r) => r.right))
    }
  })

const send = (page: Page, text: string) =>
  promise(async () => {
    await composer(page).fill(text)
    await composer(page).press("Enter")
    await expectValue(composer(page), "")
  })

describe("the web client in headless Chromium, through ngircd", () => {
  it.scopedLive.skipIf(CHROMIUM.skip || NGIRCD.skip)(
    "sign in, add a network, join, chat both ways, /me and /msg, note and search, scroll back, two tabs, survive a restart, phone layout, remove, sign out",
    () =>
      Effect.gen(function*() {
        const started = Date.now()
        const irc = yield* ngircd
        const env = yield* testEnvironment()
        const first = yield* startBelay(env)
        expect((yield* runCli(first.env, ["account", "add", "alice"], `${PASSWORD}\n`)).code).toBe(0)
        const url = first.url.replace("127.0.0.1", "localhost")
        const browser = yield* launchChromium
        const { context, page } = yield* newPage(browser)
        const pageErrors: Array<string> = []
        page.on("pageerror", (e) => pageErrors.push(e.message))
        page.on("console", (m) => {
          if (/Content Security Policy|Refused to/i.test(m.text())) pageErrors.push(m.text())
        })

        // Sign in: `/` sends the browser to /login and back.
        yield* promise(async () => {
          await page.goto(`${url}/`)
          expect(new URL(page.url()).pathname).toBe("/login")
          await page.getByLabel("Username", { exact: true }).fill("alice")
          await page.getByLabel("Password", { exact: true }).fill(PASSWORD)
          await Promise.all([page.waitForURL((u) => u.pathname === "/"), page.getByRole("button", { name: "Sign in", exact: true }).click()])
          await buffers(page).waitFor()
        })

        // Add a network from the Networks page (no network yet: the client starts there).
        yield* promise(async () => {
          await page.getByRole("heading", { name: "Networks" }).waitFor({ timeout: WAIT })
          await page.getByLabel("Name", { exact: true }).fill("ngircd")
          await page.getByLabel("Server", { exact: true }).fill("127.0.0.1")
          await page.getByLabel("Port", { exact: true }).fill(String(irc.port))
          await page.getByLabel("Use TLS", { exact: true }).uncheck()
          await page.getByLabel("Nick", { exact: true }).fill("belaybot")
          await page.getByRole("button", { name: "Add network" }).click()
          // Added: the client opens the network's server buffer, named by the network.
          await buffers(page).getByRole("link", { name: "ngircd" }).waitFor({ timeout: WAIT })
          await buffers(page).getByText("connected", { exact: true }).waitFor({ timeout: WAIT })
        })
        yield* shot(page, "server-buffer")

        // Older history for the channel, a day back, put straight into the database before anyone joins it.
        const networkId = Number((yield* query(env.DATABASE_URL!, "SELECT id FROM networks WHERE name = 'ngircd'"))[0]!.id)
        yield* query(
          env.DATABASE_URL!,
          `WITH b AS (
             INSERT INTO buffers (network_id, target, target_folded, kind, last_message_at)
             VALUES ($1, $2, $2, 'channel', now()) RETURNING id)
           INSERT INTO messages (buffer_id, time, kind, nick, text)
           SELECT b.id, now() - interval '1 day' + g * interval '1 second', 'privmsg', 'archivist', 'history line ' || g
           FROM b, generate_series(1, $3::int) AS g ORDER BY g`,
          [networkId, CHANNEL, HISTORY]
        )

        // /join from the server buffer: the channel opens, with its member list.
        yield* send(page, `/join ${CHANNEL}`)
        yield* promise(async () => {
          await buffers(page).getByRole("link", { name: CHANNEL, exact: true }).waitFor({ timeout: WAIT })
          await page.getByRole("heading", { name: CHANNEL, level: 1 }).waitFor({ timeout: WAIT })
          await page.getByRole("complementary", { name: "Members" }).getByRole("button", { name: "belaybot" }).waitFor({ timeout: WAIT })
        })

        // carol, a plain IRC client, speaks: the line appears live.
        const carol = yield* peer(irc.port, "carol")
        yield* carol.send(`JOIN ${CHANNEL}`)
        yield* carol.waitFor((l) => l.includes(` JOIN ${CHANNEL}`) || l.includes(` JOIN :${CHANNEL}`))
        yield* promise(() => page.getByRole("complementary", { name: "Members" }).getByRole("button", { name: "carol" }).waitFor({ timeout: WAIT }))
        // The member list: belaybot (who made the channel) is an operator, carol gets voice; each status symbol sits
        // beside its nick, never over it.
        yield* send(page, "/mode +v carol")
        yield* promise(async () => {
          for (const [nick, symbol] of [["belaybot", "@"], ["carol", "+"]] as const) {
            const member = page.getByRole("complementary", { name: "Members" }).getByRole("button", { name: nick })
            await member.locator(".prefix").getByText(symbol, { exact: true }).waitFor({ timeout: WAIT })
            const { prefix, name } = await textBoxes(member)
            expect(prefix.width, `${symbol}${nick}: the symbol is drawn`).toBeGreaterThan(0)
            expect(prefix.right, `${symbol}${nick}: the symbol ends before the nick starts`).toBeLessThanOrEqual(name.left)
            expect(prefix.top < name.bottom && name.top < prefix.bottom, `${symbol}${nick}: on one line`).toBe(true)
          }
        })
        yield* carol.send(`PRIVMSG ${CHANNEL} :hello from carol, see https://example.org/x`)
        yield* promise(() => log(page).getByText("hello from carol, see").waitFor({ timeout: WAIT }))
        expect(yield* promise(() => log(page).getByRole("link", { name: "https://example.org/x" }).getAttribute("href"))).toBe("https://example.org/x")

        // From the composer to carol: a line, an action, a private message (which opens its buffer).
        yield* send(page, "hi carol")
        yield* carol.waitFor((l) => l.startsWith(":belaybot!") && l.endsWith(`PRIVMSG ${CHANNEL} :hi carol`))
        yield* send(page, "/me waves")
        yield* carol.waitFor((l) => l.startsWith(":belaybot!") && l.endsWith(`PRIVMSG ${CHANNEL} :\x01ACTION waves\x01`))
        yield* promise(() => lineInLog(page, "hi carol").waitFor({ timeout: WAIT }))
        yield* promise(() => lineInLog(page, "waves").waitFor({ timeout: WAIT }))
        yield* shot(page, "channel")
        yield* send(page, "/msg carol a private word")
        yield* carol.waitFor((l) => l.startsWith(":belaybot!") && l.endsWith("PRIVMSG carol :a private word"))
        yield* promise(async () => {
          await page.getByRole("heading", { name: "carol", level: 1 }).waitFor({ timeout: WAIT })
          await lineInLog(page, "a private word").waitFor({ timeout: WAIT })
          await buffers(page).getByRole("link", { name: CHANNEL, exact: true }).click()
          await lineInLog(page, "hi carol").waitFor({ timeout: WAIT })
        })

        // A note on carol, from the member list; a search across buffers finds carol's line.
        yield* promise(async () => {
          await page.getByRole("complementary", { name: "Members" }).getByRole("button", { name: "carol" }).click()
          await page.getByRole("textbox", { name: "Note on carol" }).fill("met on #web")
          await page.getByRole("button", { name: "Save note" }).click()
          await page.getByRole("complementary", { name: "About carol" }).getByText("Saved.").waitFor({ timeout: WAIT })
          await page.getByRole("button", { name: "Close" }).click()
          await buffers(page).getByRole("link", { name: "Search" }).click()
          await page.getByRole("searchbox", { name: "Search messages" }).fill("hello carol")
          await page.getByRole("button", { name: "Search", exact: true }).click()
          await page.getByRole("list", { name: "Search results" }).getByText("hello from carol", { exact: false }).waitFor({ timeout: WAIT })
          await buffers(page).getByRole("link", { name: CHANNEL, exact: true }).click()
          await lineInLog(page, "hi carol").waitFor({ timeout: WAIT })
        })
        expect((yield* query(env.DATABASE_URL!, "SELECT note FROM nick_notes WHERE nick_folded = 'carol'"))[0]?.note).toBe("met on #web")

        // Scrolling up brings the older history back, page by page, down to the first line, under a day separator.
        yield* promise(async () => {
          expect(await lineInLog(page, "history line 1").count()).toBe(0)
          const scroller = page.locator(".log-scroll")
          for (let i = 0; i < 10 && (await lineInLog(page, "history line 1").count()) === 0; i++) {
            await scroller.evaluate((el) => {
              el.scrollTop = 0
            })
            await page.waitForTimeout(300)
          }
          await lineInLog(page, "history line 1").waitFor({ timeout: WAIT })
          expect(await lineInLog(page, `history line ${HISTORY}`).count()).toBe(1)
          expect(await log(page).getByRole("heading", { level: 2 }).count()).toBeGreaterThanOrEqual(2)
          await page.getByText("Start of history.").waitFor()
        })
        yield* shot(page, "history")

        // A second tab: the same draft, live, and the same read marker.
        const second = yield* promise(() => context.newPage())
        yield* promise(async () => {
          await second.goto(`${url}/`)
          await buffers(second).getByRole("link", { name: "ngircd" }).click()
          await second.getByRole("heading", { name: "ngircd", level: 1 }).waitFor({ timeout: WAIT })
          // Tab 1 shows the server buffer too, so that neither reads #web.
          await buffers(page).getByRole("link", { name: "ngircd" }).click()
        })
        yield* carol.send(`PRIVMSG ${CHANNEL} :are you there belaybot?`)
        yield* promise(async () => {
          for (const p of [page, second]) {
            await buffers(p).getByLabel("1 unread, 1 for you").waitFor({ timeout: WAIT })
          }
          // Tab 1 reads #web: its marker moves on the server, and the second tab's count goes.
          await buffers(page).getByRole("link", { name: CHANNEL, exact: true }).click()
          await lineInLog(page, "are you there belaybot?").waitFor({ timeout: WAIT })
          await buffers(second).getByLabel("1 unread, 1 for you").waitFor({ state: "detached", timeout: WAIT })
          // The draft: typed in one tab, shown in the other's composer of the same buffer, and kept over a reload.
          await buffers(second).getByRole("link", { name: CHANNEL, exact: true }).click()
          await composer(page).fill("half a thought")
          await expectValue(composer(second), "half a thought")
          await second.reload()
          await expectValue(composer(second), "half a thought")
          await composer(page).fill("")
          await expectValue(composer(second), "")
          await second.close()
        })

        // Belay restarts while the tab is offline; lines arrive after the restart; the tab catches up once back.
        yield* first.stop()
        yield* promise(async () => {
          await page.getByRole("status").getByText(/Reconnecting|Disconnected/).first().waitFor({ timeout: WAIT })
          await context.setOffline(true)
        })
        yield* shot(page, "disconnected")
        const restarted = yield* startBelay(first.env)
        yield* carol.waitFor((l) => l.startsWith(":belaybot!") && l.includes(` JOIN`))
        for (const n of [1, 2, 3]) yield* carol.send(`PRIVMSG ${CHANNEL} :while you were away ${n}`)
        yield* eventually(
          "the three lines are stored",
          query(env.DATABASE_URL!, "SELECT count(*)::int AS n FROM messages WHERE text LIKE 'while you were away %'"),
          (rows) => rows[0]?.n === 3
        )
        yield* promise(async () => {
          await context.setOffline(false)
          for (const n of [1, 2, 3]) await lineInLog(page, `while you were away ${n}`).waitFor({ timeout: WAIT })
          await page.getByRole("status").getByText(/Reconnecting|Disconnected/).waitFor({ state: "detached", timeout: WAIT })
          for (const text of ["while you were away 1", "while you were away 2", "while you were away 3", "hi carol", "are you there belaybot?"]) {
            expect(await lineInLog(page, text).count()).toBe(1)
          }
        })
        // And live again after the catch-up.
        yield* carol.send(`PRIVMSG ${CHANNEL} :welcome back`)
        yield* promise(() => lineInLog(page, "welcome back").waitFor({ timeout: WAIT }))
        expect(restarted.url).toBe(first.url)

        // A phone: the top bar is one row, the account's actions behind its "Account" button; the composer is on
        // screen, the buffers behind the "Buffers" button.
        yield* promise(async () => {
          await page.setViewportSize({ width: 390, height: 760 })
          await composer(page).waitFor()
          const bar = await topBar(page)
          expect(bar.items).toBeGreaterThanOrEqual(2)
          expect(bar.lowestTop, `one row: ${JSON.stringify(bar)}`).toBeLessThan(bar.highestBottom)
          expect(bar.height, `one line tall: ${JSON.stringify(bar)}`).toBeLessThan(bar.tallest * 2)
          expect(bar.right).toBeLessThanOrEqual(390)
          const signOut = page.getByRole("button", { name: "Sign out" })
          expect(await signOut.isVisible()).toBe(false)
          await page.getByRole("button", { name: "Account" }).click()
          await signOut.waitFor()
          const box = (await signOut.boundingBox())!
          expect(box.x + box.width).toBeLessThanOrEqual(390)
          expect(await page.getByRole("link", { name: "Settings" }).isVisible()).toBe(true)
          expect((await topBar(page)).height).toBe(bar.height)
        })
        yield* shot(page, "phone-account-menu")
        yield* promise(async () => {
          await page.keyboard.press("Escape")
          await page.getByRole("button", { name: "Sign out" }).waitFor({ state: "hidden" })
          const box = await composer(page).boundingBox()
          expect(box).not.toBeNull()
          expect(box!.y + box!.height).toBeLessThanOrEqual(760)
          expect(box!.x + box!.width).toBeLessThanOrEqual(390)
          expect(await buffers(page).isVisible()).toBe(false)
          await page.getByRole("button", { name: "Buffers" }).click()
          await buffers(page).getByRole("link", { name: CHANNEL, exact: true }).waitFor()
        })
        yield* shot(page, "phone-sidebar")
        yield* promise(() => page.getByRole("button", { name: "Buffers" }).click())
        yield* shot(page, "phone")

        // Networks: remove the network with its history, after a confirmation.
        yield* promise(async () => {
          await page.setViewportSize({ width: 1280, height: 720 })
          await buffers(page).getByRole("link", { name: "Networks" }).click()
          await page.getByRole("button", { name: "Remove ngircd…" }).click()
          await page.getByRole("button", { name: "Remove ngircd and its history" }).click()
          await buffers(page).getByRole("link", { name: CHANNEL, exact: true }).waitFor({ state: "detached", timeout: WAIT })
        })
        expect(yield* query(env.DATABASE_URL!, "SELECT id FROM networks")).toEqual([])

        // Sign out from the phone's Account menu.
        yield* promise(async () => {
          await page.setViewportSize({ width: 390, height: 760 })
          await page.getByRole("button", { name: "Account" }).click()
          await Promise.all([page.waitForURL((u) => u.pathname === "/login"), page.getByRole("button", { name: "Sign out" }).click()])
        })

        expect(pageErrors).toEqual([])
        console.log(`WebClient.browser.test: ${((Date.now() - started) / 1000).toFixed(1)} s`)
      }),
    { timeout: 240_000 }
  )
})
