/**
 * Headless Chromium for the browser tests: Debian's /usr/bin/chromium (or
 * BELAY_TEST_CHROMIUM; SystemBinary: skipped when missing, failing under CI=true) driven by
 * playwright-core, closed with the test's scope; a context per test (its own cookies), a
 * DevTools virtual authenticator for passkeys (CDP `WebAuthn`), and another origin's
 * listener. One browser per test, never shared across tests.
 */
import * as Http from "node:http"
import { Effect } from "effect"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"
import { systemBinary } from "./SystemBinary.js"

export const CHROMIUM = systemBinary({
  name: "chromium",
  path: "/usr/bin/chromium",
  variable: "BELAY_TEST_CHROMIUM",
  install: "apt-get install chromium"
})

export const launchChromium = Effect.acquireRelease(
  Effect.flatMap(CHROMIUM.require, (executablePath) => Effect.promise(() =>
    chromium.launch({
      executablePath,
      headless: true,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync"
      ]
    })
  )),
  (browser: Browser) => Effect.promise(() => browser.close())
)

/** A fresh context (cookies, storage) and a page in it; both closed with the scope. */
export const newPage = (browser: Browser) =>
  Effect.gen(function*() {
    const context = yield* Effect.acquireRelease(
      Effect.promise(() => browser.newContext()),
      (c: BrowserContext) => Effect.promise(() => c.close())
    )
    const page = yield* Effect.promise(() => context.newPage())
    return { context, page } as const
  })

/**
 * A CTAP2 platform authenticator with resident keys and user verification that always
 * succeeds (W3C WebAuthn §11 "WebDriver extension", through CDP). Returns the CDP session
 * and the authenticator's id.
 */
export const virtualAuthenticator = (page: Page) =>
  Effect.promise(async () => {
    const cdp = await page.context().newCDPSession(page)
    await cdp.send("WebAuthn.enable", { enableUI: false })
    const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
      options: {
        protocol: "ctap2",
        transport: "internal",
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true
      }
    })
    return { cdp, authenticatorId } as const
  })

/**
 * Another origin on 127.0.0.1:<ephemeral>, recording every request: a native app's
 * redirect listener, and `/frame?src=<url>`, a page that frames `url`.
 */
export const loopbackListener = Effect.acquireRelease(
  Effect.async<{ server: Http.Server; port: number; hits: Array<string> }>((resume) => {
    const hits: Array<string> = []
    const server = Http.createServer((req, res) => {
      hits.push(req.url ?? "")
      if (req.url?.startsWith("/frame")) {
        res.writeHead(200, { "content-type": "text/html" })
        res.end(`<iframe id="f" src="${decodeURIComponent(req.url.slice("/frame?src=".length))}"></iframe>`)
        return
      }
      res.writeHead(200, { "content-type": "text/plain" })
      res.end("You can close this window.")
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      resume(Effect.succeed({ server, port: typeof address === "object" && address ? address.port : 0, hits }))
    })
  }),
  ({ server }) =>
    Effect.async<void>((resume) => {
      server.close(() => resume(Effect.void))
    })
)

/** What the frame shows when another origin's page (the listener's `/frame`) frames `url`. */
export const framed = (page: Page, listenerPort: number, url: string) =>
  Effect.promise(async () => {
    // Chromium commits a refused frame as its error page: wait for the child frame's navigation.
    const navigated = page.waitForEvent("framenavigated", {
      predicate: (frame) => frame.parentFrame() !== null && frame.url() !== "about:blank"
    })
    await page.goto(`http://127.0.0.1:${listenerPort}/frame?src=${encodeURIComponent(url)}`)
    const child = await navigated
    await child.waitForLoadState()
    return { url: child.url(), text: await child.innerText("body").catch(() => "") }
  })

/**
 * Polls `expression` in the page (each time through `page.evaluate`, awaiting a promise it gives) until it is
 * truthy. Not `page.waitForFunction` with a string: Playwright evals that string again on every poll, from a
 * page timer that the page's CSP governs, and Belay's pages allow no 'unsafe-eval'; `page.evaluate` runs
 * during the DevTools call, which the CSP does not govern.
 */
export const untilInPage = async (page: Page, expression: string, timeout: number): Promise<void> => {
  const deadline = Date.now() + timeout
  for (;;) {
    // A navigation in between destroys the context the expression ran in: that poll counts as false.
    if (await page.evaluate(expression).catch(() => false)) return
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting in the page for: ${expression}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}
