// The server-rendered pages of the authorization flow — sign-in, approval, out-of-band code,
// denied, error — and the page layout the member's other pages (SettingsPages.ts) share. Plain
// HTML strings, no third-party resource (RFC 9700 §4.2.4), one inline stylesheet allowed by its
// hash, and one same-origin script (PasskeyScript.ts) on the pages that offer passkeys. Every
// interpolated value goes through `escapeHtml` by way of the `html` template tag; client metadata
// is self-asserted (RFC 7591 §5) and is shown as text, never as a link. Pure functions; safe from
// any fiber.
import * as Crypto from "node:crypto"
import type { RedirectTarget } from "../../services/oauth/ClientMetadata.js"
import { PASSKEY_SCRIPT_PATH } from "./PasskeyScript.js"

export const HTML_CONTENT_TYPE = "text/html; charset=utf-8"

/** Form field names shared with the endpoints (docs/decisions/oauth.md). */
export const PageFields = {
  username: "username",
  password: "password",
  decision: "decision",
  csrf: "csrf_token"
} as const

export type Decision = "approve" | "deny"

/** Escapes the five characters that matter in HTML text and quoted attribute values. */
const htmlEntities: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  "\"": "&quot;",
  "'": "&#39;"
}

export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => htmlEntities[c] ?? c)

/** Markup already built by `html`; the only thing interpolated without escaping. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value
  }
}

export type HtmlValue = string | number | SafeHtml | undefined | null | false | ReadonlyArray<HtmlValue>

const render = (value: HtmlValue): string => {
  if (value === undefined || value === null || value === false) return ""
  if (value instanceof SafeHtml) return value.value
  if (typeof value === "string") return escapeHtml(value)
  if (typeof value === "number") return String(value)
  return value.map(render).join("")
}

/** Template tag: literal parts are markup, every interpolation is escaped unless it is SafeHtml. */
export const html = (strings: TemplateStringsArray, ...values: ReadonlyArray<HtmlValue>): SafeHtml =>
  new SafeHtml(strings.reduce((out, part, i) => out + part + (i < values.length ? render(values[i]) : ""), ""))

const style = `
:root{color-scheme:light dark;--fg:#1b1f24;--muted:#57606a;--bg:#f6f8fa;--card:#fff;--line:#d0d7de;--accent:#0b5cad;--accent-fill:#0b5cad;--warn:#8a4b00;--ok:#1a7f37}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9da7b3;--bg:#0d1117;--card:#161b22;--line:#30363d;--accent:#4493f8;--accent-fill:#1f6feb;--warn:#e3b341;--ok:#3fb950}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif}
main{max-width:32rem;margin:3rem auto;padding:2rem;background:var(--card);border:1px solid var(--line);border-radius:12px}
main.wide{max-width:52rem}
h1{font-size:1.35rem;margin:0 0 1rem;overflow-wrap:anywhere}
h2{font-size:1.1rem;margin:2rem 0 .75rem}
p{margin:.75rem 0}
a{color:var(--accent)}
a:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.muted{color:var(--muted);font-size:.9rem}
.warn{color:var(--warn)}
.ok{color:var(--ok)}
dl{margin:1rem 0;display:grid;grid-template-columns:auto 1fr;gap:.4rem 1rem}
dt{font-weight:600}
dd{margin:0;overflow-wrap:anywhere}
label{display:block;margin:.75rem 0 .25rem;font-weight:600}
fieldset{border:0;margin:.75rem 0;padding:0}
legend{font-weight:600;padding:0}
fieldset label{display:inline-flex;align-items:center;gap:.35rem;margin:.25rem 1.25rem .25rem 0;font-weight:400}
input[type=text],input[type=password]{width:100%;padding:.55rem .7rem;font:inherit;color:inherit;background:var(--bg);border:1px solid var(--line);border-radius:8px}
.actions{display:flex;gap:.75rem;margin-top:1.5rem}
button{flex:1;padding:.6rem 1rem;font:inherit;font-weight:600;border-radius:8px;border:1px solid var(--line);background:var(--bg);color:inherit;cursor:pointer}
button.primary{background:var(--accent-fill);border-color:var(--accent-fill);color:#fff}
button.small{flex:none;padding:.3rem .75rem;font-size:.9rem}
button:disabled{opacity:.6;cursor:progress}
button:focus-visible,input:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.code{display:block;margin:1rem 0;padding:1rem;font:1.05rem/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;background:var(--bg);border:1px solid var(--line);border-radius:8px;overflow-wrap:anywhere;user-select:all}
[role=alert]{padding:.6rem .8rem;border:1px solid var(--warn);border-radius:8px}
[role=status]{padding:.6rem .8rem;border:1px solid var(--ok);border-radius:8px}
[hidden]{display:none!important}
.divider{margin:1.5rem 0 1rem;text-align:center;color:var(--muted);font-size:.9rem}
nav ul{display:flex;flex-wrap:wrap;gap:.25rem 1.25rem;list-style:none;margin:0 0 1.5rem;padding:0 0 .75rem;border-bottom:1px solid var(--line)}
nav a[aria-current=page]{font-weight:700;color:inherit;text-decoration:none}
.topbar{display:flex;justify-content:space-between;align-items:baseline;gap:1rem;margin-bottom:1rem}
.topbar form{margin:0}
table{width:100%;border-collapse:collapse;margin:.5rem 0 1rem}
caption{text-align:left;font-weight:600;padding:.25rem 0}
th,td{text-align:left;padding:.45rem .5rem;border-bottom:1px solid var(--line);vertical-align:top;overflow-wrap:anywhere}
th{font-size:.9rem;color:var(--muted)}
tbody th{font-size:inherit;color:inherit}
td form{margin:0}
dd img{vertical-align:middle;margin-right:.5rem;border-radius:6px;object-fit:contain}
`

/** CSP `style-src` source of the one stylesheet (CSP Level 3 §8.3 hash-source). */
const STYLE_SOURCE = `'sha256-${Crypto.createHash("sha256").update(style).digest("base64")}'`

/**
 * The pages' policy with `img-src` as given: the approval page of an app known by its metadata document allows
 * exactly the image proxy's path for the app's logo, or nothing (docs/decisions/previews.md "The image proxy").
 */
export const pageCsp = (imageSources: string): string =>
  `default-src 'none'; script-src 'self'; style-src ${STYLE_SOURCE}; img-src ${imageSources}; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'`

/**
 * Headers for every page (docs/decisions/oauth.md "Pages"). `frame-ancestors
 * 'none'` with `X-Frame-Options: DENY` refuses framing; the rest of the policy lets a page load
 * nothing but its own stylesheet (by hash), same-origin scripts and same-origin fetches. No
 * `form-action`: Chromium and Safari apply it to the redirect after the approve POST and would
 * block it.
 */
export const securityHeaders: Readonly<Record<string, string>> = {
  "Content-Security-Policy": pageCsp("'self'"),
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "Cache-Control": "no-store",
  "X-Content-Type-Options": "nosniff"
}

export interface LayoutOptions {
  /** Same-origin script paths, loaded with `defer`. */
  readonly scripts?: ReadonlyArray<string>
  /** The settings pages' wider column. */
  readonly wide?: boolean
}

/** A whole document around `body`. */
export const layout = (title: string, body: SafeHtml, options: LayoutOptions = {}): string =>
  html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<title>${title} · Belay</title>
<style>${new SafeHtml(style)}</style>
${(options.scripts ?? []).map((src) => html`<script src="${src}" defer></script>\n`)}</head>
<body>
<main${options.wide === true ? new SafeHtml(" class=\"wide\"") : ""}>
${body}
</main>
</body>
</html>
`.value

const page = (title: string, body: SafeHtml, options: LayoutOptions = {}): string => layout(title, body, options)

const hiddenInputs = (fields: Readonly<Record<string, string>>): SafeHtml =>
  html`${Object.entries(fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">\n`)}`

/** Fields common to the forms that continue the flow: where to post, the CSRF token (bound to the
 * session and checked together with a same-origin Origin) and the hidden
 * fields the endpoint needs to resume (for example the pending-approval id). */
export interface FlowForm {
  readonly action: string
  readonly csrfToken: string
  readonly hidden?: Readonly<Record<string, string>>
}

export interface SignInPageInput extends FlowForm {
  /** The app waiting for approval, when the sign-in is part of an authorization. */
  readonly clientName?: string
  /** Pre-filled after a failed attempt. */
  readonly username?: string
  /** A failure to show, e.g. "Wrong username or password." */
  readonly error?: string
  /** Offers passkey sign-in: where its two JSON endpoints are and where to go afterwards. */
  readonly passkey?: {
    readonly optionsUrl: string
    readonly submitUrl: string
    /** A same-origin path (Session.isSafeNext). */
    readonly next: string
  }
}

export const signInPage = (input: SignInPageInput): string => {
  const context = input.clientName === undefined
    ? ""
    : html`<p>Sign in to review the request from <strong>${input.clientName}</strong>.</p>`
  return page(
    "Sign in",
    html`<h1>Sign in to Belay</h1>
${context}
${input.error === undefined ? "" : html`<p role="alert">${input.error}</p>`}
<form method="post" action="${input.action}">
<input type="hidden" name="${PageFields.csrf}" value="${input.csrfToken}">
${hiddenInputs(input.hidden ?? {})}<label for="username">Username</label>
<input type="text" id="username" name="${PageFields.username}" value="${input.username ?? ""}"
 autocomplete="username" autocapitalize="none" spellcheck="false" required autofocus>
<label for="password">Password</label>
<input type="password" id="password" name="${PageFields.password}" autocomplete="current-password" required>
<div class="actions"><button type="submit" class="primary">Sign in</button></div>
</form>
${input.passkey === undefined ? "" : passkeySignIn(input.passkey)}`,
    input.passkey === undefined ? {} : { scripts: [PASSKEY_SCRIPT_PATH] }
  )
}

/** Hidden until the script finds WebAuthn in the browser (PasskeyScript.ts). */
const passkeySignIn = (passkey: NonNullable<SignInPageInput["passkey"]>): SafeHtml =>
  html`<section data-passkey-sign-in data-options="${passkey.optionsUrl}" data-submit="${passkey.submitUrl}"
 data-next="${passkey.next}" aria-labelledby="passkey-heading" hidden>
<p class="divider" id="passkey-heading">or</p>
<p role="alert" hidden></p>
<div class="actions"><button type="button">Sign in with a passkey</button></div>
</section>`

export interface ApprovalPageInput extends FlowForm {
  readonly clientName: string
  /** The host of client_uri (`ClientMetadata.clientUriHost`), when one was registered. */
  readonly clientUriHost?: string | undefined
  readonly target: RedirectTarget
  /** The signed-in member. */
  readonly username?: string
  /** An app known by its Client ID Metadata Document (docs/decisions/oauth.md "Client ID Metadata Documents: a
   * client row keyed by the URL"): the document's host is what identifies it; its name and logo are its own claims. */
  readonly document?: {
    readonly host: string
    readonly logoHost?: string | undefined
    /** The logo through the image proxy (a same-origin path), shown beside "not verified". */
    readonly logoSrc?: string | undefined
    /** Every redirect_uri of the document is loopback or a custom scheme (MCP 2026-07-28 security considerations). */
    readonly everyRedirectLocal: boolean
  } | undefined
}

const targetText = (target: RedirectTarget): SafeHtml => {
  switch (target.kind) {
    case "https":
      return html`the website <strong>${target.host}</strong>`
    case "loopback":
      return html`an app on this computer, at <strong>${target.origin}</strong>`
    case "custom":
      return html`the app on this device that opens <strong>${target.scheme}:</strong> links`
    case "oob":
      return html`nowhere: the code is shown on screen for you to paste into the app`
  }
}

/** Always shown, even for an app approved before (RFC 8252 §8.6). One
 * form, two buttons `decision=approve|deny`; GET never approves. */
export const approvalPage = (input: ApprovalPageInput): string => {
  const signedInAs = input.username === undefined
    ? ""
    : html`<p class="muted">Signed in as <strong>${input.username}</strong>.</p>`
  const website = input.clientUriHost === undefined
    ? html`<span class="muted">none given</span>`
    : html`${input.clientUriHost} <span class="muted">(not verified)</span>`
  return page(
    "Approve app",
    html`<h1>Allow <q>${input.clientName}</q> to use your Belay account?</h1>
${signedInAs}
<dl>
${input.document === undefined
      ? html`<dt>App</dt><dd>${input.clientName} <span class="muted">(name chosen by the app, not verified)</span></dd>
<dt>Website</dt><dd>${website}</dd>
`
      : html`<dt>App</dt><dd><strong>${input.document.host}</strong> <span class="muted">(the address of its metadata document: this is what identifies the app)</span></dd>
<dt>Name</dt><dd>${input.clientName} <span class="muted">(from its metadata document, not verified)</span></dd>
${input.document.logoHost === undefined ? "" : input.document.logoSrc === undefined
        ? html`<dt>Logo</dt><dd>from ${input.document.logoHost} <span class="muted">(not verified, not shown)</span></dd>
`
        : html`<dt>Logo</dt><dd><img src="${input.document.logoSrc}" alt="The app's logo" width="48" height="48"> from ${input.document.logoHost} <span class="muted">(not verified)</span></dd>
`}<dt>Website</dt><dd>${website}</dd>
`}<dt>Access</dt><dd class="warn">Full access: read and write, same as signing in with your password.
It can read your messages and act as you on every network.</dd>
<dt>Approval goes to</dt><dd>${targetText(input.target)}</dd>
</dl>
${input.document?.everyRedirectLocal === true
      ? html`<p class="warn">Every address this app may send the approval to is on this computer, so any program on this computer could be asking in the name of ${input.document.host}. Only approve if you started this from the app yourself, just now.</p>
`
      : ""}<p class="muted">Only approve if you started this from the app yourself. You can revoke access later in Settings › Authorized apps.</p>
<form method="post" action="${input.action}">
<input type="hidden" name="${PageFields.csrf}" value="${input.csrfToken}">
${hiddenInputs(input.hidden ?? {})}<div class="actions">
<button type="submit" name="${PageFields.decision}" value="approve" class="primary">Approve</button>
<button type="submit" name="${PageFields.decision}" value="deny">Deny</button>
</div>
</form>`
  )
}

const appName = (clientName: string | undefined, fallback: string): SafeHtml =>
  clientName === undefined ? html`${fallback}` : html`<q>${clientName}</q>`

/** Out-of-band approval: the code to paste. Served with Cache-Control: no-store and never logged. */
export const oobCodePage = (input: { readonly code: string; readonly clientName?: string }): string =>
  page(
    "Your code",
    html`<h1>Copy this code into ${appName(input.clientName, "the app")}</h1>
<p>Paste it into the app you started. It works once and expires in 10 minutes.</p>
<output class="code" aria-label="Authorization code">${input.code}</output>
<p class="warn">Never give this code to anyone, and only paste it into an app you started yourself.</p>`
  )

export const deniedPage = (input: { readonly clientName?: string } = {}): string =>
  page(
    "Access denied",
    html`<h1>Access denied</h1>
<p>${appName(input.clientName, "The app")} was not given access to your account. You can close this page.</p>`
  )

/** An authorization that cannot continue (status 400 for an invalid request); nothing was sent to
 * the app. `message` comes from us (e.g. InvalidAuthorizeRequest.message), never from input. */
export const errorPage = (input: { readonly message: string; readonly title?: string; readonly error?: string }): string =>
  page(
    input.title ?? "Request not valid",
    html`<h1>${input.title ?? "This request can't continue"}</h1>
<p>${input.message}</p>
${input.error === undefined ? "" : html`<p class="muted">OAuth error: <code>${input.error}</code></p>
`}<p class="muted">Nothing was sent to the app. Go back to the app and start again.</p>`
  )

/**
 * The `service_documentation` of discovery (RFC 8414 §2): how an app gets a token, for
 * the developer reading it. Static; `issuer` is this request's issuer.
 */
export const oauthDocsPage = (issuer: string): string =>
  page(
    "OAuth for app developers",
    html`<h1>Connecting an app to Belay</h1>
<p>Belay is an OAuth 2 authorization server for public clients (no client secret). An MCP client that finds
<code>${issuer}/.well-known/oauth-protected-resource/mcp</code> needs nothing else: it can do all of this itself.</p>
<ol>
<li>Read the metadata at <code>${issuer}/.well-known/oauth-authorization-server</code> (RFC 8414).</li>
<li>Register with <code>POST ${issuer}/api/oauth/register</code>: JSON <code>{client_name, redirect_uris, client_uri?}</code>
(RFC 7591). Redirect URIs: https, loopback http (127.0.0.1, [::1] or localhost; any port at authorization),
a reverse-DNS custom scheme with a dot, or <code>urn:ietf:wg:oauth:2.0:oob</code>. Unapproved registrations are
deleted after an hour.</li>
<li>Send the member to <code>${issuer}/oauth/authorize</code> with <code>response_type=code</code>, your
<code>client_id</code> and <code>redirect_uri</code>, a PKCE <code>code_challenge</code> with
<code>code_challenge_method=S256</code>, and an optional <code>state</code>. The member signs in and approves; you get
<code>code</code>, <code>state</code> and <code>iss</code> back (or <code>error=access_denied</code>).</li>
<li>Exchange the code within 10 minutes at <code>POST ${issuer}/api/oauth/token</code> with
<code>grant_type=authorization_code</code>, <code>client_id</code>, <code>code</code>, <code>redirect_uri</code> and
<code>code_verifier</code>. The answer is <code>{access_token, token_type: "Bearer", created_at}</code>: the token does not
expire and has full (read-write) access. Treat codes and tokens as opaque strings.</li>
<li>Use it as <code>Authorization: Bearer …</code> on <code>${issuer}/mcp</code>. Revoke it with
<code>POST ${issuer}/api/oauth/revoke</code> (<code>client_id</code>, <code>token</code>) or
<code>POST ${issuer}/api/auth/logout</code>.</li>
</ol>`
  )
