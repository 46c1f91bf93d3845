/**
 * The web client and the member's pages as assistive technology and the keyboard meet them: headless Chromium
 * (playwright-core) against `bin/belay serve` and ngircd, with a network of two channels, a conversation and
 * stored history (lines of many speakers, some naming the member: highlights and mentions).
 *
 * First test: axe-core (pinned, a devDependency) runs on every main view — a channel, a conversation, the server
 * buffer, the networks page and a network's form, search with results and a result opened in context, mentions, the
 * Ctrl+K switcher, each settings page and sign-in — in the light and the dark scheme (prefers-color-scheme emulated),
 * and fails on any violation axe rates serious or critical, naming the rule and the elements. It writes a screenshot
 * of each view, desktop (1280 × 800), phone (390 × 844) and dark, into test-output/screenshots (not in the
 * repository): `<view>-desktop.png`, `<view>-phone.png`, `<view>-dark.png`.
 *
 * Second test: one whole session without the mouse — sign in, Alt+1…9 and Alt+↑/↓ between buffers, Ctrl+K to a
 * buffer by name, a message sent from the composer, a search whose result opens in context, Settings — every step
 * by key presses only, the focus moved with Tab and Shift+Tab.
 */
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { runCli, startBelay } from "../support/BelayProcess.js"
import { CHROMIUM, launchChromium, newPage, untilInPage } from "../support/Chromium.js"
import { NGIRCD, ngircd } from "../support/Ngircd.js"
import { testEnvironment } from "../support/TestDatabase.js"
import { buffers, composer, log, promise, query, WAIT } from "../support/WebClientPage.js"

const PASSWORD = "correct horse battery staple"
const SHOTS = Path.resolve(import.meta.dirname, "../../test-output/screenshots")
const DESKTOP = { width: 1280, height: 800 }
const PHONE = { width: 390, height: 844 }
const AXE_SOURCE = Fs.readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

interface Violation {
  readonly id: string
  readonly impact: string | null
  readonly help: string
  readonly nodes: ReadonlyArray<{ readonly target: ReadonlyArray<unknown>; readonly failureSummary?: string }>
}

/**
 * axe's serious and critical violations on the page as drawn now, each as a line naming the rule and its elements.
 * The engine is evaluated through DevTools (not a script element), so the pages' CSP stays as served.
 */
const axeViolations = (page: Page) =>
  promise(async () => {
    // Expressions, not functions: this file is compiled without the DOM's types.
    if (!(await page.evaluate("'axe' in window"))) await page.evaluate(AXE_SOURCE)
    const violations = await page.evaluate(
      "axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)"
    ) as ReadonlyArray<Violation>
    return violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => `${JSON.stringify(n.target)} ${n.failureSummary ?? ""}`).join("; ")}`)
  })

/** Runs axe in light and dark and writes the view's three screenshots; returns the violations, by scheme. */
const checkView = (page: Page, view: string) =>
  Effect.gen(function*() {
    Fs.mkdirSync(SHOTS, { recursive: true })
    const found: Array<string> = []
    for (const scheme of ["light", "dark"] as const) {
      yield* promise(async () => {
        await page.emulateMedia({ colorScheme: scheme })
        await page.evaluate("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
      })
      for (const v of yield* axeViolations(page)) found.push(`${view}, ${scheme}: ${v}`)
      yield* promise(() => page.screenshot({ path: Path.join(SHOTS, `${view}-${scheme === "light" ? "desktop" : "dark"}.png`) }))
    }
    yield* promise(async () => {
      await page.emulateMedia({ colorScheme: "light" })
      await page.setViewportSize(PHONE)
      await page.waitForTimeout(250)
      await page.screenshot({ path: Path.join(SHOTS, `${view}-phone.png`) })
      await page.setViewportSize(DESKTOP)
    })
    return found
  })

/** ngircd, `belay serve` with the account alice, and Chromium; the network "ngircd" (channels #web and #dev). */
const setUp = Effect.gen(function*() {
  const irc = yield* ngircd
  const env = yield* testEnvironment()
  const belay = yield* startBelay(env)
  expect((yield* runCli(belay.env, ["account", "add", "alice"], `${PASSWORD}\n`)).code).toBe(0)
  const url = belay.url.replace("127.0.0.1", "localhost")
  const networkId = yield* promise(async () => {
    const login = await fetch(`${belay.url}/api/auth/login/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "alice", password: PASSWORD })
    })
    const { access_token } = (await login.json()) as { access_token: string }
    const added = await fetch(`${belay.url}/api/networks`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${access_token}` },
      body: JSON.stringify({ name: "ngircd", host: "127.0.0.1", port: irc.port, tls: false, nick: "belaybot", channels: ["#web", "#dev"] })
    })
    expect(added.status).toBe(201)
    return ((await added.json()) as { id: number }).id
  })
  const browser = yield* launchChromium
  return { irc, env, url, networkId, browser } as const
})

const SPEAKERS = "ARRAY['carol','dave','erin','frank','grace','heidi','ivan','judy','mallory','niaj','olivia','peggy','rupert','sybil','trent','victor','walter','yolanda']"

/**
 * Stored history for `target`: `count` lines of many speakers an hour back, every tenth naming belaybot (a highlight,
 * a mention), every thirteenth belaybot's own. The buffer row may already exist (the channel was joined).
 */
const history = (databaseUrl: string, networkId: number, target: string, kind: "channel" | "dm", count: number) =>
  query(
    databaseUrl,
    `WITH b AS (
       INSERT INTO buffers (network_id, target, target_folded, kind, last_message_at) VALUES ($1, $2, lower($2), $3, now())
       ON CONFLICT (network_id, target_folded) DO UPDATE SET last_message_at = now() RETURNING id)
     INSERT INTO messages (buffer_id, time, kind, nick, text, self)
     SELECT b.id, now() - interval '1 hour' + g * interval '5 seconds', 'privmsg',
            CASE WHEN g % 13 = 0 THEN 'belaybot' ELSE (${SPEAKERS})[1 + g % 18] END,
            CASE WHEN g % 10 = 0 THEN 'belaybot: have a look at item ' || g ELSE 'history line ' || g || ' about the release' END,
            g % 13 = 0
     FROM b, generate_series(1, $4::int) AS g ORDER BY g`,
    [networkId, target, kind, count]
  )

const signIn = (page: Page, url: string) =>
  promise(async () => {
    await page.goto(`${url}/`)
    await page.getByLabel("Username", { exact: true }).fill("alice")
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD)
    await Promise.all([page.waitForURL((u) => u.pathname === "/"), page.getByRole("button", { name: "Sign in", exact: true }).click()])
    await buffers(page).waitFor()
  })

const heading = (page: Page, name: string) => page.getByRole("heading", { name, level: 1, exact: true }).waitFor({ timeout: WAIT })

/** Whether the focused element matches `selector`. */
const focusedIs = (page: Page, selector: string) =>
  page.evaluate(`document.activeElement?.matches(${JSON.stringify(selector)}) ?? false`) as Promise<boolean>

/** Presses Tab (or Shift+Tab) until the focus is on an element matching `selector`; fails after `max` presses. */
const tabTo = async (page: Page, selector: string, backwards = false, max = 80) => {
  for (let i = 0; i < max; i++) {
    if (await focusedIs(page, selector)) return
    await page.keyboard.press(backwards ? "Shift+Tab" : "Tab")
  }
  throw new Error(`${selector} never took the focus in ${max} presses`)
}

const joined = (page: Page) =>
  promise(async () => {
    for (const channel of ["#web", "#dev"]) await buffers(page).getByRole("link", { name: channel, exact: true }).waitFor({ timeout: WAIT })
    await buffers(page).getByText("connected", { exact: true }).waitFor({ timeout: WAIT })
  })

describe("the web client, accessible and by keyboard, in headless Chromium", () => {
  it.scopedLive.skipIf(CHROMIUM.skip || NGIRCD.skip)(
    "axe finds no serious or critical violation on any main view, light and dark; screenshots of each",
    () =>
      Effect.gen(function*() {
        const { env, url, networkId, browser } = yield* setUp
        const { page } = yield* newPage(browser)
        yield* promise(() => page.setViewportSize(DESKTOP))
        const found: Array<string> = []

        // Sign-in, signed out.
        yield* promise(() => page.goto(`${url}/login`))
        found.push(...yield* checkView(page, "sign-in"))

        yield* signIn(page, url)
        yield* joined(page)
        yield* history(env.DATABASE_URL!, networkId, "#web", "channel", 300)
        yield* history(env.DATABASE_URL!, networkId, "carol", "dm", 40)
        // #web read up to its 21st line: 279 lines unread, more than the first page holds.
        yield* query(
          env.DATABASE_URL!,
          `INSERT INTO read_markers (account_id, network_id, target_folded, message_id)
           SELECT n.account_id, n.id, '#web', m.id FROM networks n
           JOIN buffers b ON b.network_id = n.id AND b.target_folded = '#web'
           JOIN messages m ON m.buffer_id = b.id AND m.text = 'history line 21 about the release'
           WHERE n.id = $1
           ON CONFLICT (network_id, target_folded) DO UPDATE SET message_id = EXCLUDED.message_id`,
          [networkId]
        )
        const hash = (target: string) => `${url}/#/b/${networkId}/${encodeURIComponent(target)}`
        // A fresh load straight onto #web: the buffer list, its read markers and its history as stored. Not a hash
        // change then a reload: the page shown by the hash change, focused and at its newest line, marks #web read
        // 150 ms later (Store.maybeMarkRead), and on a loaded machine that came before the reload, leaving no unread.
        yield* promise(async () => {
          await page.goto("about:blank")
          await page.goto(hash("#web"))
          await heading(page, "#web")
          await log(page).getByText("history line 299 about the release").waitFor({ timeout: WAIT })
          await page.getByRole("button", { name: "Jump to first unread" }).waitFor({ timeout: WAIT })
        })
        found.push(...yield* checkView(page, "channel"))
        // The first unread line is two pages back: the bar loads them and puts the "New messages" line in view.
        yield* promise(async () => {
          await page.getByRole("button", { name: "Jump to first unread" }).click()
          await untilInPage(page, "document.activeElement?.previousElementSibling?.classList.contains('unread-line') ?? false", WAIT)
          expect(await page.evaluate("document.activeElement?.textContent ?? ''")).toContain("history line 22 ")
          const line = page.getByRole("separator").filter({ hasText: "New messages" })
          expect(await line.isVisible()).toBe(true)
          const [above, below] = await Promise.all([
            log(page).getByText("history line 21 about the release", { exact: true }).count(),
            log(page).getByText("history line 22 about the release", { exact: true }).count()
          ])
          expect([above, below]).toEqual([1, 1])
          expect(await page.evaluate("document.querySelector('.unread-line')?.nextElementSibling?.textContent ?? ''")).toContain("history line 22 ")
          await page.getByRole("button", { name: "Jump to first unread" }).waitFor({ state: "detached", timeout: WAIT })
        })
        found.push(...yield* checkView(page, "channel-first-unread"))

        yield* promise(async () => {
          await page.keyboard.press("Control+k")
          await page.getByRole("dialog", { name: "Jump to a buffer" }).waitFor()
          await page.getByRole("combobox", { name: "Buffer name" }).fill("we")
        })
        found.push(...yield* checkView(page, "switcher"))
        yield* promise(() => page.keyboard.press("Escape"))

        yield* promise(async () => {
          await page.goto(hash("carol"))
          await heading(page, "carol")
          await log(page).getByText("history line 39 about the release").waitFor({ timeout: WAIT })
        })
        found.push(...yield* checkView(page, "conversation"))

        yield* promise(async () => {
          await page.goto(hash(`:server:${networkId}`))
          await heading(page, "ngircd")
        })
        found.push(...yield* checkView(page, "server-buffer"))

        yield* promise(async () => {
          await page.goto(`${url}/#/networks`)
          await heading(page, "Networks")
        })
        found.push(...yield* checkView(page, "networks"))
        yield* promise(async () => {
          await page.goto(`${url}/#/networks/${networkId}`)
          await page.getByLabel("Server", { exact: true }).waitFor({ timeout: WAIT })
        })
        found.push(...yield* checkView(page, "network-edit"))

        yield* promise(async () => {
          // Reloaded: no buffer's history is loaded, so an old result opens in a window of its own.
          await page.goto(`${url}/#/search`)
          await page.reload()
          await page.getByRole("searchbox", { name: "Search messages" }).fill("release from:carol in:#web")
          await page.getByRole("searchbox", { name: "Search messages" }).press("Enter")
          await page.getByRole("list", { name: "Search results" }).getByRole("listitem").first().waitFor({ timeout: WAIT })
        })
        found.push(...yield* checkView(page, "search"))
        yield* promise(async () => {
          const results = page.getByRole("list", { name: "Search results" })
          // Every result is carol's, in #web.
          for (const text of await results.getByRole("listitem").allInnerTexts()) expect(text).toMatch(/^#web .* carol history line/s)
          await results.getByRole("listitem").last().getByRole("link").click()
          await heading(page, "#web")
          await page.locator(".line.jump-target").waitFor({ timeout: WAIT })
          expect(await page.locator(".line.jump-target").innerText()).toContain("history line 18 about the release")
          expect(await page.locator(".line.jump-context").count()).toBe(6)
          await page.getByRole("button", { name: "Back to the latest messages" }).first().waitFor()
          // The window: the found line with 25 before and after it, not the buffer's latest lines.
          expect(await log(page).getByText("history line 43 about the release", { exact: true }).count()).toBe(1)
          expect(await log(page).getByText("history line 299 about the release", { exact: true }).count()).toBe(0)
        })
        found.push(...yield* checkView(page, "search-context"))
        // Scrolling down the window brings its later lines, a page at a time; then back to the latest lines.
        yield* promise(async () => {
          const later = log(page).getByText("history line 81 about the release", { exact: true })
          for (let i = 0; i < 20 && (await later.count()) === 0; i++) {
            await page.locator(".log-scroll").evaluate((el) => {
              el.scrollTop = el.scrollHeight
            })
            await page.waitForTimeout(300)
          }
          expect(await later.count()).toBe(1)
          expect(await page.locator(".line.jump-target").innerText()).toContain("history line 18 about the release")
          await page.getByRole("button", { name: "Back to the latest messages" }).first().click()
          await log(page).getByText("history line 299 about the release", { exact: true }).waitFor({ timeout: WAIT })
          expect(await page.locator(".line.jump-target").count()).toBe(0)
        })

        yield* promise(async () => {
          await page.goto(`${url}/#/mentions`)
          await page.getByRole("list", { name: "Mentions" }).getByRole("listitem").first().waitFor({ timeout: WAIT })
          // Newest first: carol's conversation was stored after #web.
          const items = await page.getByRole("list", { name: "Mentions" }).getByRole("listitem").allInnerTexts()
          expect(items[0]).toContain("belaybot: have a look at item 40")
          expect(items.some((t) => t.startsWith("#web") && t.includes("belaybot: have a look at item 300"))).toBe(true)
          expect(items.every((t) => t.includes("belaybot"))).toBe(true)
        })
        found.push(...yield* checkView(page, "mentions"))

        for (const settings of ["api-tokens", "authorized-apps", "passkeys", "password", "account"]) {
          yield* promise(async () => {
            const res = await page.goto(`${url}/settings/${settings}`)
            expect(res?.status()).toBe(200)
          })
          found.push(...yield* checkView(page, `settings-${settings}`))
        }

        expect(found).toEqual([])
      })
  )

  it.scopedLive.skipIf(CHROMIUM.skip || NGIRCD.skip)(
    "one whole session by keyboard alone: sign in, switch buffers, send, search and open a result, Settings",
    () =>
      Effect.gen(function*() {
        const { env, url, networkId, browser } = yield* setUp
        yield* history(env.DATABASE_URL!, networkId, "#dev", "channel", 30)
        const { page } = yield* newPage(browser)
        yield* promise(() => page.setViewportSize(DESKTOP))

        // Sign in: the username field has the focus (autofocus); Tab to the password; Enter submits.
        yield* promise(async () => {
          await page.goto(`${url}/`)
          await tabTo(page, "#username")
          await page.keyboard.type("alice")
          await tabTo(page, "#password")
          await page.keyboard.type(PASSWORD)
          await Promise.all([page.waitForURL((u) => u.pathname === "/"), page.keyboard.press("Enter")])
        })
        yield* joined(page)

        // Alt+1 is the sidebar's first buffer (the network's server buffer), Alt+2 the next (#dev); Alt+↓ and Alt+↑
        // walk the list; Ctrl+K finds #web by a part of its name. Each puts the caret in the composer.
        yield* promise(async () => {
          await page.keyboard.press("Alt+1")
          await heading(page, "ngircd")
          await page.keyboard.press("Alt+2")
          await heading(page, "#dev")
          await page.keyboard.press("Alt+ArrowDown")
          await heading(page, "#web")
          await page.keyboard.press("Alt+ArrowUp")
          await heading(page, "#dev")
          await page.keyboard.press("Control+k")
          await page.getByRole("dialog", { name: "Jump to a buffer" }).waitFor()
          await untilInPage(page, "document.activeElement?.matches('[role=combobox]') === true", WAIT)
          await page.keyboard.type("eb")
          await page.keyboard.press("Enter")
          await heading(page, "#web")
          expect(await page.getByRole("dialog").count()).toBe(0)
          await untilInPage(page, "document.activeElement?.getAttribute('aria-label') === 'Message'", WAIT)
        })

        // A message from the composer.
        yield* promise(async () => {
          await page.keyboard.type("typed without a mouse")
          await page.keyboard.press("Enter")
          await log(page).getByText("typed without a mouse", { exact: true }).waitFor({ timeout: WAIT })
          expect(await composer(page).inputValue()).toBe("")
        })

        // Search: back to the sidebar's Search link, the query, Enter; the result opens #web at the line, focused.
        yield* promise(async () => {
          await tabTo(page, "#sidebar a[href='#/search']", true)
          await page.keyboard.press("Enter")
          await heading(page, "Search")
          await tabTo(page, "input[type=search]")
          await page.keyboard.type("mouse in:#web")
          await page.keyboard.press("Enter")
          await page.getByRole("list", { name: "Search results" }).getByRole("listitem").first().waitFor({ timeout: WAIT })
          await tabTo(page, "ol.results a")
          await page.keyboard.press("Enter")
          await heading(page, "#web")
          await untilInPage(page, "document.activeElement?.classList.contains('jump-target') ?? false", WAIT)
          expect(await page.evaluate("document.activeElement?.textContent ?? ''")).toContain("typed without a mouse")
        })

        // Settings, from the top bar.
        yield* promise(async () => {
          await tabTo(page, "a[href='/settings']", true)
          await Promise.all([page.waitForURL((u) => u.pathname.startsWith("/settings/")), page.keyboard.press("Enter")])
          await page.getByRole("heading", { level: 1 }).first().waitFor()
        })
      })
  )
})
