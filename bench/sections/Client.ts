/**
 * C. The web client (`npm run bench -- client`; not part of a default full run): how long a member waits from pressing
 * "Sign in" until the first channel is drawn with its newest line, the channel holding BENCH_CLIENT_MESSAGES (default
 * 1,000) stored messages, in headless Chromium (Debian's /usr/bin/chromium or BELAY_TEST_CHROMIUM) against
 * `belay serve`; and what the page downloads (the HTML shell, the script and the stylesheet) gzip- and
 * brotli-compressed, as built into dist/client. BENCH_CLIENT_RUNS (default 3) fresh browser contexts, each a first
 * visit (nothing cached); the figure is their median.
 *
 * Concurrency rule: one Belay and one browser, started and stopped here, one sign-in at a time.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import pg from "pg"
import { chromium } from "playwright-core"
import { createAccount, startBelay } from "../lib/Belay.js"
import { runningDatabaseUrl } from "../lib/Db.js"
import { freshDatabase, ROOT } from "../lib/Env.js"
import type { SectionResult } from "../lib/Report.js"
import { median } from "../lib/Stats.js"

const MESSAGES = Number(process.env.BENCH_CLIENT_MESSAGES ?? 1000)
const RUNS = Number(process.env.BENCH_CLIENT_RUNS ?? 3)
const CHANNEL = "#bench"
const PASSWORD = "bench-password-0123456789"
const CLIENT_DIR = Path.join(ROOT, "dist/client")

const kib = (bytes: number) => Math.round((bytes / 1024) * 10) / 10

/** What the page loads, compressed as the server sends it (the shell is small and sent as it is). */
const bundleSizes = (shellBytes: number) => {
  const manifest = JSON.parse(Fs.readFileSync(Path.join(CLIENT_DIR, "manifest.json"), "utf8")) as { script: string; style: string }
  const size = (file: string) => Fs.statSync(Path.join(CLIENT_DIR, file)).size
  const files = [manifest.script, manifest.style]
  return {
    raw: shellBytes + files.reduce((n, f) => n + size(f), 0),
    gzip: shellBytes + files.reduce((n, f) => n + size(`${f}.gz`), 0),
    br: shellBytes + files.reduce((n, f) => n + size(`${f}.br`), 0)
  }
}

export const runClient = async (): Promise<SectionResult> => {
  const t0 = performance.now()
  const db = await freshDatabase("client")
  const belay = await startBelay({ ...db.env, LOG_LEVEL: "warning" })
  const browser = await chromium.launch({
    executablePath: process.env.BELAY_TEST_CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"]
  })
  try {
    await createAccount(belay)
    // A network that is never reached (nothing listens on port 9 here): the channel is drawn from history alone.
    const added = (await belay.cli(["network", "add", "bench", "--name", "bench", "--host", "127.0.0.1", "--port", "9"])) as { id: number }
    const client = new pg.Client({ connectionString: runningDatabaseUrl(belay.env) })
    await client.connect()
    try {
      await client.query(
        `WITH b AS (
           INSERT INTO buffers (network_id, target, target_folded, kind, last_message_at)
           VALUES ($1, $2, $2, 'channel', now()) RETURNING id)
         INSERT INTO messages (buffer_id, time, kind, nick, text)
         SELECT b.id, now() - interval '1 hour' + g * interval '1 second', 'privmsg', 'speaker' || (g % 37),
                'bench line ' || g || ' with some ordinary chat text and a link https://example.org/' || g
         FROM b, generate_series(1, $3::int) AS g ORDER BY g`,
        [added.id, CHANNEL, MESSAGES]
      )
    } finally {
      await client.end()
    }
    const url = belay.url.replace("127.0.0.1", "localhost")
    const newest = `bench line ${MESSAGES} with some ordinary chat text and a link `
    const waits: Array<number> = []
    const afterShell: Array<number> = []
    let shellBytes = 0
    for (let run = 0; run < RUNS; run++) {
      const context = await browser.newContext()
      const page = await context.newPage()
      page.on("response", (r) => {
        if (new URL(r.url()).pathname === "/") void r.body().then((b) => (shellBytes = b.length), () => undefined)
      })
      await page.goto(`${url}/login?next=/`)
      await page.getByLabel("Username", { exact: true }).fill("bench")
      await page.getByLabel("Password", { exact: true }).fill(PASSWORD)
      const clicked = performance.now()
      await Promise.all([
        page.waitForURL((u) => u.pathname === "/", { waitUntil: "commit", timeout: 60_000 }),
        page.getByRole("button", { name: "Sign in", exact: true }).click()
      ])
      const shell = performance.now()
      await page.getByRole("log").getByText(newest).waitFor({ timeout: 60_000 })
      const drawn = performance.now()
      waits.push(drawn - clicked)
      afterShell.push(drawn - shell)
      await context.close()
    }
    const sizes = bundleSizes(shellBytes)
    const wait = median(waits)
    return {
      key: "client",
      title: "D. Web client",
      seconds: (performance.now() - t0) / 1000,
      figures: [
        { name: `sign-in → first channel drawn (${MESSAGES} messages stored)`, value: Math.round(wait), unit: "ms", runs: waits.map(Math.round) },
        {
          name: "of which: from the shell's response to the channel drawn",
          value: Math.round(median(afterShell)),
          unit: "ms",
          runs: afterShell.map(Math.round)
        },
        { name: "page download, uncompressed", value: kib(sizes.raw), unit: "KiB" },
        { name: "page download, gzip", value: kib(sizes.gzip), unit: "KiB" },
        { name: "page download, brotli", value: kib(sizes.br), unit: "KiB" }
      ],
      targets: [
        { name: "sign-in → first channel drawn", measured: Math.round(wait), comparator: "<=", target: 1000, unit: "ms", runs: waits.map(Math.round) },
        { name: "page download, gzip", measured: kib(sizes.gzip), comparator: "<=", target: 150, unit: "KiB" }
      ],
      method: [
        `Chromium (headless) signs in with the password form; the clock runs from the click on "Sign in" to the newest of ${MESSAGES} stored lines of ${CHANNEL} being in the log region, through the 303, the shell, the bundle, the socket's hello and the first page of history.`,
        "The second figure leaves out the sign-in itself (the password hash, argon2id, and the 303): it runs from the first byte of `/` to the same point.",
        `${RUNS} fresh browser contexts (no cache); median, with each run.`,
        "Download: the HTML shell as sent plus the script and stylesheet the shell names, in the .gz and .br files the build made (what the server sends for Accept-Encoding gzip or br)."
      ]
    }
  } finally {
    await browser.close()
    await belay.stop()
    await db.dispose()
  }
}

