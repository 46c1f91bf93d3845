/**
 * Cookies owns reading the `Cookie` header and writing `Set-Cookie` values. Pure; safe
 * from any fiber.
 */
import type { HttpRequest } from "./HttpServer.js"

/**
 * The value of cookie `name`, or undefined. With several cookies of one name (a sibling
 * subdomain can plant one, "cookie tossing") the first is taken: browsers send the
 * most specific path first, and our cookies use Path=/ so none is more specific.
 */
export const readCookie = (request: HttpRequest, name: string): string | undefined => {
  const header = request.header("cookie")
  if (header === undefined) return undefined
  for (const part of header.split(";")) {
    const eq = part.indexOf("=")
    if (eq === -1) continue
    if (part.slice(0, eq).trim() !== name) continue
    const value = part.slice(eq + 1).trim()
    return value === "" ? undefined : value
  }
  return undefined
}

export interface CookieOptions {
  /** Seconds; 0 deletes the cookie. Omitted: a browser-session cookie. */
  readonly maxAgeSeconds?: number
  /** Set on https origins only; a Secure cookie is never sent over plain http. */
  readonly secure: boolean
}

/** `HttpOnly; SameSite=Lax; Path=/` always: no script reads it, and a cross-site POST never carries it. */
export const setCookie = (name: string, value: string, options: CookieOptions): string =>
  [
    `${name}=${value}`,
    "Path=/",
    "HttpOnly",
    "SameSite=Lax",
    ...(options.secure ? ["Secure"] : []),
    ...(options.maxAgeSeconds === undefined ? [] : [`Max-Age=${options.maxAgeSeconds}`])
  ].join("; ")
