/**
 * IrcLine: one IRC protocol line as data, its parser and its serializer.
 * Pure functions over immutable values; safe to call from any fiber.
 *
 * Grammar: RFC 1459 §2.3.1 (prefix, command, params, trailing) extended by IRCv3 message-tags
 * (https://ircv3.net/specs/extensions/message-tags: `@k=v;k2 ` before the prefix, with value escaping).
 * The line terminator is not part of an IrcLine: `parseLine` strips it, `formatLine` never adds it.
 */
import { Cause } from "effect"
import { hasLineBreakingChars } from "./Safety.js"

/** Who sent a line: `nick!user@host`, or a bare server name (kept in `nick`, as RFC 1459 `<servername>`). */
export interface IrcSource {
  readonly nick: string
  readonly user?: string
  readonly host?: string
}

export interface IrcLine {
  /** Message tags in wire order, unescaped. A tag sent without a value maps to "" (message-tags: equivalent). */
  readonly tags: ReadonlyMap<string, string>
  readonly source?: IrcSource
  /** Upper-cased command or three-digit numeric. */
  readonly command: string
  /** Middle params followed by the trailing param, if any, with its ":" removed. */
  readonly params: ReadonlyArray<string>
}

/** What `formatLine` accepts: tags as a Map or a plain record; everything but the command is optional. */
export interface IrcLineInput {
  readonly tags?: ReadonlyMap<string, string> | Readonly<Record<string, string>>
  readonly source?: IrcSource
  readonly command: string
  readonly params?: ReadonlyArray<string>
}

const EMPTY_TAGS: ReadonlyMap<string, string> = new Map()

/** RFC 1459 §2.3.1: the whole line, CR-LF included, is at most 512 bytes (tags excluded, message-tags §Size). */
export const MAX_LINE_BYTES = 512

/**
 * Bytes `s` occupies once UTF-8 encoded, counted without allocating. A lone surrogate counts 3 bytes, the size
 * of the U+FFFD that Node's encoder writes in its place.
 */
export const utf8ByteLength = (s: string): number => {
  let bytes = 0
  for (let i = 0; i < s.length; i++) {
    const unit = s.charCodeAt(i)
    if (unit < 0x80) bytes += 1
    else if (unit < 0x800) bytes += 2
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < s.length) {
      const next = s.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4
        i++
      } else bytes += 3
    } else bytes += 3
  }
  return bytes
}

/** Splits `nick!user@host`, `nick@host` or `nick`; a server name lands in `nick`. */
export const parsePrefix = (prefix: string): IrcSource => {
  const at = prefix.indexOf("@")
  const beforeHost = at === -1 ? prefix : prefix.slice(0, at)
  const host = at === -1 ? undefined : prefix.slice(at + 1)
  const bang = beforeHost.indexOf("!")
  const nick = bang === -1 ? beforeHost : beforeHost.slice(0, bang)
  const user = bang === -1 ? undefined : beforeHost.slice(bang + 1)
  return {
    nick,
    ...(user !== undefined ? { user } : {}),
    ...(host !== undefined ? { host } : {})
  }
}

/** The wire form of a source: `nick[!user][@host]`. */
export const formatPrefix = (source: IrcSource): string =>
  source.nick +
  (source.user !== undefined ? `!${source.user}` : "") +
  (source.host !== undefined ? `@${source.host}` : "")

// message-tags §Escaping values: `\:` `\s` `\\` `\r` `\n`; any other escaped char stands for itself and a
// trailing lone backslash is dropped.
const TAG_UNESCAPES: Readonly<Record<string, string>> = { ":": ";", s: " ", "\\": "\\", r: "\r", n: "\n" }
const TAG_ESCAPES: Readonly<Record<string, string>> = { ";": "\\:", " ": "\\s", "\\": "\\\\", "\r": "\\r", "\n": "\\n" }

export const unescapeTagValue = (value: string): string =>
  value.replace(/\\(.?)/gs, (_, c: string) => TAG_UNESCAPES[c] ?? c)

export const escapeTagValue = (value: string): string => value.replace(/[; \\\r\n]/g, (c) => TAG_ESCAPES[c] ?? c)

const parseTags = (raw: string): ReadonlyMap<string, string> => {
  const tags = new Map<string, string>()
  for (const item of raw.split(";")) {
    if (item === "") continue
    const eq = item.indexOf("=")
    const key = eq === -1 ? item : item.slice(0, eq)
    if (key === "") continue
    // message-tags: a repeated key overrides the earlier one, so delete first to keep "last wins" in order too.
    tags.delete(key)
    tags.set(key, eq === -1 ? "" : unescapeTagValue(item.slice(eq + 1)))
  }
  return tags
}

/**
 * Parses one line, with or without its CR-LF. Answers `undefined` for a line with no command or with CR, LF or
 * NUL inside it (RFC 1459 §2.3.1 forbids them; the transport has already split on LF). Runs of spaces between
 * parameters are tolerated, as servers send them (modern.ircdocs.horse, "Parameters").
 */
export const parseLine = (raw: string): IrcLine | undefined => {
  const line = raw.replace(/[\r\n]+$/, "")
  if (hasLineBreakingChars(line)) return undefined
  let pos = 0
  const skipSpaces = () => {
    while (line.charCodeAt(pos) === 0x20) pos++
  }
  const word = (): string => {
    const end = line.indexOf(" ", pos)
    const w = end === -1 ? line.slice(pos) : line.slice(pos, end)
    pos = end === -1 ? line.length : end
    skipSpaces()
    return w
  }

  skipSpaces()
  let tags = EMPTY_TAGS
  if (line[pos] === "@") tags = parseTags(word().slice(1))
  let source: IrcSource | undefined
  if (line[pos] === ":") source = parsePrefix(word().slice(1))
  const command = word().toUpperCase()
  if (command === "") return undefined

  const params: Array<string> = []
  while (pos < line.length) {
    if (line[pos] === ":") {
      params.push(line.slice(pos + 1))
      break
    }
    params.push(word())
  }
  return { tags, ...(source !== undefined ? { source } : {}), command, params }
}

const illegal = (message: string): never => {
  throw new Cause.IllegalArgumentException(`formatLine: ${message}`)
}

/**
 * Serializes a line without its CR-LF. The last param is sent as a trailing (`:`-prefixed) param when it must be
 * (empty, contains a space, or starts with ":"); every earlier param must be a valid middle.
 *
 * Throws `IllegalArgumentException` for a line that cannot be represented (a bad middle param, CR/LF/NUL in a
 * param, NUL in a tag value): that is a bug in the caller, which validates user text with `Safety` first.
 */
export const formatLine = (input: IrcLineInput): string => {
  const parts: Array<string> = []
  const tagEntries: Iterable<readonly [string, string]> =
    input.tags === undefined ? [] : input.tags instanceof Map ? input.tags : Object.entries(input.tags)
  const tags: Array<string> = []
  for (const [key, value] of tagEntries) {
    if (key === "" || /[\s;=\0]/.test(key)) illegal(`invalid tag key ${JSON.stringify(key)}`)
    if (value.includes("\0")) illegal(`NUL in value of tag ${key}`)
    tags.push(value === "" ? key : `${key}=${escapeTagValue(value)}`)
  }
  if (tags.length > 0) parts.push(`@${tags.join(";")}`)
  if (input.source !== undefined) parts.push(`:${formatPrefix(input.source)}`)
  if (!/^[A-Za-z]+$|^[0-9]{3}$/.test(input.command)) illegal(`invalid command ${JSON.stringify(input.command)}`)
  parts.push(input.command)

  const params = input.params ?? []
  params.forEach((param, i) => {
    if (hasLineBreakingChars(param)) illegal(`CR, LF or NUL in param ${i}`)
    const isLast = i === params.length - 1
    if (isLast && (param === "" || param.includes(" ") || param.startsWith(":"))) parts.push(`:${param}`)
    else if (param === "" || param.includes(" ") || param.startsWith(":")) illegal(`invalid middle param ${i}`)
    else parts.push(param)
  })
  return parts.join(" ")
}
