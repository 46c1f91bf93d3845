/**
 * ChannelState: what one network connection knows about the channels it is in — members with their prefix
 * modes, who is away, each channel's topic and key — and the queries the actor answers from it (list_members,
 * get_topic, the key for a bare `-k`). ChannelReducer.ts reduces the lines the server sends into it, with the
 * events the network actor needs to store and persist what a line did.
 *
 * Concurrency rule: an immutable value. Every function returns a new state and never mutates its argument, so the
 * network actor's single dispatcher fiber owns the only current copy and readers may hold an old one safely.
 * Maps are `CaseMappedMap`s (persistent HashMaps), so a JOIN in a channel of thousands costs O(log n).
 */
import { Data } from "effect"
import { type CaseMapping, CaseMappedMap, foldCase } from "../../irc/CaseMapping.js"
import { type ISupport, prefixSymbols, rankPrefixModes } from "../../irc/ISupport.js"
import type { ChannelTopic } from "../../schema/ChannelTopic.js"
import { toIsoTime } from "../../schema/Ids.js"
import type { Member } from "../../schema/Member.js"

/** Prefix mode letters of one member, highest rank first (PREFIX order). */
export type MemberModes = ReadonlyArray<string>

export interface JoinedChannel {
  /** The channel's name as the server last spelled it in our JOIN. */
  readonly name: string
  /** nick → prefix mode letters, highest first. */
  readonly members: CaseMappedMap<MemberModes>
  /**
   * Members gathered from 353 lines since the last 366. A NAMES reply spans several 353 lines; the list replaces
   * `members` only at 366 (RPL_ENDOFNAMES), so readers never see half a list.
   */
  readonly pendingNames: CaseMappedMap<MemberModes> | null
  /** "" when no topic is set (331, or TOPIC with empty text). */
  readonly topic: string
  readonly topicSetBy: string | null
  readonly topicSetAt: Date | null
  /** The key (+k) last seen in a MODE line; null when none is known or it was removed. */
  readonly key: string | null
}

export interface ChannelState {
  readonly caseMapping: CaseMapping
  readonly channels: CaseMappedMap<JoinedChannel>
  /**
   * Nicks known to be away → their away message ("" when unknown, as WHO's `G` flag says only "away"). Away is
   * a property of the user, not of a channel, so it is kept once per network and dropped when the user leaves
   * the last channel we share (our own entry stays until 305 or a reset).
   */
  readonly away: CaseMappedMap<string>
}

/** What the reducer needs to know beyond the line; the actor builds it per line. */
export interface ChannelContext {
  /** Our current nick (before this line: a NICK from us is recognised by it). */
  readonly selfNick: string
  readonly isupport: ISupport
  readonly caseMapping: CaseMapping
  /** Clock time of receipt; used for a TOPIC's setAt when the line has no server-time `time` tag. */
  readonly now: Date
}

/**
 * What a line did that the actor must act on beyond updating state:
 * - `SelfJoined` / `SelfLeft`: our membership changed (rejoin list, buffer bookkeeping). `how` is `kick` when
 *   we were kicked; `by` is the kicker.
 * - `MemberQuit` / `NickChanged`: QUIT and NICK carry no channel, yet the bouncer stores them in every channel
 *   the user shared with us (as soju, ZNC and The Lounge show them). `channels` are those channels (stored
 *   names), computed before the line was applied; empty when we shared none. For our own NICK it is every
 *   joined channel.
 * - `KeyChanged`: a MODE set or removed the channel key (+k/-k); the actor persists it for rejoin.
 * - `NamesComplete`: 366 replaced the member list; without away-notify, the actor may now send `WHO #chan`
 *   to learn away states.
 * - `SelfAwayChanged`: 305/306 (or an away-notify AWAY about us) changed our own away state.
 */
export type ChannelEvent = Data.TaggedEnum<{
  SelfJoined: { readonly channel: string }
  SelfLeft: { readonly channel: string; readonly how: "part" | "kick"; readonly by: string | null }
  MemberQuit: { readonly nick: string; readonly self: boolean; readonly channels: ReadonlyArray<string> }
  NickChanged: {
    readonly from: string
    readonly to: string
    readonly self: boolean
    readonly channels: ReadonlyArray<string>
  }
  KeyChanged: { readonly channel: string; readonly key: string | null }
  NamesComplete: { readonly channel: string }
  SelfAwayChanged: { readonly away: boolean }
}>
export const ChannelEvent = Data.taggedEnum<ChannelEvent>()

export interface ChannelUpdate {
  readonly state: ChannelState
  /** In the order the line caused them. */
  readonly events: ReadonlyArray<ChannelEvent>
}

/** No channels: the state at connect and after a disconnect (the server forgets our channels with us). */
export const emptyChannelState = (caseMapping: CaseMapping): ChannelState => ({
  caseMapping,
  channels: CaseMappedMap.empty(caseMapping),
  away: CaseMappedMap.empty(caseMapping)
})

/** The same state keyed under another casemapping (CASEMAPPING arrived after channels were joined). */
export const withCaseMapping = (state: ChannelState, caseMapping: CaseMapping): ChannelState => {
  if (state.caseMapping === caseMapping) return state
  let channels = CaseMappedMap.empty<JoinedChannel>(caseMapping)
  for (const [name, channel] of state.channels) {
    channels = channels.set(name, {
      ...channel,
      members: channel.members.withMapping(caseMapping),
      pendingNames: channel.pendingNames?.withMapping(caseMapping) ?? null
    })
  }
  return { caseMapping, channels, away: state.away.withMapping(caseMapping) }
}

// ---------------------------------------------------------------------------------------------------------------
// Queries

/** True when we are in `channel` (casemapped). */
export const isJoined = (state: ChannelState, channel: string): boolean => state.channels.has(channel)

/** Joined channels, by their stored names, in no particular order (the actor's rejoin list). */
export const joinedChannels = (state: ChannelState): ReadonlyArray<string> => [...state.channels.names()]

/** The stored spelling of a joined channel (`#Belay` for `#belay`); undefined when not joined. */
export const channelName = (state: ChannelState, channel: string): string | undefined =>
  state.channels.get(channel)?.name

/** The key last seen set on a joined channel; undefined when not joined, null when none is known. */
export const channelKey = (state: ChannelState, channel: string): string | null | undefined =>
  state.channels.get(channel)?.key

/**
 * Members of a joined channel (list_members), sorted by casemapped nick (ties by raw nick, so the order is
 * total and stable); `prefix` and `modes` highest rank first. undefined when we are not in the channel: the
 * caller answers NotInChannel.
 */
export const members = (
  state: ChannelState,
  channel: string,
  isupport: ISupport
): ReadonlyArray<Member> | undefined => {
  const joined = state.channels.get(channel)
  if (joined === undefined) return undefined
  const rows = [...joined.members].map(([nick, modes]) => ({
    key: foldCase(state.caseMapping, nick),
    info: {
      nick,
      prefix: prefixSymbols(isupport, modes),
      modes: rankPrefixModes(isupport, modes),
      away: state.away.has(nick)
    } satisfies Member
  }))
  rows.sort((a, b) => compare(a.key, b.key) || compare(a.info.nick, b.info.nick))
  return rows.map((row) => row.info)
}

/** The topic of a joined channel (get_topic); undefined when not joined. `topic` is "" when none is set. */
export const topic = (state: ChannelState, channel: string): ChannelTopic | undefined => {
  const joined = state.channels.get(channel)
  return joined === undefined
    ? undefined
    : {
      channel: joined.name,
      topic: joined.topic,
      setBy: joined.topicSetBy,
      setAt: joined.topicSetAt === null ? null : toIsoTime(joined.topicSetAt)
    }
}

/** Whether a nick is known to be away (ourselves included). */
export const isAway = (state: ChannelState, nick: string): boolean => state.away.has(nick)

/** The joined channels a nick is in (stored names); what QUIT and NICK are stored under. */
export const channelsOf = (state: ChannelState, nick: string): ReadonlyArray<string> => {
  const out: Array<string> = []
  for (const channel of state.channels.values()) if (channel.members.has(nick)) out.push(channel.name)
  return out
}

// Code-unit order on folded names: locale-independent, so two runs on two machines sort alike.
const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

// ---------------------------------------------------------------------------------------------------------------
// Changes the reducer and the actor share

/**
 * Records the key the actor joined with (join_channel's key or the stored one) once `SelfJoined` arrives, so
 * `channelKey` can fill in `-k` for set_channel_modes before any MODE line showed the key.
 */
export const rememberKey = (state: ChannelState, channel: string, key: string | null): ChannelState =>
  modifyChannel(state, channel, (c) => ({ ...c, key }))

/** `f` applied to a joined channel; the state unchanged when we are not in it. */
export const modifyChannel = (
  state: ChannelState,
  channel: string,
  f: (c: JoinedChannel) => JoinedChannel
): ChannelState => (state.channels.has(channel) ? { ...state, channels: state.channels.modify(channel, f) } : state)

