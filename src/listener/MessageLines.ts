/**
 * MessageLines: what an IRC client is sent, as lines shaped for its capabilities (docs/contract.md "The IRC client
 * listener"). Two sources, one shape:
 * - a stored message (MessageWriter.stored, history, backlog) becomes PRIVMSG or NOTICE with `time` (server-time) and
 *   `msgid` (message-tags). The msgid is the upstream's when it gave one (stored with the row), else Belay's own
 *   message id, in history and live alike, so what a client saw is what other clients and the upstream's own
 *   REDACT, replies and reactions name; a client's `msgid=` reference may be either (ChatHistory.ts looks the
 *   upstream's up; docs/contract.md "Message ids, replies, reactions and redaction"). The `+draft/reply` client tag
 *   goes with it to a client with message-tags, and a stored reaction is a TAGMSG, sent only to such a client;
 * - any other line from the upstream server (NetworkFeed) is relayed as received, its tags narrowed to what the
 *   client enabled (IRCv3 message-tags: a client without it gets no tags beyond those its capabilities name; a
 *   channel event Belay stored takes its row's msgid and time, `RelayExtra.stamp`, as CHATHISTORY shows it), and
 *   the lines only a capability asks for (AWAY, ACCOUNT, CHGHOST, SETNAME, others' INVITE, TAGMSG, BATCH, REDACT)
 *   dropped without it; the extended JOIN, the multi-prefix and userhost-in-names NAMES and the multi-prefix WHO
 *   flags (352, and a WHOX 354's `f` field when the request it answers is known) are narrowed for a client without
 *   those.
 * Pure; no state.
 */
import { formatLine, type IrcLine, type IrcLineInput, parseLine } from "../irc/IrcLine.js"
import type { FeedStamp } from "../services/events/NetworkFeed.js"
import type { StoredMessage } from "../services/history/MessageHistory.js"

/** What rendering needs of one client connection. */
export interface ClientView {
  readonly caps: ReadonlySet<string>
  /** The member's nick upstream (the target of DMs and server notices). */
  readonly selfNick: string
  /** CHANTYPES of the network. */
  readonly channelTypes: string
  /** PREFIX symbols of the network, highest first (`~&@%+`), for narrowing multi-prefix NAMES. */
  readonly prefixSymbols: string
}

/** The `time` tag value of server-time: ISO 8601 in UTC with milliseconds. */
export const timeTag = (time: Date | number): string => new Date(time).toISOString()

/** The msgid Belay gives a stored message id (see the module comment). */
export const msgidOf = (messageId: number): string => String(messageId)

/** The msgid a stored message is shown with: the upstream's when stored, else Belay's (see the module comment). */
export const shownMsgid = (row: Pick<StoredMessage, "id" | "msgid">): string => row.msgid ?? msgidOf(row.id)

/** A msgid reference back to a stored message id; undefined when it is not one of Belay's. */
export const messageIdOf = (msgid: string): number | undefined => {
  if (!/^[1-9][0-9]{0,15}$/.test(msgid)) return undefined
  const id = Number(msgid)
  return Number.isSafeInteger(id) ? id : undefined
}

/**
 * A stored row of history as the client gets it: a channel event (storedEventLine), a reaction (storedReactLine) or
 * a message (storedLine); undefined when this client does not get it.
 */
export const storedRowLine = (
  row: StoredMessage,
  view: ClientView,
  extra: { readonly batch?: string; readonly selfSource?: string } = {}
): string | undefined =>
  EVENT_KINDS.has(row.kind)
    ? storedEventLine(row, view, extra)
    : row.kind === "react"
    ? storedReactLine(row, view, extra)
    : storedLine(row, view, extra)

/** Whether `target` is a channel name on the client's network (CHANTYPES). */
export const isChannelName = (view: Pick<ClientView, "channelTypes">, target: string): boolean =>
  target.length > 0 && view.channelTypes.includes(target.charAt(0))

const clean = (text: string) => text.replace(/[\r\n\0]/g, " ")

/**
 * Tags for a line Belay makes: time and msgid when enabled, then the batch and label it belongs to, and the client
 * tags of a stored message (`+draft/reply`, `+draft/react`) for a client with message-tags.
 */
const ownTags = (
  view: ClientView,
  tags: {
    readonly time?: Date | number
    readonly msgid?: string
    readonly batch?: string
    readonly label?: string
    readonly client?: Readonly<Record<string, string>>
  }
): Record<string, string> => {
  const out: Record<string, string> = {}
  if (tags.batch !== undefined && view.caps.has("batch")) out.batch = tags.batch
  if (tags.label !== undefined && view.caps.has("labeled-response")) out.label = tags.label
  if (tags.time !== undefined && view.caps.has("server-time")) out.time = timeTag(tags.time)
  if (tags.msgid !== undefined && view.caps.has("message-tags")) out.msgid = tags.msgid
  if (tags.client !== undefined && view.caps.has("message-tags")) Object.assign(out, tags.client)
  return out
}

/** The client tags a stored row carries: its reply reference. */
const replyTags = (row: StoredMessage): Record<string, string> | undefined =>
  row.replyTo != null ? { "+draft/reply": row.replyTo } : undefined

/** A line Belay writes to a client: its own tags filtered by the client's capabilities. */
export const ownLine = (
  view: ClientView,
  line: IrcLineInput,
  tags: { readonly time?: Date | number; readonly msgid?: string; readonly batch?: string; readonly label?: string } = {}
): string => formatLine({ ...line, tags: ownTags(view, tags) })

const SERVER_BUFFER = /^:server:/

/**
 * A stored PRIVMSG, ACTION or NOTICE as the client sees it: in a channel, from its speaker to the channel; in a DM,
 * from the peer to the member, or from the member to the peer when the member sent it; in the server buffer, from the
 * server to the member. `selfSource` is the member's own `nick!user@host` when known.
 */
export const storedLine = (
  row: StoredMessage,
  view: ClientView,
  extra: {
    readonly batch?: string
    readonly label?: string
    readonly selfSource?: string
    /** Client-only tags it was sent with, live (ClientTagMemo.ts). */
    readonly client?: Readonly<Record<string, string>>
  } = {}
): string => {
  const command = row.kind === "notice" ? "NOTICE" : "PRIVMSG"
  const text = row.kind === "action" ? `\u0001ACTION ${clean(row.text)}\u0001` : clean(row.text)
  const self = extra.selfSource ?? view.selfNick
  const speaker = row.self ? self : (row.nick ?? "*")
  const target = SERVER_BUFFER.test(row.target)
    ? view.selfNick
    : isChannelName(view, row.target) || row.self
    ? row.target
    : view.selfNick
  const client = extra.client !== undefined ? { ...replyTags(row), ...extra.client } : replyTags(row)
  return formatLine({
    tags: ownTags(view, { time: row.time, msgid: shownMsgid(row), ...extra, ...(client !== undefined ? { client } : {}) }),
    source: parseSource(speaker),
    command,
    params: [target, text === "" ? " " : text]
  })
}

/**
 * A stored reaction (kind `react`) as the TAGMSG it came as (IRCv3 `+draft/react` with `+draft/reply`), addressed as
 * `storedLine` addresses a message; undefined for a client without message-tags, which could not carry it, and for a
 * row that is no reaction.
 */
export const storedReactLine = (
  row: StoredMessage,
  view: ClientView,
  extra: { readonly batch?: string; readonly selfSource?: string } = {}
): string | undefined => {
  if (row.kind !== "react" || row.replyTo == null || !view.caps.has("message-tags")) return undefined
  const self = extra.selfSource ?? view.selfNick
  const target = isChannelName(view, row.target) || row.self ? row.target : view.selfNick
  try {
    return formatLine({
      tags: ownTags(view, {
        time: row.time,
        msgid: shownMsgid(row),
        ...(extra.batch !== undefined ? { batch: extra.batch } : {}),
        client: { "+draft/react": row.text, "+draft/reply": row.replyTo }
      }),
      source: parseSource(row.self ? self : (row.nick ?? "*")),
      command: "TAGMSG",
      params: [target]
    })
  } catch {
    return undefined
  }
}

/** The kinds IRCv3 draft/event-playback adds to history: a stored channel event (actors/network/History.ts). */
export const EVENT_KINDS: ReadonlySet<string> = new Set(["join", "part", "quit", "kick", "nick", "mode", "topic"])

const EVENT_NICK = /^[^\s\0:!@][^\s\0!@]*$/

/**
 * A stored channel event as the line it was (IRCv3 draft/event-playback), from its stored fields: the speaker is the
 * nick alone (the member's own `selfSource` when it was the member under that nick), a KICK's `kicked (reason)`
 * text is read back into its target and reason, and JOIN takes the extended form (account `*`, the nick as the
 * real name, as the welcome burst draws it) for a client with extended-join. Undefined for any other kind.
 */
export const storedEventLine = (
  row: StoredMessage,
  view: ClientView,
  extra: { readonly batch?: string; readonly selfSource?: string } = {}
): string | undefined => {
  // A speaker that is no nick (a server's odd prefix) would not make a line a client can parse.
  if (!EVENT_KINDS.has(row.kind) || row.nick === null || !EVENT_NICK.test(row.nick)) return undefined
  const nick = row.nick
  const own = row.self && extra.selfSource !== undefined && extra.selfSource.startsWith(`${nick}!`)
  const source = parseSource(own ? extra.selfSource! : nick)
  const text = clean(row.text)
  const channel = row.target
  let command: string
  let params: Array<string>
  switch (row.kind) {
    case "join":
      command = "JOIN"
      params = view.caps.has("extended-join") ? [channel, "*", nick] : [channel]
      break
    case "part":
      command = "PART"
      params = text === "" ? [channel] : [channel, text]
      break
    case "quit":
      command = "QUIT"
      params = [text === "" ? "Quit" : text]
      break
    case "kick": {
      const space = text.indexOf(" ")
      const kicked = space === -1 ? text : text.slice(0, space)
      const reason = space === -1 ? kicked : text.slice(space + 1).replace(/^\(/, "").replace(/\)$/, "")
      if (kicked === "") return undefined
      command = "KICK"
      params = [channel, kicked, reason === "" ? kicked : reason]
      break
    }
    case "nick":
      if (text === "" || text.includes(" ")) return undefined
      command = "NICK"
      params = [text]
      break
    case "mode": {
      const words = text.split(" ").filter((w) => w !== "")
      if (words.length === 0) return undefined
      command = "MODE"
      params = [channel, ...words]
      break
    }
    default:
      command = "TOPIC"
      params = [channel, text]
  }
  try {
    return formatLine({ tags: ownTags(view, { time: row.time, msgid: shownMsgid(row), ...extra }), source, command, params })
  } catch {
    // A stored field formatLine cannot carry (a middle parameter that became empty or starts with `:`) is skipped.
    return undefined
  }
}

const parseSource = (source: string) => {
  const bang = source.indexOf("!")
  const at = source.indexOf("@")
  if (bang === -1 && at === -1) return { nick: source }
  const nick = source.slice(0, bang === -1 ? at : bang)
  const user = bang === -1 ? undefined : source.slice(bang + 1, at === -1 ? undefined : at)
  const host = at === -1 ? undefined : source.slice(at + 1)
  return { nick, ...(user !== undefined ? { user } : {}), ...(host !== undefined ? { host } : {}) }
}

/**
 * Upstream lines that never reach a client as they are: PRIVMSG and NOTICE arrive stored (with their msgid);
 * the connection's own CAP, SASL, PING and ERROR are the upstream link's business, not the client's.
 */
const NOT_RELAYED: ReadonlySet<string> = new Set([
  "PRIVMSG",
  "NOTICE",
  "PING",
  "PONG",
  "CAP",
  "AUTHENTICATE",
  "ERROR",
  "900",
  "901",
  "902",
  "903",
  "904",
  "905",
  "906",
  "907",
  "908"
])

/**
 * Whether an upstream line is a PRIVMSG or NOTICE, which reach clients stored (MessageWriter.stored), never from the
 * feed: read without parsing the line, so the listener drops the bulk of the feed before routing it.
 */
export const arrivesStored = (raw: string): boolean => {
  let i = 0
  if (raw.charCodeAt(0) === 64) {
    i = raw.indexOf(" ") + 1
    if (i === 0) return false
  }
  while (raw.charCodeAt(i) === 32) i++
  if (raw.charCodeAt(i) === 58) {
    i = raw.indexOf(" ", i) + 1
    if (i === 0) return false
  }
  while (raw.charCodeAt(i) === 32) i++
  const end = raw.indexOf(" ", i)
  const command = (end === -1 ? raw.slice(i) : raw.slice(i, end)).toUpperCase()
  return command === "PRIVMSG" || command === "NOTICE"
}

/**
 * The upstream's registration burst (welcome, ISUPPORT, LUSERS, MOTD), which comes again at each reconnect: the
 * client had Belay's own welcome. Relayed only as the answer to the client's own command (a labelled LUSERS or MOTD,
 * `RelayExtra.answer`), as soju forwards them only when asked.
 */
const REGISTRATION_BURST: ReadonlySet<string> = new Set([
  "001",
  "002",
  "003",
  "004",
  "005",
  "250",
  "251",
  "252",
  "253",
  "254",
  "255",
  "265",
  "266",
  "375",
  "372",
  "376",
  "422"
])

/** Which capability a line needs to be relayed at all. */
const NEEDS: Readonly<Record<string, string>> = {
  AWAY: "away-notify",
  ACCOUNT: "account-notify",
  CHGHOST: "chghost",
  SETNAME: "setname",
  TAGMSG: "message-tags",
  BATCH: "batch",
  // IRCv3 draft/message-redaction: only a client that asked for it knows what a REDACT is.
  REDACT: "draft/message-redaction"
}

/** What a relayed line gets beyond its own tags: the client's label, or the removal of its batch reference. */
export interface RelayExtra {
  /** The client's label, for the line that answers its labelled command (labeled-response). */
  readonly label?: string
  /** The line belongs to a batch this client was not sent the start of. */
  readonly dropBatch?: boolean
  /** The line answers this client's own command (labeled-response): relayed even if it is of the welcome burst. */
  readonly answer?: boolean
  /** The msgid and time of the row the line became (a stored channel event, LiveOrder.ts): in place of its own. */
  readonly stamp?: FeedStamp
  /** The line answers this client's WHOX request (whoxRequest): where a 354's flags are. */
  readonly whox?: WhoxRequest
}

/** A client's WHOX request, as far as its 354 replies need it. */
export interface WhoxRequest {
  /** The standard fields asked for, each once, in the order a 354 returns them (`tcuihsnfdlaor`). */
  readonly fields: string
  /** A token was given (`%<fields>,<token>`). */
  readonly token: boolean
}

/** IRCv3 WHOX: a 354 carries the requested fields in this fixed order (`t` is the token). */
const WHOX_ORDER = "tcuihsnfdlaor"

/**
 * The WHOX request a WHO's params make (`WHO <mask> [flags]%<fields>[,<token>]`, IRCv3 WHOX); undefined for a WHO
 * that is none, and for one with a non-standard field, whose place in the reply the server chooses (or which it
 * ignores), so that no field of its 354 can be found with certainty.
 */
export const whoxRequest = (params: ReadonlyArray<string>): WhoxRequest | undefined => {
  const arg = params[1]
  const percent = arg === undefined ? -1 : arg.indexOf("%")
  if (arg === undefined || percent === -1) return undefined
  const comma = arg.indexOf(",", percent)
  const letters = arg.slice(percent + 1, comma === -1 ? undefined : comma)
  if (letters === "" || [...letters].some((l) => !WHOX_ORDER.includes(l))) return undefined
  return { fields: [...WHOX_ORDER].filter((l) => letters.includes(l)).join(""), token: comma !== -1 && comma < arg.length - 1 }
}

/**
 * Where the flags are among a 354's params (after the client's nick) for `request`; undefined when `f` was not asked
 * for or the reply does not carry the fields asked for (it answers something else). A `t` without a token, which the
 * spec forbids a client, leaves the server to send some token or none: the count of params says which.
 */
const whoxFlagsIndex = (request: WhoxRequest, paramCount: number): number | undefined => {
  const f = request.fields.indexOf("f")
  if (f === -1) return undefined
  if (paramCount === request.fields.length + 1) return f + 1
  const tokenOmitted = !request.token && request.fields.startsWith("t") && paramCount === request.fields.length
  return tokenOmitted ? f : undefined
}

/**
 * WHO flags (`H`/`G`, `*`, then the member's prefixes, then any others a server adds) at `at`, narrowed to the highest
 * prefix as IRCv3 multi-prefix has a server send them to a client without the capability.
 */
const narrowWhoFlags = (params: ReadonlyArray<string>, at: number, prefixSymbols: string): ReadonlyArray<string> => {
  const flags = params[at]
  if (flags === undefined) return params
  let i = 0
  while (i < flags.length && !prefixSymbols.includes(flags[i]!)) i++
  let j = i
  while (j < flags.length && prefixSymbols.includes(flags[j]!)) j++
  return j - i > 1 ? [...params.slice(0, at), flags.slice(0, i + 1) + flags.slice(j), ...params.slice(at + 1)] : params
}

const relayedTags = (line: IrcLine, time: number, caps: ReadonlySet<string>, extra: RelayExtra): Record<string, string> => {
  const out: Record<string, string> = {}
  if (extra.label !== undefined && caps.has("labeled-response")) out.label = extra.label
  for (const [key, value] of line.tags) {
    if (key === "label") continue
    if (key === "time") {
      if (caps.has("server-time")) out.time = value
    } else if (key === "account") {
      if (caps.has("account-tag")) out.account = value
    } else if (key === "batch") {
      if (caps.has("batch") && extra.dropBatch !== true) out.batch = value
    } else if (caps.has("message-tags")) out[key] = value
  }
  if (extra.stamp !== undefined) {
    if (caps.has("server-time")) out.time = timeTag(extra.stamp.time)
    if (caps.has("message-tags")) out.msgid = extra.stamp.msgid
  }
  if (out.time === undefined && caps.has("server-time")) out.time = timeTag(time)
  return out
}

/** `line` (an upstream line received at `time`) as this client gets it; undefined when it does not get it. */
export const relayedLine = (raw: string, time: number, view: ClientView, extra: RelayExtra = {}): string | undefined => {
  const line = parseLine(raw)
  if (line === undefined || NOT_RELAYED.has(line.command)) return undefined
  if (REGISTRATION_BURST.has(line.command) && extra.answer !== true) return undefined
  const needs = NEEDS[line.command]
  if (needs !== undefined && !view.caps.has(needs)) return undefined
  if (line.command === "INVITE" && !view.caps.has("invite-notify")) {
    // Only the invitation addressed to the member is for a client without invite-notify.
    const invited = line.params[0]
    if (invited === undefined || invited.toLowerCase() !== view.selfNick.toLowerCase()) return undefined
  }
  if (line.tags.has("batch") && !view.caps.has("batch") && line.command === "BATCH") return undefined
  let params = line.params
  if (line.command === "JOIN" && !view.caps.has("extended-join") && params.length > 1) params = params.slice(0, 1)
  if (line.command === "353" && params.length > 0) {
    // IRCv3 multi-prefix: without it, the highest prefix alone; userhost-in-names: without it, the nick alone.
    const multi = view.caps.has("multi-prefix")
    const userhost = view.caps.has("userhost-in-names")
    const names = params[params.length - 1]!
    const narrowed = names.split(" ").map((name) => {
      let i = 0
      while (i < name.length && view.prefixSymbols.includes(name[i]!)) i++
      const prefix = multi ? name.slice(0, i) : name.slice(0, Math.min(i, 1))
      const rest = name.slice(i)
      return prefix + (userhost ? rest : rest.replace(/[!@].*$/, ""))
    }).join(" ")
    params = [...params.slice(0, -1), narrowed]
  }
  if (line.command === "352" && !view.caps.has("multi-prefix")) params = narrowWhoFlags(params, 6, view.prefixSymbols)
  if (line.command === "354" && !view.caps.has("multi-prefix") && extra.whox !== undefined) {
    const at = whoxFlagsIndex(extra.whox, params.length)
    if (at !== undefined) params = narrowWhoFlags(params, at, view.prefixSymbols)
  }
  try {
    return formatLine({
      tags: relayedTags(line, time, view.caps, extra),
      ...(line.source !== undefined ? { source: line.source } : {}),
      command: line.command,
      params
    })
  } catch {
    // A line formatLine cannot represent (a server's odd middle param) is passed on as received, tags removed.
    return raw.startsWith("@") ? raw.slice(raw.indexOf(" ") + 1) : raw
  }
}
