/**
 * ClusterNetworkControl: the `NetworkControl` port (src/actors/NetworkApi.ts) on a cluster node. A network whose
 * actor runs on this node is asked directly (the fast path: the same calls the one-process supervisor makes);
 * any other goes to its entity through the cluster, which routes it to the node holding the network's shard.
 * Whoever is asked, the answer is the same: the owner runs the very same port method (NetworkEntityLive.ts).
 *
 * Bounds (docs/decisions/several-nodes.md "Several nodes"): every call through the cluster is bounded by COMMAND_TIMEOUT (the
 * cluster retries delivery while a network moves between nodes, so without a bound a call during a failover would
 * wait for it); a cluster failure, or the owner's entity going away mid-call, answers `not-connected`, the bound
 * `timeout` — never a hang and never a second vocabulary of errors.
 *
 * Reads: `status` (list_networks, and the case mapping every history read renders names with) of a network owned
 * elsewhere is asked of its owner and kept (docs/decisions/several-nodes.md "A remote network's status"). A read answers the kept
 * status at once while it is younger than STATUS_SERVED; once it is older than STATUS_FRESH that read also starts one
 * ask of the owner in the background (at most one per network at a time), so a burst of reads never waits for a round
 * trip and the owner is asked about once a second however many read. A read with nothing to answer waits for the ask
 * in flight, or starts one. A command sent through this node forgets the kept status, and an ask that was already
 * under way keeps its answer only if nothing was forgotten meanwhile, so the next read waits for the owner and sees
 * what the command did. An owner that cannot be reached reads `offline`. `statuses` is this node's networks.
 *
 * Commands (say, raw, join, part, nick, away, whois, set_topic) to a network owned elsewhere go straight to the
 * owner's direct listener (DirectPeers.ts, DirectListener.ts), whose address the owner's entity gives and this node
 * keeps per network; the listener runs them only while the network runs there, else the call takes the entity path.
 *
 * Concurrency rule: any fiber may call any method; the status and listener caches are plain Maps whose entries are
 * changed in single synchronous steps, a status entry's identity standing for what was kept when an ask began. Asks
 * run in the layer's scope, not the reader's, so a reader that goes away does not cancel the answer others wait for.
 */
import { Cause, Clock, Deferred, Duration, Effect, Exit, FiberId, FiberSet, Layer, Option } from "effect"
import * as LocalActors from "../actors/LocalActors.js"
import { NetworkControl, type NetworkControlService } from "../actors/NetworkApi.js"
import { COMMAND_TIMEOUT } from "../actors/ReconnectPolicy.js"
import type { NetworkStatus } from "../schema/Network.js"
import { NotConnected, Timeout } from "../schema/ToolErrors.js"
import { type DirectOutcome, DirectPeers } from "./DirectPeers.js"
import type { DirectAddress, DirectCommand } from "./DirectWire.js"
import { entityIdOf, NetworkEntity } from "./NetworkEntity.js"
import { NodeActors } from "./NodeActors.js"

/** How long a status read from another node's network is reused without asking its owner again. */
export const STATUS_FRESH = Duration.seconds(1)
/**
 * The oldest kept status a read answers with while a newer one is asked (an ask bounded by READ_TIMEOUT, after
 * STATUS_FRESH): past it, the read waits for the owner, so a network read again after a quiet spell is not shown as
 * it was then.
 */
export const STATUS_SERVED = Duration.seconds(5)
/** Reads that have an answer without the owner (status, view, the end-to-end checks) wait for it this long at most. */
export const READ_TIMEOUT = Duration.seconds(3)
/** How long an owner's "no direct listener" (its actor not running yet) is believed before it is asked again. */
export const DIRECT_NONE_FRESH = Duration.seconds(1)

interface StatusEntry {
  status: NetworkStatus | undefined
  /** When `status` was answered (Clock, ms). */
  at: number
  asking: Deferred.Deferred<NetworkStatus> | undefined
}

const CLUSTER_ERRORS: ReadonlySet<string> = new Set(["MailboxFull", "AlreadyProcessingMessage", "PersistenceError"])

interface ClusterFailure {
  readonly _tag: "MailboxFull" | "AlreadyProcessingMessage" | "PersistenceError"
}

const commandTimeout = (networkId: number, bound: Duration.Duration) =>
  new Timeout({ operation: `the command to network ${networkId}`, seconds: Duration.toSeconds(bound) })

const isClusterFailure = (u: unknown): u is ClusterFailure =>
  typeof u === "object" && u !== null && "_tag" in u && typeof u._tag === "string" && CLUSTER_ERRORS.has(u._tag)

export const make = Effect.gen(function*() {
  const { control: here, local } = yield* NodeActors
  const makeClient = yield* NetworkEntity.client
  // Absent on the cluster's in-memory test runner: commands then take the entity path only.
  const peers = yield* Effect.serviceOption(DirectPeers)
  const owner = (networkId: number) => makeClient(entityIdOf(networkId))
  const isHere = (networkId: number) => local.running(networkId) !== undefined

  const asks = yield* FiberSet.make()
  /**
   * Per network owned elsewhere: the status last answered by its owner (none before the first answer) and when, and
   * the ask under way. `remote` deletes the entry: an ask stores its answer only into the entry it began with.
   */
  const statuses = new Map<number, StatusEntry>()

  /**
   * A call to the network's owner, bounded by `bound`: the tool failures it answers pass through; a cluster failure,
   * a defect or an interruption on the way (the owner lost the network mid-call) is NotConnected; no answer in time
   * is Timeout.
   */
  const remote = <A, E>(
    networkId: number,
    call: Effect.Effect<A, E | ClusterFailure>,
    bound: Duration.Duration = COMMAND_TIMEOUT
  ): Effect.Effect<A, Exclude<E, ClusterFailure> | NotConnected | Timeout> => {
    const notConnected = (cause: unknown) =>
      Effect.zipRight(
        Effect.logDebug("a call to another node's network failed", cause).pipe(Effect.annotateLogs({ networkId })),
        Effect.fail(new NotConnected({ networkId }))
      )
    const answered: Effect.Effect<A, Exclude<E, ClusterFailure> | NotConnected> = call.pipe(
      Effect.ensuring(Effect.sync(() => statuses.delete(networkId))),
      Effect.catchIf(isClusterFailure, notConnected),
      // A defect or an interruption on the way (the owner lost the network mid-call) is no tool failure.
      Effect.catchAllCause((cause) => {
        const failure = Cause.failureOption(cause)
        return Option.isSome(failure) ? Effect.fail(failure.value) : notConnected(cause)
      })
    )
    return Effect.timeoutFail(answered, { duration: bound, onTimeout: () => commandTimeout(networkId, bound) })
  }
  const commandTimeoutMs = Duration.toMillis(COMMAND_TIMEOUT)

  /** Per network: the owner's direct listener as its entity last told (null: none, kept DIRECT_NONE_FRESH). */
  const directs = new Map<number, { readonly address: DirectAddress | null; readonly at: number }>()
  const forget = (networkId: number) => Effect.sync(() => directs.delete(networkId))

  /** The owner's direct listener: cached, else asked of the owner itself (its entity answers, fenced). */
  const directOf = (networkId: number): Effect.Effect<DirectAddress | null, ClusterFailure> =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const kept = directs.get(networkId)
      if (kept !== undefined && (kept.address !== null || now - kept.at < Duration.toMillis(DIRECT_NONE_FRESH))) {
        return kept.address
      }
      const address = yield* owner(networkId).DirectAddress()
      directs.set(networkId, { address, at: now })
      return address
    })

  /**
   * A command to another node's network (docs/decisions/several-nodes.md "Several nodes", the direct path): straight to its owner's
   * listener when the owner gave one, through the entity otherwise, bounded as `remote`. The listener refusing
   * (`notHere`: the network is not running there now) or never getting the command (`unsent`) sends this call
   * through the entity; a connection lost after the command was written is `not-connected`, as the owner may have
   * run it. Every failure of the channel, and the bound, forget the cached listener.
   *
   * With the listener's address kept (every call but a network's first), the call is one DirectPeers call bounded
   * by its own deadline (`timeout` is the bound, answered as `remote`'s Timeout), not wrapped in `remote`: that
   * bound races two fibers per call, and this is the path every write tool on another node's network takes. Only
   * the entity path after a refusal goes through `remote`, with what is left of the bound.
   */
  const command = <E>(
    networkId: number,
    direct: DirectCommand,
    entity: () => Effect.Effect<void, E | ClusterFailure>
  ): Effect.Effect<void, Exclude<E, ClusterFailure> | NotConnected | Timeout> => {
    // The entity's client is made only when the call takes that path: making it is work too.
    const viaEntity = Effect.suspend(entity)
    if (Option.isNone(peers)) return remote(networkId, viaEntity)
    const call = peers.value.call
    type Answer = Effect.Effect<void, E | ClusterFailure | NotConnected | Timeout>
    const answer = (outcome: DirectOutcome, viaEntityNext: Answer): Answer => {
      switch (outcome._tag) {
        case "done":
          return Effect.void
        // The owner ran the same port method the entity's handler runs, so its failure is one of E.
        case "failed":
          return Effect.fail(outcome.error as E)
        case "notHere":
        case "unsent":
          return Effect.zipRight(forget(networkId), viaEntityNext)
        case "lost":
          return Effect.zipRight(forget(networkId), Effect.fail(new NotConnected({ networkId })))
        // The call's own deadline, the bound (the slow path's `remote` has the same one and may end it first).
        case "timeout":
          return Effect.zipRight(forget(networkId), Effect.fail(commandTimeout(networkId, COMMAND_TIMEOUT)))
      }
    }
    const slow = (): Effect.Effect<void, Exclude<E, ClusterFailure> | NotConnected | Timeout> => {
      const attempt: Answer = Effect.flatMap(
        directOf(networkId),
        (address): Answer =>
          address === null
            ? viaEntity
            : Effect.flatMap(call(address, networkId, direct, commandTimeoutMs), (outcome) => answer(outcome, viaEntity))
      )
      return remote(networkId, Effect.onInterrupt(attempt, () => forget(networkId)))
    }
    const fast = (address: DirectAddress): Effect.Effect<void, Exclude<E, ClusterFailure> | NotConnected | Timeout> => {
      const started = Date.now()
      return Effect.flatMap(
        Effect.onExit(call(address, networkId, direct, commandTimeoutMs), (exit) =>
          Effect.sync(() => {
            // As `remote`'s: a command sent through this node forgets the kept status.
            statuses.delete(networkId)
            if (Exit.isInterrupted(exit)) directs.delete(networkId)
          })),
        (outcome) => {
          const left = Duration.millis(Math.max(0, commandTimeoutMs - (Date.now() - started)))
          return outcome._tag === "notHere" || outcome._tag === "unsent"
            ? Effect.zipRight(forget(networkId), remote(networkId, viaEntity, left))
            // Neither `done`, `failed`, `lost` nor `timeout` takes the entity path: no ClusterFailure comes out.
            : answer(outcome, viaEntity) as Effect.Effect<void, Exclude<E, ClusterFailure> | NotConnected | Timeout>
        }
      )
    }
    return Effect.suspend(() => {
      const kept = directs.get(networkId)
      return kept !== undefined && kept.address !== null ? fast(kept.address) : slow()
    })
  }

  /** A read with an answer of its own when the owner cannot give one within READ_TIMEOUT. */
  const read = <A>(networkId: number, call: Effect.Effect<A, unknown>, otherwise: Effect.Effect<A>): Effect.Effect<A> =>
    call.pipe(
      Effect.timeout(READ_TIMEOUT),
      Effect.catchAllCause((cause) =>
        Effect.zipRight(
          Effect.logDebug("a read of another node's network failed", cause).pipe(Effect.annotateLogs({ networkId })),
          otherwise
        )
      )
    )

  /**
   * Starts an ask of the owner into `entry` (which must be in `statuses`), marked at once as under way; the effect
   * returned forks it into `asks`. Its answer is kept only if the entry was not forgotten meanwhile.
   */
  const ask = (networkId: number, entry: StatusEntry): Effect.Effect<Deferred.Deferred<NetworkStatus>> => {
    const asking = Deferred.unsafeMake<NetworkStatus>(FiberId.none)
    entry.asking = asking
    const kept = entry.status
    // Unreachable: offline, keeping the names it last had (history renders nicks with its case mapping).
    const unreachable = Effect.sync((): NetworkStatus => ({
      ...LocalActors.offlineStatus(networkId),
      ...(kept === undefined ? {} : { caseMapping: kept.caseMapping, channelTypes: kept.channelTypes })
    }))
    const answer = read(networkId, owner(networkId).Status(), unreachable).pipe(
      Effect.flatMap((answered) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          entry.asking = undefined
          if (statuses.get(networkId) === entry) {
            entry.status = answered
            entry.at = now
          }
          return Deferred.succeed(asking, answered)
        })
      ),
      // Interrupted (the node stops): whoever waits is released with what an unreachable owner reads.
      Effect.onInterrupt(() => Effect.flatMap(unreachable, (offline) => Deferred.succeed(asking, offline)))
    )
    return Effect.as(FiberSet.run(asks, answer), asking)
  }

  const freshMs = Duration.toMillis(STATUS_FRESH)
  const servedMs = Duration.toMillis(STATUS_SERVED)
  // Written without a generator: every history read asks it (the case mapping), and a kept answer is synchronous.
  // Where the network runs is looked at when the read runs, not when it is built (a read may be run again).
  const status = (networkId: number): Effect.Effect<NetworkStatus> =>
    Effect.suspend(() => isHere(networkId) ? here.status(networkId) : Effect.flatMap(Clock.currentTimeMillis, (now) => {
      let entry = statuses.get(networkId)
      if (entry === undefined) statuses.set(networkId, entry = { status: undefined, at: 0, asking: undefined })
      const age = now - entry.at
      if (entry.status !== undefined && age < servedMs) {
        return age >= freshMs && entry.asking === undefined
          ? Effect.as(ask(networkId, entry), entry.status)
          : Effect.succeed(entry.status)
      }
      return entry.asking !== undefined ? Deferred.await(entry.asking) : Effect.flatMap(ask(networkId, entry), Deferred.await)
    }))

  const service: NetworkControlService = {
    status,
    // Only a network run on this node is at hand; one run elsewhere is asked (or its kept answer read) by `status`.
    statusNow: (networkId) => isHere(networkId) ? here.statusNow?.(networkId) : undefined,
    upstream: (networkId) =>
      isHere(networkId)
        ? here.upstream(networkId)
        : read(networkId, owner(networkId).Upstream(), Effect.succeedNone),
    statuses: here.statuses,
    view: (networkId, deliver) =>
      isHere(networkId)
        ? here.view(networkId, deliver)
        : Effect.flatMap(
          read(networkId, Effect.map(owner(networkId).View(), Option.some), Effect.succeedNone),
          (events) =>
            Option.isSome(events) && events.value.length > 0
              ? Effect.sync(() => deliver(events.value))
              // Not drawn by its owner: offline, under its stored name (the local port knows no actor for it).
              : here.view(networkId, deliver)
        ),
    say: (networkId, kind, target, text) =>
      isHere(networkId)
        ? here.say(networkId, kind, target, text)
        : command(networkId, { _tag: "Say", kind, target, text }, () => owner(networkId).Say({ kind, target, text })),
    raw: (networkId, line) =>
      isHere(networkId)
        ? here.raw(networkId, line)
        : command(networkId, { _tag: "Raw", line }, () => owner(networkId).Raw({ line })),
    rawLines: (networkId, lines) =>
      isHere(networkId)
        ? here.rawLines(networkId, lines)
        : command(networkId, { _tag: "RawLines", lines }, () => owner(networkId).RawLines({ lines })),
    join: (networkId, channel, key) =>
      isHere(networkId)
        ? here.join(networkId, channel, key)
        : command(
          networkId,
          { _tag: "Join", channel, key: Option.getOrNull(key) },
          () => owner(networkId).Join({ channel, key: Option.getOrNull(key) })
        ),
    part: (networkId, channel, reason) =>
      isHere(networkId)
        ? here.part(networkId, channel, reason)
        : command(
          networkId,
          { _tag: "Part", channel, reason: Option.getOrNull(reason) },
          () => owner(networkId).Part({ channel, reason: Option.getOrNull(reason) })
        ),
    nick: (networkId, nick) =>
      isHere(networkId)
        ? here.nick(networkId, nick)
        : command(networkId, { _tag: "Nick", nick }, () => owner(networkId).Nick({ nick })),
    away: (networkId, message) =>
      isHere(networkId)
        ? here.away(networkId, message)
        : command(
          networkId,
          { _tag: "Away", message: Option.getOrNull(message) },
          () => owner(networkId).Away({ message: Option.getOrNull(message) })
        ),
    whois: (networkId, nick) =>
      isHere(networkId)
        ? here.whois(networkId, nick)
        : command(networkId, { _tag: "Whois", nick }, () => owner(networkId).Whois({ nick })),
    connect: (networkId, reconnect) =>
      isHere(networkId)
        ? here.connect(networkId, reconnect)
        : remote(networkId, owner(networkId).Connect({ reconnect })),
    disconnect: (networkId) =>
      isHere(networkId) ? here.disconnect(networkId) : remote(networkId, owner(networkId).Disconnect()),
    members: (networkId, channel) =>
      isHere(networkId) ? here.members(networkId, channel) : remote(networkId, owner(networkId).Members({ channel })),
    topic: (networkId, channel) =>
      isHere(networkId) ? here.topic(networkId, channel) : remote(networkId, owner(networkId).Topic({ channel })),
    setTopic: (networkId, channel, topic) =>
      isHere(networkId)
        ? here.setTopic(networkId, channel, topic)
        : command(networkId, { _tag: "SetTopic", channel, topic }, () => owner(networkId).SetTopic({ channel, topic })),
    modeList: (networkId, channel, letter) =>
      isHere(networkId)
        ? here.modeList(networkId, channel, letter)
        : remote(networkId, owner(networkId).ModeList({ channel, letter })),
    setModes: (networkId, channel, changes) =>
      isHere(networkId)
        ? here.setModes(networkId, channel, changes)
        : remote(networkId, owner(networkId).SetModes({ channel, changes })),
    // Without the owner, this node's answer from the store (default case mapping; unreadable keys fail closed). The
    // owner's actor checks again before anything is written, against its own keys.
    isEncrypted: (networkId, target) =>
      isHere(networkId)
        ? here.isEncrypted(networkId, target)
        : read(networkId, owner(networkId).IsEncrypted({ target }), here.isEncrypted(networkId, target)),
    encryptedTargetOfRaw: (networkId, line) =>
      isHere(networkId)
        ? here.encryptedTargetOfRaw(networkId, line)
        : read(
          networkId,
          Effect.map(owner(networkId).EncryptedTargetOfRaw({ line }), Option.fromNullable),
          here.encryptedTargetOfRaw(networkId, line)
        )
  }
  return service
})

/** NetworkControl on a cluster node: over NodeActors and the cluster's Sharding. */
export const ClusterNetworkControlLive = Layer.scoped(NetworkControl, make)
