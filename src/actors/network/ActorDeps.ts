/**
 * ActorDeps: the ports a network actor reaches the world through, bound to its network id by the supervisor (tests
 * pass in-memory ones): the stored network, the message store, the IRC transport, the end-to-end keys, and the
 * supervisor's shared timers and connect throttle, and where the member's open tabs hear of the network.
 *
 * Concurrency rule: plain values, built once per actor life. Only the actor's dispatcher fiber calls them, except
 * the writer fiber of Persistence.ts, which runs the repository writes the dispatcher queued.
 */
import type { Effect, Option, Scope } from "effect"
import type { CaseMapping } from "../../irc/CaseMapping.js"
import type { SourceRange } from "../../net/UpstreamFace.js"
import type { NetworkStatus } from "../../schema/Network.js"
import type { NetworkEvent, NetworkFeatures } from "../../schema/NetworkEvent.js"
import type { E2eKeyChange, E2eKeyEntry } from "../../services/networks/E2eKeys.js"
import type { MessageWriter } from "../../services/history/MessageWriter.js"
import type { NetworkConfig, StoredChannel } from "../../services/networks/Networks.js"
import type { ActorTimers } from "../ActorTimers.js"
import type { ConnectThrottle } from "../ConnectThrottle.js"
import type { IrcTransportService } from "../IrcTransport.js"

/** The stored side of one network (services/networks/Networks.ts). Reads may die during an outage; the actor copes. */
export interface NetworkRepo {
  readonly config: Effect.Effect<Option.Option<NetworkConfig>>
  readonly channels: Effect.Effect<ReadonlyArray<StoredChannel>>
  /** `key`: a string stores it, null clears it, undefined keeps what is stored. */
  readonly rememberChannel: (mapping: CaseMapping, name: string, key?: string | null) => Effect.Effect<void>
  readonly forgetChannel: (mapping: CaseMapping, name: string) => Effect.Effect<void>
  readonly setEnabled: (enabled: boolean) => Effect.Effect<void>
  readonly setAwayMessage: (message: string | null) => Effect.Effect<void>
}

/** The network's end-to-end encryption keys (services/networks/E2eKeys.ts). */
export interface E2eKeySource {
  /** Every key of the network, read once at start; may die during an outage (the start then fails and is retried). */
  readonly load: Effect.Effect<ReadonlyArray<E2eKeyEntry>>
  /**
   * Hands this network's key changes (published once stored) to `deliver` until the scope closes. Attached before
   * `load`, so a key set while the keys are read is applied afterwards, never lost. `deliver` must not block.
   */
  readonly attach: (deliver: (change: E2eKeyChange) => void) => Effect.Effect<void, never, Scope.Scope>
}

/**
 * The member's open tabs (services/events/MemberEvents.ts through the supervisor; LiveView.ts) and IRC clients
 * (services/events/NetworkFeed.ts). Called from the dispatcher fiber; none of them blocks.
 */
export interface ActorEvents {
  /** Whether the account has an open tab: the channel changes are not computed otherwise. */
  readonly listening: (accountId: number) => boolean
  /** Every status the actor publishes (ActorState.publish); the receiver tells the tabs when state or nick moved. */
  /** `features`: what the upstream connection can carry for the browser (SocketFrame.NetworkFeatures). */
  readonly status: (accountId: number, name: string, status: NetworkStatus, features?: NetworkFeatures) => void
  readonly publish: (accountId: number, events: ReadonlyArray<NetworkEvent>) => void
  /**
   * Every line the server sent that is not the answer to one of Belay's own queries, as received, with its receive
   * time (services/events/NetworkFeed.ts: the IRC client listener relays them), once the history rows it became were
   * appended (LineRows.ts places it by them). Absent in tests that do not look.
   */
  readonly line?: (accountId: number, networkId: number, line: string, time: number) => void
}

export interface ActorDeps {
  readonly networkId: number
  readonly repo: NetworkRepo
  readonly store: MessageWriter
  readonly transport: IrcTransportService
  /** BELAY_ALLOWED_HOSTS, lower-cased; None allows every host. */
  readonly allowedHosts: Option.Option<ReadonlySet<string>>
  readonly e2e: E2eKeySource
  /** The supervisor's timers (one fiber for every actor). */
  readonly timers: ActorTimers
  /** The supervisor's connect throttle (connects of every actor spaced CONNECT_SPACING apart). */
  readonly throttle: ConnectThrottle
  /** The member's open tabs; absent in tests that do not look. */
  readonly events?: ActorEvents
  /**
   * When the actor's scope closes, destroy the socket right after writing QUIT instead of giving the server
   * QUIT_GRACE to close it (LocalActors.ts: a cluster node hands the network to another node right after).
   */
  readonly closeAtOnce?: boolean | undefined
  /**
   * Whether this process may hold the network's connection now; asked right before every socket is opened (boot,
   * retry, connect_network). A cluster node answers whether it still holds the network's shard lock (docs/decisions/several-nodes.md
   * "Several nodes", fencing): an attempt it refuses waits FENCE_RECHECK in `backoff` and asks again. Absent: always.
   */
  readonly fence?: (() => boolean) | undefined
  /**
   * BELAY_UPSTREAM_SOURCE: the range the member's source address is drawn from, by account id (docs/decisions/hosting.md
   * "Each member their own face upstream"). Absent: the node's own address.
   */
  readonly upstreamSource?: SourceRange | undefined
}
