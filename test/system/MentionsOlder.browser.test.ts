/**
 * The Mentions view's older pages in a real browser (docs/contract.md "The member's browser surface", `GET
 * /api/mentions`: `before` and `nextBefore`): headless Chromium (playwright-core) against `bin/belay serve`, with
 * more highlights stored across two networks than the view asks for at once (it reads 100 a page). The view draws the
 * newest page; scrolling to its end brings "Load older mentions" into sight, which loads the next older page by itself
 * (no click), and the list ends with "Start of mentions." holding every highlight once, the oldest included. A
 * server or client that dropped `before` would answer the newest page again: nothing older drawn, no end reached.
 *
 * The networks point at a closed loopback port: mentions are read from the stored history with each network's nick
 * (its configured one while it is not connected), so no IRC server is needed. Screenshot into
 * test-output/screenshots (not in the repository): `mentions-older-desktop.png`, the end of the list, 1280 × 800.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort, runCli, startBelay } from "../support/BelayProcess.js"
import { CHROMIUM, launchChromium, newPage } from "../support/Chromium.js"
import { testEnvironment } from "../support/TestDatabase.js"
import { buffers, promise, query, WAIT } from "../support/WebClientPage.js"

const PASSWORD = "correct horse battery staple"
const SHOTS = Path.resolve(import.meta.dirname, "../../test-output/screenshots")
const DESKTOP = { width: 1280, height: 800 }
/** Highlights stored in all: more than the view's page of 100, so one older page is needed. */
const SEEDED = 130
/** The two networks, each with its own nick and channel: a mention names the nick of its own network. */
const NETWORKS = [{ name: "alpha", nick: "belaybot", channel: "#alpha" }, { name: "beta", nick: "beebot", channel: "#beta" }] as const

/**
 * Stored history, oldest first and alternating between the networks: line `g` (1…SEEDED) names its network's nick
 * ("<nick>: mention g"), an hour back and 5 s apart; between every two, a line naming no one, which the view must
 * leave out. The database hands out ids in the order of `g`, so line 1 is the oldest mention.
 */
const seedHistory = (databaseUrl: string, networkIds: ReadonlyArray<number>) =>
  query(
    databaseUrl,
    `WITH nets AS (
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[]) WITH ORDINALITY AS n(network_id, target, nick, ord)),
     b AS (
       INSERT INTO buffers (network_id, target, target_folded, kind, last_message_at)
       SELECT network_id, target, lower(target), 'channel', now() FROM nets
       ON CONFLICT (network_id, target_folded) DO UPDATE SET last_message_at = now()
       RETURNING id, network_id)
     INSERT INTO messages (buffer_id, time, kind, nick, text, self)
     SELECT b.id, now() - interval '1 hour' + (g * 2 + quiet) * interval '5 seconds', 'privmsg',
            CASE WHEN quiet = 0 THEN 'carol' ELSE 'dave' END,
            CASE WHEN quiet = 0 THEN nets.nick || ': mention ' || g ELSE 'nothing for anyone, line ' || g END,
            false
     FROM generate_series(1, $4::int) AS g CROSS JOIN (VALUES (0), (1)) AS q(quiet)
     JOIN nets ON nets.ord = 1 + (g + 1) % 2
     JOIN b ON b.network_id = nets.network_id
     ORDER BY g, quiet`,
    [networkIds, NETWORKS.map((n) => n.channel), NETWORKS.map((n) => n.nick), SEEDED]
  )

describe("the Mentions view pages back in headless Chromium", () => {
  it.scopedLive.skipIf(CHROMIUM.skip)(
    "scrolling to the end loads the older page by itself: every mention once, the oldest shown, then the start",
    () =>
      Effect.gen(function*() {
        const env = yield* testEnvironment()
        const belay = yield* startBelay(env)
        expect((yield* runCli(belay.env, ["account", "add", "alice"], `${PASSWORD}\n`)).code).toBe(0)
        // Nothing listens there: the networks stay unconnected, with their configured nicks.
        const closed = yield* freePort
        for (const n of NETWORKS) {
          const added = yield* runCli(belay.env, [
            "network", "add", "alice", "--name", n.name, "--host", "127.0.0.1", "--port", String(closed), "--nick", n.nick
          ])
          expect(added.code, added.stderr).toBe(0)
        }
        const rows = yield* query(env.DATABASE_URL!, "SELECT id, name FROM networks ORDER BY name")
        const networkIds = NETWORKS.map((n) => Number(rows.find((r) => r.name === n.name)!.id))
        yield* seedHistory(env.DATABASE_URL!, networkIds)

        const browser = yield* launchChromium
        const { page } = yield* newPage(browser)
        const pageErrors: Array<string> = []
        page.on("pageerror", (e) => pageErrors.push(e.message))
        const url = belay.url.replace("127.0.0.1", "localhost")
        const list = page.getByRole("list", { name: "Mentions" })
        const items = list.getByRole("listitem")
        const older = page.getByRole("button", { name: "Load older mentions" })
        const start = page.getByText("Start of mentions.", { exact: true })

        // The newest page: 100, the newest first, and the button to the older ones below it, out of sight.
        yield* promise(async () => {
          await page.setViewportSize(DESKTOP)
          await page.goto(`${url}/`)
          await page.getByLabel("Username", { exact: true }).fill("alice")
          await page.getByLabel("Password", { exact: true }).fill(PASSWORD)
          await Promise.all([page.waitForURL((u) => u.pathname === "/"), page.getByRole("button", { name: "Sign in", exact: true }).click()])
          await buffers(page).waitFor({ timeout: WAIT })
          await page.goto(`${url}/#/mentions`)
          await page.getByRole("status").getByText("100 mentions, newest first.").waitFor({ timeout: WAIT })
          expect(await items.count()).toBe(100)
          expect(await items.first().innerText()).toContain(`${NETWORKS[1].nick}: mention ${SEEDED}`)
          const newest = (await items.allInnerTexts()).map((t) => Number(/mention (\d+)/.exec(t)?.[1]))
          expect(newest).toEqual(Array.from({ length: 100 }, (_, i) => SEEDED - i))
          // Below the fold: the older page waits until the member scrolls there.
          const box = await older.boundingBox()
          expect(box === null ? null : box.y).toBeGreaterThan(DESKTOP.height)
          expect(await start.count()).toBe(0)
        })

        // Scrolled to the end: the older page arrives by itself, and the list ends at the start.
        yield* promise(async () => {
          await older.scrollIntoViewIfNeeded()
          await start.waitFor({ timeout: WAIT })
          await page.getByRole("status").getByText(`${SEEDED} mentions, newest first.`).waitFor({ timeout: WAIT })
          await start.scrollIntoViewIfNeeded()
          Fs.mkdirSync(SHOTS, { recursive: true })
          await page.screenshot({ path: Path.join(SHOTS, "mentions-older-desktop.png") })
        })
        const texts = yield* promise(() => items.allInnerTexts())
        expect(texts).toHaveLength(SEEDED)
        // Each mention once, newest first, alternating networks as stored; the oldest last; nothing that named no one.
        const numbers = texts.map((t) => Number(/mention (\d+)/.exec(t)?.[1]))
        expect(numbers).toEqual(Array.from({ length: SEEDED }, (_, i) => SEEDED - i))
        expect(new Set(numbers).size).toBe(SEEDED)
        expect(texts.at(-1)).toContain(`${NETWORKS[0].nick}: mention 1`)
        expect(texts.every((t, i) => t.includes(`${NETWORKS[(SEEDED - i + 1) % 2]!.nick}: mention`))).toBe(true)
        expect(texts.some((t) => t.includes("nothing for anyone"))).toBe(false)
        expect(yield* promise(() => older.count())).toBe(0)
        expect(Fs.statSync(Path.join(SHOTS, "mentions-older-desktop.png")).size).toBeGreaterThan(0)
        expect(pageErrors).toEqual([])
      }),
    180_000
  )
})
