/**
 * IrcPush: Web Push to the member's IRC clients that registered with soju's `soju.im/webpush` (soju's
 * doc/ext/webpush.md; docs/contract.md "The IRC client listener"; docs/decisions/irc-listener.md "Web Push for IRC
 * clients"). WebPush decides which messages call for a notification — the same rule, focus and buffer choice for
 * browsers and IRC clients — and hands each one here too (`offer`); this module owns what differs:
 *
 * - When: READ_GRACE after the message was stored, and only if by then no client of the member has marked the buffer
 *   read up to it (ReadMarkers: a web tab, or an IRC client's MARKREAD) and no tab has the member's attention. A
 *   client that shows the buffer marks the message read as it draws it, so the member who is reading the
 *   conversation somewhere is not buzzed on the phone for what is on the screen; soju waits the same five seconds.
 * - To whom: the subscriptions an IRC client registered on a connection to the message's network (soju's are per
 *   network too; a client such as Goguma registers once per network and files a notification under the network the
 *   subscription came from). A control connection's subscription is sent nothing.
 * - What: exactly one IRC message without CRLF, as the extension requires, shaped as that client saw lines when it
 *   registered (`ircPushLine`): `time` with server-time, `msgid` with message-tags (Belay's message id, as the
 *   listener gives it), the speaker's nick as source, PRIVMSG to the channel or to the member's nick, a CTCP ACTION
 *   for an action. The text is cut (at a character) so that the line fits the record.
 * - How: aes128gcm (RFC 8291, RFC 8188) by `http_ece`, the encoder `web-push` itself uses, asked for one record padded
 *   to RECORD_BYTES so that the message's whole body is exactly RECORD_BYTES long: every notification then has the
 *   same size (the push service learns nothing from it), and it is the shape soju's sender produces and Goguma
 *   checks (the record-size field equal to the body's length; RFC 8188 §2 allows a single record shorter than `rs`).
 *   VAPID (RFC 8292) by `web-push`, with the key pair browsers use, so `VAPID=` in ISUPPORT is the web's key. Sent
 *   through GuardedFetch: the destination guard judges the endpoint's address again at every send.
 * - Read elsewhere: once a buffer whose message was pushed is marked read up to it (by any client, on any node:
 *   ReadMarkers.changes), its subscriptions are pushed `MARKREAD <buffer> timestamp=<time>`, as soju does, so that
 *   the phone can take the notification down.
 * - A push service answering 404 or 410, or an address the guard refuses, deletes the subscription (RFC 8030 §7.3),
 *   as WebPush does; other failures are logged and the notification dropped.
 *
 * Concurrency rule: `offer` is a synchronous step (a bounded queue, MAX_PENDING; beyond, new notifications are dropped
 * with one warning per episode); one fiber waits out each message's grace in order and sends, one request at a time,
 * each bounded by SEND_TIMEOUT; one fiber follows the read markers and sends their MARKREAD. The map of pushed
 * buffers (at most PUSHED_BUFFERS) is changed one synchronous step at a time by either.
 */
import * as Crypto from "node:crypto"
import { Clock, Duration, Effect, Option, PubSub, Queue, Runtime, type Scope } from "effect"
import ece from "http_ece"
import webpush from "web-push"
import { type CaseMapping, DEFAULT_CASE_MAPPING, foldCase } from "../../irc/CaseMapping.js"
import { formatLine } from "../../irc/IrcLine.js"
import type { GuardedFetch } from "../egress/GuardedFetch.js"
import type { HeardMessage } from "../events/MemberEvents.js"
import type { ReadMarker, ReadMarkers } from "../history/ReadMarkers.js"
import type { IrcPushSubscription, PushSubscription, PushSubscriptions } from "./PushSubscriptions.js"
import { settlePushAnswer } from "./PushAnswer.js"

/** How long after a message its notification waits for a client to mark the buffer read (soju's figure). */
export const READ_GRACE = Duration.seconds(5)
/** The size of every IRC notification's body: soju's record size, well inside the 4096 bytes RFC 8030 §7.2 assures. */
export const RECORD_BYTES = 2048
/** RFC 8188 §2.1 header as RFC 8291 §4 fills it: salt (16), rs (4), idlen (1), the sender's P-256 point (65). */
const HEADER_BYTES = 86
/** Per record: the padding delimiter (1) and the AES-GCM tag (16). */
const RECORD_OVERHEAD = 17
/** The longest line that fits. */
export const MAX_LINE_BYTES = RECORD_BYTES - HEADER_BYTES - RECORD_OVERHEAD
const MAX_PENDING = 1000
/** Buffers remembered as pushed and unread, for their MARKREAD (beyond, the oldest is forgotten). */
const PUSHED_BUFFERS = 10_000
const SEND_TIMEOUT = Duration.seconds(10)
const PUSH_ANSWER_BYTES = 64 * 1024
/** As WebPush: a day-old highlight is stale (RFC 8030 §5.2 TTL). */
const TTL_SECONDS = 24 * 60 * 60

const clean = (text: string) => text.replace(/[\r\n\0]/g, " ")

/** `text` cut to at most `max` UTF-8 bytes, at a character boundary. */
const cutUtf8 = (text: string, max: number): string => {
  const bytes = Buffer.from(text, "utf8")
  if (bytes.length <= max) return text
  let end = Math.max(0, max)
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--
  return bytes.subarray(0, end).toString("utf8")
}

/** A nick fit to be a line's source (a server's odd prefix is not). */
const SOURCE_NICK = /^[^\s\0:!@][^\s\0!@]*$/

/**
 * The line an IRC client is pushed for a stored PRIVMSG or ACTION (see the module comment); `caps` are the client's
 * capabilities when it registered. At most MAX_LINE_BYTES.
 */
export const ircPushLine = (heard: HeardMessage, caps: ReadonlyArray<string>): string => {
  const m = heard.record
  const tags: Record<string, string> = {}
  if (caps.includes("server-time")) tags.time = new Date(m.time).toISOString()
  // The msgid the client is shown for this message elsewhere: the upstream's when it gave one (listener/MessageLines.ts).
  if (caps.includes("message-tags")) tags.msgid = m.msgid ?? String(m.id)
  const nick = m.nick !== null && SOURCE_NICK.test(m.nick) ? m.nick : "*"
  const named = heard.bufferKind === "dm" ? (heard.selfNick ?? m.target) : m.target
  // A middle parameter must be one word (RFC 1459 §2.3.1); a stored name that is not one cannot be a line's target.
  const target = /^[^\s\0:][^\s\0]*$/.test(named) ? named : "*"
  const render = (text: string) => {
    const body = m.kind === "action" ? `\u0001ACTION ${text}\u0001` : text
    return formatLine({ tags, source: { nick }, command: "PRIVMSG", params: [target, body === "" ? " " : body] })
  }
  const text = clean(m.text)
  const whole = render(text)
  const over = Buffer.byteLength(whole, "utf8") - MAX_LINE_BYTES
  return over <= 0 ? whole : render(cutUtf8(text, Buffer.byteLength(text, "utf8") - over))
}

/** `line` as an aes128gcm message for the subscription, its body exactly RECORD_BYTES long (see the module comment). */
export const encryptLine = (subscription: Pick<PushSubscription, "p256dh" | "auth">, line: string): Buffer => {
  const content = Buffer.from(line, "utf8")
  const sender = Crypto.createECDH("prime256v1")
  sender.generateKeys()
  return ece.encrypt(content, {
    version: "aes128gcm",
    dh: subscription.p256dh,
    privateKey: sender,
    authSecret: subscription.auth,
    rs: RECORD_BYTES,
    pad: Math.max(0, MAX_LINE_BYTES - content.length)
  })
}

export interface IrcPushDeps {
  readonly subscriptions: PushSubscriptions
  readonly markers: ReadMarkers
  readonly http: GuardedFetch
  /** Whether a tab of the account has the member's attention (MemberEvents.anyFocused). */
  readonly focused: (accountId: number) => boolean
  readonly vapid: { readonly subject: string; readonly publicKey: string; readonly privateKey: string }
}

interface Pushed {
  readonly accountId: number
  readonly networkId: number
  readonly target: string
  readonly folded: string
  readonly messageId: number
}

interface Waiting {
  readonly heard: HeardMessage
  /** When its grace ends (ms). */
  readonly due: number
}

/** The IRC side of Web Push, alive for the scope (WebPush's). */
export const makeIrcPush = (deps: IrcPushDeps): Effect.Effect<{ readonly offer: (heard: HeardMessage) => void }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const waiting = yield* Queue.dropping<Waiting>(MAX_PENDING)
    const runtime = yield* Effect.runtime<never>()
    const clock = yield* Effect.clock
    let droppedWarned = false

    const offer = (heard: HeardMessage): void => {
      // Only messages of a network, in a buffer that is a conversation, can reach an IRC client's subscription.
      if (heard.bufferKind === "server") return
      const due = clock.unsafeCurrentTimeMillis() + Duration.toMillis(READ_GRACE)
      if (waiting.unsafeOffer({ heard, due })) return
      if (!droppedWarned) {
        droppedWarned = true
        Runtime.runFork(runtime)(Effect.logWarning("web push (IRC clients): too many notifications waiting; dropping new ones"))
      }
    }

    /** Whether a client marked the buffer read up to the message, or a tab has the member's attention. */
    const seen = (heard: HeardMessage) =>
      Effect.gen(function*() {
        if (deps.focused(heard.accountId)) return true
        const folded = foldCase(heard.caseMapping ?? DEFAULT_CASE_MAPPING, heard.record.target)
        const marker = yield* deps.markers.get(heard.record.networkId, folded)
        return Option.isSome(marker) && marker.value.messageId >= heard.record.id
      })

    const sendOne = (subscription: IrcPushSubscription, line: string) =>
      Effect.gen(function*() {
        const audience = new URL(subscription.endpoint).origin
        const vapid = webpush.getVapidHeaders(audience, deps.vapid.subject, deps.vapid.publicKey, deps.vapid.privateKey, "aes128gcm")
        const response = yield* deps.http.send(subscription.endpoint, {
          method: "POST",
          headers: {
            Authorization: vapid.Authorization,
            "Content-Type": "application/octet-stream",
            "Content-Encoding": "aes128gcm",
            TTL: String(TTL_SECONDS),
            Urgency: "high"
          },
          body: encryptLine(subscription, line),
          maxBytes: PUSH_ANSWER_BYTES,
          timeout: SEND_TIMEOUT,
          // The scheme was judged at registration (https unless BELAY_PUSH_INSECURE_ENDPOINTS); the destination is
          // judged again here, at every send.
          allowHttp: true
        })
        return response.status
      })

    /** `lineOf` to each IRC subscription of the account on the network; whether any push service took it. */
    const pushTo = (accountId: number, networkId: number, lineOf: (subscription: IrcPushSubscription) => string) =>
      Effect.gen(function*() {
        const targets = yield* deps.subscriptions.forIrc(accountId, networkId)
        let taken = false
        for (const subscription of targets) {
          const answer = yield* Effect.either(sendOne(subscription, lineOf(subscription)))
          if (yield* settlePushAnswer("web push (IRC clients)", subscription.id, answer, deps.subscriptions.gone(subscription))) taken = true
        }
        return taken
      })

    /** Buffers whose message was pushed and not read since (soju's `pushTargets`), oldest first, at most PUSHED_BUFFERS. */
    const pushed = new Map<string, Pushed>()
    /** Each network's CASEMAPPING as its messages last told it, to find a marker's buffer among `pushed`. */
    const caseMappings = new Map<number, CaseMapping>()
    const keyOf = (networkId: number, folded: string) => `${networkId}\u0000${folded}`

    const deliver = (heard: HeardMessage) =>
      Effect.gen(function*() {
        const accountId = heard.accountId
        const { networkId, target, id } = heard.record
        const caseMapping = heard.caseMapping ?? DEFAULT_CASE_MAPPING
        if (!(yield* pushTo(accountId, networkId, (subscription) => ircPushLine(heard, subscription.caps)))) return
        caseMappings.set(networkId, caseMapping)
        const folded = foldCase(caseMapping, target)
        const key = keyOf(networkId, folded)
        pushed.delete(key)
        pushed.set(key, { accountId, networkId, target, folded, messageId: id })
        if (pushed.size > PUSHED_BUFFERS) pushed.delete(pushed.keys().next().value!)
      })

    /**
     * A client marked read a buffer whose message was pushed: `MARKREAD <buffer> timestamp=<time>` goes to the same
     * subscriptions (IRCv3 draft/read-marker's line, as soju pushes it), so the phone can clear what it showed.
     */
    const cleared = (marker: ReadMarker) =>
      Effect.gen(function*() {
        const folded = foldCase(caseMappings.get(marker.networkId) ?? DEFAULT_CASE_MAPPING, marker.target)
        const key = keyOf(marker.networkId, folded)
        const entry = pushed.get(key)
        if (entry === undefined || entry.accountId !== marker.accountId || marker.messageId < entry.messageId) return
        pushed.delete(key)
        const stored = yield* deps.markers.get(entry.networkId, entry.folded)
        const time = Option.flatMap(stored, (m) => Option.fromNullable(m.time))
        if (Option.isNone(time) || !/^[^\s\0:][^\s\0]*$/.test(entry.target)) return
        const line = formatLine({ command: "MARKREAD", params: [entry.target, `timestamp=${time.value.toISOString()}`] })
        yield* pushTo(entry.accountId, entry.networkId, () => line)
      })
    yield* PubSub.subscribe(deps.markers.changes).pipe(
      Effect.flatMap((changes) =>
        Queue.take(changes).pipe(
          Effect.flatMap(cleared),
          Effect.catchAllCause((cause) => Effect.logWarning("web push (IRC clients): a read marker was not pushed", cause)),
          Effect.forever,
          Effect.forkScoped
        )
      )
    )

    yield* Queue.take(waiting).pipe(
      Effect.tap(() =>
        Effect.sync(() => {
          droppedWarned = false
        })
      ),
      Effect.flatMap((next) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          if (next.due > now) yield* Effect.sleep(Duration.millis(next.due - now))
          if (yield* seen(next.heard)) return
          yield* deliver(next.heard)
        })
      ),
      Effect.catchAllCause((cause) => Effect.logWarning("web push (IRC clients): a notification was not sent", cause)),
      Effect.forever,
      Effect.forkScoped
    )

    return { offer } as const
  })
