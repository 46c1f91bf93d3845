/**
 * Registration: what a network actor does on an open socket to become and stay itself — the welcome (001) that makes
 * it `connected`, the nick fallback while registering, ISUPPORT, the end of the burst (rejoin the stored channels,
 * restore away, start nick regain), capabilities, and regaining the wanted nick afterwards (IRCv3 MONITOR when
 * offered, else a backing-off timer).
 *
 * Concurrency rule: runs on the actor's dispatcher fiber only (Inbound.ts calls it for the lines that concern it,
 * NetworkActor.ts for the regain and rejoin timers), which alone changes the actor's state.
 */
import { Duration, Effect } from "effect"
import { formatLine } from "../../irc/IrcLine.js"
import type { ISupport } from "../../irc/ISupport.js"
import { joinLines } from "../../irc/JoinLines.js"
import { hasLineBreakingChars, isMiddleParam } from "../../irc/Safety.js"
import type { StoredChannel } from "../../services/networks/Networks.js"
import { ASSUMED_NICKLEN, REJOIN_FALLBACK } from "../ReconnectPolicy.js"
import { type Actor, publish, sameNick, type Session, transition } from "./ActorState.js"
import * as Channels from "./ChannelState.js"
import { closeSession, refuse } from "./Connection.js"
import { send, sendAll, sendNow } from "./Outbound.js"
import { loadChannels, setStoredChannels } from "./Persistence.js"
import { arm, disarm, startTimer } from "./Timers.js"

/**
 * The nick to try after 433 during registration: `nick_`, `nick__`, … while within NICKLEN (30 assumed before
 * ISUPPORT, as soju), then the wanted nick cut short with the attempt number.
 */
export const fallbackNick = (wanted: string, attempt: number, nickLen: number = ASSUMED_NICKLEN): string => {
  const underscores = wanted + "_".repeat(attempt)
  if (underscores.length <= nickLen && attempt <= 3) return underscores
  const suffix = String(attempt)
  return wanted.slice(0, Math.max(1, nickLen - suffix.length)) + suffix
}

const MAX_NICK_ATTEMPTS = 9

/** RPL_WELCOME: registered. A login that was asked for and did not happen is a permanent refusal. */
export const onWelcome = (a: Actor, s: Session, nick: string | undefined, time: number) =>
  Effect.gen(function*() {
    s.registered = true
    s.registeredAt = time
    s.nick = nick ?? s.nick
    disarm(a, "registration")
    if (a.config.sasl !== null && !s.saslSucceeded) {
      // irc-framework registers without SASL when the server offers no `sasl` cap; we asked for a login.
      return yield* refuse(s, "SASL authentication did not happen (the server did not offer SASL)")
    }
    a.lastError = null
    arm(a, "rejoin", time + Duration.toMillis(REJOIN_FALLBACK), { _tag: "RejoinFallback", session: s.id })
    yield* transition(a, "connected", { nick: s.nick })
  })

/** RFC 2812 §5.2: 433/437 while registering — try the next fallback nick, up to MAX_NICK_ATTEMPTS. */
export const nickFallback = (a: Actor, s: Session) =>
  Effect.gen(function*() {
    s.nickAttempts++
    if (s.nickAttempts > MAX_NICK_ATTEMPTS) {
      return yield* closeSession(s, `no free nick after ${MAX_NICK_ATTEMPTS} attempts`, "quit")
    }
    s.nick = fallbackNick(a.wantedNick, s.nickAttempts, s.isupport.nickLen ?? ASSUMED_NICKLEN)
    // A registration line: it may not wait behind anything (nothing of ours is queued before RPL_WELCOME anyway).
    yield* sendNow(s, formatLine({ command: "NICK", params: [s.nick] }))
    yield* Effect.logInfo("nick in use at registration; trying another").pipe(Effect.annotateLogs({ nick: s.nick }))
  })

export const setISupport = (a: Actor, s: Session, next: ISupport) =>
  Effect.suspend(() => {
    const changed = next.caseMapping !== s.isupport.caseMapping
    s.isupport = next
    a.isupport = next
    if (changed) {
      s.channels = Channels.withCaseMapping(s.channels, next.caseMapping)
      s.pendingKeys = s.pendingKeys.withMapping(next.caseMapping)
      a.storedKeys = a.storedKeys.withMapping(next.caseMapping)
    }
    return publish(a)
  })

/** End of the registration burst (376/422, or the fallback timer): rejoin, restore away, start nick regain. */
export const afterBurst = (a: Actor, s: Session) =>
  Effect.gen(function*() {
    if (s.burstDone) return
    s.burstDone = true
    disarm(a, "rejoin")
    yield* loadChannels(a, s)
    if (a.awayMessage !== null && !hasLineBreakingChars(a.awayMessage)) {
      yield* send(a, s, formatLine({ command: "AWAY", params: [a.awayMessage] }))
    }
    yield* startRegain(a, s)
  })

/** The stored channels arrived (Persistence.loadChannels): join those we are not in yet. */
export const onChannelsLoaded = (a: Actor, s: Session, channels: ReadonlyArray<StoredChannel>) =>
  Effect.gen(function*() {
    setStoredChannels(a, channels)
    const missing = channels.filter((c) => !Channels.isJoined(s.channels, c.name))
    yield* sendAll(a, s, joinLines(missing))
    if (missing.length > 0) {
      yield* Effect.logInfo("rejoining stored channels").pipe(Effect.annotateLogs({ channels: missing.length }))
    }
  })

/** Values kept per connection: a server that offers more is not believed past this (CAP LS is the server's to size). */
const CAP_VALUES = 64
const CAP_VALUE_BYTES = 512

/**
 * CAP ACK/DEL/NEW: which capabilities are on (echo-message decides who stores our own messages), and the values LS
 * and NEW gave them (draft/multiline's limits, which a batch sent upstream must keep: Commands.ts). Once registered,
 * a change is published: the browser's `features` follow the capabilities (ActorState.featuresOf).
 */
export const onCap = (a: Actor, s: Session, p: ReadonlyArray<string>) => {
  const sub = (p[1] ?? "").toUpperCase()
  const caps = (p[p.length - 1] ?? "").split(" ").filter((c) => c !== "")
  if (sub === "LS" || sub === "NEW") {
    for (const cap of caps) {
      const eq = cap.indexOf("=")
      if (eq <= 0 || cap.length > CAP_VALUE_BYTES) continue
      const values = s.capValues ?? new Map<string, string>()
      if (values.size >= CAP_VALUES && !values.has(cap.slice(0, eq))) continue
      values.set(cap.slice(0, eq), cap.slice(eq + 1))
      s.capValues = values
    }
    return Effect.void
  }
  if (sub === "ACK") {
    for (const cap of caps) {
      if (cap.startsWith("-")) s.caps.delete(cap.slice(1))
      else s.caps.add(cap.split("=")[0] ?? cap)
    }
  } else if (sub === "DEL") {
    for (const cap of caps) s.caps.delete(cap.split("=")[0] ?? cap)
  } else return Effect.void
  return s.registered ? publish(a) : Effect.void
}

// ---- the wanted nick ----

const stopRegain = (a: Actor, s: Session) =>
  Effect.gen(function*() {
    disarm(a, "regain")
    if (s.monitoring !== null) {
      yield* send(a, s, formatLine({ command: "MONITOR", params: ["-", s.monitoring] }))
      s.monitoring = null
    }
  })

const scheduleRegain = (a: Actor, s: Session) =>
  Effect.flatMap(a.regain.next, (delay) => startTimer(a, "regain", delay, { _tag: "RegainDue", session: s.id }))

/** Our nick is not the wanted one: watch for it with MONITOR when offered, else retry on a backing-off timer. */
const startRegain = (a: Actor, s: Session) =>
  Effect.gen(function*() {
    if (sameNick(a, s.nick, a.wantedNick) || !isMiddleParam(a.wantedNick)) return
    if (s.isupport.monitor !== undefined) {
      // IRCv3 monitor: the server answers at once (730 online / 731 offline) and again on every change.
      s.monitoring = a.wantedNick
      yield* send(a, s, formatLine({ command: "MONITOR", params: ["+", a.wantedNick] }))
    } else {
      yield* a.regain.reset
      yield* scheduleRegain(a, s)
    }
  })

export const onRegainDue = (a: Actor, s: Session) =>
  !s.registered || sameNick(a, s.nick, a.wantedNick)
    ? Effect.void
    : Effect.zipRight(takeWantedNick(a, s), scheduleRegain(a, s))

const takeWantedNick = (a: Actor, s: Session) => send(a, s, formatLine({ command: "NICK", params: [a.wantedNick] }))

/** Someone gave up a nick (QUIT, NICK away from it, MONITOR offline): take it now if it is the one we want. */
export const onNickFreed = (a: Actor, s: Session, freed: string) =>
  s.registered && sameNick(a, freed, a.wantedNick) && !sameNick(a, s.nick, a.wantedNick)
    ? takeWantedNick(a, s)
    : Effect.void

/** RPL_MONOFFLINE: `<client> :target[!user@host],...` */
export const onMonitorOffline = (a: Actor, s: Session, targets: string) => {
  const wanted = targets.split(",").map((t) => t.split("!")[0] ?? t).find((t) => sameNick(a, t, a.wantedNick))
  return wanted === undefined ? Effect.void : onNickFreed(a, s, wanted)
}

export const onNick = (a: Actor, s: Session, from: string | undefined, to: string | undefined) =>
  Effect.gen(function*() {
    if (from === undefined || to === undefined) return
    if (sameNick(a, from, s.nick)) {
      s.nick = to
      if (s.requestedNick !== null && sameNick(a, s.requestedNick, to)) {
        // set_nick succeeded: this is the nick to keep (and regain) from now on.
        a.wantedNick = to
        s.requestedNick = null
      }
      if (sameNick(a, to, a.wantedNick)) yield* stopRegain(a, s)
      else if (s.burstDone && s.monitoring === null) yield* startRegain(a, s)
      yield* Effect.logInfo("nick changed").pipe(Effect.annotateLogs({ from, to }))
      return yield* publish(a)
    }
    yield* onNickFreed(a, s, from)
  })
