/**
 * NetworkFeed: the live events of the networks that are not stored messages — every line an upstream IRC server sends
 * (numerics, JOIN/PART/MODE of others, CAP changes…) and every status the network actors publish — for the IRC client
 * listener (src/listener), which relays them to the member's IRC clients. Stored messages do not travel here: the
 * listener takes them from `MessageWriter.stored`, the same source as the browser's WebSocket (MemberEvents), so they
 * carry their stored id and time (docs/architecture.md "The IRC client listener").
 *
 * One PubSub per kind of event, for any number of subscribers. In a cluster, ClusterEvents publishes the other nodes'
 * events into the same PubSubs (their statuses always; their lines only for the networks an IRC client here is bound
 * to, `bound`, which it announces to the other nodes), so a subscriber never needs to know where a network's actor
 * runs (docs/decisions/irc-listener.md "Upstream lines across nodes").
 *
 * Concurrency rule: `publishLine` and `publishStatus` are synchronous and never wait (an unbounded PubSub; without
 * subscribers the event is dropped), so the network actor's dispatcher fiber calls them directly. Events of one network
 * reach a subscriber in the order that network published them.
 */
import { Effect, PubSub } from "effect"
import type { NetworkStatus } from "../../schema/Network.js"

/** One line an upstream server sent, as received (CR-LF stripped, its tags kept), with its receive time. */
export interface FeedLine {
  readonly accountId: number
  readonly networkId: number
  readonly line: string
  /** Receive time, epoch milliseconds (Effect Clock): the `time` tag when the server sent none. */
  readonly time: number
  /**
   * The newest conversation row this network had appended to this process's MessageWriter when the line arrived, in
   * the writer's append order (MessageWriter.appended; 0 for none): the listener sends the line after that row
   * (docs/decisions/irc-listener.md "Live lines in the upstream's order"). Absent on a line another process published.
   */
  readonly after?: number
  /**
   * On a line another node published (ClusterEvents): the stored id of the conversation row numbered `after` there
   * (0 for none), which that node had announced before it sent the line; the listener sends the line after that row.
   */
  readonly afterId?: number
  /**
   * The append numbers of the first and last history rows this line became, when it is a channel event Belay stores
   * (EventStamps.CHANNEL_EVENT_KINDS) that came without an upstream msgid Belay keeps: the listener sends the line once
   * they were announced, with the first one's msgid and time (EventStamps.ts). Absent otherwise, and on another
   * process's line.
   */
  readonly rows?: readonly [first: number, last: number]
  /** The msgid and time the line is sent with: of the row `rows` named, on the node that stored it (ClusterLines). */
  readonly stamp?: FeedStamp
}

/** The msgid and time (epoch milliseconds) of the stored row a channel event became, as CHATHISTORY shows them. */
export interface FeedStamp {
  readonly msgid: string
  readonly time: number
}

/**
 * Another node's mark, after the lines it sent with one of its batches: every line of `networkId` that came before
 * that node's rows up to id `upTo` has been published here (the listener's LiveOrder holds newer rows until the next).
 */
export interface FeedMark {
  readonly networkId: number
  readonly upTo: number
}

/** What `lines` carries: lines, and other nodes' marks among them, in order. */
export type FeedEvent = FeedLine | FeedMark

export const isFeedLine = (event: FeedEvent): event is FeedLine => "line" in event

/** A status the network's actor published (state, nick, casemapping), with the network's name. */
export interface FeedStatus {
  readonly accountId: number
  readonly name: string
  readonly status: NetworkStatus
}

export class NetworkFeed extends Effect.Service<NetworkFeed>()("belay/NetworkFeed", {
  scoped: Effect.gen(function*() {
    const lines = yield* PubSub.unbounded<FeedEvent>()
    const statuses = yield* PubSub.unbounded<FeedStatus>()
    let lineSubscribers = 0
    /** Networks with an IRC client bound here: how many clients each. */
    const boundHere = new Map<number, number>()
    const boundWatchers = new Set<() => void>()

    return {
      lines,
      statuses,
      /** Whether anyone follows the lines: the actors skip building events no one reads. */
      listening: (): boolean => lineSubscribers > 0,
      /** Marks one more (or one fewer) follower of the lines; the listener calls it around its subscription. */
      follow: (delta: 1 | -1): void => {
        lineSubscribers += delta
      },
      /** One more (or one fewer) IRC client here is bound to `networkId`; the listener calls it around each binding. */
      bind: (networkId: number, delta: 1 | -1): void => {
        const n = (boundHere.get(networkId) ?? 0) + delta
        if (n > 0) boundHere.set(networkId, n)
        else boundHere.delete(networkId)
        if (n === 0 || (n === 1 && delta === 1)) for (const watcher of boundWatchers) watcher()
      },
      /** The networks an IRC client here is bound to. */
      bound: (): ReadonlyArray<number> => [...boundHere.keys()],
      isBound: (networkId: number): boolean => boundHere.has(networkId),
      /** Calls `watcher` (synchronously) whenever `bound` gains or loses a network. */
      watchBound: (watcher: () => void): void => {
        boundWatchers.add(watcher)
      },
      publishLine: (event: FeedLine): void => {
        lines.unsafeOffer(event)
      },
      publishMark: (event: FeedMark): void => {
        lines.unsafeOffer(event)
      },
      publishStatus: (event: FeedStatus): void => {
        statuses.unsafeOffer(event)
      }
    } as const
  })
}) {}
