/**
 * Outbound: a connection's outgoing lines, paced so the IRC server never sees a flood (RFC 1459 §8.10;
 * docs/decisions/irc-connections.md "Outbound flood control"). Every line the actor writes goes through here, in order, behind the
 * lines already waiting; the connection's TokenBucket lets FLOOD_BURST go at once and then one every FLOOD_INTERVAL,
 * and the rest wait in the queue until the "send" timer says the bucket holds a token again.
 *
 * - A command first asks for `room`: when its lines would not fit behind those waiting (SEND_QUEUE_LINES), it fails
 *   with SendQueueFull and nothing of it is sent; a command that could never fit is invalid-arguments.
 * - The actor's own lines (rejoin, WHO, away, nick regain) are queued whatever the length: dropping them would leave
 *   the connection wrong, and they are few.
 * - Lines that may not wait jump the queue (`sendKeepalive`, `sendNow`): the keepalive PING and a nick while
 *   registering. They still count against the bucket. The PONGs, CAP and registration lines irc-framework writes
 *   itself never pass here, so a long send never starves them.
 * - What must happen when a line actually goes (storing our own message, starting a reply's timeout) is its `sent`
 *   effect, run as it is written: history shows what was sent, when it was sent, and a deadline counts from the
 *   moment the server could see the query.
 * - The queue belongs to the Session: when the connection ends, the lines still waiting are dropped (and logged).
 *
 * Concurrency rule: runs on the actor's dispatcher fiber only, which alone changes the Session; the "send" timer's
 * expiry comes back through the inbox (SendDue). Time comes from Effect's Clock, so tests pace it with TestClock.
 */
import { Duration, Effect } from "effect"
import { InvalidArguments, SendQueueFull } from "../../schema/ToolErrors.js"
import { FLOOD_BURST, FLOOD_INTERVAL, SEND_QUEUE_LINES } from "../ReconnectPolicy.js"
import { type Actor, now, type Session } from "./ActorState.js"
import * as E2e from "./E2eCodec.js"
import type { Outbound, QueuedLine, SendOptions } from "./OutboundState.js"
import { arm } from "./Timers.js"
import * as TokenBucket from "./TokenBucket.js"

export type { Outbound, QueuedLine, SendOptions }

export const RATE: TokenBucket.TokenBucketRate = { burst: FLOOD_BURST, intervalMs: Duration.toMillis(FLOOD_INTERVAL) }

export const make = (): Outbound => ({ bucket: TokenBucket.full, queue: [] })

/** Lines that would wait after `lines` more were handed over at `time`. */
const waitingAfter = (out: Outbound, lines: number, time: number) =>
  out.queue.length === 0 ? Math.max(0, lines - TokenBucket.available(RATE, out.bucket, time)) : out.queue.length + lines

/**
 * Whether a command's `lines` fit behind those waiting: else SendQueueFull (nothing is sent; try again later), or
 * InvalidArguments when they could never fit, however empty the queue.
 */
export const room = (a: Actor, s: Session, lines: number): Effect.Effect<void, SendQueueFull | InvalidArguments> =>
  Effect.flatMap(now, (time): Effect.Effect<void, SendQueueFull | InvalidArguments> => {
    if (lines > SEND_QUEUE_LINES) {
      return Effect.fail(
        new InvalidArguments({
          message: `this would be ${lines} IRC lines, and at most ${SEND_QUEUE_LINES} can wait to be sent at once ` +
            `(the server's flood limit paces them): send it in smaller parts`
        })
      )
    }
    const out = s.outbound
    if (waitingAfter(out, lines, time) <= SEND_QUEUE_LINES) return Effect.void
    const drainedAt = TokenBucket.nextAt(RATE, out.bucket, time) + (out.queue.length - 1) * RATE.intervalMs
    return Effect.fail(
      new SendQueueFull({
        networkId: a.networkId,
        lines,
        waiting: out.queue.length,
        capacity: SEND_QUEUE_LINES,
        seconds: Math.max(1, Math.ceil((drainedAt - time) / 1000))
      })
    )
  })

/** Queues `line` behind the lines waiting and writes what the bucket allows now. */
export const send = (a: Actor, s: Session, line: string, options?: SendOptions): Effect.Effect<void> =>
  Effect.suspend(() => {
    s.outbound.queue.push({ line, options })
    // With lines already waiting, the "send" timer is armed and this one goes in its turn.
    return s.outbound.queue.length === 1 ? flush(a, s) : Effect.void
  })

/** `send` for each line, in order. */
export const sendAll = (a: Actor, s: Session, lines: ReadonlyArray<string>): Effect.Effect<void> =>
  Effect.forEach(lines, (line) => send(a, s, line), { discard: true })

/**
 * Writes `line` at once, ahead of the queue: a line that may not wait behind a long send (the keepalive PING, a nick
 * while registering). It still counts against the bucket (TokenBucket.take), so the server sees the same rate.
 */
export const sendNow = (s: Session, line: string): Effect.Effect<void> =>
  Effect.map(now, (time) => {
    s.connection.write(line)
    s.outbound.bucket = TokenBucket.take(RATE, s.outbound.bucket, time)
  })

/** The keepalive PING (IrcTransport's `sendKeepalive`) at `time`, ahead of the queue as `sendNow`. */
export const sendKeepalive = (s: Session, time: number): void => {
  s.connection.sendKeepalive()
  s.outbound.bucket = TokenBucket.take(RATE, s.outbound.bucket, time)
}

/** Writes the lines waiting while the bucket holds tokens, then arms the "send" timer for the next one, if any. */
const flush = (a: Actor, s: Session): Effect.Effect<void> =>
  Effect.gen(function*() {
    const time = yield* now
    const out = s.outbound
    // Nothing goes after our QUIT: a connection we are closing keeps its queue only to count what was dropped.
    while (out.queue.length > 0 && s.closeReason === null && TokenBucket.available(RATE, out.bucket, time) >= 1) {
      const { line, options } = out.queue.shift()!
      const keyed = options?.plaintext === true ? E2e.encryptedTargetOfRaw(a.e2eKeys, a.isupport, line) : undefined
      if (keyed !== undefined) {
        yield* Effect.logWarning("a queued line was not sent: its target became end-to-end encrypted while it waited")
          .pipe(Effect.annotateLogs({ target: keyed }))
        continue
      }
      s.connection.write(line)
      out.bucket = TokenBucket.take(RATE, out.bucket, time)
      if (options?.sent !== undefined) yield* options.sent
    }
    if (out.queue.length > 0 && s.closeReason === null) {
      arm(a, "send", TokenBucket.nextAt(RATE, out.bucket, time), { _tag: "SendDue", session: s.id })
    }
  })

/** The "send" timer: the bucket holds a token again. */
export const onSendDue = (a: Actor, s: Session) => flush(a, s)

/** Logs the lines a connection that ended never sent (their callers had been told they were queued). */
export const logDropped = (s: Session) =>
  Effect.suspend(() => {
    const dropped = s.outbound.queue.length
    s.outbound.queue.length = 0
    return dropped === 0
      ? Effect.void
      : Effect.logWarning("the connection ended before its queued lines were sent").pipe(Effect.annotateLogs({ dropped }))
  })
