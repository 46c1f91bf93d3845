/**
 * Cookies owns reading the `Cookie` header and writing `Set-Cookie` values (RFC 6265),
 * through the `cookie` package, and the name of the browser-session cookie. Pure; safe
 * from any fiber.
 */
import { parseCookie, stringifySetCookie } from "cookie"
import type { HttpRequest } from "./HttpServer.js"
import { isHttps } from "./Issuer.js"

/**
 * The value of cookie `name`, or undefined. With several cookies of one name (a sibling
 * subdomain can plant one, "cookie tossing") the first is taken — `parseCookie` keeps the
 * first —: browsers send the most specific path first, and our cookies use Path=/ so none
 * is more specific.
 */
export const readCookie = (request: HttpRequest, name: string): string | undefined => {
  const header = request.header("cookie")
  if (header === undefined) return undefined
  const value = parseCookie(header)[name]
  return value === undefined || value === "" ? undefined : value
}

export interface CookieOptions {
  /** Seconds; 0 deletes the cookie. Omitted: a browser-session cookie. */
  readonly maxAgeSeconds?: number
  /** Set on https origins only; a Secure cookie is never sent over plain http. */
  readonly secure: boolean
}

/** `HttpOnly; SameSite=Lax; Path=/` always: no script reads it, and a cross-site POST never carries it. */
export const setCookie = (name: string, value: string, options: CookieOptions): string =>
  stringifySetCookie(name, value, {
    path: "/",
    httpOnly: true,
    sameSite: "lax",
    secure: options.secure,
    ...(options.maxAgeSeconds === undefined ? {} : { maxAge: options.maxAgeSeconds })
  })

/**
 * The browser session's cookie name for an issuer (docs/decisions/web.md):
 * on https it carries the `__Host-` prefix, which browsers accept only with Secure, Path=/
 * and no Domain, so neither a sibling subdomain nor a plain-http page can set or shadow it
 * (RFC 6265bis §4.1.3.2).
 */
export const sessionCookieName = (issuer: string): string => (isHttps(issuer) ? "__Host-belay_session" : "belay_session")
