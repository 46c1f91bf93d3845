/**
 * The web client's composer and Networks page as a person uses them: headless Chromium (playwright-core) against
 * `bin/belay serve` and a real IRC server (ngircd), with a bare-socket IRC client (carol) in the channel. Every
 * outcome is observable: what carol receives, what the page shows (found by role and accessible name, as in
 * WebClient.browser.test.ts), what the database holds.
 *
 * One test, in order: sign in and add a network that joins #compose; in the composer, Tab completes carol's nick
 * (with the ": " of a nick at the start of a line), Up and Down walk the lines sent before and come back to the
 * empty draft; a text of several lines asks for confirmation — cancelled, nothing reaches carol and the draft
 * stays; confirmed, carol receives each line, in order. On the Networks page: editing the nick and real name
 * reconnects the network under the new nick (carol sees the quit, the join and the real name in WHOIS); Disconnect
 * takes it offline (carol sees the QUIT; `enabled` is false); Connect brings it back and #compose is rejoined.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { runCli, startBelay } from "../support/BelayProcess.js"
import { CHROMIUM, launchChromium, newPage } from "../support/Chromium.js"
import { eventually } from "../support/Eventually.js"
import { NGIRCD, ngircd, peer } from "../support/Ngircd.js"
import { testEnvironment } from "../support/TestDatabase.js"
import { buffers, composer, expectValue, log, promise, query, WAIT } from "../support/WebClientPage.js"

const PASSWORD = "correct horse battery staple"
const CHANNEL = "#compose"
const members = (page: Page) => page.getByRole("complementary", { name: "Members" })

/** A line carol receives from `nick` (any user@host) ending with `rest`. */
const from = (nick: string, rest: string) => (line: string) => line.startsWith(`:${nick}!`) && line.endsWith(rest)
const joined = (nick: string) => (line: string) =>
  line.startsWith(`:${nick}!`) && (line.endsWith(` JOIN ${CHANNEL}`) || line.endsWith(` JOIN :${CHANNEL}`))

describe("the web client's composer and Networks page in headless Chromium, through ngircd", () => {
  it.scopedLive.skipIf(CHROMIUM.skip || NGIRCD.skip)(
    "Tab completes a nick, Up and Down walk the sent lines, several lines need a confirmation; edit, disconnect and connect a network",
    () =>
      Effect.gen(function*() {
        const started = Date.now()
        const irc = yield* ngircd
        const env = yield* testEnvironment()
        const belay = yield* startBelay(env)
        expect((yield* runCli(belay.env, ["account", "add", "alice"], `${PASSWORD}\n`)).code).toBe(0)
        const url = belay.url.replace("127.0.0.1", "localhost")
        const browser = yield* launchChromium
        const { page } = yield* newPage(browser)
        const pageErrors: Array<string> = []
        page.on("pageerror", (e) => pageErrors.push(e.message))

        // Sign in, add a network that joins #compose, and open the channel once carol is in it.
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
          await members(page).getByRole("button", { name: "carol" }).waitFor({ timeout: WAIT })
        })

        // Tab completes the nick of a member: at the start of the line, with ": " after it.
        yield* promise(async () => {
          await composer(page).click()
          await composer(page).pressSequentially("ca")
          await composer(page).press("Tab")
          await expectValue(composer(page), "carol: ")
          await composer(page).pressSequentially("tab done")
          await expectValue(composer(page), "carol: tab done")
          await composer(page).press("Enter")
          await expectValue(composer(page), "")
        })
        yield* carol.waitFor(from("belaybot", `PRIVMSG ${CHANNEL} :carol: tab done`))
        yield* promise(async () => {
          await composer(page).fill("one more")
          await composer(page).press("Enter")
          await expectValue(composer(page), "")
        })
        yield* carol.waitFor(from("belaybot", `PRIVMSG ${CHANNEL} :one more`))

        // Up walks back through the lines sent, Down forward again and then to the empty draft.
        yield* promise(async () => {
          await composer(page).press("ArrowUp")
          await expectValue(composer(page), "one more")
          await composer(page).press("ArrowUp")
          await expectValue(composer(page), "carol: tab done")
          await composer(page).press("ArrowDown")
          await expectValue(composer(page), "one more")
          await composer(page).press("ArrowDown")
          await expectValue(composer(page), "")
        })

        // Several lines (typed with Shift+Enter) ask first; cancelled, nothing is sent and the text stays.
        yield* promise(async () => {
          await composer(page).pressSequentially("never sent 1")
          await composer(page).press("Shift+Enter")
          await composer(page).pressSequentially("never sent 2")
          await composer(page).press("Enter")
          const dialog = page.getByRole("alertdialog", { name: `Send 2 lines to ${CHANNEL}? Each line is one message.` })
          await dialog.waitFor({ timeout: WAIT })
          await dialog.getByRole("button", { name: "Cancel" }).click()
          await dialog.waitFor({ state: "detached", timeout: WAIT })
          await expectValue(composer(page), "never sent 1\nnever sent 2")
          await composer(page).fill("")
        })

        // Pasted, three lines: confirmed, carol receives each of them in order.
        yield* promise(async () => {
          await composer(page).focus()
          await page.keyboard.insertText("pasted 1\npasted 2\npasted 3")
          await expectValue(composer(page), "pasted 1\npasted 2\npasted 3")
          await composer(page).press("Enter")
          const dialog = page.getByRole("alertdialog", { name: `Send 3 lines to ${CHANNEL}? Each line is one message.` })
          await dialog.getByRole("button", { name: "Send 3 lines" }).click()
          await dialog.waitFor({ state: "detached", timeout: WAIT })
          await expectValue(composer(page), "")
        })
        for (const n of [1, 2, 3]) yield* carol.waitFor(from("belaybot", `PRIVMSG ${CHANNEL} :pasted ${n}`))
        yield* promise(async () => {
          for (const n of [1, 2, 3]) await log(page).getByText(`pasted ${n}`, { exact: true }).waitFor({ timeout: WAIT })
        })
        // What carol received came in the order the lines were sent, and the cancelled lines are not among it.
        const privmsgs = (yield* carol.received).filter((l) => l.startsWith(":belaybot!") && l.includes(` PRIVMSG ${CHANNEL} :`))
          .map((l) => l.slice(l.indexOf(` PRIVMSG ${CHANNEL} :`) + ` PRIVMSG ${CHANNEL} :`.length))
        expect(privmsgs).toEqual(["carol: tab done", "one more", "pasted 1", "pasted 2", "pasted 3"])
        const stored = yield* eventually(
          "the three pasted lines are stored",
          query(env.DATABASE_URL!, "SELECT text FROM messages WHERE text LIKE 'pasted %' OR text LIKE 'never sent%' ORDER BY id"),
          (rows) => rows.length >= 3
        )
        expect(stored).toEqual([{ text: "pasted 1" }, { text: "pasted 2" }, { text: "pasted 3" }])

        // Networks: a new nick (and real name) reconnects the network as the new nick.
        yield* promise(async () => {
          await buffers(page).getByRole("link", { name: "Networks" }).click()
          await page.getByRole("link", { name: "Edit ngircd" }).click()
          const form = page.getByRole("form", { name: "Edit ngircd" })
          await form.waitFor({ timeout: WAIT })
          await expectValue(form.getByLabel("Nick", { exact: true }), "belaybot")
          await form.getByLabel("Nick", { exact: true }).fill("belaynew")
          await form.getByLabel("Real name (optional)", { exact: true }).fill("Renamed Bot")
          await form.getByRole("button", { name: "Save" }).click()
          await form.waitFor({ state: "detached", timeout: WAIT })
        })
        yield* carol.waitFor((l) => l.startsWith(":belaybot!") && / QUIT( |$)/.test(l))
        yield* carol.waitFor(joined("belaynew"))
        yield* carol.send("WHOIS belaynew")
        const whois = yield* carol.waitFor((l) => / 311 carol belaynew /.test(l))
        expect(whois.endsWith(":Renamed Bot")).toBe(true)
        yield* promise(async () => {
          await page.getByRole("listitem").filter({ has: page.getByRole("heading", { name: "ngircd" }) }).getByText("as belaynew").waitFor({ timeout: WAIT })
          await buffers(page).getByText("connected", { exact: true }).waitFor({ timeout: WAIT })
        })
        expect(yield* query(env.DATABASE_URL!, "SELECT nick, realname, enabled FROM networks")).toEqual([
          { nick: "belaynew", realname: "Renamed Bot", enabled: true }
        ])

        // Disconnect: carol sees the QUIT, the sidebar says offline, and the network stays off (enabled false).
        yield* promise(() => page.getByRole("button", { name: "Disconnect ngircd" }).click())
        yield* carol.waitFor((l) => l.startsWith(":belaynew!") && / QUIT( |$)/.test(l))
        yield* promise(async () => {
          await buffers(page).getByText("offline", { exact: true }).waitFor({ timeout: WAIT })
          await page.getByRole("status").getByText("Disconnected.", { exact: true }).waitFor({ timeout: WAIT })
        })
        expect((yield* query(env.DATABASE_URL!, "SELECT enabled FROM networks"))[0]?.enabled).toBe(false)

        // Connect: connected again, #compose rejoined, and carol's lines reach the page.
        yield* promise(() => page.getByRole("button", { name: "Connect ngircd" }).click())
        yield* carol.waitFor(joined("belaynew"))
        yield* promise(() => buffers(page).getByText("connected", { exact: true }).waitFor({ timeout: WAIT }))
        yield* eventually(
          "the network is enabled again",
          query(env.DATABASE_URL!, "SELECT enabled FROM networks"),
          (rows) => rows[0]?.enabled === true
        )
        yield* promise(async () => {
          await buffers(page).getByRole("link", { name: CHANNEL, exact: true }).click()
          await members(page).getByRole("button", { name: "belaynew" }).waitFor({ timeout: WAIT })
        })
        yield* carol.send(`PRIVMSG ${CHANNEL} :welcome back belaynew`)
        yield* promise(() => log(page).getByText("welcome back belaynew", { exact: true }).waitFor({ timeout: WAIT }))

        expect(pageErrors).toEqual([])
        console.log(`WebClientComposer.browser.test: ${((Date.now() - started) / 1000).toFixed(1)} s`)
      }),
    { timeout: 90_000 }
  )
})
