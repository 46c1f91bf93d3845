/**
 * Safety: the checks every piece of user-supplied text passes before it becomes part of an IRC line.
 * Pure functions, no state; safe to call from any fiber.
 *
 * RFC 1459 §2.3.1 / RFC 2812 §2.3.1: a message ends at CR-LF and NUL is not allowed anywhere, so a CR, LF or
 * NUL inside a parameter would let the caller end our line and start one of their own. docs/decisions/http-and-mcp.md refuses such
 * text with `invalid-arguments` in every tool, `send_raw` included.
 */

const LINE_BREAKING = /[\r\n\0]/

/** True when `s` contains CR, LF or NUL, any of which would end or corrupt an IRC line. */
export const hasLineBreakingChars = (s: string): boolean => LINE_BREAKING.test(s)

/**
 * True when `s` can be sent as a "middle" parameter (RFC 1459 §2.3.1 `<middle>`): not empty, no SPACE, does
 * not start with ":", no CR/LF/NUL. Channel names, nicks, masks, keys and limits must all be middles.
 */
export const isMiddleParam = (s: string): boolean =>
  s.length > 0 && !s.startsWith(":") && !s.includes(" ") && !hasLineBreakingChars(s)
