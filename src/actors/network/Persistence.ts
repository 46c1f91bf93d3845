/**
 * Persistence: what a network actor keeps beyond its connection — the history it appends to the MessageWriter, and
 * the network's stored side in Networks: the channels it rejoins with their keys, `enabled`, the away message.
 *
 * History goes straight to MessageWriter.append, which never waits for the database. Repository writes go to SQL and
 * would hold the dispatcher through an outage; so they are queued in `Actor.unsaved` and run in order by a writer
 * fiber that exists only while there is something to write (an idle network keeps no fiber for it). The stored
 * channels are read after registration by a reader fiber of its own, which keeps retrying through an outage while
 * the connection lives and hands what it read to the dispatcher through the inbox.
 *
 * Concurrency rule: everything here runs on the actor's dispatcher fiber, which alone changes the actor's state,
 * except the writer and reader fibers: the writer shares `unsaved`/`writing` with the dispatcher one synchronous step
 * at a time, and the reader only enqueues.
 */
import { Effect, Fiber, Schedule } from "effect"
import { CaseMappedMap, equalsFolded } from "../../irc/CaseMapping.js"
import { type IrcLine, parseLine } from "../../irc/IrcLine.js"
import { serverBufferTarget } from "../../schema/Ids.js"
import type { NewMessage } from "../../services/history/MessageRow.js"
import type { StoredChannel } from "../../services/networks/Networks.js"
import { CHANNELS_RELOAD, PERSIST_DRAIN } from "../ReconnectPolicy.js"
import { type Actor, mapping, now, type Session } from "./ActorState.js"
import * as Channels from "./ChannelState.js"
import { type HistoryContext, ownMessages } from "./History.js"

// ---- repository writes, off the dispatcher ----

/** Queues a repository write; forks the writer when it is not running. */
export const persist = (a: Actor, effect: Effect.Effect<void>) =>
  Effect.suspend(() => {
    a.unsaved.push(effect)
    if (a.writing) return Effect.void
    a.writing = true
    return Effect.asVoid(Effect.forkIn(writeUnsaved(a), a.scope))
  })

/**
 * Writes the list in order. A write leaves the list once done, so one interrupted by shutdown is written again by
 * the drain (every write is idempotent); one that fails is logged and dropped, the connection goes on.
 */
const writeUnsaved = (a: Actor): Effect.Effect<void> =>
  Effect.suspend(() => {
    const next = a.unsaved[0]
    if (next === undefined) {
      a.writing = false
      return Effect.void
    }
    return next.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("could not save network state; continuing", cause)),
      Effect.zipRight(Effect.suspend(() => {
        a.unsaved.shift()
        return writeUnsaved(a)
      }))
    )
  })

/**
 * At shutdown, after the writer was interrupted: what it had not written yet (disconnect's `enabled = false`, a
 * channel just joined) is written now, briefly bounded so a dead database cannot hold the shutdown.
 */
export const drainUnsaved = (a: Actor) =>
  Effect.suspend(() => Effect.forEach(a.unsaved.splice(0), (effect) => effect, { discard: true })).pipe(
    Effect.interruptible,
    Effect.timeout(PERSIST_DRAIN),
    Effect.catchAllCause((cause) => Effect.logWarning("unsaved network state lost at shutdown", cause)),
    Effect.annotateLogs({ networkId: a.networkId })
  )

// ---- history ----

export const append = (a: Actor, messages: ReadonlyArray<NewMessage>) =>
  Effect.forEach(messages, a.deps.store.append, { discard: true })

export const historyContext = (a: Actor, s: Session, time: number): HistoryContext => ({
  networkId: a.networkId,
  selfNick: s.nick,
  registered: s.registered,
  isupport: s.isupport,
  channels: s.channels,
  lastModeChannel: s.lastModeChannel,
  time: new Date(time)
})

/** Own messages to our own nick awaiting the server's delivery of them (Session.selfDeliveries). */
export const SELF_DELIVERIES = 64

/** What identifies our PRIVMSG or NOTICE to our own nick among those awaiting delivery; undefined for other lines. */
const selfDeliveryKey = (s: Session, line: IrcLine | undefined): string | undefined => {
  if (line === undefined || (line.command !== "PRIVMSG" && line.command !== "NOTICE")) return undefined
  const [targets, text] = line.params
  if (targets === undefined || text === undefined) return undefined
  const own = targets.split(",").some((t) => equalsFolded(s.isupport.caseMapping, t, s.nick))
  return own ? `${line.command} ${text}` : undefined
}

/**
 * Our own lines as history, unless the server echoes them (echo-message), which are then stored from the echo. A
 * message to our own nick is also delivered to us by the server (RFC 2812 §3.3.1), as well as echoed: whichever copy
 * comes first is the message, the other is not another (isOwnDelivery).
 */
export const storeOwn = (a: Actor, s: Session, lines: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const echoed = s.caps.has("echo-message")
    for (const raw of lines) {
      const key = selfDeliveryKey(s, parseLine(raw))
      if (key === undefined) continue
      if (s.selfDeliveries.length >= SELF_DELIVERIES) s.selfDeliveries.shift()
      s.selfDeliveries.push({ key, stored: !echoed, msgid: undefined })
    }
    if (echoed) return
    yield* append(a, ownMessages(historyContext(a, s, yield* now), lines))
  })

/**
 * Whether an inbound line is a copy of a message we sent our own nick that is already history (storeOwn): consumed,
 * and not stored again. Without echo-message the message was stored as sent and the server's delivery is that copy.
 * With echo-message the server sends two, the delivery and the echo (IRCv3 echo-message; a server may also send one):
 * the first is stored, remembered with its msgid, and the second is consumed, found by that msgid (message-tags: it
 * names the message, so two sends of one text stay two) or, from a server without msgids, by its text. An entry whose
 * copy came with a msgid consumes no other, so one that a server sending a single copy leaves behind takes nothing.
 */
export const isOwnDelivery = (s: Session, line: IrcLine): boolean => {
  if (s.selfDeliveries.length === 0 || line.source === undefined) return false
  if (!equalsFolded(s.isupport.caseMapping, line.source.nick, s.nick)) return false
  const key = selfDeliveryKey(s, line)
  if (key === undefined) return false
  const msgid = line.tags.get("msgid")
  const take = (i: number) => i !== -1 && s.selfDeliveries.splice(i, 1).length === 1
  if (msgid !== undefined && take(s.selfDeliveries.findIndex((d) => d.stored && d.msgid === msgid))) return true
  const first = s.selfDeliveries.find((d) => !d.stored && d.key === key)
  if (first !== undefined) {
    first.stored = true
    first.msgid = msgid
    return false
  }
  return take(s.selfDeliveries.findIndex((d) => d.stored && d.msgid === undefined && d.key === key))
}

/** A note in the server buffer about the connection itself (lost, refused), so history explains the gaps. */
export const connectionNote = (a: Actor, text: string) =>
  Effect.flatMap(now, (time) =>
    a.deps.store.append({
      networkId: a.networkId,
      target: serverBufferTarget(a.networkId),
      targetFolded: serverBufferTarget(a.networkId),
      bufferKind: "server",
      time: new Date(time),
      kind: "error",
      nick: null,
      text,
      numeric: null,
      self: false,
      raw: null
    }))

// ---- the channels we rejoin, with their keys ----

/** Our own JOIN came back: remember the channel (and an explicitly given key) for the next rejoin. */
export const onSelfJoin = (a: Actor, s: Session, channel: string) =>
  Effect.gen(function*() {
    const explicitKey = s.pendingKeys.get(channel)
    s.pendingKeys = s.pendingKeys.remove(channel)
    // The key we joined with is the channel's key until a MODE says otherwise: set_channel_modes' bare `-k`.
    s.channels = Channels.rememberKey(s.channels, channel, explicitKey ?? a.storedKeys.get(channel) ?? null)
    if (explicitKey !== undefined) {
      a.storedKeys = a.storedKeys.set(channel, explicitKey)
      yield* persist(a, a.deps.repo.rememberChannel(mapping(a), channel, explicitKey))
    } else if (!a.storedKeys.has(channel)) {
      a.storedKeys = a.storedKeys.set(channel, null)
      yield* persist(a, a.deps.repo.rememberChannel(mapping(a), channel))
    }
  })

export const forgetChannel = (a: Actor, channel: string) =>
  Effect.suspend(() => {
    if (!a.storedKeys.has(channel)) return Effect.void
    a.storedKeys = a.storedKeys.remove(channel)
    return persist(a, a.deps.repo.forgetChannel(mapping(a), channel))
  })

/** Keys follow `MODE +k/-k` for the channels we rejoin, as ZNC and The Lounge keep them. */
export const trackKey = (a: Actor, channel: string, seen: string | null) =>
  Effect.suspend(() => {
    // `+k *` is a server hiding the key from us (ChannelState reports `-k`, whatever its param, as null).
    if (!a.storedKeys.has(channel) || seen === "*" || a.storedKeys.get(channel) === seen) return Effect.void
    a.storedKeys = a.storedKeys.set(channel, seen)
    return persist(a, a.deps.repo.rememberChannel(mapping(a), channel, seen))
  })

/** What was read from the store replaces the dispatcher's copy of the stored channels. */
export const setStoredChannels = (a: Actor, channels: ReadonlyArray<StoredChannel>) => {
  a.storedKeys = CaseMappedMap.fromEntries(mapping(a), channels.map((c) => [c.name, c.key] as const))
}

// ---- reading the stored channels after registration ----

/** Reading the stored channels during an outage: every CHANNELS_RELOAD while the connection lives. */
const CHANNELS_SCHEDULE = Schedule.spaced(CHANNELS_RELOAD)

/** Reads the stored channels on a fiber of its own; they arrive as `ChannelsLoaded` for this session. */
export const loadChannels = (a: Actor, s: Session) =>
  Effect.zipRight(
    stopChannelsReader(a),
    Effect.flatMap(Effect.forkIn(readChannels(a, s.id), a.scope), (reader) =>
      Effect.sync(() => {
        a.channelsReader = reader
      }))
  )

const readChannels = (a: Actor, session: number) =>
  a.deps.repo.channels.pipe(
    // Networks turns SQL errors into defects; during an outage keep trying every CHANNELS_RELOAD.
    Effect.sandbox,
    Effect.tapError((cause) => Effect.logWarning("could not read the stored channels; retrying", cause)),
    Effect.retry({ schedule: CHANNELS_SCHEDULE }),
    Effect.flatMap((channels) => a.inbox.offer({ _tag: "ChannelsLoaded", session, channels })),
    Effect.ignore
  )

export const stopChannelsReader = (a: Actor) =>
  Effect.suspend(() => {
    const reader = a.channelsReader
    a.channelsReader = undefined
    // Not awaited: the dispatcher never waits on the database, and a late ChannelsLoaded names an old session.
    return reader === undefined ? Effect.void : Fiber.interruptFork(reader)
  })
