/**
 * The member's side of the web in a real browser (headless Chromium, playwright-core):
 * what an HTTP client cannot prove — that the pages work with a keyboard-free click path
 * under their CSP, that the passkey script and a (virtual) authenticator complete both
 * WebAuthn ceremonies against our relying party, that a browser's own Origin and
 * Sec-Fetch-Site pass the same-origin checks, and that another origin cannot frame a page.
 *
 * The app is reached as http://localhost:<port>: WebAuthn refuses an IP address as relying
 * party id (W3C WebAuthn §5.1.3 step 8 needs a valid domain), and localhost is a secure
 * context. Five tests, one browser each.
 */
import * as Crypto from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Queue } from "effect"
import type { ConsoleMessage, Page } from "playwright-core"
import { CredentialRevocations } from "../../src/services/identity/CredentialRevocations.js"
import {
  authorizeUrl,
  jsonOf,
  mcpStatus,
  PASSWORD,
  pkcePair,
  redeem,
  registerClient,
  startOAuthApp
} from "../http/oauth/OAuthHarness.js"
import { CHROMIUM, framed, launchChromium, loopbackListener, newPage, virtualAuthenticator } from "../support/Chromium.js"

/** The app as the browser must see it: by name, not by address. */
const localhostUrl = (url: string) => url.replace("127.0.0.1", "localhost")

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** Fills the sign-in form on the current page and submits it; waits until the browser left /login. */
const signInWithPassword = (page: Page, password = PASSWORD) =>
  promise(async () => {
    await page.getByLabel("Username").fill("alice")
    await page.getByLabel("Password").fill(password)
    await Promise.all([
      page.waitForURL((u) => u.pathname !== "/login" && u.pathname !== "/oauth/signin"),
      page.getByRole("button", { name: "Sign in", exact: true }).click()
    ])
  })

const cspErrors = (page: Page) => {
  const messages: Array<string> = []
  page.on("console", (m: ConsoleMessage) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) messages.push(m.text())
  })
  return messages
}

describe("the member's web in headless Chromium", () => {
  it.scopedLive.skipIf(CHROMIUM.skip)("password sign-in; mint an API token, read it once, use it at /mcp, revoke it: marker and 401", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const url = localhostUrl(app.url)
      const { page } = yield* newPage(yield* launchChromium)
      const csp = cspErrors(page)

      // Without a session, Settings sends the browser to sign in and back.
      yield* promise(() => page.goto(`${url}/settings/api-tokens`))
      expect(new URL(page.url()).pathname).toBe("/login")
      expect(new URL(page.url()).searchParams.get("next")).toBe("/settings/api-tokens")
      yield* signInWithPassword(page)
      expect(new URL(page.url()).pathname).toBe("/settings/api-tokens")

      yield* promise(async () => {
        await page.getByLabel("Name").fill("agent")
        await page.getByLabel("Read and write").check()
        await page.getByRole("button", { name: "Create token" }).click()
      })
      const token = yield* promise(() => page.locator("#created-token").innerText())
      expect(token).toMatch(/^belay_[A-Za-z0-9_-]{43}$/)
      expect(yield* mcpStatus(url, token)).toBe(200)

      // Shown once: the list page never shows it again.
      yield* promise(() => page.goto(`${url}/settings/api-tokens`))
      expect(yield* promise(() => page.content())).not.toContain(token)
      const row = page.getByRole("row", { name: /agent/ })
      expect(yield* promise(() => row.innerText())).toContain("Read and write")

      yield* promise(() =>
        Promise.all([page.waitForURL((u) => u.searchParams.get("done") === "revoked"), row.getByRole("button", { name: "Revoke token agent" }).click()])
      )
      expect(yield* promise(() => page.getByRole("row", { name: /agent/ }).innerText())).toContain("Revoked")
      expect(yield* mcpStatus(url, token)).toBe(401)
      expect(csp).toEqual([])
    }))

  it.scopedLive.skipIf(CHROMIUM.skip)("/login fetches the web client's bundle while the member types: after the 303 the shell runs it from the cache", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const url = localhostUrl(app.url)
      const { page } = yield* newPage(yield* launchChromium)
      const csp = cspErrors(page)
      const bundles: Array<string> = []
      page.on("requestfinished", (r) => {
        if (/^\/client\/app-[^/]+\.js$/.test(new URL(r.url()).pathname)) bundles.push(new URL(r.url()).pathname)
      })

      yield* promise(() => page.goto(`${url}/`))
      expect(new URL(page.url()).pathname).toBe("/login")
      yield* promise(() => page.waitForLoadState("networkidle"))
      expect(bundles).toHaveLength(1)
      yield* signInWithPassword(page)
      expect(new URL(page.url()).pathname).toBe("/")
      yield* promise(() => page.waitForLoadState("load"))
      // The shell's script as its page fetched it: from the HTTP cache (nothing transferred), the name preloaded.
      const loaded = yield* promise(() =>
        page.evaluate(() =>
          performance.getEntriesByType("resource")
            .filter((e) => /\/client\/app-[^/]+\.js$/.test(e.name))
            .map((e) => ({ path: new URL(e.name).pathname, transferSize: (e as { readonly transferSize?: number }).transferSize }))
        )
      )
      expect(loaded).toEqual([{ path: bundles[0], transferSize: 0 }])
      expect(csp).toEqual([])
    }))

  it.scopedLive.skipIf(CHROMIUM.skip)("add a passkey, sign out, sign in with it; an unknown passkey is refused", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const url = localhostUrl(app.url)
      const { page } = yield* newPage(yield* launchChromium)
      const csp = cspErrors(page)
      const { cdp, authenticatorId } = yield* virtualAuthenticator(page)

      yield* promise(() => page.goto(`${url}/login?next=/settings/passkeys`))
      yield* signInWithPassword(page)
      expect(new URL(page.url()).pathname).toBe("/settings/passkeys")

      yield* promise(async () => {
        await page.getByLabel("Name").fill("Laptop")
        await Promise.all([page.waitForEvent("load"), page.getByRole("button", { name: "Add passkey" }).click()])
      })
      expect(yield* promise(() => page.getByRole("row", { name: /Laptop/ }).innerText())).toContain("never")
      const stored = yield* promise(() => cdp.send("WebAuthn.getCredentials", { authenticatorId }))
      expect(stored.credentials).toHaveLength(1)
      expect(stored.credentials[0]!.isResidentCredential).toBe(true)

      yield* promise(() => Promise.all([page.waitForURL((u) => u.pathname === "/login"), page.getByRole("button", { name: "Sign out" }).click()]))
      yield* promise(() => page.goto(`${url}/settings/passkeys`))
      expect(new URL(page.url()).pathname).toBe("/login")

      yield* promise(() =>
        Promise.all([
          page.waitForURL((u) => u.pathname === "/settings/passkeys"),
          page.getByRole("button", { name: "Sign in with a passkey" }).click()
        ])
      )
      // Signed in by the passkey: its last use is now shown.
      expect(yield* promise(() => page.getByRole("row", { name: /Laptop/ }).innerText())).not.toContain("never")

      // A credential the server never registered (same RP id, a fresh key): refused, and the
      // page says so in its alert; no session is started.
      yield* promise(() => Promise.all([page.waitForURL((u) => u.pathname === "/login"), page.getByRole("button", { name: "Sign out" }).click()]))
      const { privateKey } = Crypto.generateKeyPairSync("ec", { namedCurve: "P-256" })
      yield* promise(async () => {
        await cdp.send("WebAuthn.clearCredentials", { authenticatorId })
        await cdp.send("WebAuthn.addCredential", {
          authenticatorId,
          credential: {
            credentialId: Crypto.randomBytes(16).toString("base64"),
            isResidentCredential: true,
            rpId: "localhost",
            privateKey: privateKey.export({ format: "der", type: "pkcs8" }).toString("base64"),
            userHandle: Crypto.randomBytes(16).toString("base64"),
            signCount: 1
          }
        })
        await page.getByRole("button", { name: "Sign in with a passkey" }).click()
      })
      const alert = page.locator("[data-passkey-sign-in] [role=alert]")
      yield* promise(() => alert.waitFor({ state: "visible" }))
      expect(yield* promise(() => alert.innerText())).toBe("That passkey was not accepted.")
      expect(new URL(page.url()).pathname).toBe("/login")
      yield* promise(() => page.goto(`${url}/settings/passkeys`))
      expect(new URL(page.url()).pathname).toBe("/login")
      expect(csp).toEqual([])
    }))

  it.scopedLive.skipIf(CHROMIUM.skip)("approve an app, see it under Authorized apps; a password change keeps it; Revoke → its token 401 and an event", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const url = localhostUrl(app.url)
      const listener = yield* loopbackListener
      const { page } = yield* newPage(yield* launchChromium)
      const csp = cspErrors(page)

      const client = yield* registerClient(url, {
        client_name: "Notebook Agent",
        client_uri: "https://notebook.example/about",
        redirect_uris: ["http://127.0.0.1/callback"]
      })
      const { verifier, challenge } = pkcePair()
      const redirectUri = `http://127.0.0.1:${listener.port}/callback`
      yield* promise(() => page.goto(authorizeUrl(url, { client_id: client.client_id, redirect_uri: redirectUri, code_challenge: challenge })))
      // The authorization page's sign-in offers passkeys too.
      expect(yield* promise(() => page.getByRole("button", { name: "Sign in with a passkey" }).isVisible())).toBe(true)
      yield* signInWithPassword(page)
      yield* promise(() =>
        Promise.all([page.waitForURL((u) => u.port === String(listener.port)), page.getByRole("button", { name: "Approve" }).click()])
      )
      const code = new URL(page.url()).searchParams.get("code")!
      const redeemed = yield* redeem(url, { clientId: client.client_id, code, redirectUri, verifier })
      const appToken = (yield* jsonOf(redeemed)).access_token as string
      expect(yield* mcpStatus(url, appToken)).toBe(200)

      yield* promise(() => page.goto(`${url}/settings/authorized-apps`))
      const row = page.getByRole("row", { name: /Notebook Agent/ })
      const rowText = yield* promise(() => row.innerText())
      expect(rowText).toContain("notebook.example")
      expect(rowText).not.toContain("never") // last used by the /mcp call above

      // A normal password change revokes nothing.
      yield* promise(async () => {
        await page.goto(`${url}/settings/password`)
        await page.getByLabel("Current password").fill(PASSWORD)
        await page.getByLabel("New password").fill("a brand new passphrase")
        await Promise.all([page.waitForURL((u) => u.searchParams.get("done") === "changed"), page.getByRole("button", { name: "Change password" }).click()])
      })
      expect(yield* promise(() => page.getByRole("status").innerText())).toContain("password was changed")
      expect(yield* mcpStatus(url, appToken)).toBe(200)
      yield* promise(() => page.goto(`${url}/settings/authorized-apps`))
      expect(yield* promise(() => page.getByRole("row", { name: /Notebook Agent/ }).count())).toBe(1)

      // Revoke: the token stops at once, and the revocation is announced for its consumers
      // (the credential cache, which the /mcp calls above filled).
      const events = yield* app.service(CredentialRevocations).subscribe
      const [issued] = yield* app.sql<{ id: number }>`SELECT id FROM oauth_tokens WHERE client_id = ${client.client_id}`
      yield* promise(() =>
        Promise.all([
          page.waitForURL((u) => u.searchParams.get("done") === "app-revoked"),
          page.getByRole("button", { name: "Revoke Notebook Agent" }).click()
        ])
      )
      expect(yield* mcpStatus(url, appToken)).toBe(401)
      expect(yield* Queue.take(events)).toEqual({ credential: "oauth", tokenId: issued!.id, accountId: app.accountId })
      expect(yield* promise(() => page.getByRole("row", { name: /Notebook Agent/ }).count())).toBe(0)
      expect(Option.isNone(yield* Queue.poll(events))).toBe(true)
      expect(csp).toEqual([])
    }))

  it.scopedLive.skipIf(CHROMIUM.skip)("another origin cannot frame the sign-in page or Settings", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const url = localhostUrl(app.url)
      const listener = yield* loopbackListener
      const { page } = yield* newPage(yield* launchChromium)
      for (const path of ["/login", "/settings/api-tokens"]) {
        const frame = yield* framed(page, listener.port, `${url}${path}`)
        expect(frame.url).toBe("chrome-error://chromewebdata/")
        expect(frame.text).not.toContain("Sign in to Belay")
      }
    }))
})
