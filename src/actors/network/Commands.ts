/**
 * Commands: what a network actor does for the tagged commands callers send (Inbox.ts) — send, join, part, nick,
 * away, whois, read members and topics, set topics and modes, fetch a mode list, connect, disconnect, shut down —
 * each answered through its Deferred with its result or the tool failure that says why not (ToolErrors.ts). Every
 * command that writes to IRC passes the interface's one write gate (`gate`: registered on an open socket, else
 * NotConnected); the arguments are checked again here, whatever the caller checked, since the transport writes
 * verbatim.
 *
 * End-to-end encryption: messages to a keyed target go out encrypted (E2eCodec.ts); a raw line that would carry
 * plaintext to a keyed target is refused here, against the keys the dispatcher holds, atomically with the write.
 *
 * Concurrency rule: runs on the actor's dispatcher fiber only, which alone changes the actor's state, one command at
 * a time in inbox order; a command never waits for the server (a mode list is answered later by ModeListWaiters.ts).
 */
import { Deferred, Effect, Either, Option } from "effect"
import { foldCase } from "../../irc/CaseMapping.js"
import { encodeAction } from "../../irc/Ctcp.js"
import { formatLine, parseLine } from "../../irc/IrcLine.js"
import { isChannel, type ISupport } from "../../irc/ISupport.js"
import { modeLines } from "../../irc/ModeLines.js"
import { hasLineBreakingChars, isMiddleParam } from "../../irc/Safety.js"
import { prefixAllowance, splitText } from "../../irc/TextSplit.js"
import type { ModeChange, ModeList, ModeListLetter } from "../../schema/ChannelMode.js"
import type { ChannelTopic } from "../../schema/ChannelTopic.js"
import type { Member } from "../../schema/Member.js"
import {
  E2eChannelUseSendMessage,
  InvalidArguments,
  NotInChannel,
  QuotaExceeded,
  type Refused,
  type Timeout
} from "../../schema/ToolErrors.js"
import type { FishKey } from "../../services/crypto/Fish.js"
import type { SayKind } from "../NetworkApi.js"
import { type Actor, gate, mapping, now, type Session } from "./ActorState.js"
import * as Channels from "./ChannelState.js"
import { connect, disconnect, shutdown } from "./Connection.js"
import * as E2e from "./E2eCodec.js"
import type { Command, Gated, ReadGated, Reply } from "./Inbox.js"
import { ownMessages } from "./History.js"
import * as ModeListWaiters from "./ModeListWaiters.js"
import * as ModeLists from "./ModeListRequests.js"
import { room, send } from "./Outbound.js"
import { append, forgetChannel, historyContext, persist, storeOwn } from "./Persistence.js"

/** Anything that must be one IRC parameter: a middle param without a comma (which would make it a list). */
const isSingleName = (s: string) => isMiddleParam(s) && !s.includes(",")

/** Whether any text a command carries (strings, options, mode params) holds CR, LF or NUL. */
const carriesLineBreak = (command: Command): boolean => {
  const check = (value: unknown): boolean => {
    if (typeof value === "string") return hasLineBreakingChars(value)
    if (Option.isOption(value)) return Option.isSome(value) && check(value.value)
    if (Array.isArray(value)) return value.some(check)
    // Mode changes: plain records of strings.
    if (typeof value === "object" && value !== null) return Object.values(value).some(check)
    return false
  }
  return Object.entries(command).some(([key, value]) => key !== "reply" && check(value))
}

const invalid = (message: string) => Effect.fail(new InvalidArguments({ message }))

/** Why get_mode_list refuses a list letter here: this network does not have that list. */
const notAListMessage = (isupport: ISupport, letter: ModeListLetter): string => {
  const lists = isupport.chanModes.a
  if (letter === "q") {
    return `this network has no quiet list: q is not a list mode in its CHANMODES (list modes: ${lists || "none"})`
  }
  return `this network has no ${letter} list (list modes in its CHANMODES: ${lists || "none"})`
}

/** A channel name this network accepts as one parameter, else InvalidArguments. */
const channelName = (s: Session, channel: string): Effect.Effect<string, InvalidArguments> =>
  isSingleName(channel) && isChannel(s.isupport, channel)
    ? Effect.succeed(channel)
    : invalid(`${JSON.stringify(channel)} is not a channel name on this network`)

const ownPrefixAllowance = (s: Session) =>
  prefixAllowance({
    nick: s.nick,
    ...(s.user !== undefined ? { user: s.user } : {}),
    ...(s.host !== undefined ? { host: s.host } : {})
  })

const say = (a: Actor, kind: SayKind, target: string, text: string): Effect.Effect<void, Gated> =>
  Effect.gen(function*() {
    if (!isSingleName(target)) return yield* invalid("target must be one channel or nick")
    if (text === "") return yield* invalid("text is empty")
    const s = yield* gate(a)
    const e2eKey = E2e.keyForTarget(a.e2eKeys, s.isupport, target)
    if (e2eKey !== undefined) return yield* saySealed(a, s, e2eKey, kind, target, text)
    const command = kind === "notice" ? "NOTICE" : "PRIVMSG"
    // Budget for our relayed prefix (`:nick!user@host `) as far as we know it, so no server truncates a piece.
    const chunks = splitText(target, text, {
      command,
      ...(kind === "action" ? { ctcp: "ACTION" } : {}),
      prefixAllowance: ownPrefixAllowance(s)
    })
    const lines = chunks.map((chunk) =>
      formatLine({ command, params: [target, kind === "action" ? encodeAction(chunk) : chunk] })
    )
    yield* room(a, s, lines.length)
    // Stored as each line goes out (when no echo-message will bring it back): history holds what was sent, and when.
    for (const line of lines) yield* send(a, s, line, { plaintext: true, sent: storeOwn(a, s, [line]) })
  })

/**
 * send_message to an encrypted target: every piece encrypted and sized for the line limit. The local copy (no
 * echo-message) is the plaintext marked decrypted, with the line actually sent as its raw; with echo-message the
 * echo is opened and stored instead, once.
 */
const saySealed = (a: Actor, s: Session, key: FishKey, kind: SayKind, target: string, text: string) =>
  Effect.gen(function*() {
    const sealed = E2e.sealMessage(key, { kind, target, text, prefixAllowance: ownPrefixAllowance(s) })
    if (!sealed.ok) return yield* invalid(sealed.reason)
    yield* room(a, s, sealed.lines.length)
    for (const line of sealed.lines) {
      const stored = Effect.gen(function*() {
        if (s.caps.has("echo-message")) return
        const context = historyContext(a, s, yield* now)
        yield* append(
          a,
          ownMessages(context, [line.plain]).map((m) => ({ ...m, raw: line.wire, encryption: "decrypted" as const }))
        )
      })
      yield* send(a, s, line.wire, { sent: stored })
    }
  })

/**
 * Raw lines, sent in order and together (NetworkApi.raw and rawLines): every line is checked before any is queued, and
 * the queue takes all of them or none, so a multiline batch never reaches the server cut short.
 */
const raw = (
  a: Actor,
  lines: ReadonlyArray<string>,
  limit: number | null
): Effect.Effect<void, Gated | E2eChannelUseSendMessage | QuotaExceeded> =>
  Effect.gen(function*() {
    if (lines.length === 0 || lines.some((line) => line.trim() === "")) return yield* invalid("the line is empty")
    // The interface, send_raw: never plaintext to an encrypted target. Checked here too, against the keys the
    // dispatcher holds, so no key change can slip between the check and the write.
    for (const line of lines) {
      const keyed = E2e.encryptedTargetOfRaw(a.e2eKeys, a.isupport, line)
      if (keyed !== undefined) return yield* new E2eChannelUseSendMessage({ networkId: a.networkId, target: keyed })
    }
    const s = yield* gate(a)
    const parsed = lines.map(parseLine)
    // A JOIN sent raw counts against the channel limit as join_channel's does (its channel list, comma-separated).
    const joined = parsed.flatMap((p) =>
      p?.command.toUpperCase() === "JOIN" && p.params[0] !== undefined && p.params[0] !== "0"
        ? p.params[0].split(",").filter((c) => c !== "")
        : []
    )
    if (joined.length > 0) yield* withinChannelLimit(a, s, joined, limit)
    yield* room(a, s, lines.length)
    // Checked again as each is written (Outbound.ts): a key set while it waits stops it there.
    for (const line of lines) yield* send(a, s, line, { plaintext: true, sent: storeOwn(a, s, [line]) })
    for (const p of parsed) if (p?.command === "NICK" && p.params[0] !== undefined) s.requestedNick = p.params[0]
  })

/**
 * The account's channel limit on this network (docs/decisions/account-limits.md "Channels: joined and configured,
 * counted by the actor"): the channels it is in or joins on connect, each once, and `channels` joined on top. A channel
 * already counted is always joined again; at the limit nothing is sent.
 */
const withinChannelLimit = (a: Actor, s: Session, channels: ReadonlyArray<string>, limit: number | null) =>
  Effect.suspend(() => {
    if (limit === null) return Effect.void
    const counted = (c: string) => a.storedKeys.has(c) || Channels.isJoined(s.channels, c)
    const held = a.storedKeys.size + Channels.joinedChannels(s.channels).filter((c) => !a.storedKeys.has(c)).length
    const added = new Set(channels.filter((c) => !counted(c)).map((c) => foldCase(mapping(a), c))).size
    return added > 0 && held + added > limit ? Effect.fail(new QuotaExceeded({ limit: "channels", max: limit })) : Effect.void
  })

const join = (
  a: Actor,
  channel: string,
  key: Option.Option<string>,
  limit: number | null
): Effect.Effect<void, Gated | QuotaExceeded> =>
  Effect.gen(function*() {
    const s = yield* gate(a)
    yield* channelName(s, channel)
    if (Option.isSome(key) && !isSingleName(key.value)) return yield* invalid("the key must be one word without commas")
    yield* withinChannelLimit(a, s, [channel], limit)
    const sent = Option.getOrElse(key, () => a.storedKeys.get(channel) ?? null)
    yield* room(a, s, 1)
    if (Option.isSome(key)) s.pendingKeys = s.pendingKeys.set(channel, key.value)
    yield* send(a, s, formatLine({ command: "JOIN", params: sent === null ? [channel] : [channel, sent] }))
  })

const part = (a: Actor, channel: string, reason: Option.Option<string>): Effect.Effect<void, Gated | NotInChannel> =>
  Effect.gen(function*() {
    const s = yield* gate(a)
    if (!isSingleName(channel)) return yield* invalid("channel must be one channel name")
    const joined = Channels.isJoined(s.channels, channel)
    if (!joined && !a.storedKeys.has(channel)) return yield* new NotInChannel({ networkId: a.networkId, channel })
    if (joined) yield* room(a, s, 1)
    // The account's intent is to be out of it: no rejoin, even if the PART never comes back.
    yield* forgetChannel(a, channel)
    if (joined) {
      yield* send(a, s, formatLine({ command: "PART", params: Option.isSome(reason) ? [channel, reason.value] : [channel] }))
    }
  })

/**
 * set_away passes the one write gate like every write (docs/contract.md "MCP tool shapes"): a network that is not
 * connected refuses it and keeps its away state. Once sent, the state is kept and restored after every
 * registration (Registration.afterBurst).
 */
const away = (a: Actor, message: Option.Option<string>): Effect.Effect<void, Gated> =>
  Effect.gen(function*() {
    const s = yield* gate(a)
    yield* room(a, s, 1)
    a.awayMessage = Option.getOrNull(message)
    yield* persist(a, a.deps.repo.setAwayMessage(a.awayMessage))
    yield* send(a, s, formatLine({ command: "AWAY", params: Option.isSome(message) ? [message.value] : [] }))
  })

/** A one-word command (NICK, WHOIS) written as is once connected; `after` notes what it asked for. */
const simple = (
  a: Actor,
  command: "NICK" | "WHOIS",
  word: string,
  after?: (s: Session) => void
): Effect.Effect<void, Gated> =>
  Effect.gen(function*() {
    const s = yield* gate(a)
    if (!isSingleName(word)) return yield* invalid("nick must be one word")
    yield* room(a, s, 1)
    yield* send(a, s, formatLine({ command, params: [word] }))
    after?.(s)
  })

/** Reads a joined channel's state; NotInChannel when the account is not in it (the interface, list_members). */
const inChannel = <A>(
  a: Actor,
  channel: string,
  read: (s: Session) => A | undefined
): Effect.Effect<A, ReadGated | NotInChannel> =>
  Effect.flatMap(gate(a), (s) => {
    const found = read(s)
    return found === undefined ? Effect.fail(new NotInChannel({ networkId: a.networkId, channel })) : Effect.succeed(found)
  })

const members = (a: Actor, channel: string): Effect.Effect<ReadonlyArray<Member>, ReadGated | NotInChannel> =>
  inChannel(a, channel, (s) => Channels.members(s.channels, channel, s.isupport))

const topic = (a: Actor, channel: string): Effect.Effect<ChannelTopic, ReadGated | NotInChannel> =>
  inChannel(a, channel, (s) => Channels.topic(s.channels, channel))

const setTopic = (a: Actor, channel: string, text: string): Effect.Effect<void, Gated> =>
  Effect.gen(function*() {
    const s = yield* gate(a)
    yield* channelName(s, channel)
    // The interface: always written, "" clears (`TOPIC #c :`). A refusal (482, 442…) comes back as a numeric
    // that History files in the channel as an `error` line (ChannelErrors.ts).
    yield* room(a, s, 1)
    yield* send(a, s, formatLine({ command: "TOPIC", params: [channel, text] }))
  })

const setModes = (a: Actor, channel: string, changes: ReadonlyArray<ModeChange>): Effect.Effect<ReadonlyArray<string>, Gated> =>
  Effect.gen(function*() {
    const s = yield* gate(a)
    // A bare `-k` takes the key last seen on the channel (MODE +k, or the one we joined with), else the stored one.
    const storedKey = Channels.channelKey(s.channels, channel) ?? a.storedKeys.get(channel) ?? null
    const lines = modeLines(channel, changes, s.isupport, storedKey !== null ? { storedKey } : {})
    if (Either.isLeft(lines)) return yield* invalid(lines.left.message)
    yield* room(a, s, lines.right.length)
    // A 472 (unknown mode) names no channel; it is filed under the channel of the last MODE written (ChannelErrors.ts).
    const sent = Effect.sync(() => {
      s.lastModeChannel = channel
    })
    for (const line of lines.right) yield* send(a, s, line, { sent })
    return lines.right
  })

/**
 * Sends the fenced list query, or joins one in flight; the answer comes later, through ModeListWaiters, so the
 * reply is not completed here unless the query cannot be sent.
 */
const modeList = (
  a: Actor,
  channel: string,
  letter: ModeListLetter,
  reply: Reply<ModeList, Gated | Refused | Timeout>
): Effect.Effect<void, Gated> =>
  Effect.gen(function*() {
    const s = yield* gate(a)
    yield* channelName(s, channel)
    if (!ModeLists.isListLetter(s.isupport, letter)) return yield* invalid(notAListMessage(s.isupport, letter))
    const id = ++a.modeListSeq
    const registered = ModeLists.register(s.modeLists, { channel, letter, requestId: id }, s.isupport.caseMapping)
    if (registered.lines.length > 0) yield* room(a, s, registered.lines.length)
    s.modeLists = registered.state
    ModeListWaiters.wait(a, id, { reply, channel, letter })
    // PING, MODE, PING in a row: the queue keeps our lines in order, so nothing of ours comes between the fences. The
    // caller's MODE_LIST_TIMEOUT counts from the closing fence's write; a caller joining a query already on its way
    // counts from now.
    const last = registered.lines.length - 1
    if (last < 0) return yield* ModeListWaiters.startTimeout(a, id)
    for (const [i, line] of registered.lines.entries()) {
      yield* send(a, s, line, i === last ? { sent: ModeListWaiters.startTimeout(a, id) } : undefined)
    }
  })

const LINE_BREAK = new InvalidArguments({ message: "CR, LF and NUL are not allowed in IRC arguments" })

/**
 * Answers a command's Deferred with what `run` did: its result, or its tool failure. A defect is not an answer: it
 * ends the dispatcher, which the supervisor restarts, and the caller hears NotConnected.
 */
const answer = <A, E>(reply: Reply<A, E>, run: Effect.Effect<A, E>) =>
  Effect.matchEffect(run, {
    onFailure: (e) => Deferred.fail(reply, e),
    onSuccess: (value) => Deferred.succeed(reply, value)
  })

/** `answer`, refusing first a command whose text carries a line break. */
const answerChecked = <A, E>(command: Command, reply: Reply<A, E | InvalidArguments>, run: () => Effect.Effect<A, E | InvalidArguments>) =>
  // The supervisor refuses CR, LF and NUL naming the field; this is the actor's own line of defence, since the
  // transport writes verbatim and formatLine would throw (a defect that restarts the actor).
  carriesLineBreak(command) ? Deferred.fail(reply, LINE_BREAK) : answer(reply, run())

export const onCommand = (a: Actor, command: Command): Effect.Effect<unknown> => {
  switch (command._tag) {
    case "Say":
      return answerChecked(command, command.reply, () => say(a, command.kind, command.target, command.text))
    case "Raw":
      return answerChecked(command, command.reply, () => raw(a, command.lines, command.channelLimit))
    case "Join":
      return answerChecked(command, command.reply, () => join(a, command.channel, command.key, command.channelLimit))
    case "Part":
      return answerChecked(command, command.reply, () => part(a, command.channel, command.reason))
    case "Nick":
      return answerChecked(command, command.reply, () =>
        simple(a, "NICK", command.nick, (s) => {
          s.requestedNick = command.nick
        }))
    case "Away":
      return answerChecked(command, command.reply, () => away(a, command.message))
    case "Whois":
      return answerChecked(command, command.reply, () => simple(a, "WHOIS", command.nick))
    case "Connect":
      return answer(command.reply, connect(a, command.reconnect))
    case "Disconnect":
      return answer(command.reply, disconnect(a))
    case "Members":
      return answerChecked(command, command.reply, () => members(a, command.channel))
    case "Topic":
      return answerChecked(command, command.reply, () => topic(a, command.channel))
    case "SetTopic":
      return answerChecked(command, command.reply, () => setTopic(a, command.channel, command.topic))
    case "SetModes":
      return answerChecked(command, command.reply, () => setModes(a, command.channel, command.changes))
    case "ModeList": {
      // Answered later by ModeListWaiters; only a query that cannot be sent is answered now.
      const reply = command.reply
      return carriesLineBreak(command)
        ? Deferred.fail(reply, LINE_BREAK)
        : Effect.catchAll(modeList(a, command.channel, command.letter, reply), (e) => Deferred.fail(reply, e))
    }
    case "Shutdown":
      return shutdown(a, command.reply)
  }
}
