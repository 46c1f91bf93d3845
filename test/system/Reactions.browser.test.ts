/**
 * Reactions, replies, typing and redaction in the web client (docs/contract.md "The member's browser surface"):
 * headless Chromium (playwright-core) against `bin/belay serve`, whose network connects to the scripted fake IRC
 * server (test/support/FakeIrcServer.ts) offering message-tags, echo-message and draft/message-redaction, so the test
 * both writes what the upstream says and reads what Belay sends it. Things are found as a screen reader finds them.
 *
 * One test, in order: an upstream message with a msgid offers "Message actions" (react, reply), one without a msgid
 * none; an upstream reaction is drawn under the message it names, never as a line; the member's reaction reaches the
 * upstream as TAGMSG with `+draft/react` and `+draft/reply`, and its echo is drawn as the member's own; Reply sends
 * PRIVMSG with `+draft/reply` and the echo shows the quote of what it answers (a reply to a message not loaded says
 * so); an upstream typing notice shows "carol is typing…" and is gone 6 s later, `done` takes one away at once; the
 * member's typing goes upstream as `+typing=active` and `+typing=done`; axe finds nothing serious on this view; after a
 * reload the reactions and quotes come back from history; an upstream REDACT shows "message removed" (its reactions
 * and its quote go), and the member's Delete sends REDACT; after another reload the removed messages stay removed.
 * Screenshots into test-output/screenshots (not in the repository): `reactions.png`, and the actions panel of the
 * member's own message open (react, reply, delete), `message-actions-desktop.png` and `message-actions-dark.png`.
 */
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Locator, Page } from "playwright-core"
import { runCli, startBelay } from "../support/BelayProcess.js"
import { CHROMIUM, launchChromium, newPage } from "../support/Chromium.js"
import * as FakeIrcServer from "../support/FakeIrcServer.js"
import { testEnvironment } from "../support/TestDatabase.js"
import { buffers, composer, expectValue, log, promise, WAIT } from "../support/WebClientPage.js"

const PASSWORD = "correct horse battery staple"
const CHANNEL = "#tags"
const SHOTS = Path.resolve(import.meta.dirname, "../../test-output/screenshots")
const DESKTOP = { width: 1280, height: 800 }
const AXE_SOURCE = Fs.readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

/** The line of the log that shows `text`. */
const lineWith = (page: Page, text: string): Locator => log(page).locator(".line", { hasText: text })

/** axe's serious and critical violations on the page as drawn now (evaluated through DevTools: the CSP stays). */
const axeViolations = (page: Page) =>
  promise(async () => {
    if (!(await page.evaluate("'axe' in window"))) await page.evaluate(AXE_SOURCE)
    const violations = await page.evaluate("axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)") as ReadonlyArray<
      { id: string; impact: string | null; nodes: ReadonlyArray<{ target: unknown }> }
    >
    return violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => JSON.stringify(n.target)).join("; ")}`)
  })

/** The element that has the focus: its class and data-id, to tell which line it is. */
const focused = (page: Page) =>
  promise(() => page.evaluate("(() => { const e = document.activeElement; return e === null ? null : { cls: e.className, id: e.getAttribute('data-id') } })()")) as Effect.Effect<
    { cls: string; id: string | null } | null
  >

describe("reactions, replies, typing and redaction in the web client, against a fake upstream with message-tags", () => {
  it.scopedLive.skipIf(CHROMIUM.skip)(
    "actions on a message with a msgid, reactions both ways, a reply and its quote, typing both ways, redaction both ways, all kept",
    () =>
      Effect.gen(function*() {
        const irc = yield* FakeIrcServer.make({ timeout: "30 seconds" })
        const env = yield* testEnvironment()
        const belay = yield* startBelay(env)
        expect((yield* runCli(belay.env, ["account", "add", "alice"], `${PASSWORD}\n`)).code).toBe(0)
        const added = yield* runCli(belay.env, [
          "network", "add", "alice", "--name", "fake", "--host", irc.host, "--port", String(irc.port), "--nick", "alice",
          "--join", CHANNEL
        ])
        expect(added.code, added.stderr).toBe(0)
        const upstream = yield* irc.nextConnection("30 seconds")
        const registration = yield* upstream.register("alice", undefined, {
          caps: ["message-tags", "echo-message", "draft/message-redaction", "server-time"]
        })
        expect(registration.capsEnabled).toEqual(expect.arrayContaining(["message-tags", "echo-message", "draft/message-redaction"]))
        yield* upstream.waitFor((l) => l.command === "JOIN" && l.params[0] === CHANNEL)
        yield* upstream.send(
          `:alice!a@host JOIN ${CHANNEL}`,
          `:irc.fake.test 353 alice = ${CHANNEL} :@alice carol dave`,
          `:irc.fake.test 366 alice ${CHANNEL} :End of /NAMES list.`
        )

        const browser = yield* launchChromium
        const { page } = yield* newPage(browser)
        const pageErrors: Array<string> = []
        page.on("pageerror", (e) => pageErrors.push(e.message))
        const url = belay.url.replace("127.0.0.1", "localhost")
        yield* promise(async () => {
          await page.goto(`${url}/`)
          await page.getByLabel("Username", { exact: true }).fill("alice")
          await page.getByLabel("Password", { exact: true }).fill(PASSWORD)
          await Promise.all([page.waitForURL((u) => u.pathname === "/"), page.getByRole("button", { name: "Sign in", exact: true }).click()])
          await buffers(page).getByRole("link", { name: CHANNEL, exact: true }).click({ timeout: WAIT })
          await page.getByRole("heading", { name: CHANNEL, level: 1 }).waitFor({ timeout: WAIT })
        })

        // A message with a msgid offers its actions; one without offers none.
        yield* upstream.send(
          `:carol!c@host PRIVMSG ${CHANNEL} :no id on this one`,
          `@msgid=m-carol-1 :carol!c@host PRIVMSG ${CHANNEL} :hello with an id`
        )
        yield* promise(async () => {
          await lineWith(page, "hello with an id").waitFor({ timeout: WAIT })
          expect(await lineWith(page, "no id on this one").getByRole("button", { name: "Message actions" }).count()).toBe(0)
          const toggle = lineWith(page, "hello with an id").getByRole("button", { name: "Message actions" })
          await toggle.click()
          expect(await toggle.getAttribute("aria-expanded")).toBe("true")
          const panel = page.getByRole("group", { name: "Actions on carol's message" })
          await panel.getByRole("button", { name: "React with thumbs up" }).waitFor({ timeout: WAIT })
          await panel.getByRole("button", { name: "Reply" }).waitFor({ timeout: WAIT })
          // Not the member's own: nothing to delete.
          expect(await panel.getByRole("button", { name: "Delete" }).count()).toBe(0)
          // Escape closes the panel and gives the focus back to its button.
          await page.keyboard.press("Escape")
          await panel.waitFor({ state: "detached", timeout: WAIT })
          expect(await toggle.evaluate((b) => b === b.ownerDocument.activeElement)).toBe(true)
        })

        // dave reacts upstream: drawn under carol's message, not as a line of its own.
        const linesBefore = yield* promise(() => log(page).locator(".line").count())
        yield* upstream.send(`@msgid=m-react-1;+draft/react=🎉;+draft/reply=m-carol-1 :dave!d@host TAGMSG ${CHANNEL}`)
        const reactions = page.getByRole("group", { name: "Reactions" })
        yield* promise(async () => {
          await reactions.getByRole("button", { name: /🎉\s*1:\s*dave/ }).waitFor({ timeout: WAIT })
          expect(await log(page).locator(".line").count()).toBe(linesBefore)
        })

        // The member reacts: a TAGMSG upstream with both tags; its echo is drawn as the member's own.
        yield* promise(async () => {
          await lineWith(page, "hello with an id").getByRole("button", { name: "Message actions" }).click()
          await page.getByRole("button", { name: "React with thumbs up" }).click()
        })
        const sentReaction = yield* upstream.waitFor((l) => l.command === "TAGMSG" && l.params[0] === CHANNEL && "+draft/react" in l.tags)
        expect(sentReaction.tags).toMatchObject({ "+draft/react": "👍", "+draft/reply": "m-carol-1" })
        yield* upstream.send(`@msgid=m-react-2;+draft/react=👍;+draft/reply=m-carol-1 :alice!a@host TAGMSG ${CHANNEL}`)
        yield* promise(async () => {
          const mine = reactions.locator(".reaction.mine")
          await mine.waitFor({ timeout: WAIT })
          expect(await mine.innerText()).toContain("👍")
          expect(await mine.innerText()).toContain("you")
        })

        // Reply: the composer's reply mode, PRIVMSG with +draft/reply upstream, and the echo's quote.
        yield* promise(async () => {
          await lineWith(page, "hello with an id").getByRole("button", { name: "Message actions" }).click()
          await page.getByRole("button", { name: "Reply", exact: true }).click()
          await page.getByRole("group", { name: "Reply" }).getByText("carol").waitFor({ timeout: WAIT })
          // Escape leaves reply mode; Reply again enters it.
          await composer(page).press("Escape")
          await page.getByRole("group", { name: "Reply" }).waitFor({ state: "detached", timeout: WAIT })
          await lineWith(page, "hello with an id").getByRole("button", { name: "Message actions" }).click()
          await page.getByRole("button", { name: "Reply", exact: true }).click()
          await composer(page).fill("sure thing")
          await composer(page).press("Enter")
          await expectValue(composer(page), "")
        })
        const sentReply = yield* upstream.waitFor((l) => l.command === "PRIVMSG" && l.params[1] === "sure thing")
        expect(sentReply.tags["+draft/reply"]).toBe("m-carol-1")
        yield* upstream.send(
          `@msgid=m-alice-1;+draft/reply=m-carol-1 :alice!a@host PRIVMSG ${CHANNEL} :sure thing`,
          `@msgid=m-carol-2;+draft/reply=m-gone :carol!c@host PRIVMSG ${CHANNEL} :answering something old`
        )
        yield* promise(async () => {
          const quote = log(page).getByRole("button", { name: /In reply to\s*carol:\s*hello with an id/ })
          await quote.waitFor({ timeout: WAIT })
          await log(page).getByText("In reply to a message not loaded").waitFor({ timeout: WAIT })
          await quote.click()
        })
        // The quote brings the answered line into view and gives it the focus.
        const carolLineId = yield* promise(() => lineWith(page, "hello with an id").getAttribute("data-id"))
        expect((yield* focused(page))?.id).toBe(carolLineId)

        // axe on the view with reactions, quotes, an open actions panel and reply mode.
        yield* promise(async () => {
          await lineWith(page, "sure thing").getByRole("button", { name: "Message actions" }).click()
          await page.getByRole("group", { name: "Actions on alice's message" }).waitFor({ timeout: WAIT })
        })
        const violations = yield* axeViolations(page)
        Fs.mkdirSync(SHOTS, { recursive: true })
        yield* promise(() => page.screenshot({ path: Path.join(SHOTS, "reactions.png") }))
        expect(violations).toEqual([])
        // The same panel — the member's own message: react, reply and delete — as the views' shots are taken
        // (Accessibility.browser.test.ts: 1280 × 800, light and dark), and axe on it in the dark scheme too.
        const darkViolations = yield* promise(async () => {
          const panel = page.getByRole("group", { name: "Actions on alice's message" })
          await panel.getByRole("button", { name: "Delete", exact: true }).waitFor({ timeout: WAIT })
          await page.setViewportSize(DESKTOP)
          await page.screenshot({ path: Path.join(SHOTS, "message-actions-desktop.png") })
          await page.emulateMedia({ colorScheme: "dark" })
          await page.evaluate("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
          await page.screenshot({ path: Path.join(SHOTS, "message-actions-dark.png") })
        }).pipe(Effect.zipRight(axeViolations(page)))
        yield* promise(() => page.emulateMedia({ colorScheme: "light" }))
        expect(darkViolations).toEqual([])
        expect(Fs.statSync(Path.join(SHOTS, "message-actions-dark.png")).size).toBeGreaterThan(0)
        yield* promise(() => page.keyboard.press("Escape"))

        // Typing upstream: shown, gone 6 s after the last `active`; `done` takes it away at once.
        const typing = page.locator(".typing")
        yield* upstream.send(`@+typing=active :carol!c@host TAGMSG ${CHANNEL}`, `@+typing=active :dave!d@host TAGMSG ${CHANNEL}`)
        yield* promise(() => typing.getByText("carol and dave are typing…").waitFor({ timeout: WAIT }))
        const shownAt = Date.now()
        yield* upstream.send(`@+typing=done :dave!d@host TAGMSG ${CHANNEL}`)
        yield* promise(() => typing.getByText("carol is typing…", { exact: true }).waitFor({ timeout: WAIT }))
        expect(Date.now() - shownAt).toBeLessThan(4_000)
        yield* promise(() => typing.getByText("carol is typing…").waitFor({ state: "detached", timeout: 12_000 }))
        expect(Date.now() - shownAt).toBeGreaterThanOrEqual(5_000)

        // The member types: `active` upstream, and `done` once the box is emptied.
        // (The reply sent above already said `done`: the lines up to it are passed over first.)
        const typingSent = (state: string) => (l: FakeIrcServer.FakeLine) =>
          l.command === "TAGMSG" && l.params[0] === CHANNEL && l.tags["+typing"] === state
        yield* upstream.waitFor(typingSent("done"))
        yield* promise(() => composer(page).fill("thinking about it"))
        yield* upstream.waitFor(typingSent("active"))
        yield* promise(() => composer(page).fill(""))
        yield* upstream.waitFor(typingSent("done"))

        // A reload draws it all again from history: reactions under their message (the member's own marked), quotes.
        const reloaded = promise(async () => {
          await page.reload()
          await page.getByRole("heading", { name: CHANNEL, level: 1 }).waitFor({ timeout: WAIT })
          await lineWith(page, "answering something old").waitFor({ timeout: WAIT })
        })
        yield* reloaded
        yield* promise(async () => {
          await reactions.getByRole("button", { name: /🎉\s*1:\s*dave/ }).waitFor({ timeout: WAIT })
          expect(await reactions.locator(".reaction.mine").innerText()).toContain("👍")
          await log(page).getByRole("button", { name: /In reply to\s*carol:\s*hello with an id/ }).waitFor({ timeout: WAIT })
          await log(page).getByText("In reply to a message not loaded").waitFor({ timeout: WAIT })
          // A reaction is never a line of its own (its record's text is the reaction).
          expect(await log(page).locator(".line", { hasText: "🎉" }).count()).toBe(0)
        })

        // Redaction upstream: carol's message shows as removed, its reactions go, and its quote says removed.
        yield* upstream.send(`:carol!c@host REDACT ${CHANNEL} m-carol-1`)
        yield* promise(async () => {
          await lineWith(page, "message removed").first().waitFor({ timeout: WAIT })
          expect(await log(page).getByText("hello with an id").count()).toBe(0)
          await reactions.waitFor({ state: "detached", timeout: WAIT })
          await log(page).getByRole("button", { name: /In reply to\s*carol:\s*message removed/ }).waitFor({ timeout: WAIT })
          // A removed message offers no actions.
          expect(await lineWith(page, "message removed").getByRole("button", { name: "Message actions" }).count()).toBe(0)
        })

        // The member deletes their own message: asked twice, then REDACT upstream; the server's REDACT removes it.
        yield* promise(async () => {
          await lineWith(page, "sure thing").getByRole("button", { name: "Message actions" }).click()
          await page.getByRole("button", { name: "Delete", exact: true }).click()
          await page.getByRole("button", { name: "Delete for everyone" }).click()
        })
        yield* upstream.waitFor((l) => l.command === "REDACT" && l.params[0] === CHANNEL && l.params[1] === "m-alice-1")
        yield* upstream.send(`:alice!a@host REDACT ${CHANNEL} m-alice-1`)
        yield* promise(async () => {
          await lineWith(page, "sure thing").waitFor({ state: "detached", timeout: WAIT })
          expect(await log(page).locator(".line", { hasText: "message removed" }).count()).toBe(2)
        })

        // Another reload: the removed messages come back removed (the records' `redacted`), without reactions.
        yield* reloaded
        yield* promise(async () => {
          expect(await log(page).locator(".line", { hasText: "message removed" }).count()).toBe(2)
          expect(await reactions.count()).toBe(0)
          expect(await log(page).getByText("sure thing").count()).toBe(0)
        })
        expect(pageErrors).toEqual([])
      }),
    240_000
  )
})
