// Ids: the identifiers and scalar wire types shared by every record and tool — network and
// message ids, ISO-8601 UTC times, buffer targets, and the IRC strings that tool arguments
// are made of. Pure Schemas; no state, safe to import from anywhere.
//
// JSON Schema rule: integers are `Schema.Number.pipe(Schema.int())`,
// never `Schema.Int`, so that tools/list carries `{type: "integer", minimum: 1}` and no $ref.
// Every Schema here carries a message annotation, so that a decoding error says what was wrong
// ("must be an integer from 1 to …, got 0") instead of echoing the field's description.
import { Schema } from "effect"

/** How much of an offending value a message shows (ShowValue): enough to recognise it. */
const SHOWN_CHARACTERS = 60

/**
 * Renders an offending value for an error message: its JSON, cut short so a huge argument cannot flood the reply. Writes
 * at most SHOWN_CHARACTERS + 1 characters and stops there, so neither the size of the value nor how deep it nests
 * matters (JSON.stringify would write all of a 1 MiB value first, and String() of a deeply nested array overflows the
 * stack in Array.join).
 */
export const showValue = (u: unknown): string => {
  const shown = preview(u, SHOWN_CHARACTERS + 1)
  return shown.length > SHOWN_CHARACTERS ? `${shown.slice(0, SHOWN_CHARACTERS - 3)}...` : shown
}

const scalarJson = (u: unknown): string => {
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}

/**
 * The JSON of `u`, but no more than about `budget` characters of it. Each level of nesting writes at least one
 * character, so the recursion is never deeper than the budget.
 */
const preview = (u: unknown, budget: number): string => {
  if (budget <= 0) return ""
  // Escaping only lengthens a string: the JSON of its first `budget` characters begins its whole JSON.
  if (typeof u === "string") return JSON.stringify(u.slice(0, budget))
  if (typeof u !== "object" || u === null || u instanceof Date) return scalarJson(u)
  if (Array.isArray(u)) {
    let out = "["
    for (let i = 0; i < u.length && out.length < budget; i++) {
      if (i > 0) out += ","
      const item: unknown = u[i]
      out += item === undefined || typeof item === "function" || typeof item === "symbol" ? "null" : preview(item, budget - out.length)
    }
    return out.length >= budget ? out : `${out}]`
  }
  let out = "{"
  for (const key in u) {
    if (out.length >= budget) break
    const value: unknown = (u as Record<string, unknown>)[key]
    if (!Object.hasOwn(u, key) || value === undefined || typeof value === "function" || typeof value === "symbol") continue
    if (out.length > 1) out += ","
    out += `${JSON.stringify(key.slice(0, budget))}:`
    out += preview(value, budget - out.length)
  }
  return out.length >= budget ? out : `${out}}`
}

// One message for every way an id can be wrong (not a number, not an integer, out of range):
// `override` makes it win over the inner refinements' own messages.
const boundedInt = (max: number, brand: string) =>
  Schema.Number.pipe(
    Schema.int(),
    Schema.between(1, max),
    Schema.brand(brand, {
      message: (issue) => ({ message: `must be an integer from 1 to ${max}, got ${showValue(issue.actual)}`, override: true })
    })
  )

/**
 * A string Schema checked by one function returning the problem (or undefined when fine). The
 * message annotation words a non-string the same way, so every failure reads "must …, got …".
 */
export const checkedString = (check: (s: string) => string | undefined, jsonSchema: object) =>
  Schema.String.pipe(
    Schema.filter((s) => check(s), {
      jsonSchema,
      message: (issue) => ({
        message: typeof issue.actual === "string"
          ? (check(issue.actual) ?? "is invalid")
          : `must be a string, got ${showValue(issue.actual)}`,
        override: true
      })
    })
  )

/**
 * Ids are bigint in storage and safe integers on the wire; the upper bound keeps a value that
 * JSON cannot carry exactly (and no row can have) from reaching SQL.
 */
export const ID_MAX = Number.MAX_SAFE_INTEGER

/** A network of the account, as listed by list_networks. */
export const NetworkId = boundedInt(ID_MAX, "NetworkId").annotations({
  description: "Network id, as listed by list_networks."
})
export type NetworkId = typeof NetworkId.Type

/** Message ids grow with time and serve as paging cursors. */
export const MessageId = boundedInt(ID_MAX, "MessageId").annotations({
  description: "Message id; ids grow with time, so a lower id is an older message."
})
export type MessageId = typeof MessageId.Type

// docs/decisions/http-and-mcp.md: times are ISO-8601 UTC strings. Date#toISOString is the one
// producer, so the pattern is exactly its output (RFC 3339 `date-time`, always with `Z`).
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/

/** An ISO-8601 UTC timestamp such as `2025-01-31T12:00:00.000Z`. */
export const IsoTime = checkedString(
  (s) => ISO_UTC.test(s) ? undefined : `must be an ISO-8601 UTC time such as 2025-01-31T12:00:00.000Z, got ${showValue(s)}`,
  { format: "date-time" }
).pipe(Schema.brand("IsoTime")).annotations({ description: "ISO-8601 UTC time." })
export type IsoTime = typeof IsoTime.Type

/**
 * The one way to put a time on the wire. Date#toISOString is the producer the pattern above
 * describes, so its output is branded without being checked again: the check cost an eighth of
 * rendering a page of history.
 */
export const toIsoTime = (date: Date): IsoTime => date.toISOString() as IsoTime

// --- Buffers ---

/**
 * Target of a network's server pseudo-buffer (interface "Other records"): numerics, WHOIS
 * replies and other server text land here; readable with recent_messages, never listed.
 */
export const serverBufferTarget = (networkId: number): string => `:server:${networkId}`
export const SERVER_BUFFER_PREFIX = ":server:"

// --- IRC strings ---
// RFC 1459 §2.3.1 / RFC 2812 §2.3.1: a line ends at CR LF, NUL is forbidden anywhere, and
// parameters are separated by spaces, a parameter starting with ':' being the trailing one.
// irc-framework writes raw text verbatim, so these checks are the
// only guard against a tool argument ending the line and smuggling a second command
// (docs/decisions/http-and-mcp.md: refused with invalid-arguments in every tool, send_raw included).

const LINE_BREAK = /[\r\n\0]/
const LINE_BREAK_MESSAGE = "must not contain CR, LF or NUL (they would end or split the IRC line)"

const lineSafe = (s: string): string | undefined => (LINE_BREAK.test(s) ? LINE_BREAK_MESSAGE : undefined)

// Patterns use only escapes that JavaScript, PCRE, Python and RE2 (Go clients) all read.
const LINE_SAFE_PATTERN = "^[^\\r\\n\\x00]*$"
const WORD_PATTERN = "^[^\\r\\n\\x00 ]+$"
const PARAM_PATTERN = "^[^\\r\\n\\x00 :][^\\r\\n\\x00 ]*$"

const notEmpty = (s: string): string | undefined => (s.length === 0 ? "must not be empty" : undefined)

/** Free text that becomes the trailing part of one IRC line (message text, topic, reason). May be empty. */
export const IrcText = checkedString(lineSafe, { pattern: LINE_SAFE_PATTERN })

/** Like IrcText, but at least one character: PRIVMSG with no text is refused by servers (ERR_NOTEXTTOSEND). */
export const NonEmptyIrcText = checkedString((s) => notEmpty(s) ?? lineSafe(s), {
  minLength: 1,
  pattern: LINE_SAFE_PATTERN
})

/**
 * A middle IRC parameter: channel, nick, key, mode argument, message target. One word, so it
 * cannot shift the following parameters, and not starting with ':' (which would make it the
 * trailing parameter and swallow the rest of the line).
 */
export const IrcParam = checkedString(
  (s) =>
    notEmpty(s) ??
      lineSafe(s) ??
      (s.includes(" ") ? "must not contain spaces" : undefined) ??
      (s.startsWith(":") ? "must not start with ':'" : undefined),
  { minLength: 1, pattern: PARAM_PATTERN }
)

/**
 * A buffer target as stored: a channel, a nick, or a server pseudo-buffer `:server:<id>`.
 * Read tools only look it up, so a leading ':' is allowed; a space can never occur in one.
 */
export const BufferTarget = checkedString(
  (s) => notEmpty(s) ?? lineSafe(s) ?? (s.includes(" ") ? "must not contain spaces" : undefined),
  { minLength: 1, pattern: WORD_PATTERN }
)
