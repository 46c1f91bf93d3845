/**
 * ChannelReducer: how one line from the server changes a connection's ChannelState — JOIN, PART, KICK, QUIT, NICK,
 * MODE (prefixes and the key), TOPIC and its numerics, NAMES, WHO and away — and the events the network actor acts
 * on (our own joins and parts, key changes, the end of a NAMES list).
 *
 * Concurrency rule: pure functions over the immutable ChannelState; `applyLine` returns a new state and never
 * mutates its argument. The network actor's single dispatcher fiber calls it for every line (Inbound.ts).
 *
 * Sources: RFC 1459 §4.2 / RFC 2812 §3.2 (JOIN, PART, KICK, MODE, TOPIC, NAMES), §3.1.7 and §3.6 (QUIT, NICK),
 * RFC 2812 §5.1 (301, 305, 306, 315, 331, 332, 352, 353, 366), modern.ircdocs.horse (333 RPL_TOPICWHOTIME),
 * IRCv3 multi-prefix, userhost-in-names, extended-join, away-notify and server-time.
 */
import { type CaseMapping, CaseMappedMap, equalsFolded } from "../../irc/CaseMapping.js"
import { type IrcLine, parsePrefix } from "../../irc/IrcLine.js"
import { isChannel, type ISupport, modeKind, rankPrefixModes, splitNamesEntry } from "../../irc/ISupport.js"
import { Numeric } from "../../irc/Numerics.js"
import { tagTime, unixTime } from "../../irc/ServerTime.js"
import {
  type ChannelContext,
  ChannelEvent,
  type ChannelState,
  type ChannelUpdate,
  channelsOf,
  emptyChannelState,
  type JoinedChannel,
  joinedChannels,
  type MemberModes,
  modifyChannel,
  withCaseMapping
} from "./ChannelState.js"

const NO_EVENTS: ReadonlyArray<ChannelEvent> = []

/**
 * Applies one line from the server. Lines that do not concern channel state (PRIVMSG, most numerics, lines
 * about channels we are not in) return the state unchanged (the same object) and no events. If
 * `ctx.caseMapping` differs from the state's, the state is re-keyed first.
 */
export const applyLine = (current: ChannelState, line: IrcLine, ctx: ChannelContext): ChannelUpdate => {
  const state = withCaseMapping(current, ctx.caseMapping)
  const unchanged: ChannelUpdate = { state, events: NO_EVENTS }
  const p = line.params
  const nick = line.source?.nick
  const isSelf = (n: string) => equalsFolded(ctx.caseMapping, n, ctx.selfNick)

  switch (line.command) {
    case "JOIN": {
      if (nick === undefined || p[0] === undefined) return unchanged
      // extended-join adds `account :realname` after the channel; they are not channel state.
      let next = state
      const events: Array<ChannelEvent> = []
      for (const channel of p[0].split(",")) {
        if (channel === "") continue
        if (isSelf(nick)) {
          next = setChannel(next, newChannel(next.caseMapping, channel, nick))
          events.push(ChannelEvent.SelfJoined({ channel }))
        } else {
          next = updateMembers(next, channel, (m) => (m.has(nick) ? m : m.set(nick, [])))
        }
      }
      return { state: next, events }
    }

    case "PART": {
      if (nick === undefined || p[0] === undefined) return unchanged
      let next = state
      const events: Array<ChannelEvent> = []
      for (const channel of p[0].split(",")) {
        const left = leave(next, channel, nick, isSelf(nick), "part", null)
        next = left.state
        events.push(...left.events)
      }
      return { state: next, events }
    }

    case "KICK": {
      const [channel, victims] = p
      if (channel === undefined || victims === undefined) return unchanged
      let next = state
      const events: Array<ChannelEvent> = []
      for (const victim of victims.split(",")) {
        if (victim === "") continue
        const left = leave(next, channel, victim, isSelf(victim), "kick", nick ?? null)
        next = left.state
        events.push(...left.events)
      }
      return { state: next, events }
    }

    case "QUIT": {
      if (nick === undefined) return unchanged
      const self = isSelf(nick)
      const channels = self ? joinedChannels(state) : channelsOf(state, nick)
      const event = ChannelEvent.MemberQuit({ nick, self, channels })
      if (self) return { state: emptyChannelState(state.caseMapping), events: [event] }
      let next = state
      for (const channel of channels) next = updateMembers(next, channel, (m) => m.remove(nick))
      return { state: { ...next, away: next.away.remove(nick) }, events: [event] }
    }

    case "NICK": {
      const to = p[0]
      if (nick === undefined || to === undefined || to === "") return unchanged
      const self = isSelf(nick)
      const channels = self ? joinedChannels(state) : channelsOf(state, nick)
      let next = state
      for (const channel of channels) next = updateMembers(next, channel, (m) => m.rename(nick, to))
      next = { ...next, away: next.away.rename(nick, to) }
      return { state: next, events: [ChannelEvent.NickChanged({ from: nick, to, self, channels })] }
    }

    case "MODE": {
      const [target, modestring, ...params] = p
      if (target === undefined || modestring === undefined) return unchanged
      const joined = state.channels.get(target)
      if (joined === undefined || !isChannel(ctx.isupport, target)) return unchanged
      let next = state
      const events: Array<ChannelEvent> = []
      for (const change of parseModeChanges(ctx.isupport, modestring, params)) {
        const kind = modeKind(ctx.isupport, change.letter)
        if (kind === "prefix" && change.param !== undefined) {
          const member = change.param
          const update = (m: CaseMappedMap<MemberModes>) =>
            m.modify(member, (modes) =>
              change.sign === "+"
                ? rankPrefixModes(ctx.isupport, [...modes, change.letter])
                : modes.filter((l) => l !== change.letter)
            )
          next = updateMembers(next, target, update)
        } else if (change.letter === "k" && kind === "always-param") {
          // RFC 2811 §4.2.6: the key. On `-k` the param (often `*`) is not a key; the key is gone. A `+k` that
          // lost its param (a malformed relay) says nothing about the key, so it must not clear the stored one.
          if (change.sign === "+" && change.param === undefined) continue
          const key = change.sign === "+" ? (change.param ?? null) : null
          next = modifyChannel(next, target, (c) => ({ ...c, key }))
          // Emitted even when the key looks unchanged: the actor's persisted key (from join_channel) may be one
          // this state never saw in a MODE line.
          events.push(ChannelEvent.KeyChanged({ channel: joined.name, key }))
        }
      }
      return { state: next, events }
    }

    case "TOPIC": {
      const [channel, text = ""] = p
      if (channel === undefined || nick === undefined) return unchanged
      // IRCv3 server-time when the line has a usable one (src/irc/ServerTime.ts), else the receipt time.
      const setAt = tagTime(line.tags.get("time")) ?? ctx.now
      return {
        state: modifyChannel(state, channel, (c) => withTopic(c, text, nick, setAt)),
        events: NO_EVENTS
      }
    }

    case Numeric.RPL_NOTOPIC: {
      const channel = p[1]
      if (channel === undefined) return unchanged
      return { state: modifyChannel(state, channel, (c) => withTopic(c, "", null, null)), events: NO_EVENTS }
    }

    case Numeric.RPL_TOPIC: {
      // `<client> <channel> :<topic>`; 333 follows with the setter and time, so they are cleared until then.
      const [, channel, text = ""] = p
      if (channel === undefined) return unchanged
      return { state: modifyChannel(state, channel, (c) => withTopic(c, text, null, null)), events: NO_EVENTS }
    }

    case Numeric.RPL_TOPICWHOTIME: {
      // `<client> <channel> <setter> <unix seconds>`. Servers give the setter as a nick or nick!user@host
      // depending on configuration; the nick is kept so get_topic's setBy reads the same on every network.
      const [, channel, setter, time] = p
      if (channel === undefined || setter === undefined) return unchanged
      const setBy = parsePrefix(setter).nick
      const setAt = unixTime(time)
      return {
        state: modifyChannel(state, channel, (c) =>
          c.topic === "" ? c : { ...c, topicSetBy: setBy === "" ? null : setBy, topicSetAt: setAt }
        ),
        events: NO_EVENTS
      }
    }

    case Numeric.RPL_NAMREPLY: {
      // RFC 2812: `<client> <symbol> <channel> :<entries>`; RFC 1459 has no symbol. Counting from the end
      // reads both.
      const channel = p[p.length - 2]
      const entries = p[p.length - 1]
      if (p.length < 3 || channel === undefined || entries === undefined) return unchanged
      return {
        state: modifyChannel(state, channel, (c) => {
          let pending = c.pendingNames ?? CaseMappedMap.empty<MemberModes>(state.caseMapping)
          for (const entry of entries.split(" ")) {
            if (entry === "") continue
            // multi-prefix: `@+nick`; userhost-in-names: `nick!user@host`.
            const { modes, rest } = splitNamesEntry(ctx.isupport, entry)
            const member = parsePrefix(rest).nick
            if (member !== "") pending = pending.set(member, modes)
          }
          return { ...c, pendingNames: pending }
        }),
        events: NO_EVENTS
      }
    }

    case Numeric.RPL_ENDOFNAMES: {
      const channel = p[1]
      const joined = channel === undefined ? undefined : state.channels.get(channel)
      if (channel === undefined || joined === undefined) return unchanged
      const next = modifyChannel(state, channel, (c) =>
        c.pendingNames === null ? c : { ...c, members: c.pendingNames, pendingNames: null }
      )
      return { state: pruneAway(next, state, ctx), events: [ChannelEvent.NamesComplete({ channel: joined.name })] }
    }

    case Numeric.RPL_WHOREPLY: {
      // `<client> <channel> <user> <host> <server> <nick> <flags> :<hopcount> <realname>`; flags start with
      // H (here) or G (gone, i.e. away).
      const who = p[5]
      const flags = p[6]
      if (who === undefined || flags === undefined) return unchanged
      if (flags.startsWith("G")) return setAway(state, who, state.away.get(who) ?? "", ctx)
      if (flags.startsWith("H")) return setBack(state, who, ctx)
      return unchanged
    }

    case "AWAY": {
      // away-notify: `:nick AWAY :message` when going away, bare `:nick AWAY` when back.
      if (nick === undefined) return unchanged
      const message = p[0]
      return message === undefined || message === ""
        ? setBack(state, nick, ctx)
        : setAway(state, nick, message, ctx)
    }

    case Numeric.RPL_AWAY: {
      // `<client> <nick> :<message>` answers a PRIVMSG or WHOIS to an away user; it never says "back".
      const [, who, message = ""] = p
      if (who === undefined) return unchanged
      return setAway(state, who, message, ctx)
    }

    case Numeric.RPL_UNAWAY:
      return setBack(state, ctx.selfNick, ctx)

    case Numeric.RPL_NOWAWAY:
      return setAway(state, ctx.selfNick, state.away.get(ctx.selfNick) ?? "", ctx)

    default:
      return unchanged
  }
}


/** One change of a MODE line, with the parameter it consumed (if any). */
export interface AppliedModeChange {
  readonly sign: "+" | "-"
  readonly letter: string
  readonly param: string | undefined
}

/**
 * Walks a MODE modestring and its params the way the server meant them (RFC 2811 §4; ISUPPORT CHANMODES and
 * PREFIX): type A (lists), type B (key) and PREFIX modes consume a param on both signs, type C (limit) only on
 * `+`, type D never. A letter the network did not advertise consumes nothing — the only safe guess, and what
 * irc-framework and soju do. A missing param (a server that relays `-k` bare) yields `param: undefined`.
 */
export const parseModeChanges = (
  isupport: ISupport,
  modestring: string,
  params: ReadonlyArray<string>
): ReadonlyArray<AppliedModeChange> => {
  const changes: Array<AppliedModeChange> = []
  let sign: "+" | "-" = "+"
  let next = 0
  for (const letter of modestring) {
    if (letter === "+" || letter === "-") {
      sign = letter
      continue
    }
    const kind = modeKind(isupport, letter)
    const consumes =
      kind === "list" || kind === "prefix" || kind === "always-param" || (kind === "set-param" && sign === "+")
    const param = consumes ? params[next++] : undefined
    changes.push({ sign, letter, param })
  }
  return changes
}

// ---------------------------------------------------------------------------------------------------------------
// Helpers

const newChannel = (caseMapping: CaseMapping, name: string, self: string): JoinedChannel => ({
  name,
  members: CaseMappedMap.empty<MemberModes>(caseMapping).set(self, []),
  pendingNames: null,
  topic: "",
  topicSetBy: null,
  topicSetAt: null,
  key: null
})

const setChannel = (state: ChannelState, channel: JoinedChannel): ChannelState => ({
  ...state,
  channels: state.channels.set(channel.name, channel)
})

// A change that arrives between 353 and 366 happened after the server took its NAMES snapshot, so it applies to
// the list being gathered as well as to the current one.
const updateMembers = (
  state: ChannelState,
  channel: string,
  f: (m: CaseMappedMap<MemberModes>) => CaseMappedMap<MemberModes>
): ChannelState =>
  modifyChannel(state, channel, (c) => ({
    ...c,
    members: f(c.members),
    pendingNames: c.pendingNames === null ? null : f(c.pendingNames)
  }))

const withTopic = (c: JoinedChannel, text: string, setBy: string | null, setAt: Date | null): JoinedChannel =>
  // An empty topic is "no topic": it reads the same whether it was cleared in front of us or before we joined.
  text === "" ? { ...c, topic: "", topicSetBy: null, topicSetAt: null } : { ...c, topic: text, topicSetBy: setBy, topicSetAt: setAt }

const leave = (
  state: ChannelState,
  channel: string,
  who: string,
  self: boolean,
  how: "part" | "kick",
  by: string | null
): ChannelUpdate => {
  const joined = state.channels.get(channel)
  if (joined === undefined) return { state, events: NO_EVENTS }
  if (self) {
    const next = { ...state, channels: state.channels.remove(channel) }
    return {
      state: pruneAwayOf(next, [...joined.members.names()], who),
      events: [ChannelEvent.SelfLeft({ channel: joined.name, how, by })]
    }
  }
  const next = updateMembers(state, channel, (m) => m.remove(who))
  return { state: pruneAwayOf(next, [who], undefined), events: NO_EVENTS }
}

const inAnyChannel = (state: ChannelState, nick: string): boolean => {
  for (const channel of state.channels.values()) if (channel.members.has(nick)) return true
  return false
}

// Forget the away state of nicks we no longer share a channel with (we would never hear them come back).
const pruneAwayOf = (state: ChannelState, nicks: Iterable<string>, self: string | undefined): ChannelState => {
  let away = state.away
  for (const nick of nicks) {
    if (self !== undefined && equalsFolded(state.caseMapping, nick, self)) continue
    if (away.has(nick) && !inAnyChannel(state, nick)) away = away.remove(nick)
  }
  return away === state.away ? state : { ...state, away }
}

// After a NAMES list replaced another, nicks that were only in the old list may have left unseen.
const pruneAway = (next: ChannelState, before: ChannelState, ctx: ChannelContext): ChannelState => {
  const gone: Array<string> = []
  for (const nick of before.away.names()) if (!equalsFolded(ctx.caseMapping, nick, ctx.selfNick)) gone.push(nick)
  return pruneAwayOf(next, gone, ctx.selfNick)
}

// Away state is only kept for users we share a channel with (and ourselves): a WHO or 301 about a stranger
// would otherwise sit in the map forever.
const setAway = (state: ChannelState, nick: string, message: string, ctx: ChannelContext): ChannelUpdate => {
  const self = equalsFolded(ctx.caseMapping, nick, ctx.selfNick)
  if (!self && !inAnyChannel(state, nick)) return { state, events: NO_EVENTS }
  const was = state.away.get(nick)
  const next = was === message ? state : { ...state, away: state.away.set(nick, message) }
  return { state: next, events: self && was === undefined ? [ChannelEvent.SelfAwayChanged({ away: true })] : NO_EVENTS }
}

const setBack = (state: ChannelState, nick: string, ctx: ChannelContext): ChannelUpdate => {
  if (!state.away.has(nick)) return { state, events: NO_EVENTS }
  const self = equalsFolded(ctx.caseMapping, nick, ctx.selfNick)
  return {
    state: { ...state, away: state.away.remove(nick) },
    events: self ? [ChannelEvent.SelfAwayChanged({ away: false })] : NO_EVENTS
  }
}
