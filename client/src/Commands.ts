// Commands: what the composer's text means, as the tool calls that carry it out (docs/contract.md "MCP tool shapes"). Plain
// text is one send_message per non-empty line; `/cmd args` is one of the slash commands below; `//text` sends
// "/text" as it is. A command that cannot be carried out is an error to show, and nothing is sent. Pure.
import { isChannel } from "./Casemap.js"

/** A word that names a channel in a command: `+` is left out, as `/mode +o` and `/topic +1` begin with one. */
const namesChannel = (word: string) => /^[#&!]/.test(word)

export interface Call {
  readonly name: string
  readonly arguments: Readonly<Record<string, unknown>>
}

export type Outcome =
  | {
    readonly kind: "calls"
    readonly calls: ReadonlyArray<Call>
    /** A buffer to open once the calls are accepted (`/msg`, `/join`, `/whois` → the server buffer). */
    readonly open?: { readonly target: string }
  }
  | { readonly kind: "error"; readonly message: string }

export interface Context {
  readonly networkId: number
  /** The buffer's target: a channel, a nick, or `:server:<id>`. */
  readonly target: string
}

export const COMMANDS: ReadonlyArray<{ readonly name: string; readonly usage: string }> = [
  { name: "join", usage: "/join #channel [key]" },
  { name: "part", usage: "/part [#channel] [reason]" },
  { name: "msg", usage: "/msg nick text" },
  { name: "me", usage: "/me action" },
  { name: "notice", usage: "/notice target text" },
  { name: "nick", usage: "/nick newnick" },
  { name: "topic", usage: "/topic [#channel] text" },
  { name: "mode", usage: "/mode [#channel] +o-v nick nick" },
  { name: "away", usage: "/away [message] (no message: back)" },
  { name: "whois", usage: "/whois nick" },
  { name: "quote", usage: "/quote RAW LINE" }
]

const error = (message: string): Outcome => ({ kind: "error", message })
const calls = (list: ReadonlyArray<Call>, open?: string): Outcome =>
  open === undefined ? { kind: "calls", calls: list } : { kind: "calls", calls: list, open: { target: open } }

/** The first word and the rest (leading spaces dropped, the rest kept as typed). */
const word = (s: string): readonly [string, string] => {
  const t = s.replace(/^ +/, "")
  const i = t.indexOf(" ")
  return i === -1 ? [t, ""] : [t.slice(0, i), t.slice(i + 1)]
}

const isServer = (target: string) => target.startsWith(":server:")

/**
 * Mode letters that take a parameter when set and when unset (lists and channel statuses), and those that take one
 * only when set (RFC 2811 §4; `l`, and the usual `j`/`f` extensions). The server checks again against the
 * network's CHANMODES and PREFIX and refuses what does not fit (set_channel_modes).
 */
const PARAM_ALWAYS = new Set(["b", "e", "I", "q", "o", "v", "h", "a", "k", "y"])
const PARAM_WHEN_SET = new Set(["l", "j", "f"])

export const parseModeChanges = (spec: string, params: ReadonlyArray<string>) => {
  const changes: Array<{ sign: "+" | "-"; letter: string; param?: string }> = []
  let sign: "+" | "-" | null = null
  let next = 0
  for (const c of spec) {
    if (c === "+" || c === "-") {
      sign = c
      continue
    }
    if (sign === null || !/^[A-Za-z]$/.test(c)) return null
    const takes = PARAM_ALWAYS.has(c) || (sign === "+" && PARAM_WHEN_SET.has(c))
    const param = takes ? params[next] : undefined
    if (takes && param !== undefined) next++
    changes.push(param === undefined ? { sign, letter: c } : { sign, letter: c, param })
  }
  if (changes.length === 0 || next < params.length) return null
  return changes
}

const textLines = (text: string) => text.split(/\r?\n/).filter((l) => l.trim() !== "")

export const parseInput = (input: string, ctx: Context): Outcome => {
  const { networkId, target } = ctx
  if (!input.startsWith("/") || input.startsWith("//")) {
    const text = input.startsWith("//") ? input.slice(1) : input
    const lines = textLines(text)
    if (lines.length === 0) return error("Nothing to send.")
    if (isServer(target)) return error("This is the server buffer: /quote sends a raw line, /msg a message.")
    return calls(lines.map((line) => ({ name: "send_message", arguments: { networkId, target, text: line } })))
  }
  const [head, rest] = word(input.slice(1).split(/\r?\n/)[0] ?? "")
  const command = head.toLowerCase()
  const args = rest.trim()
  const here = isServer(target) ? null : target
  const channelHere = here !== null && isChannel(here) ? here : null
  switch (command) {
    case "join":
    case "j": {
      const [channel, key] = word(args)
      if (channel === "") return error("Usage: /join #channel [key]")
      const name = namesChannel(channel) ? channel : `#${channel}`
      return calls([{ name: "join_channel", arguments: key.trim() === "" ? { networkId, channel: name } : { networkId, channel: name, key: key.trim() } }], name)
    }
    case "part":
    case "leave": {
      const [first, more] = word(args)
      const channel = namesChannel(first) ? first : channelHere
      const reason = (namesChannel(first) ? more : args).trim()
      if (channel === null) return error("Usage: /part #channel [reason] (or in a channel: /part [reason])")
      return calls([{ name: "part_channel", arguments: reason === "" ? { networkId, channel } : { networkId, channel, reason } }])
    }
    case "msg":
    case "query": {
      const [nick, text] = word(args)
      if (nick === "") return error("Usage: /msg nick text")
      if (text.trim() === "") return command === "query" ? calls([], nick) : error("Usage: /msg nick text")
      return calls([{ name: "send_message", arguments: { networkId, target: nick, text } }], nick)
    }
    case "me": {
      if (here === null) return error("/me needs a channel or a conversation.")
      if (args === "") return error("Usage: /me action")
      return calls([{ name: "send_action", arguments: { networkId, target: here, text: rest } }])
    }
    case "notice": {
      const [to, text] = word(args)
      if (to === "" || text.trim() === "") return error("Usage: /notice target text")
      return calls([{ name: "send_notice", arguments: { networkId, target: to, text } }])
    }
    case "nick": {
      if (args === "" || /\s/.test(args)) return error("Usage: /nick newnick")
      return calls([{ name: "set_nick", arguments: { networkId, nick: args } }])
    }
    case "topic": {
      const [first, more] = word(rest)
      const explicit = namesChannel(first)
      const channel = explicit ? first : channelHere
      const topic = explicit ? more : rest
      if (channel === null) return error("Usage: /topic #channel text")
      if (topic === "") return error("Usage: /topic [#channel] text (the topic is shown above the messages)")
      return calls([{ name: "set_topic", arguments: { networkId, channel, topic } }])
    }
    case "mode": {
      const parts = args.split(/\s+/).filter((p) => p !== "")
      const channel = parts[0] !== undefined && namesChannel(parts[0]) ? parts.shift()! : channelHere
      if (channel === null) return error("Usage: /mode #channel +o-v nick nick")
      const spec = parts.shift()
      if (spec === undefined) return error("Usage: /mode [#channel] +o-v nick nick")
      const changes = parseModeChanges(spec, parts)
      if (changes === null) return error(`Could not read the mode change ${JSON.stringify([spec, ...parts].join(" "))}.`)
      return calls([{ name: "set_channel_modes", arguments: { networkId, channel, changes } }])
    }
    case "away":
      return calls([{ name: "set_away", arguments: args === "" ? { networkId } : { networkId, message: args } }])
    case "back":
      return calls([{ name: "set_away", arguments: { networkId } }])
    case "whois": {
      if (args === "" || /\s/.test(args)) return error("Usage: /whois nick")
      return calls([{ name: "whois", arguments: { networkId, nick: args } }], `:server:${networkId}`)
    }
    case "quote":
    case "raw": {
      if (args === "") return error("Usage: /quote RAW LINE")
      return calls([{ name: "send_raw", arguments: { networkId, line: args } }])
    }
    default:
      return error(`Unknown command /${head}. Commands: ${COMMANDS.map((c) => `/${c.name}`).join(", ")}; //text sends "/text".`)
  }
}
