/**
 * Relay-bot envelopes: bridges (Matrix, Discord, Telegram relays) speak for others as
 * `<alice> hello`. When a bot is marked, history shows `alice` as the speaker and
 * `hello` as the text. A pattern is a template over `{source}`, `{nick}` and
 * `{message}`; one lacking `{nick}` or `{message}` is stored but ignored here
 * (interface: set_relay_bot): the bot stays marked and the default envelopes apply,
 * exactly as if no pattern had been given. Pure.
 */

/** Envelopes tried, in order, when a bot is marked without a pattern. */
export const DEFAULT_PATTERNS = ["<{nick}> {message}", "[{nick}] {message}", "({nick}) {message}"] as const

export interface Unwrapped {
  readonly nick: string
  readonly message: string
  readonly source: string | null
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** A usable pattern has {nick} and {message}, each once. */
export const isUsablePattern = (pattern: string): boolean =>
  pattern.split("{nick}").length === 2 && pattern.split("{message}").length === 2 &&
  pattern.split("{source}").length <= 2

const compiled = new Map<string, RegExp>()

const compile = (pattern: string): RegExp => {
  let re = compiled.get(pattern)
  if (!re) {
    const source = pattern
      .split(/(\{nick\}|\{message\}|\{source\})/)
      .map((part) =>
        part === "{nick}"
          ? "(?<nick>[^\\s]+?)"
          : part === "{message}"
          ? "(?<message>.*)"
          : part === "{source}"
          ? "(?<source>.+?)"
          : escapeRegExp(part).replace(/ /g, "\\s+")
      )
      .join("")
    re = new RegExp(`^${source}$`, "s")
    compiled.set(pattern, re)
  }
  return re
}

/**
 * The speaker and text inside a relayed line, or undefined when the line does not fit
 * the envelope (then the message is shown as the bot's own).
 */
export const unwrapRelayed = (text: string, pattern: string | null): Unwrapped | undefined => {
  const patterns = pattern !== null && isUsablePattern(pattern) ? [pattern] : DEFAULT_PATTERNS
  for (const p of patterns) {
    const m = compile(p).exec(text)
    const nick = m?.groups?.nick
    const message = m?.groups?.message
    if (nick && message !== undefined) {
      // Bridges often decorate nicks with zero-width spaces to avoid highlights.
      return { nick: nick.replace(/[\u200b-\u200d\u2060\ufeff]/g, ""), message, source: m?.groups?.source ?? null }
    }
  }
  return undefined
}
