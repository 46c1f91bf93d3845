/**
 * WebPush sends the member's browsers a notification for a direct message or a highlight of the member's nick when
 * no tab of the member has the member's attention (docs/contract.md "The member's browser surface", Push; docs/decisions/web.md
 * "Web Push"): Web Push (RFC 8030) with VAPID (RFC 8292) and the payload encrypted with aes128gcm (RFC 8291), built by
 * the `web-push` package and sent with fetch, so a local http push service works too when allowed.
 *
 * - The VAPID key pair (P-256) is generated once and kept (VapidKeyStore.ts): in `$BELAY_DATA_DIR/vapid.json` alone,
 *   in the database for a cluster, so every node signs with the same pair; its public key is what
 *   `PushManager.subscribe` takes (`publicKey`).
 * - It hears every stored message of the accounts that have a subscription (MemberEvents.addMessageListener, with
 *   the member's nick on that network). A message notifies when someone else sent it (`self` false) as a PRIVMSG or
 *   ACTION, and it is in a direct-message buffer or names the member's nick as a word; and when no tab reported focus
 *   (`{type: "focus", focused: true}`) — on any node of a cluster (MemberEvents' shared presence). In a cluster only
 *   the node that stored the message sends (`storedHere`), so a notification goes out once, not once per node.
 *   What the member chose for the buffer decides last (BufferPreferences, PushChoice.ts; docs/contract.md
 *   "Preferences"): muted or level `none` sends nothing, `highlights` (the default) the rule above, `all` every
 *   PRIVMSG or ACTION of the buffer from someone else.
 *   Notices do not notify: on IRC they are the automatic replies of services
 *   and bots (RFC 2812 §3.3.2).
 * - A push service answering 404 or 410 no longer knows the subscription (RFC 8030 §7.3): it is deleted. Other
 *   failures are logged and the notification dropped; a notification is a courtesy, history has the message.
 * - What is decided here goes to the member's IRC clients' subscriptions too (`soju.im/webpush`), as one IRC line,
 *   after a grace in which a client may mark the buffer read (IrcPush.ts); the browsers get the JSON below.
 *
 * Concurrency rule: hearing is a synchronous step (a bounded queue, MAX_PENDING; beyond, new notifications are
 * dropped with one warning per episode); one sender fiber sends them in order, one request at a time, each bounded
 * by SEND_TIMEOUT.
 */
import { Duration, Effect, Option, Queue, Runtime } from "effect"
import webpush from "web-push"
import type { MessageRecord } from "../../schema/SocketFrame.js"
import { AppConfig } from "../AppConfig.js"
import { type HeardMessage, MemberEvents } from "../events/MemberEvents.js"
import { type PushSubscription, PushSubscriptions } from "./PushSubscriptions.js"
import { settlePushAnswer } from "./PushAnswer.js"
import { SecretBox } from "../crypto/SecretBox.js"
import { GuardedFetch } from "../egress/GuardedFetch.js"
import { loadVapidKeys } from "./VapidKeyStore.js"
import { makeIrcPush } from "./IrcPush.js"
import { ReadMarkers } from "../history/ReadMarkers.js"
import { BufferPreferences } from "../preferences/BufferPreferences.js"
import { pushAllowed } from "../preferences/PushChoice.js"
import { DEFAULT_CASE_MAPPING, foldCase } from "../../irc/CaseMapping.js"
import type { BufferChoice } from "../../schema/Preferences.js"

/** Notifications waiting to be sent; beyond, new ones are dropped. */
const MAX_PENDING = 1000
const SEND_TIMEOUT = Duration.seconds(10)
/** A push service answers with a status and a few bytes at most; more is not read (RFC 8030 §5). */
const PUSH_ANSWER_BYTES = 64 * 1024
/** How long a push service keeps an undelivered notification (RFC 8030 §5.2 TTL): a day-old highlight is stale. */
const TTL_SECONDS = 24 * 60 * 60
/** The notification shows this much of the text; the payload must fit one 4096-byte record (RFC 8291 §4). */
const BODY_CHARS = 300

export type { VapidKeys } from "./VapidKeyStore.js"

/** What the service worker of the web client receives, as JSON. */
export interface PushPayload {
  readonly type: "message"
  readonly title: string
  readonly body: string
  readonly networkId: number
  readonly target: string
  readonly messageId: number
  readonly time: string
}

interface Pending {
  readonly accountId: number
  readonly payload: PushPayload
}

const NICK_CHARS = "A-Za-z0-9_\\-\\[\\]\\\\`^{|}"
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** Whether `text` names `nick` as a word (IRC nick characters around it do not count), ignoring case. */
export const highlights = (text: string, nick: string): boolean =>
  nick !== "" && new RegExp(`(^|[^${NICK_CHARS}])${escapeRegExp(nick)}($|[^${NICK_CHARS}])`, "i").test(text)

/**
 * Whether a stored message calls for a notification as the member chose for its buffer (docs/contract.md
 * "Preferences", services/preferences/PushChoice.ts); before the focus check.
 */
export const notifiesAsChosen = (heard: HeardMessage, choice: BufferChoice): boolean => {
  const m = heard.record
  const conversational = !m.self && (m.kind === "privmsg" || m.kind === "action") && m.nick !== null &&
    (heard.bufferKind === "dm" || heard.bufferKind === "channel")
  const highlight = heard.bufferKind === "channel" && heard.selfNick !== null && highlights(m.text, heard.selfNick)
  return pushAllowed(choice, { conversational, highlight, direct: heard.bufferKind === "dm" })
}

/** Whether a stored message calls for a notification (before the focus check). */
export const notifies = (heard: HeardMessage): boolean => {
  const m = heard.record
  if (m.self || (m.kind !== "privmsg" && m.kind !== "action") || m.nick === null) return false
  if (heard.bufferKind === "dm") return true
  return heard.bufferKind === "channel" && heard.selfNick !== null && highlights(m.text, heard.selfNick)
}

export const payloadOf = (heard: HeardMessage): PushPayload => {
  const m: MessageRecord = heard.record
  const speaker = m.nick ?? m.target
  const text = m.kind === "action" ? `* ${speaker} ${m.text}` : m.text
  return {
    type: "message",
    title: heard.bufferKind === "dm" ? speaker : `${speaker} in ${m.target}`,
    body: text.length > BODY_CHARS ? `${text.slice(0, BODY_CHARS - 1)}…` : text,
    networkId: m.networkId,
    target: m.target,
    messageId: m.id,
    time: m.time
  }
}

/** RFC 8292 §2.1: a contact for the push service's operator: the public https origin, else a mailto of it. */
const subjectOf = (publicBaseUrl: Option.Option<string>): string =>
  Option.match(publicBaseUrl, {
    onNone: () => "mailto:belay@belay.invalid",
    onSome: (base) => (base.startsWith("https:") ? base : `mailto:belay@${new URL(base).hostname || "belay.invalid"}`)
  })

export class WebPush extends Effect.Service<WebPush>()("belay/WebPush", {
  scoped: Effect.gen(function*() {
    const config = yield* AppConfig
    const events = yield* MemberEvents
    const subscriptions = yield* PushSubscriptions
    const preferences = yield* BufferPreferences
    const http = yield* GuardedFetch
    const keys = yield* loadVapidKeys
    const vapidDetails = { subject: subjectOf(config.publicBaseUrl), publicKey: keys.publicKey, privateKey: keys.privateKey }

    const pending = yield* Queue.dropping<Pending>(MAX_PENDING)
    let droppedWarned = false
    const runtime = yield* Effect.runtime<never>()
    const irc = yield* makeIrcPush({
      subscriptions,
      markers: yield* ReadMarkers,
      http,
      focused: events.anyFocused,
      vapid: vapidDetails
    })

    const offerPending = (heard: HeardMessage): void => {
      irc.offer(heard)
      if (pending.unsafeOffer({ accountId: heard.accountId, payload: payloadOf(heard) })) return
      if (!droppedWarned) {
        droppedWarned = true
        Runtime.runFork(runtime)(Effect.logWarning("web push: too many notifications waiting; dropping new ones"))
      }
    }

    yield* events.addMessageListener({
      wants: subscriptions.has,
      hear: (heard) => {
        // In a cluster every node hears every message; the node that stored it sends, so it is sent once.
        if (!heard.storedHere || events.anyFocused(heard.accountId)) return
        const folded = foldCase(heard.caseMapping ?? DEFAULT_CASE_MAPPING, heard.record.target)
        const choice = preferences.peek(heard.accountId, heard.record.networkId, folded)
        if (choice === undefined) {
          // The account's choices are read once, then held (BufferPreferences.peek); this message waits for them.
          Runtime.runFork(runtime)(Effect.zipRight(preferences.choicesOf(heard.accountId), Effect.sync(() => {
            const known = preferences.peek(heard.accountId, heard.record.networkId, folded)
            if (known !== undefined && notifiesAsChosen(heard, known)) offerPending(heard)
          })))
          return
        }
        if (notifiesAsChosen(heard, choice)) offerPending(heard)
      }
    })


    /** One notification to one browser: the push service's status, or the failure. */
    const sendOne = (subscription: PushSubscription, payload: PushPayload) =>
      Effect.gen(function*() {
        const request = webpush.generateRequestDetails(
          { endpoint: subscription.endpoint, keys: { p256dh: subscription.p256dh, auth: subscription.auth } },
          JSON.stringify(payload),
          { vapidDetails, TTL: TTL_SECONDS, contentEncoding: "aes128gcm", urgency: "high" }
        )
        const headers: Record<string, string> = {}
        for (const [name, value] of Object.entries(request.headers)) {
          if (name.toLowerCase() !== "content-length") headers[name] = String(value)
        }
        // Through the destination guard, to the address it checked (docs/decisions/hosting.md "One destination guard").
        const response = yield* http.send(request.endpoint, {
          method: "POST",
          headers,
          body: request.body ?? Buffer.alloc(0),
          maxBytes: PUSH_ANSWER_BYTES,
          timeout: SEND_TIMEOUT,
          // The scheme was judged when the endpoint was registered (https unless BELAY_PUSH_INSECURE_ENDPOINTS);
          // the destination is judged again here, at every send.
          allowHttp: true
        })
        return response.status
      })

    const send = (notification: Pending) =>
      Effect.gen(function*() {
        const targets = yield* subscriptions.forAccount(notification.accountId)
        for (const subscription of targets) {
          const answer = yield* Effect.either(sendOne(subscription, notification.payload))
          yield* settlePushAnswer("web push", subscription.id, answer, subscriptions.gone(subscription))
        }
      })

    yield* Queue.take(pending).pipe(
      Effect.tap(() =>
        Effect.sync(() => {
          droppedWarned = false
        })
      ),
      Effect.flatMap(send),
      Effect.catchAllCause((cause) => Effect.logWarning("web push: a notification was not sent", cause)),
      Effect.forever,
      Effect.forkScoped
    )

    return { publicKey: keys.publicKey } as const
  }),
  dependencies: [MemberEvents.Default, PushSubscriptions.Default, SecretBox.Default, GuardedFetch.Default, BufferPreferences.Default,
    ReadMarkers.Default]
}) {}
