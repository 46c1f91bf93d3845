// The member's pages besides sign-in (docs/decisions/web.md): the start page
// `/` and Settings — API tokens, Authorized apps, Passkeys, Password. Server-rendered HTML in the
// layout and stylesheet of Pages.ts: native controls only (every input has a label, every
// button says what it does to which row, so a keyboard and a screen reader suffice), each
// form carrying the session's CSRF field. Pure functions; safe from any fiber.
import { MemberPaths } from "../../schema/MemberApi.js"
import type { ApiTokenListing } from "../../services/identity/ApiTokens.js"
import type { AuthorizedApp, PasswordSignIn } from "../../services/identity/OAuthTokens.js"
import { clientUriHost } from "../../services/oauth/ClientMetadata.js"
import type { PasskeyListing } from "../../services/identity/Passkeys.js"
import { html, layout, PageFields, SafeHtml } from "./Pages.js"
import { PASSKEY_SCRIPT_PATH } from "./PasskeyScript.js"

/** Form fields of the settings pages. */
export const SettingsFields = {
  name: "name",
  scope: "scope",
  currentPassword: "current_password",
  newPassword: "new_password"
} as const

export type SettingsSection = "api-tokens" | "authorized-apps" | "passkeys" | "password" | "account"

const sections: ReadonlyArray<{ readonly id: SettingsSection; readonly path: string; readonly label: string }> = [
  { id: "api-tokens", path: MemberPaths.apiTokens, label: "API tokens" },
  { id: "authorized-apps", path: MemberPaths.authorizedApps, label: "Authorized apps" },
  { id: "passkeys", path: MemberPaths.passkeys, label: "Passkeys" },
  { id: "password", path: MemberPaths.password, label: "Password" },
  { id: "account", path: MemberPaths.account, label: "Your data" }
]

export interface SettingsContext {
  readonly accountName: string
  /** The session's CSRF token (Session.settingsCsrf). */
  readonly csrf: string
}

/** A flash line at the top of a page: what just happened, or what went wrong. */
export type Notice = { readonly kind: "ok" | "error"; readonly text: string }

const csrfField = (ctx: SettingsContext) => html`<input type="hidden" name="${PageFields.csrf}" value="${ctx.csrf}">`

const signOut = (ctx: SettingsContext) =>
  html`<form method="post" action="${MemberPaths.logout}">${csrfField(ctx)}<button type="submit" class="small">Sign out</button></form>`

const topbar = (ctx: SettingsContext) =>
  html`<div class="topbar"><p class="muted"><a href="/">Chat</a> · Signed in as <strong>${ctx.accountName}</strong></p>${signOut(ctx)}</div>`

const noticeHtml = (notice: Notice | undefined) =>
  notice === undefined
    ? ""
    : notice.kind === "ok"
    ? html`<p role="status">${notice.text}</p>`
    : html`<p role="alert">${notice.text}</p>`

/** `2026-11-24 21:59 UTC` in a `<time>` element, or a dash. */
const when = (date: Date | null): SafeHtml =>
  date === null
    ? html`<span class="muted">never</span>`
    : html`<time datetime="${date.toISOString()}">${date.toISOString().slice(0, 16).replace("T", " ")} UTC</time>`

const settingsPage = (
  ctx: SettingsContext,
  current: SettingsSection,
  body: SafeHtml,
  options: { readonly notice?: Notice | undefined; readonly scripts?: ReadonlyArray<string> } = {}
): string => {
  const section = sections.find((s) => s.id === current)!
  return layout(
    `${section.label} · Settings`,
    html`${topbar(ctx)}
<nav aria-label="Settings"><ul>
${sections.map((s) => html`<li><a href="${s.path}"${s.id === current ? new SafeHtml(" aria-current=\"page\"") : ""}>${s.label}</a></li>\n`)}</ul></nav>
<h1>${section.label}</h1>
${noticeHtml(options.notice)}
${body}`,
    { wide: true, ...(options.scripts === undefined ? {} : { scripts: options.scripts }) }
  )
}

// ---------------------------------------------------------------------------------------------
// Settings > API tokens

export interface ApiTokensPageInput {
  readonly tokens: ReadonlyArray<ApiTokenListing>
  /** Hosted deployments offer no API tokens (interface "Authentication" 2). */
  readonly hosted: boolean
  /** A token just minted: its raw value, shown this once. */
  readonly created?: { readonly name: string; readonly token: string } | undefined
  readonly notice?: Notice | undefined
  /** Values to put back into the form after a refusal. */
  readonly form?: { readonly name: string; readonly scope: string } | undefined
}

export const apiTokensPage = (ctx: SettingsContext, input: ApiTokensPageInput): string => {
  if (input.hosted) {
    return settingsPage(
      ctx,
      "api-tokens",
      html`<p role="status">API tokens are not offered on this server. Apps connect to your account with OAuth:
they ask you to approve them in the browser, and you can revoke them under <a href="${MemberPaths.authorizedApps}">Authorized apps</a>.</p>`,
      { notice: input.notice }
    )
  }
  const created = input.created === undefined ? "" : html`<section aria-labelledby="created-heading">
<h2 id="created-heading">Token <q>${input.created.name}</q> created</h2>
<p role="status">Copy it now: it is shown only this once.</p>
<output class="code" id="created-token" aria-label="The new token">${input.created.token}</output>
</section>`
  const scope = input.form?.scope === "read-write" ? "read-write" : "read"
  const checked = (value: string) => (value === scope ? new SafeHtml(" checked") : "")
  const rows = input.tokens.map((t) =>
    html`<tr>
<th scope="row">${t.name}</th>
<td>${t.scope === "read" ? "Read" : "Read and write"}</td>
<td>${when(t.createdAt)}</td>
<td>${when(t.lastUsedAt)}</td>
<td>${
      t.revokedAt === null
        ? html`<form method="post" action="${MemberPaths.apiTokensRevoke}">${csrfField(ctx)}<input type="hidden" name="${SettingsFields.name}" value="${t.name}">
<button type="submit" class="small" aria-label="Revoke token ${t.name}">Revoke</button></form>`
        : html`<strong class="warn">Revoked</strong> ${when(t.revokedAt)}`
    }</td>
</tr>\n`
  )
  return settingsPage(
    ctx,
    "api-tokens",
    html`${created}
<p>An API token lets a program use your account over MCP (<code>Authorization: Bearer …</code> at <code>/mcp</code>).
A read token may only call the read tools.</p>
<h2 id="mint-heading">New token</h2>
<form method="post" action="${MemberPaths.apiTokens}" aria-labelledby="mint-heading">
${csrfField(ctx)}
<label for="token-name">Name</label>
<input type="text" id="token-name" name="${SettingsFields.name}" value="${input.form?.name ?? ""}" required maxlength="64" autocomplete="off" spellcheck="false">
<fieldset>
<legend>Scope</legend>
<label><input type="radio" name="${SettingsFields.scope}" value="read"${checked("read")}> Read</label>
<label><input type="radio" name="${SettingsFields.scope}" value="read-write"${checked("read-write")}> Read and write</label>
</fieldset>
<div class="actions"><button type="submit" class="primary">Create token</button></div>
</form>
<h2 id="tokens-heading">Your tokens</h2>
${
      input.tokens.length === 0
        ? html`<p class="muted">No token yet.</p>`
        : html`<table aria-labelledby="tokens-heading">
<thead><tr><th scope="col">Name</th><th scope="col">Scope</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Status</th></tr></thead>
<tbody>
${rows}</tbody>
</table>`
    }`,
    { notice: input.notice }
  )
}

// ---------------------------------------------------------------------------------------------
// Settings > Authorized apps

export interface AuthorizedAppsPageInput {
  readonly apps: ReadonlyArray<AuthorizedApp>
  readonly passwordSignIns: ReadonlyArray<PasswordSignIn>
  readonly notice?: Notice | undefined
}

/** The name under which password-sign-in tokens are listed (docs/decisions/web.md). */
export const PASSWORD_SIGN_IN_LABEL = "Password sign-in"

export const authorizedAppsPage = (ctx: SettingsContext, input: AuthorizedAppsPageInput): string => {
  const revoke = (action: string, label: string) =>
    html`<form method="post" action="${action}">${csrfField(ctx)}<button type="submit" class="small" aria-label="${label}">Revoke</button></form>`
  const appRows = input.apps.map((app) => {
    const host = clientUriHost(app.clientUri)
    // A metadata-document app is listed by the host of its client_id, the one thing about it that is checked
    // (docs/decisions/oauth.md "Client ID Metadata Documents: a client row keyed by the URL"); its name is its claim.
    const documentHost = app.kind === "document" ? clientUriHost(app.clientId) : undefined
    return html`<tr>
<th scope="row">${documentHost === undefined ? app.clientName : html`${documentHost} <span class="muted">(${app.clientName}, name not verified)</span>`}</th>
<td>${host === undefined ? html`<span class="muted">none given</span>` : html`${host} <span class="muted">(not verified)</span>`}</td>
<td>${when(app.approvedAt)}</td>
<td>${when(app.lastUsedAt)}</td>
<td>${revoke(MemberPaths.revokeApp.replace(":clientId", encodeURIComponent(app.clientId)), `Revoke ${app.clientName}`)}</td>
</tr>\n`
  })
  const passwordRows = input.passwordSignIns.map((t) =>
    html`<tr>
<th scope="row">${PASSWORD_SIGN_IN_LABEL}</th>
<td><span class="muted">—</span></td>
<td>${when(t.createdAt)}</td>
<td>${when(t.lastUsedAt)}</td>
<td>${revoke(MemberPaths.revokePasswordSignIn.replace(":tokenId", String(t.tokenId)), `Revoke the password sign-in of ${t.createdAt.toISOString()}`)}</td>
</tr>\n`
  )
  const empty = input.apps.length === 0 && input.passwordSignIns.length === 0
  return settingsPage(
    ctx,
    "authorized-apps",
    html`<p>Apps you approved, and programs that signed in with your password. Each has full access to your account.
Revoking one stops it at once; an app can ask you to approve it again.</p>
${
      empty
        ? html`<p class="muted">No app is authorized.</p>`
        : html`<table aria-label="Authorized apps">
<thead><tr><th scope="col">App</th><th scope="col">Website</th><th scope="col">Approved</th><th scope="col">Last used</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>
${appRows}${passwordRows}</tbody>
</table>`
    }`,
    { notice: input.notice }
  )
}

// ---------------------------------------------------------------------------------------------
// Settings > Passkeys

export interface PasskeysPageInput {
  readonly passkeys: ReadonlyArray<PasskeyListing>
  readonly notice?: Notice | undefined
}

export const passkeysPage = (ctx: SettingsContext, input: PasskeysPageInput): string => {
  const rows = input.passkeys.map((p) =>
    html`<tr>
<th scope="row">${p.name}</th>
<td>${when(p.createdAt)}</td>
<td>${when(p.lastUsedAt)}</td>
<td><form method="post" action="${MemberPaths.passkeyRemove.replace(":id", String(p.id))}">${csrfField(ctx)}
<button type="submit" class="small" aria-label="Remove passkey ${p.name}">Remove</button></form></td>
</tr>\n`
  )
  return settingsPage(
    ctx,
    "passkeys",
    html`<p>A passkey signs you in with your device's screen lock or a security key instead of your password.</p>
${
      input.passkeys.length === 0
        ? html`<p class="muted">No passkey yet.</p>`
        : html`<table aria-label="Your passkeys">
<thead><tr><th scope="col">Name</th><th scope="col">Added</th><th scope="col">Last used</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>
${rows}</tbody>
</table>`
    }
<h2 id="add-heading">Add a passkey</h2>
<noscript><p>Adding a passkey needs JavaScript.</p></noscript>
<form method="post" action="${MemberPaths.passkeys}" data-passkey-register data-options="${MemberPaths.passkeyOptions}" aria-labelledby="add-heading" hidden>
<label for="passkey-name">Name</label>
<input type="text" id="passkey-name" name="${SettingsFields.name}" required maxlength="64" autocomplete="off" placeholder="e.g. Laptop">
<p role="alert" hidden></p>
<div class="actions"><button type="submit" class="primary">Add passkey</button></div>
</form>`,
    { notice: input.notice, scripts: [PASSKEY_SCRIPT_PATH] }
  )
}

// ---------------------------------------------------------------------------------------------
// Settings > Password

export const passwordPage = (ctx: SettingsContext, input: { readonly notice?: Notice | undefined } = {}): string =>
  settingsPage(
    ctx,
    "password",
    html`<p>Changing your password keeps you, your approved apps and your tokens signed in.</p>
<form method="post" action="${MemberPaths.password}">
${csrfField(ctx)}
<input type="text" name="username" value="${ctx.accountName}" autocomplete="username" hidden>
<label for="current-password">Current password</label>
<input type="password" id="current-password" name="${SettingsFields.currentPassword}" autocomplete="current-password" required>
<label for="new-password">New password</label>
<input type="password" id="new-password" name="${SettingsFields.newPassword}" autocomplete="new-password" minlength="8" maxlength="1024" required aria-describedby="new-password-hint">
<p class="muted" id="new-password-hint">At least 8 characters.</p>
<div class="actions"><button type="submit" class="primary">Change password</button></div>
</form>`,
    { notice: input.notice }
  )

// ---------------------------------------------------------------------------------------------
// Settings > Your data: export, and the way out (docs/decisions/leaving.md)

export const accountPage = (
  ctx: SettingsContext,
  input: { readonly notice?: Notice | undefined; readonly passkeys?: boolean } = {}
): string =>
  settingsPage(
    ctx,
    "account",
    html`<h2>Export</h2>
<p>One file of JSON Lines: your networks (without their passwords), the channels they join, your nick notes, relay bots and
read markers, and every stored message, buffer by buffer. No password, token or key is in it.</p>
<p><a href="${MemberPaths.accountExport}" download>Download your data</a></p>
<h2>Delete your account</h2>
<p>Your networks quit, every device, app and token is signed out at once, and everything stored for you is deleted:
history, notes, keys. This cannot be undone. Your account name can be taken again once the deletion is finished.</p>
<form method="post" action="${MemberPaths.accountDelete}">
${csrfField(ctx)}
<input type="text" name="username" value="${ctx.accountName}" autocomplete="username" hidden>
<label for="delete-password">Your password</label>
<input type="password" id="delete-password" name="${SettingsFields.currentPassword}" autocomplete="current-password" required>
<div class="actions"><button type="submit">Delete my account and all its data</button></div>
</form>${
      input.passkeys === true
        // PasskeyScript's sign-in region: options, the authenticator, then the answer posted and its redirect followed.
        ? html`
<section data-passkey-sign-in data-options="${MemberPaths.accountDeletePasskeyOptions}" data-submit="${MemberPaths.accountDeletePasskey}"
 aria-labelledby="delete-passkey-heading" hidden>
<p class="divider" id="delete-passkey-heading">or, instead of your password</p>
<p role="alert" hidden></p>
<div class="actions"><button type="button">Delete my account with a passkey</button></div>
</section>`
        : html``
    }`,
    { notice: input.notice, ...(input.passkeys === true ? { scripts: [PASSKEY_SCRIPT_PATH] } : {}) }
  )
