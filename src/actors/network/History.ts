/**
 * History: which stored messages (docs/decisions/history.md "message" kinds) one IRC line becomes, and in which buffer — a
 * channel, a DM named after the peer, or the server buffer `:server:<networkId>`. Pure functions; the network
 * actor's dispatcher calls them with its state *before* applying the line (a QUIT must still see the channels the
 * user was in), then appends the result to the MessageWriter in order.
 *
 * Rules (the interface, "Events" 4):
 * - PRIVMSG/NOTICE/ACTION to a channel (STATUSMSG `@#chan` included) go to the channel; to us, to the sender's DM
 *   buffer; our own (echo-message, or stored locally) to the target's buffer, `self: true`.
 * - Server notices, notices before registration, `$mask` notices and CTCP other than ACTION go to the server buffer.
 * - JOIN/PART/KICK/MODE/TOPIC go to their channel; QUIT and NICK to every channel the user shares with us.
 * - Numerics go to the server buffer (`numeric` kind, the code kept), except a refusal about a channel we are in
 *   (ChannelErrors.channelErrorFor: 482, 467, 478, 472 through the last channel we sent MODE to, …), which lands
 *   in that channel as an `error` line (the interface, set_topic and set_channel_modes). A refusal about a channel
 *   we are not in stays in the server buffer, so list_buffers never shows a channel the account never joined.
 * - Replies that answer Belay's own queries (get_mode_list, the WHO after NAMES) never get here: the actor
 *   consumes them first.
 * - ERROR and FAIL are `error` lines in the server buffer.
 * - PING, PONG, CAP, AUTHENTICATE and the state-only IRCv3 lines (AWAY, ACCOUNT, CHGHOST, SETNAME, BATCH, ACK) are
 *   not history; neither is a TAGMSG (typing is live only) except a reaction, below.
 * - Message ids, replies, reactions and redaction (docs/decisions/history.md "Message ids, replies, reactions and
 *   redaction"): every row keeps its line's IRCv3 `msgid` tag (within MessageRow.upstreamMsgid's bounds), a
 *   PRIVMSG or NOTICE its `+draft/reply` as `replyTo`; a TAGMSG with `+draft/react` and `+draft/reply` is a `react`
 *   row in the buffer a PRIVMSG to its target would go to (text the reaction, at most REACTION_MAX characters);
 *   `REDACT <target> <msgid>` is no row but a Redaction (`redactionFor`) of that buffer's message.
 */
import { serverBufferTarget } from "../../schema/Ids.js"
import type { Redaction } from "../../services/history/MessageRedactions.js"
import { type BufferKind, type MessageKind, type NewMessage, upstreamMsgid } from "../../services/history/MessageRow.js"
import { channelErrorFor } from "./ChannelErrors.js"
import { channelName, channelsOf, type ChannelState, isJoined } from "./ChannelState.js"
import { equalsFolded, foldCase } from "../../irc/CaseMapping.js"
import { decodeCtcp } from "../../irc/Ctcp.js"
import { type IrcLine, parseLine } from "../../irc/IrcLine.js"
import { isChannel, type ISupport, splitStatusMsg } from "../../irc/ISupport.js"
import { isNumeric } from "../../irc/Numerics.js"
import { tagTime } from "../../irc/ServerTime.js"

export interface HistoryContext {
  readonly networkId: number
  /** Our nick on this connection before the line is applied. */
  readonly selfNick: string
  /** RPL_WELCOME seen on this connection. */
  readonly registered: boolean
  readonly isupport: ISupport
  /** Channels and members before the line is applied. */
  readonly channels: ChannelState
  /** The channel of the last MODE change we sent, which a 472 (naming no channel) is about; null when none. */
  readonly lastModeChannel: string | null
  /** Receive time (Effect Clock); the line's server-time tag wins when valid. */
  readonly time: Date
}

interface Buffer {
  readonly target: string
  readonly targetFolded: string
  readonly bufferKind: BufferKind
}

const NOT_HISTORY: ReadonlySet<string> = new Set([
  "PING",
  "PONG",
  "CAP",
  "AUTHENTICATE",
  "AWAY",
  "ACCOUNT",
  "CHGHOST",
  "SETNAME",
  "BATCH",
  // IRCv3 labeled-response: the empty answer to a labelled command (the listener's; src/listener/UpstreamLabels.ts).
  "ACK"
])

const serverBufferOf = (networkId: number): Buffer => {
  const name = serverBufferTarget(networkId)
  return { target: name, targetFolded: name, bufferKind: "server" }
}

/** The buffer of a channel, showing the casing we joined it with when we are in it. */
const channelBuffer = (ctx: HistoryContext, name: string): Buffer => ({
  target: channelName(ctx.channels, name) ?? name,
  targetFolded: foldCase(ctx.isupport.caseMapping, name),
  bufferKind: "channel"
})

const dmBuffer = (ctx: HistoryContext, peer: string): Buffer => ({
  target: peer,
  targetFolded: foldCase(ctx.isupport.caseMapping, peer),
  bufferKind: "dm"
})

/**
 * The channel a message target names, if any: `#chan`, or `@#chan` behind STATUSMSG. A membership prefix in front
 * of a channel counts too when the server forgot to advertise STATUSMSG (the channel is still the audience).
 */
export const channelOfTarget = (isupport: ISupport, target: string): string | undefined => {
  if (isChannel(isupport, target)) return target
  const status = splitStatusMsg(isupport, target)
  if (status !== undefined) return status.channel
  let i = 0
  while (i < target.length && isupport.prefix.some((p) => p.symbol === target.charAt(i))) i++
  return i > 0 && isChannel(isupport, target.slice(i)) ? target.slice(i) : undefined
}

/** The buffer a message target names: a channel (maybe behind a STATUSMSG prefix), else a nick. */
export const bufferOfTarget = (ctx: HistoryContext, target: string): Buffer => {
  const channel = channelOfTarget(ctx.isupport, target)
  return channel !== undefined ? channelBuffer(ctx, channel) : dmBuffer(ctx, target)
}

/**
 * The channels a nick shares with us, where its QUIT or NICK is stored; ordered by folded name, so the same line
 * is stored in the same order every time (the state's maps iterate in hash order).
 */
const sharedChannels = (ctx: HistoryContext, nick: string): ReadonlyArray<string> =>
  channelsOf(ctx.channels, nick)
    .map((name) => [foldCase(ctx.isupport.caseMapping, name), name] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([, name]) => name)

/** IRCv3 server-time (`time=2024-01-01T00:00:00.000Z`) when present and valid (ServerTime.ts), else the receive time. */
const lineTime = (ctx: HistoryContext, line: IrcLine): Date => tagTime(line.tags.get("time")) ?? ctx.time

interface Entry {
  readonly buffer: Buffer
  readonly kind: MessageKind
  readonly nick: string | null
  readonly text: string
  readonly self: boolean
  readonly numeric?: string
  /** The `+draft/reply` reference (PRIVMSG, NOTICE, react). */
  readonly replyTo?: string | null
}

/** The longest reaction kept, in characters: an emoji sequence or a short word (IRCv3 `+draft/react`). */
export const REACTION_MAX = 64

/** A prefix without user and host whose "nick" has a dot is a server name (nicks cannot hold dots). */
const isServerSource = (line: IrcLine): boolean =>
  line.source === undefined ||
  (line.source.user === undefined && line.source.host === undefined && line.source.nick.includes("."))

const message = (ctx: HistoryContext, line: IrcLine, raw: string | null) => (entry: Entry): NewMessage => ({
  networkId: ctx.networkId,
  target: entry.buffer.target,
  targetFolded: entry.buffer.targetFolded,
  bufferKind: entry.buffer.bufferKind,
  time: lineTime(ctx, line),
  kind: entry.kind,
  nick: entry.nick,
  text: entry.text,
  numeric: entry.numeric ?? null,
  self: entry.self,
  raw,
  msgid: upstreamMsgid(line.tags.get("msgid")),
  replyTo: entry.replyTo ?? null
})

/** Whether the line's sender is the member. */
const fromSelf = (ctx: HistoryContext, line: IrcLine): boolean =>
  line.source !== undefined && equalsFolded(ctx.isupport.caseMapping, line.source.nick, ctx.selfNick)

/**
 * The buffer of a message to `target` (PRIVMSG, NOTICE, TAGMSG, REDACT): the channel; the server buffer for a
 * server's, a `$mask` or `*` one, or any before registration; else the DM of the other party: the sender, or the
 * recipient of our own echoed message.
 */
const conversationBuffer = (ctx: HistoryContext, line: IrcLine, target: string): Buffer => {
  if (channelOfTarget(ctx.isupport, target) !== undefined) return bufferOfTarget(ctx, target)
  if (isServerSource(line) || !ctx.registered || target === "*" || target.startsWith("$")) return serverBufferOf(ctx.networkId)
  return dmBuffer(ctx, fromSelf(ctx, line) ? target : (line.source?.nick ?? target))
}

const textMessage = (ctx: HistoryContext, line: IrcLine): ReadonlyArray<Entry> => {
  const target = line.params[0] ?? ""
  const text = line.params[1] ?? ""
  const nick = line.source?.nick ?? null
  const self = fromSelf(ctx, line)
  const notice = line.command === "NOTICE"
  const buffer = conversationBuffer(ctx, line, target)
  const replyTo = upstreamMsgid(line.tags.get("+draft/reply"))

  const ctcp = decodeCtcp(text)
  if (ctcp !== undefined && ctcp.command === "ACTION" && !notice) {
    return [{ buffer, kind: "action", nick, text: ctcp.params, self, replyTo }]
  }
  if (ctcp !== undefined) {
    // CTCP requests and replies (VERSION, PING…) are protocol chatter, not conversation.
    const what = notice ? "CTCP reply" : "CTCP"
    const server = serverBufferOf(ctx.networkId)
    return [{ buffer: server, kind: notice ? "notice" : "privmsg", nick, text: `${what} ${ctcp.command} ${ctcp.params}`.trim(), self }]
  }
  return [{ buffer, kind: notice ? "notice" : "privmsg", nick, text, self, replyTo }]
}

/**
 * A TAGMSG carrying `+draft/react` and `+draft/reply` (IRCv3 reactions): a `react` row of the conversation, unless
 * the reaction is empty, longer than REACTION_MAX or holds a control character, or the reference is no msgid Belay
 * keeps. Any other TAGMSG (typing…) is not history.
 */
const reaction = (ctx: HistoryContext, line: IrcLine): ReadonlyArray<Entry> => {
  const react = line.tags.get("+draft/react")
  const replyTo = upstreamMsgid(line.tags.get("+draft/reply"))
  const target = line.params[0]
  if (react === undefined || replyTo === null || target === undefined || line.source === undefined) return []
  if (isServerSource(line)) return []
  if (react === "" || react.length > REACTION_MAX || /\p{Cc}/u.test(react)) return []
  const buffer = conversationBuffer(ctx, line, target)
  if (buffer.bufferKind === "server") return []
  return [{ buffer, kind: "react", nick: line.source.nick, text: react, self: fromSelf(ctx, line), replyTo }]
}

/**
 * `REDACT <target> <msgid> [:reason]` (IRCv3 draft/message-redaction) as the redaction of the message of that
 * conversation's buffer with that upstream msgid; undefined for any other line, or one naming no msgid Belay keeps.
 * Which messages may be redacted is the upstream's to decide: it sent the line.
 */
export const redactionFor = (ctx: HistoryContext, line: IrcLine): Redaction | undefined => {
  if (line.command !== "REDACT") return undefined
  const [target, id] = line.params
  const msgid = upstreamMsgid(id)
  if (target === undefined || msgid === null) return undefined
  const buffer = conversationBuffer(ctx, line, target)
  if (buffer.bufferKind === "server") return undefined
  return { networkId: ctx.networkId, target: buffer.target, targetFolded: buffer.targetFolded, msgid }
}

/**
 * The messages one inbound line becomes, in store order. `raw` is kept with each (soju stores the whole line too),
 * so nothing the structured fields leave out is lost.
 */
export const messagesFor = (ctx: HistoryContext, line: IrcLine, raw: string | null = null): ReadonlyArray<NewMessage> => {
  const make = message(ctx, line, raw)
  const nick = line.source?.nick ?? null
  const isSelf = (n: string | null) => n !== null && equalsFolded(ctx.isupport.caseMapping, n, ctx.selfNick)
  const server = serverBufferOf(ctx.networkId)
  const p = line.params
  const command = line.command

  if (NOT_HISTORY.has(command) || command === "REDACT") return []
  if (command === "TAGMSG") return reaction(ctx, line).map(make)

  if (isNumeric(command)) {
    const refusal = channelErrorFor(line, {
      isupport: ctx.isupport,
      ...(ctx.lastModeChannel !== null ? { lastModeChannel: ctx.lastModeChannel } : {})
    })
    if (refusal !== undefined && isJoined(ctx.channels, refusal.channel)) {
      return [make({ buffer: channelBuffer(ctx, refusal.channel), kind: "error", nick, text: refusal.text, self: false, numeric: command })]
    }
    return [make({ buffer: server, kind: "numeric", nick, text: p.slice(1).join(" "), self: false, numeric: command })]
  }

  switch (command) {
    case "PRIVMSG":
    case "NOTICE":
      return textMessage(ctx, line).map(make)
    case "JOIN":
      return p[0] === undefined ? [] : [make({ buffer: channelBuffer(ctx, p[0]), kind: "join", nick, text: "", self: isSelf(nick) })]
    case "PART":
      return p[0] === undefined
        ? []
        : p[0].split(",").map((channel) =>
          make({ buffer: channelBuffer(ctx, channel), kind: "part", nick, text: p[1] ?? "", self: isSelf(nick) })
        )
    case "KICK": {
      const [channel, kicked, reason] = p
      if (channel === undefined || kicked === undefined) return []
      const text = reason !== undefined && reason !== "" && reason !== kicked ? `${kicked} (${reason})` : kicked
      return [make({ buffer: channelBuffer(ctx, channel), kind: "kick", nick, text, self: isSelf(nick) })]
    }
    case "QUIT":
      return nick === null
        ? []
        : sharedChannels(ctx, nick).map((channel) =>
          make({ buffer: channelBuffer(ctx, channel), kind: "quit", nick, text: p[0] ?? "", self: isSelf(nick) })
        )
    case "NICK": {
      const to = p[0]
      if (nick === null || to === undefined) return []
      const channels = sharedChannels(ctx, nick)
      if (channels.length === 0) {
        return isSelf(nick) ? [make({ buffer: server, kind: "nick", nick, text: to, self: true })] : []
      }
      return channels.map((channel) =>
        make({ buffer: channelBuffer(ctx, channel), kind: "nick", nick, text: to, self: isSelf(nick) })
      )
    }
    case "MODE": {
      const target = p[0]
      if (target === undefined) return []
      const buffer = isChannel(ctx.isupport, target) ? channelBuffer(ctx, target) : server
      return [make({ buffer, kind: "mode", nick, text: p.slice(1).join(" "), self: isSelf(nick) })]
    }
    case "TOPIC":
      return p[0] === undefined
        ? []
        : [make({ buffer: channelBuffer(ctx, p[0]), kind: "topic", nick, text: p[1] ?? "", self: isSelf(nick) })]
    case "INVITE":
      return [make({ buffer: server, kind: "notice", nick, text: `invites ${p[0] ?? ""} to ${p[1] ?? ""}`, self: false })]
    case "ERROR":
    case "KILL":
    case "FAIL":
      return [make({ buffer: server, kind: "error", nick, text: p.join(" "), self: false })]
    default:
      // WALLOPS, WARN, NOTE and anything newer: shown as a notice in the server buffer rather than lost.
      return [make({ buffer: server, kind: "notice", nick, text: [command, ...p].join(" "), self: false })]
  }
}

/**
 * Our own messages, stored locally when the server does not echo them (no echo-message): one per line sent, as the
 * echo would have produced. `lines` are the complete PRIVMSG/NOTICE lines we wrote.
 */
export const ownMessages = (ctx: HistoryContext, lines: ReadonlyArray<string>): ReadonlyArray<NewMessage> =>
  lines.flatMap((raw) => {
    const line = parseLine(raw)
    if (line === undefined || (line.command !== "PRIVMSG" && line.command !== "NOTICE")) return []
    const targets = (line.params[0] ?? "").split(",").filter((t) => t !== "")
    return targets.flatMap((target) =>
      messagesFor(
        { ...ctx, registered: true },
        { ...line, source: { nick: ctx.selfNick }, params: [target, ...line.params.slice(1)] },
        raw
      )
    )
  })
