/**
 * Session owns how the browser session travels over HTTP (docs/decisions/web.md): the cookie that carries it (`belay_session`, `__Host-belay_session` on https;
 * HttpOnly, SameSite=Lax, Path=/), reading it back into a live session, the per-session
 * CSRF token of settings forms, the same-origin rule of state-changing requests, and the
 * 303 to `/login?next=<path>` of a page asked for without a session (docs/decisions/web.md,
 * "The browser session"). Pure helpers and stateless Effects over BrowserSessions.
 */
import { Duration, Effect, Option } from "effect"
import { MemberPaths } from "../../schema/MemberApi.js"
import type { Accounts } from "../../services/identity/Accounts.js"
import { type BrowserSession, BrowserSessionLimits, type BrowserSessions, csrfToken, verifyCsrfToken } from "../../services/identity/BrowserSessions.js"
import { readCookie, sessionCookieName, setCookie } from "../Cookies.js"
import type { HttpRequest, HttpResponse } from "../HttpServer.js"
import { isHttps } from "../Issuer.js"
import { seeOther } from "../oauth/OAuthHttp.js"

export interface MemberSession {
  /** The cookie's raw value: the key of the session's CSRF tokens; never logged. */
  readonly secret: string
  readonly session: BrowserSession
  readonly accountName: string
}

export interface SessionServices {
  readonly sessions: BrowserSessions
  readonly accounts: Accounts
}

/** The live session this request's cookie names, and its member's name, if any. */
export const currentSession = (
  services: SessionServices,
  request: HttpRequest,
  issuer: string
): Effect.Effect<Option.Option<MemberSession>> =>
  Effect.gen(function*() {
    const secret = readCookie(request, sessionCookieName(issuer))
    if (secret === undefined) return Option.none()
    const session = yield* services.sessions.lookup(secret)
    if (Option.isNone(session)) return Option.none()
    const account = yield* services.accounts.findById(session.value.accountId)
    return Option.map(account, (a): MemberSession => ({ secret, session: session.value, accountName: a.name }))
  })

/** `Set-Cookie` that starts a session: 30 days, like the session itself. */
export const sessionCookie = (issuer: string, secret: string): string =>
  setCookie(sessionCookieName(issuer), secret, {
    secure: isHttps(issuer),
    maxAgeSeconds: Math.floor(Duration.toSeconds(BrowserSessionLimits.lifetime))
  })

/** `Set-Cookie` that deletes the session cookie. */
export const clearedSessionCookie = (issuer: string): string =>
  setCookie(sessionCookieName(issuer), "", { secure: isHttps(issuer), maxAgeSeconds: 0 })

/**
 * A same-origin path to continue to after sign-in (`?next=`): one leading `/`, never `//`
 * or `/\` (which browsers read as another host), printable ASCII only — never a URL of
 * another origin (an open redirect, RFC 9700 §4.11).
 */
export const isSafeNext = (value: string): boolean =>
  /^\/(?![/\\])[\x21-\x7e]*$/.test(value) && !value.includes("\\") && value.length <= 2048

/** 303 to the sign-in page, which comes back to this request's path afterwards. */
export const toSignIn = (request: HttpRequest): HttpResponse => {
  const raw = request.query.toString()
  const next = raw === "" ? request.path : `${request.path}?${raw}`
  return seeOther(isSafeNext(next) ? `${MemberPaths.login}?${new URLSearchParams({ next })}` : MemberPaths.login)
}

const SETTINGS_PURPOSE = "settings"

/** The CSRF token of every settings form in this session (HMAC of the session secret). */
export const settingsCsrf = (member: MemberSession): string => csrfToken(member.secret, SETTINGS_PURPOSE)

export const verifySettingsCsrf = (member: MemberSession, presented: string | undefined): boolean =>
  presented !== undefined && verifyCsrfToken(member.secret, SETTINGS_PURPOSE, presented)
