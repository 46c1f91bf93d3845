/**
 * LiveView: what the member's open tabs are told about this network, so a chat client can draw its channels without
 * polling (docs/decisions/web.md "The browser WebSocket"): the connection (`network`, from every status the actor
 * publishes), the channels the member is in (`channel`), each member joining, leaving or changing prefix or away
 * state (`member`), topics (`topic`) and the member's own away state (`away`).
 *
 * The changes are found by comparing the channel state after each input with the one last told (`Actor.viewed`):
 * the state is an immutable value whose maps share structure, so a line that changed nothing costs one reference
 * comparison, and only a channel whose record changed is compared member by member. Nothing is compared while the
 * account has no open tab (`ActorEvents.listening`). A channel whose NAMES reply just ended, or that changed in many
 * members at once (a netsplit), is sent whole instead, as `channel` with every member.
 *
 * `view` draws the whole network for one new tab, through the tab's own sink, from the dispatcher fiber: every
 * change told afterwards is published from that same fiber, so the tab sees the snapshot and then the changes in
 * the order they happened.
 *
 * Concurrency rule: runs on the actor's dispatcher fiber only; `ActorEvents` must not block.
 */
import { Deferred, Effect } from "effect"
import type { CaseMappedMap } from "../../irc/CaseMapping.js"
import { type ISupport, prefixSymbols, rankPrefixModes } from "../../irc/ISupport.js"
import { toIsoTime } from "../../schema/Ids.js"
import type { Member } from "../../schema/Member.js"
import type { ChannelView, NetworkEvent } from "../../schema/NetworkEvent.js"
import { type Actor, featuresOf } from "./ActorState.js"
import * as Channels from "./ChannelState.js"

/** Beyond this many member changes in one channel at once, the channel is sent whole. */
const WHOLE_CHANNEL_AFTER = 32

const memberOf = (state: Channels.ChannelState, isupport: ISupport, nick: string, modes: Channels.MemberModes): Member => ({
  nick,
  prefix: prefixSymbols(isupport, modes),
  modes: rankPrefixModes(isupport, modes),
  away: state.away.has(nick)
})

const channelView = (networkId: number, state: Channels.ChannelState, isupport: ISupport, name: string): ChannelView => {
  const joined = state.channels.get(name)!
  return {
    type: "channel",
    networkId,
    channel: joined.name,
    joined: true,
    topic: {
      topic: joined.topic,
      setBy: joined.topicSetBy,
      setAt: joined.topicSetAt === null ? null : toIsoTime(joined.topicSetAt)
    },
    members: Channels.members(state, name, isupport) ?? []
  }
}

const sameModes = (a: Channels.MemberModes, b: Channels.MemberModes) =>
  a === b || (a.length === b.length && a.every((m, i) => m === b[i]))

/** Nicks whose away state differs between two away maps. */
const awayChanges = (before: CaseMappedMap<string>, after: CaseMappedMap<string>): ReadonlyArray<string> => {
  if (before === after) return []
  const changed: Array<string> = []
  for (const [nick] of after) if (!before.has(nick)) changed.push(nick)
  for (const [nick] of before) if (!after.has(nick)) changed.push(nick)
  return changed
}

/** The events that take a tab from `before` to `after` (either may be no connection at all). */
export const diff = (
  networkId: number,
  before: Channels.ChannelState | undefined,
  after: Channels.ChannelState | undefined,
  isupport: ISupport,
  selfNick: string | undefined
): ReadonlyArray<NetworkEvent> => {
  const events: Array<NetworkEvent> = []
  if (before !== undefined) {
    for (const [name] of before.channels) {
      if (after === undefined || !after.channels.has(name)) events.push({ type: "channel", networkId, channel: name, joined: false })
    }
  }
  if (after === undefined) {
    if (before !== undefined && selfNick !== undefined && before.away.has(selfNick)) events.push({ type: "away", networkId, away: false })
    return events
  }
  const awayChanged = before === undefined ? [] : awayChanges(before.away, after.away)
  for (const [name, channel] of after.channels) {
    const old = before?.channels.get(name)
    // Joined, renamed, or a NAMES reply just ended (RPL_ENDOFNAMES replaced the member list): drawn whole.
    if (old === undefined || old.name !== channel.name || (old.pendingNames !== null && channel.pendingNames === null)) {
      events.push(channelView(networkId, after, isupport, name))
      continue
    }
    if (old.topic !== channel.topic || old.topicSetBy !== channel.topicSetBy || old.topicSetAt !== channel.topicSetAt) {
      events.push({
        type: "topic",
        networkId,
        channel: channel.name,
        topic: channel.topic,
        setBy: channel.topicSetBy,
        setAt: channel.topicSetAt === null ? null : toIsoTime(channel.topicSetAt)
      })
    }
    const members: Array<NetworkEvent> = []
    const told = new Set<string>()
    if (old.members !== channel.members) {
      // Departures first: a NICK that only changes case (bob → Bob) is the old spelling leaving, then the new one
      // arriving, and a client that keys members by folded nick must not lose the new one.
      for (const [nick] of old.members) {
        if (channel.members.originalName(nick) !== nick) {
          members.push({ type: "member", networkId, channel: channel.name, nick, member: null })
        }
      }
      for (const [nick, modes] of channel.members) {
        const was = old.members.get(nick)
        if (was === undefined || old.members.originalName(nick) !== nick || !sameModes(was, modes)) {
          told.add(nick)
          members.push({ type: "member", networkId, channel: channel.name, nick, member: memberOf(after, isupport, nick, modes) })
        }
      }
    }
    for (const nick of awayChanged) {
      const modes = channel.members.get(nick)
      const shown = channel.members.originalName(nick)
      if (modes === undefined || shown === undefined || told.has(shown)) continue
      members.push({ type: "member", networkId, channel: channel.name, nick: shown, member: memberOf(after, isupport, shown, modes) })
    }
    if (members.length > WHOLE_CHANNEL_AFTER) events.push(channelView(networkId, after, isupport, name))
    else events.push(...members)
  }
  if (selfNick !== undefined) {
    const wasAway = before !== undefined && before.away.has(selfNick)
    const isAway = after.away.has(selfNick)
    if (wasAway !== isAway) events.push({ type: "away", networkId, away: isAway })
  }
  return events
}

const isupportOf = (a: Actor) => a.session?.isupport ?? a.isupport

/** After each input: tells the account's tabs what the input changed in the channels, if any tab listens. */
export const observe = (a: Actor): void => {
  const after = a.session?.channels
  const before = a.viewed
  if (after === before) return
  a.viewed = after
  const events = a.deps.events
  if (events === undefined || !events.listening(a.config.accountId)) return
  const told = diff(a.networkId, before, after, isupportOf(a), a.session?.nick)
  if (told.length > 0) events.publish(a.config.accountId, told)
}

/** The whole network for one new tab, delivered from the dispatcher fiber; `done` completes once it is. */
export const view = (a: Actor, deliver: (events: ReadonlyArray<NetworkEvent>) => void, done: Deferred.Deferred<void>) =>
  Effect.suspend(() => {
    observe(a)
    const s = a.session
    const state = a.viewed
    const events: Array<NetworkEvent> = [{
      type: "network",
      network: {
        id: a.networkId,
        name: a.config.name,
        state: a.state,
        nick: a.state === "connected" && s !== undefined ? s.nick : null,
        features: featuresOf(a)
      }
    }]
    if (state !== undefined && s !== undefined) {
      events.push({ type: "away", networkId: a.networkId, away: state.away.has(s.nick) })
      for (const name of state.channels.names()) events.push(channelView(a.networkId, state, isupportOf(a), name))
    }
    deliver(events)
    return Deferred.succeed(done, undefined)
  })
