/**
 * ClusterEvents carries the live events between the nodes of a cluster, so that every node serves every account as if
 * the network actors ran in it (docs/decisions/secrets.md "What carries events between nodes"; docs/architecture.md). In
 * single-node mode it does nothing: `actorEvents` is MemberEvents' own.
 *
 * The carrier is PostgreSQL's LISTEN/NOTIFY on `belay_events` (EventChannel.ts: one connection per node, reconnecting,
 * with a heartbeat). What is sent, and how a receiving node puts it into the very sources its consumers (MemberEvents
 * and the browser sockets, Web Push, RecentPages, the IRC listener) already read:
 * - stored messages: the owner's batch statement NOTIFYs the batch's networks and id range (MessageBatches.ts); the
 *   receiver reads the rows back with their lines' client-only tags (ClusterRows.ts), shows them to RecentPages
 *   (`heard`) and hands them to MessageWriter.relay (RecentPages, then `stored`);
 * - nick notes and relay-bot marks (NickNotes.changedElsewhere), read markers (ReadMarkers.changes), redactions
 *   (MessageWriter.redactedElsewhere: kept pages, then tabs), network adds,
 *   edits and removals (Networks.changedElsewhere, flagged `elsewhere` so no second node acts on the actor), each
 *   sent after it was stored here; push subscriptions added or deleted (PushSubscriptions.changedElsewhere counts
 *   the account again: the node that stores a message sends its push); buffer choices and client documents
 *   (BufferPreferences and ClientPreferences `changedElsewhere`: tabs, IRC clients and Web Push hear them);
 * - the actors' statuses (when they change) and channel events (only for accounts with a tab on another node),
 *   through `actorEvents`, which the actors of this node are given;
 * - presence: which accounts have tabs on this node and whether one has the member's attention, on each change and
 *   every PRESENCE_EVERY; another node's entries expire PRESENCE_EXPIRES after they were last heard;
 * - the upstream lines of NetworkFeed, for the IRC listener: each node announces the networks its IRC clients are bound
 *   to (on each change, with presence, and when it hears a node it did not know), and a node sends the lines of its
 *   networks that another node wants, each after the batch of the row it came after (ClusterLines.ts); the receiver
 *   publishes them into its NetworkFeed, after that batch's rows were relayed. Statuses reach its NetworkFeed too.
 *   Revocations keep their own channel (RevocationChannel.ts), on the same connection.
 *
 * A payload is JSON `{o: origin, q: sequence, t: kind, …}`; a node skips its own. One longer than MAX_PAYLOAD_BYTES
 * (a channel drawn whole with many members, a long note) is sent as consecutive `part`s in one statement, which
 * PostgreSQL delivers together and in order.
 *
 * Losses: while the LISTEN connection is down or missed its heartbeat, RecentPages is not trusted (it would miss other
 * nodes' rows); the credential cache stops itself (CredentialCache.ts). When LISTEN is back, the rows stored since
 * the loss are read back from the database, from the newest id this node had announced STRAGGLER before the loss
 * (ids of different nodes' batches do not commit in id order; a statement slower than that is the bound), each row
 * announced once (MessageWriter's per-network marks); then RecentPages is trusted again and every open tab here is
 * told to resume (MemberEvents.resync: the socket closes with 1013, the tab reconnects with `?since=` and is drawn
 * again), since the channel events it missed cannot be read back.
 *
 * Concurrency rule: notices are decoded synchronously as the connection reads them and queued; one fiber handles
 * them in order (a batch's rows are read before the next notice is handled). One fiber sends this node's events,
 * in the order they were published, several per statement; one refreshes and expires presence (and interest). Two
 * follow this node's feed lines and stored batches into ClusterLines, one releases its overdue lines; interest
 * notices are applied as they are decoded, line notices in the queue (behind the batches before them).
 */
import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Either, Option, PubSub, Queue, Schedule, Schema } from "effect"
import { NetworkStatus } from "../../schema/Network.js"
import { KnownNetworkEvents, NetworkFeatures } from "../../schema/NetworkEvent.js"
import { EventChannel, EVENTS_CHANNEL, MAX_PAYLOAD_BYTES } from "../storage/EventChannel.js"
import { type ActorEventsSink, MemberEvents, type Presence } from "../events/MemberEvents.js"
import type { RedactedMessage } from "../history/MessageRedactions.js"
import { MessageWriter } from "../history/MessageWriter.js"
import { isFeedLine, NetworkFeed } from "../events/NetworkFeed.js"
import { decodeLines, encodeLines, LINE_HOLD_LIMIT, makeClusterLines } from "./ClusterLines.js"
import { makeClusterRows } from "./ClusterRows.js"
import { type NetworkChange, Networks } from "../networks/Networks.js"
import { type NickNoteChange, NickNotes } from "../networks/NickNotes.js"
import { PushSubscriptions } from "../push/PushSubscriptions.js"
import { RecentPages } from "../history/RecentPages.js"
import { type ReadMarker, ReadMarkers } from "../history/ReadMarkers.js"
import { type BufferPreferenceChange, BufferPreferences } from "../preferences/BufferPreferences.js"
import { type ClientDocumentChange, ClientPreferences } from "../preferences/ClientPreferences.js"
import { NotifyLevel, readClientDocument } from "../../schema/Preferences.js"

export const PRESENCE_EVERY = Duration.seconds(10)
export const PRESENCE_EXPIRES = Duration.seconds(30)
/** A catch-up reads from the newest id announced this long before the loss. */
export const STRAGGLER = Duration.seconds(10)
/** Rows read back per statement during a catch-up. */
const CATCH_UP_PAGE = 1000
/** Characters of a payload per `part` (at most 6 bytes each once escaped: under MAX_PAYLOAD_BYTES). */
const PART_CHARS = 1000
/** Payloads sent per statement. */
const SEND_BATCH = 200

const Int = Schema.Int
const NickNoteChangeSchema = Schema.Union(
  Schema.Struct({ _tag: Schema.Literal("NickNote"), networkId: Int, nick: Schema.String, note: Schema.String }),
  Schema.Struct({
    _tag: Schema.Literal("RelayBot"),
    mark: Schema.Struct({ networkId: Int, nick: Schema.String, marked: Schema.Boolean, pattern: Schema.NullOr(Schema.String) })
  })
)
const NetworkChangeSchema = Schema.Union(
  Schema.Struct({ _tag: Schema.Literal("Added"), networkId: Int }),
  Schema.Struct({ _tag: Schema.Literal("Changed"), networkId: Int, reconnect: Schema.Boolean }),
  Schema.Struct({ _tag: Schema.Literal("Removed"), networkId: Int, accountId: Int })
)
const PresenceSchema = Schema.Literal("none", "open", "focused")
const RedactedSchema = Schema.Struct({ networkId: Int, target: Schema.String, targetFolded: Schema.String, messageId: Int })

/** Every payload on `belay_events` (a heartbeat is EventChannel's and never reaches here as such). */
const Payload = Schema.parseJson(Schema.Union(
  Schema.Struct({ o: Schema.String, t: Schema.Literal("h") }),
  Schema.Struct({ o: Schema.String, t: Schema.Literal("part"), q: Int, i: Int, of: Int, d: Schema.String }),
  Schema.Struct({ o: Schema.String, t: Schema.Literal("m"), n: Schema.Array(Int), r: Schema.Tuple(Int, Int) }),
  Schema.Struct({ o: Schema.String, t: Schema.Literal("n"), c: NickNoteChangeSchema }),
  Schema.Struct({
    o: Schema.String,
    t: Schema.Literal("r"),
    c: Schema.Struct({ accountId: Int, networkId: Int, target: Schema.String, messageId: Int })
  }),
  Schema.Struct({ o: Schema.String, t: Schema.Literal("w"), c: NetworkChangeSchema }),
  // A message redacted upstream (MessageRedactions.ts), once its UPDATE committed on the sending node.
  Schema.Struct({ o: Schema.String, t: Schema.Literal("x"), c: RedactedSchema }),
  // A buffer's choice and the client document (services/preferences/), each as stored on the sending node.
  Schema.Struct({
    o: Schema.String,
    t: Schema.Literal("bp"),
    c: Schema.Struct({
      accountId: Int,
      networkId: Int,
      target: Schema.String,
      targetFolded: Schema.String,
      pinned: Schema.Boolean,
      muted: Schema.Boolean,
      detached: Schema.Boolean,
      notify: NotifyLevel
    })
  }),
  Schema.Struct({ o: Schema.String, t: Schema.Literal("cp"), a: Int, d: Schema.Unknown }),
  Schema.Struct({ o: Schema.String, t: Schema.Literal("u"), a: Int }),
  Schema.Struct({
    o: Schema.String,
    t: Schema.Literal("s"),
    a: Int,
    nm: Schema.String,
    s: NetworkStatus,
    // The upstream's features for the browser's `network` frame; absent from a node of an earlier build.
    f: Schema.optional(NetworkFeatures)
  }),
  // What an actor of another node published (LiveView.ts): each event checked, one of a kind this build does not
  // know left out (docs/decisions/secrets.md "What carries events between nodes").
  Schema.Struct({ o: Schema.String, t: Schema.Literal("e"), a: Int, e: KnownNetworkEvents }),
  Schema.Struct({ o: Schema.String, t: Schema.Literal("p"), p: Schema.Array(Schema.Tuple(Int, PresenceSchema)) }),
  Schema.Struct({ o: Schema.String, t: Schema.Literal("i"), n: Schema.Array(Int) }),
  Schema.Struct({
    o: Schema.String,
    t: Schema.Literal("l"),
    n: Int,
    up: Int,
    // [account, line, receive time, afterId] each; `s`, [index, msgid, time] of stored events (ClusterLines.encodeLines).
    l: Schema.Array(Schema.Tuple(Int, Schema.String, Schema.Number, Int)),
    s: Schema.optional(Schema.Array(Schema.Tuple(Int, Schema.String, Schema.Number)))
  })
))
type Payload = typeof Payload.Type
const decodePayload = Schema.decodeUnknownEither(Payload)
const encodeStatus = Schema.encodeSync(NetworkStatus)

type Inbound =
  | { readonly _tag: "CatchUp" }
  | { readonly _tag: "Apply"; readonly apply: Effect.Effect<void> }

/** `payload` cut into parts no longer than PART_CHARS, never between the two halves of a surrogate pair. */
const cut = (payload: string): ReadonlyArray<string> => {
  const parts: Array<string> = []
  let start = 0
  while (start < payload.length) {
    let end = Math.min(start + PART_CHARS, payload.length)
    const last = payload.charCodeAt(end - 1)
    if (end < payload.length && last >= 0xd800 && last <= 0xdbff) end--
    parts.push(payload.slice(start, end))
    start = end
  }
  return parts
}

export class ClusterEvents extends Effect.Service<ClusterEvents>()("belay/ClusterEvents", {
  scoped: Effect.gen(function*() {
    const channel = yield* EventChannel
    const events = yield* MemberEvents
    if (!channel.cluster) return { actorEvents: events.actorEvents } as const

    const sql = yield* SqlClient.SqlClient
    const writer = yield* MessageWriter
    const pages = yield* RecentPages
    const notes = yield* NickNotes
    const markers = yield* ReadMarkers
    const networks = yield* Networks
    const push = yield* PushSubscriptions
    const bufferPreferences = yield* BufferPreferences
    const clientPreferences = yield* ClientPreferences
    const feed = yield* NetworkFeed
    const origin = channel.origin
    // Timers on the real clock: a test that stands the clock still must not stop presence or expiry.
    const clock = Clock.make()
    const now = () => clock.unsafeCurrentTimeMillis()

    // --- Sending

    const outbox = yield* Queue.unbounded<string>()
    let sequence = 0
    let sendFailedWarned = false

    /** Queues `body` (with this node's origin and the next sequence number), in parts when it is long. */
    const send = (body: Record<string, unknown>): void => {
      const q = ++sequence
      const payload = JSON.stringify({ o: origin, q, ...body })
      if (Buffer.byteLength(payload) <= MAX_PAYLOAD_BYTES) {
        outbox.unsafeOffer(payload)
        return
      }
      const parts = cut(payload)
      parts.forEach((d, i) => outbox.unsafeOffer(JSON.stringify({ o: origin, t: "part", q, i, of: parts.length, d })))
    }

    yield* Queue.takeBetween(outbox, 1, SEND_BATCH).pipe(
      Effect.flatMap((payloads) =>
        channel.notify(EVENTS_CHANNEL, Array.from(payloads)).pipe(
          // A failed statement of a reachable database (a pool connection just lost) is tried again at once.
          Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.intersect(Schedule.recurs(3)))),
          Effect.withClock(clock),
          Effect.tap(() =>
            Effect.sync(() => {
              sendFailedWarned = false
            })
          ),
          // The database stays unreachable from here: these events are dropped (with one warning) rather than held, so
          // that nothing waits for it. Messages never take this path (their notice is part of the statement that
          // stores them); a note or marker lost here is still in the database, where a tab reads it on reconnecting.
          Effect.catchAll((error) =>
            sendFailedWarned ? Effect.void : Effect.zipRight(
              Effect.sync(() => {
                sendFailedWarned = true
              }),
              Effect.logWarning("cluster events: could not notify the other nodes; dropping events", error)
            )
          )
        )
      ),
      Effect.forever,
      Effect.forkScoped
    )

    /** Changes this node republished from others: not sent back out. */
    const relayed = new WeakSet<object>()

    const forward = <A>(hub: PubSub.PubSub<A>, body: (a: A) => Record<string, unknown> | undefined) =>
      Effect.flatMap(PubSub.subscribe(hub), (queue) =>
        Queue.take(queue).pipe(
          Effect.flatMap((a) =>
            Effect.sync(() => {
              const b = body(a)
              if (b !== undefined) send(b)
            })
          ),
          Effect.forever,
          Effect.forkScoped
        ))

    yield* forward(notes.changes, (c: NickNoteChange) => (relayed.has(c) ? undefined : { t: "n", c }))
    yield* forward(markers.changes, (c: ReadMarker) => (relayed.has(c) ? undefined : { t: "r", c }))
    yield* forward(writer.redacted, (c: RedactedMessage) => (relayed.has(c) ? undefined : { t: "x", c }))
    yield* forward(push.changes, (a: number) => ({ t: "u", a }))
    // The session that made a change is this node's: `origin` stays here.
    yield* forward(bufferPreferences.changes, (c: BufferPreferenceChange) => {
      if (relayed.has(c)) return undefined
      const { origin: _, ...change } = c
      return { t: "bp", c: change }
    })
    yield* forward(clientPreferences.changes, (c: ClientDocumentChange) => (relayed.has(c) ? undefined : { t: "cp", a: c.accountId, d: c.document }))
    yield* forward(networks.changes, (c: NetworkChange) => {
      if (c.elsewhere === true) return undefined
      const { elsewhere: _, ...change } = c
      return { t: "w", c: change }
    })

    /** The last status sent per network: a status is sent when it changed. */
    const statusSent = new Map<number, string>()
    const actorEvents: ActorEventsSink = {
      listening: events.actorEvents.listening,
      status: (accountId, name, status, features) => {
        events.actorEvents.status(accountId, name, status, features)
        const key = `${name}\u0000${JSON.stringify(status)}\u0000${JSON.stringify(features ?? null)}`
        if (statusSent.get(status.networkId) === key) return
        statusSent.set(status.networkId, key)
        send({ t: "s", a: accountId, nm: name, s: encodeStatus(status), ...(features !== undefined ? { f: features } : {}) })
      },
      publish: (accountId, list) => {
        events.actorEvents.publish(accountId, list)
        if (list.length > 0 && events.listeningElsewhere(accountId)) send({ t: "e", a: accountId, e: list })
      }
    }

    // Upstream lines for the IRC clients of other nodes (ClusterLines.ts): the actors build them while anyone wants them.
    const lines = makeClusterLines(
      (networkId, out, upTo) =>
        send({ t: "l", n: networkId, up: upTo, ...encodeLines(out) }),
      now
    )
    let followingFeed = false
    const followFeed = () => {
      const want = lines.anyInterest()
      if (want === followingFeed) return
      followingFeed = want
      feed.follow(want ? 1 : -1)
    }
    yield* Effect.addFinalizer(() => Effect.sync(() => followingFeed && feed.follow(-1)))
    // Only this node's actors' lines (they carry `after`); another node's, published here below, are not sent back.
    yield* forward(feed.lines, (event) => void (isFeedLine(event) && event.after !== undefined && lines.line(event)))
    yield* forward(writer.stored, (rows) => void lines.stored(rows, writer.sequenceOf(rows)))
    yield* Effect.sleep(Duration.millis(Duration.toMillis(LINE_HOLD_LIMIT) / 4)).pipe(
      Effect.zipRight(Effect.sync(() => lines.holdingAny() && lines.releaseOverdue())),
      Effect.forever,
      Effect.withClock(clock),
      Effect.forkScoped
    )
    const sendInterest = () => send({ t: "i", n: feed.bound() })
    feed.watchBound(sendInterest)
    /** The other nodes heard so far: one not heard before is told this node's interest at once. */
    const knownNodes = new Set<string>()

    yield* events.onPresence((accountId, presence) => send({ t: "p", p: [[accountId, presence]] }))
    const sendAllPresence = () => {
      const all = events.presence()
      if (all.length > 0) send({ t: "p", p: all })
    }

    // --- Receiving

    const inbox = yield* Queue.unbounded<Inbound>()
    /** Another node's parts of a long payload, until the last one. */
    const partials = new Map<string, { q: number; parts: Array<string> }>()
    /** Another node's presence: node → account → expiry (real clock, ms). */
    const remotePresence = new Map<string, Map<number, number>>()

    const apply = (effect: Effect.Effect<void>): void => {
      inbox.unsafeOffer({ _tag: "Apply", apply: effect })
    }

    const setPresence = (node: string, accountId: number, presence: Presence) => {
      events.setRemotePresence(node, accountId, presence)
      let accounts = remotePresence.get(node)
      if (presence === "none") {
        accounts?.delete(accountId)
        return
      }
      if (accounts === undefined) remotePresence.set(node, (accounts = new Map()))
      accounts.set(accountId, now() + Duration.toMillis(PRESENCE_EXPIRES))
    }

    const handle = (payload: Payload): void => {
      if (payload.o === origin) return
      if (!knownNodes.has(payload.o)) {
        knownNodes.add(payload.o)
        if (feed.bound().length > 0) sendInterest()
      }
      switch (payload.t) {
        case "h":
          return
        case "part": {
          let partial = partials.get(payload.o)
          if (partial === undefined || partial.q !== payload.q) partials.set(payload.o, (partial = { q: payload.q, parts: [] }))
          if (payload.i !== partial.parts.length) {
            partials.delete(payload.o)
            return
          }
          partial.parts.push(payload.d)
          if (partial.parts.length < payload.of) return
          partials.delete(payload.o)
          return onPayload(partial.parts.join(""))
        }
        case "m":
          return apply(onBatch(payload.n, payload.r[0], payload.r[1]))
        case "n": {
          const change: NickNoteChange = payload.c
          relayed.add(change)
          return apply(notes.changedElsewhere(change))
        }
        case "r": {
          const marker: ReadMarker = payload.c
          relayed.add(marker)
          return apply(Effect.asVoid(PubSub.publish(markers.changes, marker)))
        }
        case "w":
          return apply(networks.changedElsewhere(payload.c))
        case "x":
          relayed.add(payload.c)
          return apply(writer.redactedElsewhere(payload.c))
        case "u":
          return apply(push.changedElsewhere(payload.a))
        case "bp": {
          const change: BufferPreferenceChange = payload.c
          relayed.add(change)
          return apply(bufferPreferences.changedElsewhere(change))
        }
        case "cp": {
          // Checked again here, as a stored document is read back (a node of another release may know other keys).
          const change: ClientDocumentChange = { accountId: payload.a, document: readClientDocument(payload.d) }
          relayed.add(change)
          return apply(clientPreferences.changedElsewhere(change))
        }
        case "s": {
          const { a, f, nm, s } = payload
          return apply(Effect.sync(() => {
            events.actorEvents.status(a, nm, s, f)
            feed.publishStatus({ accountId: a, name: nm, status: s })
          }))
        }
        case "e": {
          const list = payload.e
          const accountId = payload.a
          if (list.length === 0) return
          return apply(Effect.sync(() => events.actorEvents.publish(accountId, list)))
        }
        case "i":
          lines.announce(payload.o, payload.n, now() + Duration.toMillis(PRESENCE_EXPIRES))
          return followFeed()
        case "l": {
          // Through the inbox: after the rows of the batches whose notices came first were relayed.
          const { l, n, up, s } = payload
          return apply(Effect.sync(() => {
            if (!feed.isBound(n)) return
            for (const line of decodeLines(n, l, s)) feed.publishLine(line)
            feed.publishMark({ networkId: n, upTo: up })
          }))
        }
        case "p": {
          const node = payload.o
          const entries = payload.p
          return apply(Effect.sync(() => {
            for (const [accountId, presence] of entries) setPresence(node, accountId, presence)
          }))
        }
      }
    }

    const onPayload = (raw: string): void => {
      const decoded = decodePayload(raw)
      if (Either.isRight(decoded)) return handle(decoded.right)
      // Not Belay's, or a newer Belay's: nothing this node could act on.
      apply(Effect.logWarning("cluster events: ignored a notice").pipe(Effect.annotateLogs({ why: decoded.left.message })))
    }

    // --- Messages of other nodes, and catching up after a loss

    // With the client-only tags of their lines, as their node announced them (ClusterRows.ts).
    const readBack = makeClusterRows(sql)

    /** Every row above `floor`, page by page, each relayed (rows already announced here are skipped there). */
    const readAfter = (floor: number) =>
      Effect.gen(function*() {
        let cursor = floor
        let relayedRows = 0
        for (;;) {
          const rows = yield* readBack.after(cursor, CATCH_UP_PAGE)
          if (rows.length === 0) return relayedRows
          pages.heard(rows)
          yield* writer.relay(rows)
          relayedRows += rows.length
          cursor = rows[rows.length - 1]!.id
          if (rows.length < CATCH_UP_PAGE) return relayedRows
        }
      })

    /** The newest id this node had announced, as each heartbeat came back: the floors a catch-up may start from. */
    const marks: Array<{ readonly at: number; readonly id: number }> = []
    /** The id below which nothing was missed, before any heartbeat: the newest when this node started. */
    let startedAt = 0
    const highest = () => Math.max(startedAt, writer.highestAnnounced())
    /** Where the next catch-up starts (the lowest floor of the losses since the last one); undefined: none due. */
    let floor: number | undefined

    const floorAtLoss = (): number => {
      const limit = now() - Duration.toMillis(STRAGGLER)
      for (let i = marks.length - 1; i >= 0; i--) if (marks[i]!.at <= limit) return marks[i]!.id
      return marks[0]?.id ?? startedAt
    }

    const retry = Schedule.exponential("100 millis").pipe(Schedule.either(Schedule.spaced("5 seconds")))

    const catchUp = Effect.gen(function*() {
      const from = floor
      floor = undefined
      if (from !== undefined) {
        const relayedRows = yield* readAfter(from).pipe(
          Effect.tapError((error) => Effect.logWarning("cluster events: could not read back missed messages; retrying", error)),
          Effect.retry(retry),
          Effect.withClock(clock),
          Effect.orDie
        )
        yield* Effect.logInfo("cluster events: caught up after the LISTEN connection was back").pipe(
          Effect.annotateLogs({ fromId: from, rowsRead: relayedRows })
        )
      }
      // Lost again meanwhile: the next return catches up again, and trusts the pages then.
      if (!channel.state().listening) return
      pages.trust(true)
      events.resync()
      sendAllPresence()
    })

    const onBatch = (networkIds: ReadonlyArray<number>, first: number, last: number) =>
      readBack.batch(networkIds, first, last).pipe(
        // Shown to RecentPages first: a row out of order there may never be relayed (AnnouncedMarks; RecentPages.ts).
        Effect.flatMap((rows) => Effect.zipRight(Effect.sync(() => pages.heard(rows)), writer.relay(rows))),
        // The database did not answer: read everything from this batch on once it does (a catch-up, in order).
        Effect.catchAll((error) =>
          Effect.zipRight(
            Effect.logWarning("cluster events: could not read another node's messages; catching up", error),
            Effect.suspend(() => {
              floor = Math.min(floor ?? first - 1, first - 1)
              return catchUp
            })
          )
        )
      )

    yield* Queue.take(inbox).pipe(
      Effect.flatMap((item): Effect.Effect<void> => {
        switch (item._tag) {
          case "CatchUp":
            return catchUp
          case "Apply":
            return item.apply
        }
      }),
      Effect.catchAllCause((cause) => Effect.logError("cluster events: an event was not handled", cause)),
      Effect.forever,
      Effect.forkScoped
    )

    // Subscribed first, then the newest id read: a row committed after the read is heard of, one before is history.
    const generationAtStart = channel.state().generation
    yield* channel.subscribe(EVENTS_CHANNEL, onPayload)
    startedAt = yield* sql<{ id: number | null }>`SELECT max(id) AS id FROM messages`.pipe(
      Effect.map((rows) => rows[0]?.id ?? 0),
      Effect.orDie
    )

    yield* channel.watch({
      onHeartbeat: () => {
        marks.push({ at: now(), id: highest() })
        // About 2 × STRAGGLER of heartbeats (one every 2 s).
        if (marks.length > 10) marks.shift()
      },
      onLost: () => {
        pages.trust(false)
        partials.clear()
        const at = floorAtLoss()
        floor = Math.min(floor ?? at, at)
      },
      onListening: () => {
        inbox.unsafeOffer({ _tag: "CatchUp" })
      }
    })
    // Not listening yet, or lost (and perhaps back) before the watch above: read back from the start once listening.
    const atStart = channel.state()
    if (!atStart.listening || atStart.generation !== generationAtStart) {
      pages.trust(false)
      floor = startedAt
      if (atStart.listening) inbox.unsafeOffer({ _tag: "CatchUp" })
    }

    // --- Presence: refreshed for the other nodes, and theirs expired when they stop refreshing it.
    const presenceTick = Effect.gen(function*() {
      yield* Effect.sleep(PRESENCE_EVERY)
      sendAllPresence()
      if (feed.bound().length > 0) sendInterest()
      const t = now()
      lines.expire(t)
      followFeed()
      for (const [node, accounts] of remotePresence) {
        for (const [accountId, expires] of accounts) if (expires <= t) setPresence(node, accountId, "none")
        if (accounts.size === 0) remotePresence.delete(node)
      }
    })
    yield* presenceTick.pipe(Effect.forever, Effect.withClock(clock), Effect.forkScoped)
    sendAllPresence()

    return { actorEvents } as const
  }),
  dependencies: [
    EventChannel.Default,
    MemberEvents.Default,
    MessageWriter.Default,
    RecentPages.Default,
    NickNotes.Default,
    ReadMarkers.Default,
    Networks.Default,
    PushSubscriptions.Default,
    BufferPreferences.Default,
    ClientPreferences.Default,
    NetworkFeed.Default
  ]
}) {}
