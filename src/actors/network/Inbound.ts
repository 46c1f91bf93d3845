/**
 * Inbound: the reducer of what the transport delivers for the current connection — socket opened, each line the
 * server sends, SASL failure, socket closed. A line is first offered to Belay's own queries, then stored as history
 * from the state before it (a QUIT must still find the user's channels), then reduced into the channel state
 * (ChannelState.ts) and the connection's own state (Registration.ts), and what it did is acted on.
 *
 * Replies to Belay's own queries answer them and are not history (the interface, get_mode_list: "reply goes only to
 * the caller, nothing is written to the server buffer"): list entries, end numerics, refusals and PONGs inside a
 * get_mode_list fence (ModeListRequests.ts), and the replies to the `WHO #chan` the actor sends after NAMES when the
 * server has no away-notify (they only feed the away state; storing them would fill the server buffer with a line
 * per member on every join). Those WHOs go out one at a time, so a reply is matched by its channel alone.
 *
 * End-to-end encryption: inbound FiSH lines are stored opened — the plaintext, marked decrypted or undecryptable
 * (E2eCodec.ts).
 *
 * Concurrency rule: runs on the actor's dispatcher fiber only, which alone changes the actor's state; the transport
 * events reach it through the inbox, tagged with their session, and those of an ended session never get here.
 */
import { Effect } from "effect"
import { equalsFolded } from "../../irc/CaseMapping.js"
import { formatLine, type IrcLine, parseLine } from "../../irc/IrcLine.js"
import { applyISupport } from "../../irc/ISupport.js"
import { Numeric } from "../../irc/Numerics.js"
import type { TransportEvent } from "../IrcTransport.js"
import { permanentRefusal, WHO_TIMEOUT } from "../ReconnectPolicy.js"
import { type Actor, now, sameNick, type Session } from "./ActorState.js"
import { applyLine } from "./ChannelReducer.js"
import * as Channels from "./ChannelState.js"
import { armKeepalive, onClosed, refuse } from "./Connection.js"
import * as E2e from "./E2eCodec.js"
import { channelOfTarget, messagesFor, redactionFor } from "./History.js"
import * as ModeListWaiters from "./ModeListWaiters.js"
import * as ModeLists from "./ModeListRequests.js"
import { send } from "./Outbound.js"
import { append, forgetChannel, historyContext, isOwnDelivery, onSelfJoin, trackKey } from "./Persistence.js"
import {
  afterBurst,
  nickFallback,
  onCap,
  onMonitorOffline,
  onNick,
  onNickFreed,
  onWelcome,
  setISupport
} from "./Registration.js"
import { disarm, startTimer } from "./Timers.js"

export const onTransport = (a: Actor, s: Session, event: TransportEvent) =>
  Effect.gen(function*() {
    switch (event._tag) {
      case "Opened":
        s.lastTrafficAt = yield* now
        return armKeepalive(a, s)
      case "Line": {
        const line = parseLine(event.line)
        return line === undefined ? undefined : yield* onLine(a, s, line, event.line)
      }
      case "SaslFailed":
        return yield* refuse(
          s,
          `SASL authentication failed (${event.reason}${event.message !== null ? `: ${event.message}` : ""})`
        )
      case "Closed":
        return yield* onClosed(a, s, event.error)
      case "Refused":
        // No socket was opened: the destination guard refused the address. Offline until asked again, like a
        // refused registration (docs/decisions/hosting.md "One destination guard").
        s.permanent ??= event.reason
        return yield* onClosed(a, s, null)
    }
  })

const onLine = (a: Actor, s: Session, line: IrcLine, raw: string) =>
  Effect.gen(function*() {
    const time = yield* now
    s.lastTrafficAt = time
    if (s.pingSentAt !== null) {
      // The server spoke: the next PING is due 90 s from now, not at the drop deadline.
      s.pingSentAt = null
      armKeepalive(a, s)
    }
    // Replies to our own queries answer them and go no further (see the module comment).
    if (yield* consumeOwnReply(a, s, line, time)) return
    // History first, from the state before this line.
    const context = historyContext(a, s, time)
    const stored = raw.replace(/[\r\n]+$/, "")
    // Our own message to our own nick was stored as sent (Persistence.storeOwn): its delivery to us is that message.
    if (!isOwnDelivery(s, line)) {
      yield* append(
        a,
        E2e.historyOfInbound(a.e2eKeys, s.isupport, s.nick, line, (l) => messagesFor(context, l, stored))
      )
    }
    // Published once its rows are appended, so that it can name them (LineRows.ts: a stored channel event goes to IRC
    // clients with its row's msgid).
    a.deps.events?.line?.(a.config.accountId, a.networkId, stored, time)
    // After the rows appended before it (MessageRedactions.ts); the writer only queues it.
    const redaction = redactionFor(context, line)
    if (redaction !== undefined) yield* a.deps.store.redact(redaction)

    const p = line.params
    const nick = line.source?.nick
    const isSelf = nick !== undefined && sameNick(a, nick, s.nick)

    const refusal = permanentRefusal(line.command, p, s.registered)
    if (refusal !== undefined) return yield* refuse(s, refusal)

    yield* applyChannelLine(a, s, line, time)

    switch (line.command) {
      case "001":
        return yield* onWelcome(a, s, p[0], time)
      case "005":
        return yield* setISupport(a, s, applyISupport(s.isupport, p))
      case "376":
      case "422":
        return yield* afterBurst(a, s)
      case "433":
      case "437":
        // RFC 2812 §5.2: nick in use / temporarily unavailable. After registration it only answers a change.
        return s.registered ? undefined : yield* nickFallback(a, s)
      case "900":
      case "903":
        s.saslSucceeded = true
        return
      case "396":
        if (p[1] !== undefined) s.host = p[1]
        return
      case "ERROR":
        s.serverError = p[0] ?? "ERROR"
        return
      case "CAP":
        return yield* onCap(a, s, p)
      case "TAGMSG":
        return onTagmsg(a, s, line)
      case "JOIN":
        // Membership is ChannelState's (applied above); our own JOIN also tells us our user and host.
        if (isSelf) {
          if (line.source?.user !== undefined) s.user = line.source.user
          if (line.source?.host !== undefined) s.host = line.source.host
        }
        return
      case "QUIT":
        // The holder of our wanted nick left: take it now rather than at the next timer.
        return nick === undefined ? undefined : yield* onNickFreed(a, s, nick)
      case "NICK":
        return yield* onNick(a, s, nick, p[0])
      case "731":
        return yield* onMonitorOffline(a, s, p[1] ?? "")
      default:
        return
    }
  })

// ---- typing (IRCv3 typing) ----

const TYPING_STATES: ReadonlySet<string> = new Set(["active", "paused", "done"])

/**
 * An upstream TAGMSG with `+typing` from someone else: told live to the member's tabs as a `typing` frame, never
 * stored (docs/contract.md "The member's browser surface"). The member's IRC clients get the line itself from the
 * feed (MessageLines.relayedLine, with message-tags). Nothing is computed while the account has no tab open.
 */
const onTagmsg = (a: Actor, s: Session, line: IrcLine) => {
  const state = line.tags.get("+typing")
  const nick = line.source?.nick
  const to = line.params[0]
  const events = a.deps.events
  if (state === undefined || !TYPING_STATES.has(state) || nick === undefined || to === undefined) return
  if (events === undefined || sameNick(a, nick, s.nick) || !events.listening(a.config.accountId)) return
  const channel = channelOfTarget(s.isupport, to)
  const target = channel === undefined ? nick : (Channels.channelName(s.channels, channel) ?? channel)
  events.publish(a.config.accountId, [{
    type: "typing",
    networkId: a.networkId,
    target,
    nick,
    state: state as "active" | "paused" | "done"
  }])
}

// ---- channel state ----

const channelContext = (s: Session, time: number): Channels.ChannelContext => ({
  selfNick: s.nick,
  isupport: s.isupport,
  caseMapping: s.isupport.caseMapping,
  now: new Date(time)
})

/** Reduces a line into the channel state (seen with our nick from before it) and acts on what it did. */
const applyChannelLine = (a: Actor, s: Session, line: IrcLine, time: number) =>
  Effect.gen(function*() {
    const update = applyLine(s.channels, line, channelContext(s, time))
    s.channels = update.state
    for (const event of update.events) {
      switch (event._tag) {
        case "SelfJoined":
          yield* onSelfJoin(a, s, event.channel)
          break
        case "SelfLeft":
          // Parting is the account's intent to be out; a KICK is not, so a kicked channel is still rejoined.
          if (event.how === "part") yield* forgetChannel(a, event.channel)
          break
        case "KeyChanged":
          yield* trackKey(a, event.channel, event.key)
          break
        case "NamesComplete":
          // IRCv3 away-notify keeps away state current by itself; without it (ngircd), WHO's H/G flags say it.
          if (!s.caps.has("away-notify")) yield* queueWho(a, s, event.channel)
          break
        default:
          break
      }
    }
  })

// ---- the replies to our own queries ----

/** One automatic WHO at a time (irc-framework serialises WHO too): its 315 then says which one ended. */
const queueWho = (a: Actor, s: Session, channel: string) =>
  Effect.suspend(() => {
    const same = (c: string) => equalsFolded(s.isupport.caseMapping, c, channel)
    if ((s.whoInFlight !== null && same(s.whoInFlight)) || s.whoQueue.some(same)) return Effect.void
    s.whoQueue = [...s.whoQueue, channel]
    return sendNextWho(a, s)
  })

const sendNextWho = (a: Actor, s: Session) =>
  Effect.gen(function*() {
    while (s.whoInFlight === null) {
      const [next, ...rest] = s.whoQueue
      if (next === undefined) return
      s.whoQueue = rest
      if (!Channels.isJoined(s.channels, next)) continue
      s.whoInFlight = next
      // Its timeout counts from when the server can see it, not from when it joined the queue.
      yield* send(
        a,
        s,
        formatLine({ command: "WHO", params: [next] }),
        {
          sent: Effect.suspend(() =>
            s.whoInFlight === next ? startTimer(a, "who", WHO_TIMEOUT, { _tag: "WhoTimeout", session: s.id }) : Effect.void
          )
        }
      )
    }
  })

/** The WHO in flight got no end in time: its late replies, if any, are stored as ordinary numerics. */
export const onWhoTimeout = (a: Actor, s: Session) =>
  Effect.suspend(() => {
    if (s.whoInFlight === null) return Effect.void
    s.whoInFlight = null
    return sendNextWho(a, s)
  })

/**
 * True when the line answers one of our own queries, which it then answers: a get_mode_list fence (PONG, list
 * entry, end numeric or refusal: ModeListRequests.onLine) or the automatic WHO (352 feeds the away state, 315
 * lets the next WHO go). Such a line is not history and changes nothing else.
 */
const consumeOwnReply = (a: Actor, s: Session, line: IrcLine, time: number) =>
  Effect.gen(function*() {
    const outcome = ModeLists.onLine(s.modeLists, line, { caseMapping: s.isupport.caseMapping, isupport: s.isupport })
    s.modeLists = outcome.state
    for (const { requestId, result } of outcome.completed) {
      yield* ModeListWaiters.answer(a, requestId, ModeLists.outcome(result))
    }
    if (outcome.consumed) return true

    const who = s.whoInFlight
    const subject = line.params[1]
    if (who === null || subject === undefined || !equalsFolded(s.isupport.caseMapping, subject, who)) return false
    if (line.command === Numeric.RPL_WHOREPLY) {
      s.channels = applyLine(s.channels, line, channelContext(s, time)).state
      return true
    }
    if (line.command === Numeric.RPL_ENDOFWHO) {
      s.whoInFlight = null
      disarm(a, "who")
      yield* sendNextWho(a, s)
      return true
    }
    return false
  })
