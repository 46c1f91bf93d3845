import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { PASSKEY_SCRIPT_PATH } from "../../../src/http/pages/PasskeyScript.js"
import type { RedirectTarget } from "../../../src/services/oauth/ClientMetadata.js"
import {
  approvalPage,
  deniedPage,
  errorPage,
  escapeHtml,
  html,
  oobCodePage,
  securityHeaders,
  signInPage
} from "../../../src/http/pages/Pages.js"

const HOSTILE = "<script>alert(1)</script>\"' onmouseover=\"x"

const approval = (overrides: Partial<Parameters<typeof approvalPage>[0]> = {}) =>
  approvalPage({
    action: "/oauth/authorize/decision",
    csrfToken: "csrf-123",
    hidden: { request_id: "req-1" },
    clientName: "CLI",
    clientUriHost: "cli.example",
    target: { kind: "https", host: "app.example" },
    ...overrides
  })

const count = (haystack: string, needle: string) => haystack.split(needle).length - 1

describe("escapeHtml", () => {
  it.each([
    { input: "plain", output: "plain" },
    { input: "<script>", output: "&lt;script&gt;" },
    { input: "a & b", output: "a &amp; b" },
    { input: "\"quoted\"", output: "&quot;quoted&quot;" },
    { input: "it's", output: "it&#39;s" },
    { input: "&lt;", output: "&amp;lt;" },
    { input: "é 😀", output: "é 😀" }
  ])("$input", ({ input, output }) => {
    expect(escapeHtml(input)).toBe(output)
  })

  it("the html tag escapes interpolations but not nested html", () => {
    expect(html`<p>${"<b>"}${html`<i>${"&"}</i>`}${["<", html`<br>`]}${undefined}${false}${3}</p>`.value).toBe(
      "<p>&lt;b&gt;<i>&amp;</i>&lt;<br>3</p>"
    )
  })
})

describe("approvalPage", () => {
  it("escapes a hostile client_name everywhere it appears (N-06)", () => {
    const page = approval({ clientName: HOSTILE })
    expect(page).not.toContain("<script>")
    expect(page).not.toContain("onmouseover=\"x")
    expect(page).toContain("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39; onmouseover=&quot;x")
  })

  it("escapes hostile hidden fields, CSRF token, host and action", () => {
    const page = approval({
      action: "/a\"><script>",
      csrfToken: "\"><script>",
      hidden: { "x\"><script>": "\"><script>" },
      clientUriHost: "<script>",
      target: { kind: "https", host: "<script>" }
    })
    expect(page).not.toContain("<script>")
  })

  it("has one form with approve and deny buttons named decision, and the CSRF field (docs/decisions/oauth.md)", () => {
    const page = approval()
    expect(count(page, "<form ")).toBe(1)
    expect(page).toContain("<form method=\"post\" action=\"/oauth/authorize/decision\">")
    expect(page).toContain("<button type=\"submit\" name=\"decision\" value=\"approve\"")
    expect(page).toContain("<button type=\"submit\" name=\"decision\" value=\"deny\"")
    expect(page).toContain("<input type=\"hidden\" name=\"csrf_token\" value=\"csrf-123\">")
    expect(page).toContain("<input type=\"hidden\" name=\"request_id\" value=\"req-1\">")
  })

  it("shows the app, the unverified website host, full access and the destination", () => {
    const page = approval({ username: "alice" })
    expect(page).toContain("CLI")
    expect(page).toContain("cli.example")
    expect(page).toContain("not verified")
    expect(page).toContain("Full access: read and write, same as signing in with your password")
    expect(page).toContain("app.example")
    expect(page).toContain("alice")
  })

  it("never links to client_uri and has no script", () => {
    const page = approval()
    expect(page).not.toMatch(/<a[\s>]/)
    expect(page).not.toContain("<script")
    expect(page).not.toMatch(/https?:\/\/cli\.example/)
  })

  it("says when no website was given", () => {
    expect(approval({ clientUriHost: undefined })).toContain("none given")
  })

  const targets: ReadonlyArray<{ readonly target: RedirectTarget; readonly text: string }> = [
    { target: { kind: "https", host: "app.example" }, text: "the website <strong>app.example</strong>" },
    { target: { kind: "loopback", origin: "http://127.0.0.1:51234" }, text: "an app on this computer, at <strong>http://127.0.0.1:51234</strong>" },
    { target: { kind: "custom", scheme: "com.example.app" }, text: "opens <strong>com.example.app:</strong> links" },
    { target: { kind: "oob" }, text: "shown on screen for you to paste" }
  ]

  it.each(targets)("states where the approval goes: $target.kind", ({ target, text }) => {
    expect(approval({ target })).toContain(text)
  })
})

describe("signInPage", () => {
  it("has username and password fields, the CSRF field and the hidden fields", () => {
    const page = signInPage({ action: "/login", csrfToken: "tok", hidden: { next: "/oauth/authorize?x=1&y=2" } })
    expect(page).toContain("name=\"username\"")
    expect(page).toContain("name=\"password\"")
    expect(page).toContain("type=\"password\"")
    expect(page).toContain("autocomplete=\"current-password\"")
    expect(page).toContain("<input type=\"hidden\" name=\"csrf_token\" value=\"tok\">")
    expect(page).toContain("<input type=\"hidden\" name=\"next\" value=\"/oauth/authorize?x=1&amp;y=2\">")
    expect(page).toContain("<label for=\"username\">")
    expect(page).toContain("<label for=\"password\">")
  })

  it("escapes the app name, the remembered username and the error", () => {
    const page = signInPage({ action: "/login", csrfToken: "t", clientName: HOSTILE, username: HOSTILE, error: HOSTILE })
    expect(page).not.toContain("<script>")
    expect(page).toContain("role=\"alert\"")
  })
})

describe("oobCodePage, deniedPage, errorPage", () => {
  it("shows the code to paste, escaped", () => {
    const page = oobCodePage({ code: "srv1~abc<def>", clientName: "CLI" })
    expect(page).toContain("srv1~abc&lt;def&gt;")
    expect(page).toContain("only paste it into an app you started yourself")
  })

  it("denied page names the app, escaped", () => {
    const page = deniedPage({ clientName: HOSTILE })
    expect(page).toContain("Access denied")
    expect(page).not.toContain("<script>")
  })

  it("error page shows the message and says nothing was sent", () => {
    const page = errorPage({ message: "The redirect_uri is not one the app registered." })
    expect(page).toContain("The redirect_uri is not one the app registered.")
    expect(page).toContain("Nothing was sent to the app")
  })

  it("the sign-in page with passkeys loads the one same-origin script, deferred, and no inline script", () => {
    const page = signInPage({ action: "/l", csrfToken: "t", passkey: { optionsUrl: "/o", submitUrl: "/s", next: "/settings?a=<b>" } })
    expect(page).toContain(`<script src="${PASSKEY_SCRIPT_PATH}" defer></script>`)
    expect(count(page, "<script")).toBe(1)
    expect(page).toContain("data-passkey-sign-in data-options=\"/o\" data-submit=\"/s\"")
    expect(page).toContain("data-next=\"/settings?a=&lt;b&gt;\"")
    expect(PASSKEY_SCRIPT_PATH).toMatch(/^\/assets\/passkeys\.[A-Za-z0-9_-]{12}\.js$/)
  })

  it.each([
    { name: "sign-in", page: signInPage({ action: "/l", csrfToken: "t" }) },
    { name: "approval", page: approval() },
    { name: "oob", page: oobCodePage({ code: "c" }) },
    { name: "denied", page: deniedPage() },
    { name: "error", page: errorPage({ message: "m" }) }
  ])("$name is a complete document with no script or external resource", ({ page }) => {
    expect(page.startsWith("<!doctype html>")).toBe(true)
    expect(page).toContain("<html lang=\"en\">")
    expect(page).toContain("<meta charset=\"utf-8\">")
    expect(page).not.toContain("<script")
    expect(page).not.toMatch(/(src|href)=/)
  })
})

describe("securityHeaders", () => {
  it("frame-ancestors 'none' and no form-action; only same-origin scripts, the stylesheet by hash; DENY, no-referrer, no-store, nosniff", () => {
    const { "Content-Security-Policy": csp, ...rest } = securityHeaders
    expect(rest).toStrictEqual({
      "X-Frame-Options": "DENY",
      "Referrer-Policy": "no-referrer",
      "Cache-Control": "no-store",
      "X-Content-Type-Options": "nosniff"
    })
    const directives = Object.fromEntries(csp!.split("; ").map((d) => [d.split(" ")[0], d.split(" ").slice(1).join(" ")]))
    expect(directives["frame-ancestors"]).toBe("'none'")
    expect(directives["form-action"]).toBeUndefined()
    expect(directives["default-src"]).toBe("'none'")
    expect(directives["script-src"]).toBe("'self'")
    expect(directives["style-src"]).toMatch(/^'sha256-[A-Za-z0-9+/]{43}='$/)
  })

  it("the style-src hash is the hash of the page's one stylesheet", () => {
    const page = errorPage({ message: "m" })
    const style = /<style>([\s\S]*)<\/style>/.exec(page)![1]!
    const hash = createHash("sha256").update(style).digest("base64")
    expect(securityHeaders["Content-Security-Policy"]).toContain(`style-src 'sha256-${hash}'`)
    expect(count(page, "<style")).toBe(1)
    expect(page).not.toMatch(/ style=/)
  })
})
