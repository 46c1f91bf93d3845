/**
 * What the member chooses per buffer and the settings that follow them, as a person uses them: headless Chromium
 * (playwright-core) against `bin/belay serve` and ngircd, with carol (a bare-socket IRC client) in three channels.
 * From the buffer's settings: pin #gamma (first in the sidebar), mute #beta (dimmed; carol's line adds no count, her
 * highlight does), detach #alpha (out of the sidebar, still joined; carol's highlight brings it back); the theme set to
 * dark. A second browser context of the same member (another browser, as far as storage goes) shows the same choices
 * and theme, and a theme chosen there reaches the first at once. docs/contract.md "Preferences".
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { runCli, startBelay } from "../support/BelayProcess.js"
import { CHROMIUM, launchChromium, newPage } from "../support/Chromium.js"
import { NGIRCD, ngircd, peer } from "../support/Ngircd.js"
import { testEnvironment } from "../support/TestDatabase.js"
import { buffers, promise, query, WAIT } from "../support/WebClientPage.js"

const PASSWORD = "correct horse battery staple"
const SHOTS = Path.resolve(import.meta.dirname, "../../test-output/screenshots")
const CHANNELS = ["#alpha", "#beta", "#gamma"] as const

const signIn = (page: Page, url: string) =>
  promise(async () => {
    await page.goto(`${url}/`)
    await page.getByLabel("Username", { exact: true }).fill("alice")
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD)
    await Promise.all([page.waitForURL((u) => u.pathname === "/"), page.getByRole("button", { name: "Sign in", exact: true }).click()])
    await buffers(page).waitFor()
  })

/** The channel links of the sidebar's buffer lists, in the order drawn. */
const sidebarChannels = (page: Page) =>
  promise(async () => (await buffers(page).locator("ul.networks ul.buffers a").allInnerTexts()).filter((t) => t.startsWith("#")))

const link = (page: Page, channel: string) => buffers(page).getByRole("link", { name: channel, exact: true })

/** Opens a channel and its settings, and sets one of them. */
const choose = (page: Page, channel: string, what: "Pinned" | "Muted" | "Detached") =>
  promise(async () => {
    await link(page, channel).click()
    await page.getByRole("heading", { name: channel, level: 1 }).waitFor({ timeout: WAIT })
    await page.getByRole("button", { name: "Buffer settings" }).click()
    await page.getByRole("checkbox", { name: what }).check()
    await page.getByRole("checkbox", { name: what }).waitFor({ timeout: WAIT })
    await expect.poll(() => page.getByRole("checkbox", { name: what }).isChecked(), { timeout: WAIT }).toBe(true)
  })

/** The theme set on the page's root element (none: the system's). */
const themeOf = async (page: Page) => (await page.locator("html").getAttribute("data-theme")) ?? "system"
const theme = (page: Page) => promise(() => themeOf(page))

describe("preferences in headless Chromium, through ngircd", () => {
  it.scopedLive.skipIf(CHROMIUM.skip || NGIRCD.skip)("pin, mute, detach and the theme, the same in a second browser", () =>
    Effect.gen(function*() {
      const irc = yield* ngircd
      const env = yield* testEnvironment()
      const belay = yield* startBelay(env)
      expect((yield* runCli(belay.env, ["account", "add", "alice"], `${PASSWORD}\n`)).code).toBe(0)
      const added = yield* runCli(belay.env, [
        "network", "add", "alice", "--name", "ngircd", "--host", "127.0.0.1", "--port", String(irc.port),
        "--nick", "belaybot", "--join", CHANNELS.join(",")
      ])
      expect(added.code).toBe(0)
      const carol = yield* peer(irc.port, "carol")
      for (const channel of CHANNELS) {
        yield* carol.send(`JOIN ${channel}`)
        yield* carol.waitFor((l) => l.includes(` JOIN ${channel}`) || l.includes(` JOIN :${channel}`))
      }
      const url = belay.url.replace("127.0.0.1", "localhost")
      const browser = yield* launchChromium
      const first = (yield* newPage(browser)).page
      const errors: Array<string> = []
      first.on("pageerror", (e) => errors.push(e.message))
      yield* signIn(first, url)
      yield* promise(async () => {
        for (const channel of CHANNELS) await link(first, channel).waitFor({ timeout: WAIT })
      })
      expect(yield* sidebarChannels(first)).toEqual(["#alpha", "#beta", "#gamma"])

      // Pinned: #gamma comes first.
      yield* choose(first, "#gamma", "Pinned")
      yield* promise(() => expect.poll(async () => (await buffers(first).locator("ul.networks ul.buffers a").allInnerTexts())[0], { timeout: WAIT }).toBe("#gamma"))
      expect(yield* sidebarChannels(first)).toEqual(["#gamma", "#alpha", "#beta"])

      // Muted: dimmed; carol's plain line counts nothing, her highlight does.
      yield* choose(first, "#beta", "Muted")
      yield* promise(() => link(first, "#gamma").click())
      yield* carol.send("PRIVMSG #beta :just chatting")
      yield* promise(() => first.waitForTimeout(1500))
      expect(yield* promise(() => link(first, "#beta").getAttribute("class"))).toContain("muted-buffer")
      expect(yield* promise(() => link(first, "#beta").getAttribute("aria-describedby"))).toBeNull()
      yield* carol.send("PRIVMSG #beta :belaybot: are you there?")
      yield* promise(() => buffers(first).getByLabel("1 for you", { exact: true }).waitFor({ timeout: WAIT }))

      // Detached: out of the sidebar once another buffer is open, still joined upstream; a highlight brings it back.
      yield* choose(first, "#alpha", "Detached")
      yield* promise(() => link(first, "#gamma").click())
      yield* promise(() => link(first, "#alpha").waitFor({ state: "detached", timeout: WAIT }))
      expect(yield* sidebarChannels(first)).toEqual(["#gamma", "#beta"])
      yield* carol.send("PRIVMSG #alpha :plain line while detached")
      yield* carol.send("PRIVMSG #alpha :belaybot: ping")
      yield* promise(() => link(first, "#alpha").waitFor({ timeout: WAIT }))

      // The theme follows the member.
      yield* promise(() => buffers(first).getByLabel("Theme").selectOption("dark"))
      yield* promise(() => expect.poll(() => themeOf(first), { timeout: WAIT }).toBe("dark"))
      // The buffer's settings open, in the dark theme (test-output/screenshots, not in the repository).
      yield* promise(async () => {
        await link(first, "#beta").click()
        await first.getByRole("button", { name: "Buffer settings" }).click()
        await first.getByRole("group", { name: "Settings of #beta" }).waitFor({ timeout: WAIT })
        Fs.mkdirSync(SHOTS, { recursive: true })
        await first.screenshot({ path: Path.join(SHOTS, "buffer-settings-dark.png") })
        // Escape closes the settings and gives the focus back to their button.
        await first.keyboard.press("Escape")
        await first.getByRole("group", { name: "Settings of #beta" }).waitFor({ state: "detached", timeout: WAIT })
        expect(await first.getByRole("button", { name: "Buffer settings" }).evaluate((b) => b === b.ownerDocument.activeElement)).toBe(true)
      })

      const rows = yield* query(env.DATABASE_URL!, "SELECT target, pinned, muted, detached, notify FROM buffer_preferences ORDER BY target")
      expect(rows).toEqual([
        { target: "#alpha", pinned: false, muted: false, detached: true, notify: "highlights" },
        { target: "#beta", pinned: false, muted: true, detached: false, notify: "highlights" },
        { target: "#gamma", pinned: true, muted: false, detached: false, notify: "highlights" }
      ])

      // A second browser of the same member: the same choices and theme.
      const second = (yield* newPage(browser)).page
      second.on("pageerror", (e) => errors.push(e.message))
      yield* signIn(second, url)
      yield* promise(() => link(second, "#gamma").waitFor({ timeout: WAIT }))
      yield* promise(() => expect.poll(async () => (await buffers(second).locator("ul.networks ul.buffers a").allInnerTexts())[0], { timeout: WAIT }).toBe("#gamma"))
      expect(yield* promise(() => link(second, "#beta").getAttribute("class"))).toContain("muted-buffer")
      expect(yield* theme(second)).toBe("dark")
      yield* promise(async () => {
        await link(second, "#alpha").click()
        await second.getByRole("button", { name: "Buffer settings" }).click()
        expect(await second.getByRole("checkbox", { name: "Detached" }).isChecked()).toBe(true)
        expect(await second.getByRole("checkbox", { name: "Pinned" }).isChecked()).toBe(false)
        expect(await second.getByRole("radio", { name: "Highlights" }).isChecked()).toBe(true)
        // A notification level chosen here is stored for both.
        await second.getByRole("radio", { name: "Nothing" }).check()
      })
      yield* promise(() =>
        expect.poll(async () => (await query(env.DATABASE_URL!, "SELECT notify FROM buffer_preferences WHERE target = '#alpha'").pipe(Effect.runPromise))[0]?.notify, { timeout: WAIT }).toBe("none")
      )

      // A theme chosen in the second browser reaches the first at once.
      yield* promise(() => buffers(second).getByLabel("Theme").selectOption("light"))
      yield* promise(() => expect.poll(() => themeOf(first), { timeout: WAIT }).toBe("light"))
      expect(errors).toEqual([])
    }), 180_000)
})
