/**
 * ChannelRoster: the channels the account is in on one connection, with each channel's members (prefix modes, away)
 * and topic, reduced from JOIN/PART/KICK/QUIT/NICK/MODE/TOPIC/AWAY and the NAMES (353/366) and topic (332/333)
 * replies. irc-framework keeps no member state (research/stack.md §3), so this is Belay's own.
 *
 * Pure functions over immutable values (CaseMappedMap); the network actor's dispatcher holds the only current copy
 * and replaces it on every line. Names are compared under the network's CASEMAPPING. Issue 4 (channel operations)
 * may grow this into ChannelState.ts; the shape here is deliberately minimal.
 */
import { CaseMappedMap, type CaseMapping, foldCase } from "./irc/CaseMapping.js"
import { type ISupport, modeKind, prefixSymbols, rankPrefixModes, splitNamesEntry } from "./irc/ISupport.js"

export interface Member {
  /** Prefix mode letters, highest rank first. */
  readonly modes: ReadonlyArray<string>
  readonly away: boolean
}

export interface Channel {
  readonly name: string
  readonly members: CaseMappedMap<Member>
  /** Members collected from 353 replies until 366 replaces `members` (RFC 2812 §3.2.5). */
  readonly names: CaseMappedMap<Member> | undefined
  readonly topic: string
  readonly topicSetBy: string | null
  readonly topicSetAt: Date | null
}

export type Roster = CaseMappedMap<Channel>

export const emptyRoster = (mapping: CaseMapping): Roster => CaseMappedMap.empty(mapping)

const newChannel = (mapping: CaseMapping, name: string): Channel => ({
  name,
  members: CaseMappedMap.empty(mapping),
  names: undefined,
  topic: "",
  topicSetBy: null,
  topicSetAt: null
})

const NO_MODES: Member = { modes: [], away: false }

/** The same roster under another mapping (CASEMAPPING arrived in 005). */
export const withMapping = (roster: Roster, mapping: CaseMapping): Roster =>
  roster.mapping === mapping
    ? roster
    : CaseMappedMap.fromEntries(
      mapping,
      [...roster].map(([name, channel]) =>
        [name, {
          ...channel,
          members: channel.members.withMapping(mapping),
          names: channel.names?.withMapping(mapping)
        }] as const
      )
    )

/** `nick` joined `channel`; when `self`, the channel itself starts (empty until NAMES arrives). */
export const join = (roster: Roster, channel: string, nick: string, self: boolean): Roster => {
  const base = self && !roster.has(channel) ? roster.set(channel, newChannel(roster.mapping, channel)) : roster
  return base.modify(channel, (c) => ({ ...c, members: c.members.set(nick, c.members.get(nick) ?? NO_MODES) }))
}

/** `nick` left `channel` (PART or KICK); when it is us, the channel is gone. */
export const leave = (roster: Roster, channel: string, nick: string, self: boolean): Roster =>
  self ? roster.remove(channel) : roster.modify(channel, (c) => ({ ...c, members: c.members.remove(nick) }))

/** The channels `nick` is in, ordered by folded name (a QUIT is stored in the same order every time). */
export const channelsOf = (roster: Roster, nick: string): ReadonlyArray<string> => {
  const out: Array<readonly [string, string]> = []
  for (const [name, channel] of roster) if (channel.members.has(nick)) out.push([foldCase(roster.mapping, name), name])
  return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([, name]) => name)
}

/** `nick` quit: removed from every channel. */
export const quit = (roster: Roster, nick: string): Roster => {
  let next = roster
  for (const name of channelsOf(roster, nick)) next = next.modify(name, (c) => ({ ...c, members: c.members.remove(nick) }))
  return next
}

/** `from` is now `to`, in every channel. */
export const rename = (roster: Roster, from: string, to: string): Roster => {
  let next = roster
  for (const name of channelsOf(roster, from)) next = next.modify(name, (c) => ({ ...c, members: c.members.rename(from, to) }))
  return next
}

/** Away state of `nick` everywhere (away-notify AWAY lines, RPL_AWAY). */
export const setAway = (roster: Roster, nick: string, away: boolean): Roster => {
  let next = roster
  for (const name of channelsOf(roster, nick)) {
    next = next.modify(name, (c) => ({ ...c, members: c.members.modify(nick, (m) => ({ ...m, away })) }))
  }
  return next
}

/** One RPL_NAMREPLY: entries `[@+]nick[!user@host]`, accumulated until `endOfNames`. Ignored for other channels. */
export const names = (roster: Roster, isupport: ISupport, channel: string, entries: ReadonlyArray<string>): Roster =>
  roster.modify(channel, (c) => {
    let collected = c.names ?? CaseMappedMap.empty<Member>(roster.mapping)
    for (const entry of entries) {
      if (entry === "") continue
      const { modes, rest } = splitNamesEntry(isupport, entry)
      const nick = rest.split("!")[0] ?? rest
      if (nick === "") continue
      collected = collected.set(nick, { modes, away: c.members.get(nick)?.away ?? false })
    }
    return { ...c, names: collected }
  })

/** RPL_ENDOFNAMES: the collected list replaces the members (a fresh NAMES is the truth). */
export const endOfNames = (roster: Roster, channel: string): Roster =>
  roster.modify(channel, (c) => (c.names === undefined ? c : { ...c, members: c.names, names: undefined }))

export interface ModeChange {
  readonly sign: "+" | "-"
  readonly letter: string
  readonly param: string | undefined
}

/**
 * Splits a channel MODE's modestring and params into changes, consuming a param per letter as CHANMODES/PREFIX say
 * (RFC 2811 §4; ISUPPORT CHANMODES types A–D). A letter the network never advertised is assumed to take none.
 */
export const parseModes = (isupport: ISupport, modestring: string, params: ReadonlyArray<string>): ReadonlyArray<ModeChange> => {
  const changes: Array<ModeChange> = []
  let sign: "+" | "-" = "+"
  let next = 0
  for (const letter of modestring) {
    if (letter === "+" || letter === "-") {
      sign = letter
      continue
    }
    const kind = modeKind(isupport, letter)
    const takes = kind === "list" || kind === "prefix" || kind === "always-param" || (kind === "set-param" && sign === "+")
    const param = takes ? params[next++] : undefined
    changes.push({ sign, letter, param })
  }
  return changes
}

/** Applies the prefix-mode changes (+o nick, -v nick) of a channel MODE to the members. */
export const applyModes = (roster: Roster, isupport: ISupport, channel: string, changes: ReadonlyArray<ModeChange>): Roster =>
  roster.modify(channel, (c) => {
    let members = c.members
    for (const change of changes) {
      if (change.param === undefined || modeKind(isupport, change.letter) !== "prefix") continue
      members = members.modify(change.param, (m) => {
        const letters = new Set(m.modes)
        if (change.sign === "+") letters.add(change.letter)
        else letters.delete(change.letter)
        return { ...m, modes: rankPrefixModes(isupport, letters) }
      })
    }
    return { ...c, members }
  })

/** TOPIC (with setter and time) or RPL_TOPIC (text only; 333 follows with setter and time). */
export const setTopic = (
  roster: Roster,
  channel: string,
  topic: string,
  setBy: string | null,
  setAt: Date | null
): Roster => roster.modify(channel, (c) => ({ ...c, topic, topicSetBy: setBy, topicSetAt: setAt }))

/** RPL_TOPICWHOTIME (333). */
export const setTopicWhoTime = (roster: Roster, channel: string, setBy: string, setAt: Date | null): Roster =>
  roster.modify(channel, (c) => ({ ...c, topicSetBy: setBy, topicSetAt: setAt }))

export interface MemberView {
  readonly nick: string
  readonly prefix: string
  readonly modes: ReadonlyArray<string>
  readonly away: boolean
}

/** Members sorted by nick as the network compares them (folded, then by original casing for a stable order). */
export const memberList = (channel: Channel, isupport: ISupport): ReadonlyArray<MemberView> =>
  [...channel.members]
    .map(([nick, m]) => ({
      nick,
      prefix: prefixSymbols(isupport, m.modes),
      modes: m.modes,
      away: m.away,
      key: foldCase(channel.members.mapping, nick)
    }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.nick < b.nick ? -1 : a.nick > b.nick ? 1 : 0))
    .map(({ key: _key, ...view }) => view)
