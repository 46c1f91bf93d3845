/**
 * FakeLine: one line a client sent to the FakeIrcServer, split just enough for the fake's matchers, and the matchers
 * themselves. Self-contained on purpose like the rest of the fake: it does not import src/irc/*, so a bug there cannot
 * hide behind the same bug in the fake.
 *
 * Concurrency rule: pure functions over immutable values; safe from any fiber.
 */

/** One line the client sent, split just enough for matchers (IRCv3 message-tags, RFC 1459 §2.3.1). */
export interface FakeLine {
  readonly raw: string
  readonly tags: Readonly<Record<string, string>>
  /** The prefix without its leading ':' (clients rarely send one). */
  readonly source: string | undefined
  /** Upper-cased. */
  readonly command: string
  readonly params: ReadonlyArray<string>
  /** `raw` without tags and source, command upper-cased: what a string matcher is compared with. */
  readonly body: string
}

/**
 * A string matches when it equals the line's `body` or is a prefix of it ending at a space ("NICK" matches
 * "NICK belay", "CAP LS" matches "CAP LS 302", "PRIVMSG #a :hi" does not match "PRIVMSG #a :hib"). A RegExp is tested
 * against `raw`. A function gets the parsed line.
 */
export type LineMatcher = string | RegExp | ((line: FakeLine) => boolean)

const unescapeTagValue = (value: string): string => {
  let out = ""
  for (let i = 0; i < value.length; i++) {
    const c = value[i]
    if (c !== "\\") {
      out += c
      continue
    }
    const next = value[++i]
    // IRCv3 message-tags "Escaping values": a trailing lone backslash is dropped, unknown escapes lose the backslash.
    if (next === undefined) break
    out += next === ":" ? ";" : next === "s" ? " " : next === "r" ? "\r" : next === "n" ? "\n" : next
  }
  return out
}

export const parseLine = (raw: string): FakeLine => {
  let i = 0
  const skipSpaces = () => {
    while (raw[i] === " ") i++
  }
  const word = () => {
    const start = i
    while (i < raw.length && raw[i] !== " ") i++
    return raw.slice(start, i)
  }
  const tags: Record<string, string> = {}
  if (raw[i] === "@") {
    i++
    for (const item of word().split(";")) {
      if (item === "") continue
      const eq = item.indexOf("=")
      if (eq === -1) tags[item] = ""
      else tags[item.slice(0, eq)] = unescapeTagValue(item.slice(eq + 1))
    }
    skipSpaces()
  }
  let source: string | undefined
  if (raw[i] === ":") {
    i++
    source = word()
    skipSpaces()
  }
  const command = word().toUpperCase()
  const body = command + raw.slice(i)
  const params: Array<string> = []
  for (;;) {
    skipSpaces()
    if (i >= raw.length) break
    if (raw[i] === ":") {
      params.push(raw.slice(i + 1))
      break
    }
    params.push(word())
  }
  return { raw, tags, source, command, params, body }
}

export const matchesLine = (matcher: LineMatcher, line: FakeLine): boolean =>
  typeof matcher === "string"
    ? line.body === matcher || line.body.startsWith(matcher + " ")
    : matcher instanceof RegExp
    ? new RegExp(matcher.source, matcher.flags.replace("g", "").replace("y", "")).test(line.raw)
    : matcher(line)

export const describeMatcher = (matcher: LineMatcher): string =>
  typeof matcher === "string"
    ? JSON.stringify(matcher)
    : matcher instanceof RegExp
    ? String(matcher)
    : `predicate ${matcher.name === "" ? "(anonymous)" : matcher.name}`
