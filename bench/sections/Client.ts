/**
 * D. The web client (`npm run bench -- client`): how long a member waits until the first channel is drawn with its
 * newest line, the channel holding BENCH_CLIENT_MESSAGES (default 1,000) lines, in headless Chromium (Debian's
 * /usr/bin/chromium or BELAY_TEST_CHROMIUM), Belay's web client against The Lounge 4.5.2 (bench/lib/TheLounge.ts) in the
 * same run; and what Belay's page downloads (the HTML shell, the script and the stylesheet) gzip- and
 * brotli-compressed, as built into dist/client.
 *
 * Both servers run at once on the server core, on the same Node, each with one network on the scripted fake IRC server
 * (test/support/FakeIrcServer.ts), which answers its JOIN of the channel and then sends it the same lines: each keeps
 * them as it keeps what arrives while its member is away (Belay in PostgreSQL, The Lounge in its memory and its text
 * log). Two waits, each from a fresh browser context (nothing cached), BENCH_CLIENT_RUNS (default 3) rounds, Belay and
 * The Lounge alternating within a round:
 * - open: a member already signed in (the session a first, untimed visit left, as cookies and local storage) opens
 *   the page: from navigation to the newest line drawn. Both load their whole page in that time: the target;
 * - sign-in: both from the same point, the sign-in page loaded with what it fetches ahead (Belay's page preloads the
 *   bundle, The Lounge's page is the app) and the form filled, from the click on "Sign in" to the newest line drawn:
 *   the target. Belay's sign-in is a form post and a new page (the shell); The Lounge's signs in over its socket;
 * - Belay's sign-in including its page load: from the navigation to /login, the form filled at once, to the newest line
 *   drawn (a figure: what a member whose browser fills the form sees).
 * The first visit also opens the channel in The Lounge, which then opens it first for that user as it does for a
 * returning user (its last active channel); Belay opens the first channel of the sidebar.
 *
 * Concurrency rule: one browser, one sign-in or page load at a time; every process started here is stopped here.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { Effect } from "effect"
import pg from "pg"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"
import { freePort } from "../../test/support/BelayProcess.js"
import { type FakeIrcConnection, startFakeIrcServer } from "../../test/support/FakeIrcServer.js"
import { createAccount, type RunningBelay, startBelay } from "../lib/Belay.js"
import { runningDatabaseUrl } from "../lib/Db.js"
import { freshDatabase, ROOT, scratch, waitUntil } from "../lib/Env.js"
import { type Figure, type LoadAverage, loadNow, perRound, type SectionResult } from "../lib/Report.js"
import { median } from "../lib/Stats.js"
import { LOUNGE_VERSION, loungeNode, loungeNodeVersion, loungePasswordHash, type RunningLounge, startLounge } from "../lib/TheLounge.js"

const MESSAGES = Number(process.env.BENCH_CLIENT_MESSAGES ?? 1000)
const RUNS = Number(process.env.BENCH_CLIENT_RUNS ?? 3)
const CHANNEL = "#bench"
const PASSWORD = "bench-password-0123456789"
const CLIENT_DIR = Path.join(ROOT, "dist/client")
const WAIT_MS = 60_000

const kib = (bytes: number) => Math.round((bytes / 1024) * 10) / 10

/** Line g (1-based) of the channel; the newest is g = MESSAGES. */
const textOf = (g: number) => `bench line ${g} with some ordinary chat text and a link https://example.org/${g}`
/** The newest line's text up to its link (the link may be drawn as an anchor). */
const NEWEST = `bench line ${MESSAGES} with some ordinary chat text and a link `

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

/** The network's side for one client: registration, its JOIN of CHANNEL answered, then the MESSAGES lines there. */
const feed = async (connection: FakeIrcConnection) => {
  const { nick } = await Effect.runPromise(connection.register(undefined, undefined, { timeout: "30 seconds" }))
  await Effect.runPromise(connection.waitFor(/ JOIN :?#bench\b|^JOIN :?#bench\b/i, "30 seconds"))
  await Effect.runPromise(connection.send(
    `:${nick}!u@bench.test JOIN ${CHANNEL}`,
    `:irc.fake.test 353 ${nick} = ${CHANNEL} :${nick} speaker0`,
    `:irc.fake.test 366 ${nick} ${CHANNEL} :End of /NAMES list.`
  ))
  await Effect.runPromise(connection.flood(MESSAGES, (i) => `:speaker${(i + 1) % 37}!u@bench.test PRIVMSG ${CHANNEL} :${textOf(i + 1)}`))
}

/** The channel's lines Belay has stored. */
const storedInBelay = async (belay: RunningBelay) => {
  const client = new pg.Client({ connectionString: runningDatabaseUrl(belay.env) })
  await client.connect()
  try {
    const { rows: [row] } = await client.query<{ n: string }>(
      `SELECT count(*) AS n FROM messages m JOIN buffers b ON b.id = m.buffer_id WHERE b.target_folded = $1 AND m.kind = 'privmsg'`,
      [CHANNEL]
    )
    return Number(row!.n)
  } finally {
    await client.end()
  }
}

/** The channel's lines in The Lounge's text log (logs/<user>/<network folder>/#bench.log). */
const loggedInLounge = (home: string) => {
  const users = Path.join(home, "logs/bench")
  if (!Fs.existsSync(users)) return 0
  return Fs.readdirSync(users).reduce((n, network) => {
    const file = Path.join(users, network, `${CHANNEL}.log`)
    return n + (Fs.existsSync(file) ? Fs.readFileSync(file, "utf8").split("\n").filter((l) => l.includes("bench line ")).length : 0)
  }, 0)
}

/** One web client's ways in: its sign-in form, and where its newest line of the channel is drawn. */
interface Side {
  readonly name: string
  readonly url: string
  /** Fills the sign-in form on a page at `url` and returns the button to click. */
  readonly signInForm: (page: Page) => Promise<ReturnType<Page["getByRole"]>>
  /** Waits until the sign-in page has everything it fetches ahead of the click. */
  readonly settled: (page: Page) => Promise<void>
  readonly newest: (page: Page) => ReturnType<Page["locator"]>
  /** What the first, untimed visit does once signed in before it saves the session. */
  readonly firstVisit: (page: Page) => Promise<void>
  session?: Awaited<ReturnType<BrowserContext["storageState"]>>
}

const belaySide = (belay: RunningBelay): Side => ({
  name: "Belay",
  // Passkeys and cookies want a host name, as users reach it.
  url: belay.url.replace("127.0.0.1", "localhost"),
  signInForm: async (page) => {
    await page.goto(`${belay.url.replace("127.0.0.1", "localhost")}/login?next=/`)
    await page.getByLabel("Username", { exact: true }).fill("bench")
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD)
    return page.getByRole("button", { name: "Sign in", exact: true })
  },
  // The page's Link header preloads the bundle (LoginRoutes): done when the network is quiet.
  settled: (page) => page.waitForLoadState("networkidle"),
  newest: (page) => page.getByRole("log").getByText(NEWEST),
  firstVisit: async () => {}
})

const loungeSide = (url: string): Side => ({
  name: "The Lounge",
  url,
  signInForm: async (page) => {
    await page.goto(url)
    await page.locator("#signin-username").fill("bench")
    await page.locator("#signin-password").fill(PASSWORD)
    return page.getByRole("button", { name: "Sign in", exact: true })
  },
  // Its form is drawn by its bundle: filling it waited for the app.
  settled: async () => {},
  newest: (page) => page.locator("#chat .messages .msg .content", { hasText: NEWEST }),
  // A new user's first visit shows the network's lobby: open the channel, which The Lounge then remembers.
  firstVisit: async (page) => {
    await page.locator(".channel-list-item", { hasText: CHANNEL }).first().click()
  }
})

/**
 * Sign-in in a fresh context, to the newest line drawn: from the click on "Sign in" once the page has settled
 * (`from: "click"`), or from the navigation to the sign-in page, the form filled and clicked at once (`from: "page"`).
 */
const signIn = async (browser: Browser, side: Side, from: "click" | "page", first = false) => {
  const context = await browser.newContext()
  try {
    const page = await context.newPage()
    const opened = performance.now()
    const button = await side.signInForm(page)
    if (from === "click") await side.settled(page)
    const clicked = performance.now()
    await button.click()
    if (first) await side.firstVisit(page)
    await side.newest(page).waitFor({ timeout: WAIT_MS })
    const drawn = performance.now()
    if (first) side.session = await context.storageState()
    return drawn - (from === "click" ? clicked : opened)
  } finally {
    await context.close()
  }
}

/** Open: signed in already (the first visit's cookies and storage), no cache; from navigation to the newest line drawn. */
const open = async (browser: Browser, side: Side) => {
  const context = await browser.newContext({ ...(side.session ? { storageState: side.session } : {}) })
  try {
    const page = await context.newPage()
    let shellBytes = 0
    page.on("response", (r) => {
      if (new URL(r.url()).pathname === "/") void r.body().then((b) => (shellBytes = b.length), () => undefined)
    })
    const started = performance.now()
    await page.goto(`${side.url}/`, { waitUntil: "commit" })
    await side.newest(page).waitFor({ timeout: WAIT_MS })
    return { ms: performance.now() - started, shellBytes }
  } finally {
    await context.close()
  }
}

export const runClient = async (): Promise<SectionResult> => {
  const t0 = performance.now()
  const node = loungeNode()
  const fake = await startFakeIrcServer({ timeout: "60 seconds" })
  const db = await freshDatabase("client")
  let belay: RunningBelay | undefined
  let lounge: RunningLounge | undefined
  let browser: Browser | undefined
  const home = Path.join(scratch(), "thelounge-client")
  try {
    belay = await startBelay({ ...db.env, LOG_LEVEL: "warning" }, { node })
    await createAccount(belay)
    await belay.cli(["network", "add", "bench", "--name", "bench", "--host", "127.0.0.1", "--port", String(fake.server.port), "--join", CHANNEL])
    await feed(await Effect.runPromise(fake.server.nextConnection("30 seconds")))
    const running = belay
    await waitUntil(`Belay to store ${MESSAGES} lines`, WAIT_MS, async () => (await storedInBelay(running)) === MESSAGES || undefined, 200)

    const httpPort = await Effect.runPromise(freePort)
    const offline = pathToFileURL(Path.join(ROOT, "dist-bench/bench/lounge-offline.js")).href
    lounge = startLounge({
      dir: home,
      httpPort,
      ircPort: fake.server.port,
      networks: 1,
      nodeFlags: ["--import", offline],
      node,
      channels: [CHANNEL],
      passwordHash: loungePasswordHash(PASSWORD)
    })
    const loungeRunning = lounge
    await feed(await Effect.runPromise(fake.server.nextConnection("30 seconds"))).catch((e) => {
      throw new Error(`The Lounge: ${String(e)}\n${loungeRunning.output()}`)
    })
    await waitUntil(`The Lounge to log ${MESSAGES} lines`, WAIT_MS, async () => loggedInLounge(home) === MESSAGES || undefined, 200)

    browser = await chromium.launch({
      executablePath: process.env.BELAY_TEST_CHROMIUM ?? "/usr/bin/chromium",
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"]
    })
    const sides = [belaySide(belay), loungeSide(`http://localhost:${httpPort}`)] as const
    for (const side of sides) await signIn(browser, side, "click", true)

    const waits = sides.map(() => ({ signIn: [] as Array<number>, open: [] as Array<number> }))
    const belayFromPage: Array<number> = []
    const loads: Array<LoadAverage> = []
    let shellBytes = 0
    for (let round = 0; round < RUNS; round++) {
      const load0 = loadNow()
      for (const [k, side] of sides.entries()) waits[k]!.signIn.push(await signIn(browser, side, "click"))
      belayFromPage.push(await signIn(browser, sides[0], "page"))
      for (const [k, side] of sides.entries()) {
        const opened = await open(browser, side)
        waits[k]!.open.push(opened.ms)
        if (k === 0) shellBytes = opened.shellBytes
      }
      loads.push({ start: load0, end: loadNow() })
    }
    const b = waits[0]!
    const l = waits[1]!
    const ratio = (key: "signIn" | "open") => b[key].map((v, r) => v / l[key][r]!)
    const ms = (name: string, values: ReadonlyArray<number>): Figure => perRound(name, values.map(Math.round), "ms")
    const sizes = bundleSizes(shellBytes)
    return {
      key: "client",
      title: "D. Web client",
      seconds: (performance.now() - t0) / 1000,
      load: loads,
      figures: [
        ms(`Belay: open, signed in → first channel drawn (${MESSAGES} lines)`, b.open),
        ms(`The Lounge ${LOUNGE_VERSION}: open, signed in → first channel drawn (${MESSAGES} lines)`, l.open),
        perRound("ratio Belay ÷ The Lounge, open", ratio("open")),
        ms(`Belay: sign-in → first channel drawn (${MESSAGES} lines; from the click, its sign-in page loaded)`, b.signIn),
        ms(`The Lounge ${LOUNGE_VERSION}: sign-in → first channel drawn (${MESSAGES} lines; from the click, its page loaded)`, l.signIn),
        perRound("ratio Belay ÷ The Lounge, sign-in", ratio("signIn")),
        ms(`Belay: sign-in including its page load, /login opened → first channel drawn (${MESSAGES} lines)`, belayFromPage),
        { name: "page download, uncompressed", value: kib(sizes.raw), unit: "KiB" },
        { name: "page download, gzip", value: kib(sizes.gzip), unit: "KiB" },
        { name: "page download, brotli", value: kib(sizes.br), unit: "KiB" }
      ],
      targets: [
        {
          name: `open, signed in → first channel drawn, Belay ÷ The Lounge ${LOUNGE_VERSION}`,
          measured: median(ratio("open")),
          comparator: "<=",
          target: 1,
          runs: ratio("open")
        },
        {
          name: `sign-in → first channel drawn, Belay ÷ The Lounge ${LOUNGE_VERSION}`,
          measured: median(ratio("signIn")),
          comparator: "<=",
          target: 1,
          runs: ratio("signIn")
        },
        { name: "sign-in → first channel drawn", measured: Math.round(median(b.signIn)), comparator: "<=", target: 1000, unit: "ms", runs: b.signIn.map(Math.round) },
        { name: "page download, gzip", measured: kib(sizes.gzip), comparator: "<=", target: 150, unit: "KiB" }
      ],
      method: [
        `Both servers ran at once on the server core, on Node ${loungeNodeVersion()} (The Lounge needs 22 or later; Belay ran on the same): Belay as \`node bin/belay serve\` with its embedded PostgreSQL, a fresh data dir, LOG_LEVEL warning; The Lounge ${LOUNGE_VERSION} (bench/lib/TheLounge.ts: from the npm registry into bench/.cache/thelounge, text logs, prefetch off) in private mode with one user, bench/lounge-offline.js preloaded. Each has one network on the scripted fake IRC server that joins ${CHANNEL}; the fake answers the JOIN (JOIN, 353, 366) and then sends ${MESSAGES} PRIVMSG lines there ("bench line g with some ordinary chat text and a link https://example.org/g", 37 speakers), the same to both. Measured once Belay had stored them all (rows in PostgreSQL) and The Lounge had logged them all (its text log).`,
        `Why fed through IRC for both: that is how lines reach either server while its member is away, and each then keeps them as it does for real (Belay in PostgreSQL, reading its first page, 150 lines, back; The Lounge in memory, sending the newest 100 of the open channel). The Lounge cannot read its own log storage back without sqlite3, which its install (scripts off) leaves out; Belay's lines written into its database by SQL would skip its ingest.`,
        `A first visit to each, untimed, signs in with the password (argon2id for Belay, bcrypt cost 11 for The Lounge) and, in The Lounge, opens ${CHANNEL} (a new user's first view is the network's lobby; it then reopens its last active channel, as for a returning user); Belay opens the first channel of its sidebar. Its cookies and local storage are the session of "open".`,
        `${RUNS} rounds, each a fresh browser context (no cache, no service worker) per wait, Belay then The Lounge: sign-in from the same point for both, the sign-in page loaded and the form filled, from the click on "Sign in" (Belay: its /login page once the network was quiet, i.e. with the bundle its Link header preloads; through the 303, the shell, the socket's hello and the first page of history; The Lounge: its page, which is the app, through its socket's auth and init), then Belay's sign-in including its page load (from the navigation to /login, the form filled and clicked at once, to the newest line), then open (the first visit's session; from navigation, waitUntil commit, through the whole page load). The clock stops when the newest line is visible (Belay: in the log region; The Lounge: #chat .msg .content). Median of the rounds, with each; ratios per round.`,
        "Download: Belay's HTML shell as sent plus the script and stylesheet the shell names, in the .gz and .br files the build made (what the server sends for Accept-Encoding gzip or br)."
      ]
    }
  } finally {
    await browser?.close()
    await lounge?.stop()
    await belay?.stop()
    await fake.close()
    await db.dispose()
  }
}
