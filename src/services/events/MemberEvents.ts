/**
 * MemberEvents: the per-account event hub of the member's open browser tabs (the interface, "Events" 2; docs/contract.md
 * "The member's browser surface", WebSocket; docs/decisions/web.md "The browser WebSocket"). Events come from where the
 * data changes: stored messages from MessageWriter.stored (after their batch committed, so `id` is final), nick
 * notes and relay-bot marks from NickNotes.changes, redactions from MessageWriter.redacted, read markers from ReadMarkers.changes, networks removed from
 * Networks.changes, and the network actors' statuses (a rename included) and channel changes through
 * `actorEvents` (the supervisor hands it to every actor). Each event is
 * encoded once (`frame`), whatever the number of tabs, and delivered to every subscription of its account and to
 * no one else.
 *
 * Bounds: every subscription has its own bounded queue (QUEUE_BOUND events). Publishing never waits: a
 * subscription whose queue is full is marked overflowed and gets nothing more (its socket closes with 1013 and
 * the tab resumes with `?since=`), so a slow tab never holds memory beyond its bound nor slows the others.
 *
 * Web Push listens here too (`addMessageListener`): it hears each stored message of the accounts it wants, with
 * the member's nick on that network and whether this node stored it, and asks `anyFocused` whether a tab has the
 * member's attention.
 *
 * In a cluster (ClusterEvents.ts; docs/decisions/secrets.md "What carries events between nodes") the other nodes' events
 * arrive through the same sources (relayed stored rows, changes, `actorEvents`), and the presence of tabs is shared:
 * `onPresence` reports each change of this node's tabs of an account (none, open, focused), and `setRemotePresence`
 * records another node's, so that `actorEvents.listening` (an actor computes channel changes only for an account
 * with a tab somewhere) and `anyFocused` (Web Push) answer for the cluster. `resync` ends every subscription as
 * overflowed (each socket closes with 1013 and the tab resumes): after events may have been lost.
 *
 * Concurrency rule: `publish`, `actorEvents` and the subscriptions' `deliver` are synchronous steps, safe from any
 * fiber (JavaScript runs one step at a time), so events of one source reach a queue in the order they were
 * published. One fiber of this service renders stored messages (relay-bot marks need NickNotes), and one each
 * follows NickNotes, ReadMarkers and Networks; they end with the service's scope.
 */
import { Deferred, Effect, FiberId, Option, PubSub, Queue, type Scope } from "effect"
import { type CaseMapping, DEFAULT_CASE_MAPPING } from "../../irc/CaseMapping.js"
import type { NetworkStatus } from "../../schema/Network.js"
import { type NetworkEvent, type NetworkFeatures, NO_FEATURES } from "../../schema/NetworkEvent.js"
import type { MessageRecord, ServerFrame } from "../../schema/SocketFrame.js"
import { toMessageRecord } from "../history/MessageRecord.js"
import type { BufferKind, StoredRow } from "../history/MessageRow.js"
import { MessageWriter } from "../history/MessageWriter.js"
import { Networks } from "../networks/Networks.js"
import { NickNotes } from "../networks/NickNotes.js"
import { ReadMarkers } from "../history/ReadMarkers.js"

/** Events one subscription may have waiting; beyond, it is overflowed (the socket closes with 1013). */
export const QUEUE_BOUND = 4096

/** An event as the tabs get it: encoded once; `messageId` for `message` events (resume filters on it). */
export interface Outbound {
  readonly frame: string
  readonly messageId: number | null
}

export interface Subscription {
  readonly accountId: number
  /** The events waiting, oldest first, at least one (waits for one), at most `max`. */
  readonly take: (max: number) => Effect.Effect<ReadonlyArray<Outbound>>
  /** Completes when the queue overflowed: the subscriber fell QUEUE_BOUND events behind. */
  readonly overflowed: Effect.Effect<void>
  /** Into this subscription alone, in order with everything published to it (the actor's snapshot of a network). */
  readonly deliver: (events: ReadonlyArray<NetworkEvent>) => void
  /** The tab reported whether it has the member's attention (`{type: "focus"}`). */
  readonly setFocused: (focused: boolean) => void
}

/** A stored message as Web Push judges it. */
export interface HeardMessage {
  readonly accountId: number
  readonly record: MessageRecord
  readonly bufferKind: BufferKind
  /** The member's nick on the network when the message was rendered; null when not connected. */
  readonly selfNick: string | null
  /** Whether this node stored the message (MessageWriter.storedHere), rather than another node of the cluster. */
  readonly storedHere: boolean
  /** The network's CASEMAPPING as its actor last reported it (the buffer's key folds its target by it). */
  readonly caseMapping?: CaseMapping
}

/** An account's tabs on one node: none, open, or one of them has the member's attention. */
export type Presence = "none" | "open" | "focused"

export interface MessageListener {
  /** Whether this account's messages are wanted at all (so nothing is rendered for accounts no one listens for). */
  readonly wants: (accountId: number) => boolean
  readonly hear: (message: HeardMessage) => void
}

/** What the network actors report (the supervisor hands it to them; actors/network/ActorDeps.ts `ActorEvents`). */
export interface ActorEventsSink {
  /** Whether the account has a tab open, here or (in a cluster) on another node. */
  readonly listening: (accountId: number) => boolean
  /** `features`: the upstream's, for the `network` frame (absent: none; SocketFrame.NetworkFeatures). */
  readonly status: (accountId: number, name: string, status: NetworkStatus, features?: NetworkFeatures) => void
  readonly publish: (accountId: number, events: ReadonlyArray<NetworkEvent>) => void
}

interface Subscriber {
  readonly queue: Queue.Queue<Outbound>
  readonly overflow: Deferred.Deferred<void>
  focused: boolean
  dead: boolean
}

const encode = (frame: ServerFrame): string => JSON.stringify(frame)

const sameFeatures = (x: NetworkFeatures, y: NetworkFeatures) =>
  x.tags === y.tags && x.redaction === y.redaction && x.multiline === y.multiline

export class MemberEvents extends Effect.Service<MemberEvents>()("belay/MemberEvents", {
  scoped: Effect.gen(function*() {
    const writer = yield* MessageWriter
    const notes = yield* NickNotes
    const networks = yield* Networks
    const markers = yield* ReadMarkers

    const subscribers = new Map<number, Set<Subscriber>>()
    const listeners = new Set<MessageListener>()
    /** network id → account id; a network never changes account, and removal forgets it. */
    const accountOfNetwork = new Map<number, number>()
    /** The last status each network's actor published: its nick (highlights) and CASEMAPPING (relay bots). */
    const statuses = new Map<number, NetworkStatus>()
    /** The name each network's last `network` event carried: a rename is a change the tabs must hear of. */
    const names = new Map<number, string>()
    /** The features each network's last `network` event carried: a change (CAP ACK or DEL upstream) is told too. */
    const featuresOf = new Map<number, NetworkFeatures>()

    const offer = (subscriber: Subscriber, event: Outbound) => {
      if (subscriber.dead) return
      if (!subscriber.queue.unsafeOffer(event)) {
        subscriber.dead = true
        Deferred.unsafeDone(subscriber.overflow, Effect.void)
      }
    }

    const listening = (accountId: number): boolean => (subscribers.get(accountId)?.size ?? 0) > 0

    /** Other nodes' tabs: account → node origin → focused. */
    const remote = new Map<number, Map<string, boolean>>()
    const presenceListeners = new Set<(accountId: number, presence: Presence) => void>()
    /** What was last reported of each account with tabs here (absent: none). */
    const reported = new Map<number, Presence>()

    const localPresence = (accountId: number): Presence => {
      const set = subscribers.get(accountId)
      if (set === undefined || set.size === 0) return "none"
      for (const subscriber of set) if (subscriber.focused && !subscriber.dead) return "focused"
      return "open"
    }

    const presenceMayHaveChanged = (accountId: number) => {
      const now = localPresence(accountId)
      if ((reported.get(accountId) ?? "none") === now) return
      if (now === "none") reported.delete(accountId)
      else reported.set(accountId, now)
      for (const listener of presenceListeners) listener(accountId, now)
    }

    const setRemotePresence = (origin: string, accountId: number, presence: Presence): void => {
      let nodes = remote.get(accountId)
      if (presence === "none") {
        nodes?.delete(origin)
        if (nodes?.size === 0) remote.delete(accountId)
        return
      }
      if (nodes === undefined) remote.set(accountId, (nodes = new Map()))
      nodes.set(origin, presence === "focused")
    }

    /** Every account with tabs on this node, as `onPresence` last reported it. */
    const presence = (): ReadonlyArray<readonly [number, Presence]> => Array.from(reported)

    /** Calls `listener` with each change of this node's presence, until the scope closes. */
    const onPresence = (listener: (accountId: number, presence: Presence) => void): Effect.Effect<void, never, Scope.Scope> =>
      Effect.acquireRelease(
        Effect.sync(() => {
          presenceListeners.add(listener)
        }),
        () =>
          Effect.sync(() => {
            presenceListeners.delete(listener)
          })
      )

    /** A tab of the account on this node or, in a cluster, on another. */
    const listeningAnywhere = (accountId: number): boolean => listening(accountId) || remote.has(accountId)

    /** Ends every subscription as overflowed: their tabs resume from the database. */
    const resync = (): void => {
      for (const set of subscribers.values()) {
        for (const subscriber of set) {
          if (subscriber.dead) continue
          subscriber.dead = true
          Deferred.unsafeDone(subscriber.overflow, Effect.void)
        }
      }
    }

    /** Every open tab of the account gets the frames, each encoded once. */
    const publish = (accountId: number, frames: ReadonlyArray<ServerFrame>, messageIds?: ReadonlyArray<number>): void => {
      const set = subscribers.get(accountId)
      if (set === undefined || set.size === 0) return
      frames.forEach((frame, i) => {
        const event: Outbound = { frame: encode(frame), messageId: messageIds?.[i] ?? null }
        for (const subscriber of set) offer(subscriber, event)
      })
    }

    /** Whether a tab of the account has the member's attention, on this node or another of the cluster. */
    const anyFocused = (accountId: number): boolean => {
      if (localPresence(accountId) === "focused") return true
      const nodes = remote.get(accountId)
      if (nodes !== undefined) for (const focused of nodes.values()) if (focused) return true
      return false
    }

    const subscribe = (accountId: number): Effect.Effect<Subscription, never, Scope.Scope> =>
      Effect.acquireRelease(
        Effect.gen(function*() {
          const subscriber: Subscriber = {
            queue: yield* Queue.bounded<Outbound>(QUEUE_BOUND),
            overflow: Deferred.unsafeMake<void>(FiberId.none),
            focused: false,
            dead: false
          }
          let set = subscribers.get(accountId)
          if (set === undefined) subscribers.set(accountId, (set = new Set()))
          set.add(subscriber)
          presenceMayHaveChanged(accountId)
          return subscriber
        }),
        (subscriber) =>
          Effect.zipRight(
            Effect.sync(() => {
              subscriber.dead = true
              const set = subscribers.get(accountId)
              set?.delete(subscriber)
              if (set?.size === 0) subscribers.delete(accountId)
              presenceMayHaveChanged(accountId)
            }),
            Queue.shutdown(subscriber.queue)
          )
      ).pipe(Effect.map((subscriber): Subscription => ({
        accountId,
        take: (max) => Queue.takeBetween(subscriber.queue, 1, max).pipe(Effect.map((chunk) => Array.from(chunk))),
        overflowed: Deferred.await(subscriber.overflow),
        deliver: (events) => {
          for (const event of events) offer(subscriber, { frame: encode(event), messageId: null })
        },
        setFocused: (focused) => {
          subscriber.focused = focused
          presenceMayHaveChanged(accountId)
        }
      })))

    /** What the network actors report (through the supervisor): statuses and channel changes. */
    const actorEvents: ActorEventsSink = {
      listening: listeningAnywhere,
      status: (accountId: number, name: string, status: NetworkStatus, features: NetworkFeatures = NO_FEATURES): void => {
        accountOfNetwork.set(status.networkId, accountId)
        const before = statuses.get(status.networkId)
        const nameBefore = names.get(status.networkId)
        const featuresBefore = featuresOf.get(status.networkId)
        statuses.set(status.networkId, status)
        names.set(status.networkId, name)
        featuresOf.set(status.networkId, features)
        if (
          before !== undefined && before.state === status.state && before.nick === status.nick && nameBefore === name &&
          featuresBefore !== undefined && sameFeatures(featuresBefore, features)
        ) return
        publish(accountId, [{
          type: "network",
          network: { id: status.networkId, name, state: status.state, nick: status.nick, features }
        }])
      },
      publish: (accountId: number, events: ReadonlyArray<NetworkEvent>): void => publish(accountId, events)
    }

    const accountOf = (networkId: number): Effect.Effect<Option.Option<number>> => {
      const known = accountOfNetwork.get(networkId)
      if (known !== undefined) return Effect.succeed(Option.some(known))
      return Effect.map(networks.config(networkId), Option.map((config) => {
        accountOfNetwork.set(networkId, config.accountId)
        return config.accountId
      }))
    }

    const wanted = (accountId: number): boolean => {
      if (listening(accountId)) return true
      for (const listener of listeners) if (listener.wants(accountId)) return true
      return false
    }

    /** One stored batch: rendered once per message for the accounts someone listens for, oldest first. */
    const onStored = (rows: ReadonlyArray<StoredRow>) =>
      Effect.gen(function*() {
        const storedHere = writer.storedHere(rows)
        const byNetwork = new Map<number, Array<StoredRow>>()
        for (const row of rows) {
          let list = byNetwork.get(row.networkId)
          if (list === undefined) byNetwork.set(row.networkId, (list = []))
          list.push(row)
        }
        for (const [networkId, list] of byNetwork) {
          const account = yield* accountOf(networkId)
          if (Option.isNone(account) || !wanted(account.value)) continue
          const accountId = account.value
          const bots = yield* notes.relayBots(networkId)
          const status = statuses.get(networkId)
          const records = list.map((row) => toMessageRecord(row, bots, status?.caseMapping ?? DEFAULT_CASE_MAPPING))
          publish(accountId, records.map((message): ServerFrame => ({ type: "message", message })), records.map((r) => r.id))
          for (const listener of listeners) {
            if (!listener.wants(accountId)) continue
            records.forEach((record, i) =>
              listener.hear({
                accountId,
                record,
                bufferKind: list[i]!.bufferKind,
                selfNick: status?.nick ?? null,
                storedHere,
                caseMapping: status?.caseMapping ?? DEFAULT_CASE_MAPPING
              })
            )
          }
        }
      })

    // Subscribed while the service is built, before any actor or route can store or change anything.
    const stored = yield* PubSub.subscribe(writer.stored)
    yield* Queue.take(stored).pipe(
      Effect.flatMap(onStored),
      Effect.catchAllCause((cause) => Effect.logError("member events: a stored batch was not delivered", cause)),
      Effect.forever,
      Effect.forkScoped
    )

    const noteChanges = yield* PubSub.subscribe(notes.changes)
    yield* Queue.take(noteChanges).pipe(
      Effect.flatMap((change) => {
        const networkId = change._tag === "NickNote" ? change.networkId : change.mark.networkId
        return Effect.map(accountOf(networkId), Option.map((accountId) =>
          publish(accountId, [
            change._tag === "NickNote"
              ? { type: "nick-note", networkId, nick: change.nick, note: change.note }
              : { type: "relay-bot", ...change.mark }
          ])
        ))
      }),
      Effect.catchAllCause((cause) => Effect.logError("member events: a note change was not delivered", cause)),
      Effect.forever,
      Effect.forkScoped
    )

    const markerChanges = yield* PubSub.subscribe(markers.changes)
    yield* Queue.take(markerChanges).pipe(
      Effect.flatMap((marker) =>
        Effect.sync(() =>
          publish(marker.accountId, [{
            type: "read-marker",
            networkId: marker.networkId,
            target: marker.target,
            messageId: marker.messageId
          }])
        )
      ),
      Effect.forever,
      Effect.forkScoped
    )

    // A stored message redacted upstream (MessageRedactions.ts; this node's or, relayed, another's).
    const redactions = yield* PubSub.subscribe(writer.redacted)
    yield* Queue.take(redactions).pipe(
      Effect.flatMap((r) =>
        Effect.map(accountOf(r.networkId), Option.map((accountId) =>
          publish(accountId, [{ type: "redaction", networkId: r.networkId, target: r.target, messageId: r.messageId }])
        ))
      ),
      Effect.catchAllCause((cause) => Effect.logError("member events: a redaction was not delivered", cause)),
      Effect.forever,
      Effect.forkScoped
    )

    const networkChanges = yield* PubSub.subscribe(networks.changes)
    yield* Queue.take(networkChanges).pipe(
      Effect.flatMap((change) =>
        Effect.sync(() => {
          if (change._tag !== "Removed") return
          accountOfNetwork.delete(change.networkId)
          statuses.delete(change.networkId)
          names.delete(change.networkId)
          featuresOf.delete(change.networkId)
          publish(change.accountId, [{ type: "network-removed", networkId: change.networkId }])
        })
      ),
      Effect.forever,
      Effect.forkScoped
    )

    const addMessageListener = (listener: MessageListener): Effect.Effect<void, never, Scope.Scope> =>
      Effect.acquireRelease(
        Effect.sync(() => {
          listeners.add(listener)
        }),
        () =>
          Effect.sync(() => {
            listeners.delete(listener)
          })
      )

    return {
      subscribe,
      publish,
      listening,
      anyFocused,
      actorEvents,
      addMessageListener,
      presence,
      onPresence,
      setRemotePresence,
      /** Whether another node of the cluster has a tab of the account (its actor events must reach that node). */
      listeningElsewhere: (accountId: number): boolean => remote.has(accountId),
      resync
    } as const
  }),
  dependencies: [MessageWriter.Default, NickNotes.Default, Networks.Default, ReadMarkers.Default]
}) {}
