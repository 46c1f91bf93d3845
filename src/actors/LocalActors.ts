/**
 * LocalActors: the network actors running in this process, and the `NetworkControl` methods over them. Both ways of
 * running networks build on it: the NetworkSupervisor (one process runs every network) and the cluster's network
 * entity (src/cluster/NetworkEntity.ts: this node runs the networks whose shards it holds). What decides *which*
 * networks run here is theirs; how one network's actor is run, restarted, stopped and asked is this module's.
 *
 * Concurrency rule: `supervise` runs one network's actor lives in the calling fiber (restarts on death after a
 * backing-off delay; interruption ends it, so actor finalizers always run). That fiber also runs the actor's
 * dispatcher (`NetworkActor.run`): a fiber costs kilobytes, and an idle network is budgeted 64 KiB of heap in all. The
 * table of running actors is a plain Map written only by those fibers (set on start, deleted in the actor's
 * finalizer) and read synchronously by callers; JavaScript runs one fiber step at a time, so no lock is needed.
 * Callers never touch actor state: they enqueue a tagged command and await its Deferred, raced against the actor's
 * death and COMMAND_TIMEOUT; the actor's one dispatcher fiber alone changes its state and answers. A command that
 * cannot be done fails with its tool failure (src/schema/ToolErrors.ts), as the port (NetworkApi.ts) declares.
 *
 * Shared by every actor, so their cost does not grow with the networks: one ActorTimers (every actor timer on one
 * fiber), one ConnectThrottle (CONNECT_BURST connects at once, then CONNECT_RATE a second, so a server restart does
 * not bring every network back in the same second), and one fiber routing E2eKeys.changes to the actor of the
 * network changed (through its inbox), instead of every actor reading every network's changes.
 */
import {
  Cause,
  Clock,
  Deferred,
  Duration,
  Effect,
  Exit,
  FiberRef,
  HashMap,
  Option,
  PubSub,
  Queue,
  Scope
} from "effect"
import { AppConfig } from "../services/AppConfig.js"
import { type E2eKeyChange, E2eKeys } from "../services/networks/E2eKeys.js"
import { ClusterEvents } from "../services/nodes/ClusterEvents.js"
import { MessageWriter } from "../services/history/MessageWriter.js"
import { Metrics } from "../services/upkeep/Metrics.js"
import { NetworkFeed } from "../services/events/NetworkFeed.js"
import { Networks } from "../services/networks/Networks.js"
import type { CaseMapping } from "../irc/CaseMapping.js"
import { defaultISupport } from "../irc/ISupport.js"
import { messageTargetsOfRawLine } from "../irc/RawGuard.js"
import type { NetworkState, NetworkStatus } from "../schema/Network.js"
import { NO_FEATURES } from "../schema/NetworkEvent.js"
import {
  E2eChannelUseSendMessage,
  InvalidArguments,
  NotConnected,
  type QuotaExceeded,
  Timeout,
  UnknownNetwork
} from "../schema/ToolErrors.js"
import * as ActorTimers from "./ActorTimers.js"
import * as ConnectThrottle from "./ConnectThrottle.js"
import { makeLineRows } from "./LineRows.js"
import { E2eKeyTable, encryptedTargetOfRaw as keyedTargetOfRaw } from "./network/E2eCodec.js"
import { hasLineBreakingChars } from "../irc/Safety.js"
import { IrcTransport } from "./IrcTransport.js"
import * as NetworkActor from "./network/NetworkActor.js"
import type { DeliveryError, NetworkControlService, WriteError } from "./NetworkApi.js"
import {
  actorRestartSchedule,
  COMMAND_TIMEOUT,
  makeStepper,
  QUIT_GRACE,
  SEND_QUEUE_LINES,
  SHUTDOWN_BOUND,
  SHUTDOWN_SLACK,
  STABLE_CONNECTION,
  type Stepper
} from "./ReconnectPolicy.js"

const STATES: ReadonlyArray<NetworkState> = ["connected", "connecting", "backoff", "offline"]

/** docs/decisions/http-and-mcp.md: CR, LF and NUL anywhere are refused (InvalidArguments, naming the field) before anything is sent. */
const lineBreaking = (fields: Record<string, string | undefined>): InvalidArguments | undefined => {
  for (const [name, value] of Object.entries(fields)) {
    if (value !== undefined && hasLineBreakingChars(value)) {
      return new InvalidArguments({ message: `${name} must not contain CR, LF or NUL` })
    }
  }
  return undefined
}

export const offlineStatus = (networkId: number): NetworkStatus => ({
  networkId,
  state: "offline",
  nick: null,
  nextRetryAt: null,
  lastError: null,
  caseMapping: defaultISupport.caseMapping,
  channelTypes: defaultISupport.chanTypes
})

export interface LocalActorsOptions {
  /**
   * Close an actor's socket at once when its scope closes, after writing QUIT, instead of leaving the server
   * QUIT_GRACE to close it: a cluster node gives the network to another node right after (docs/decisions/several-nodes.md
   * "Several nodes", fencing), and two live sessions for one network must never overlap.
   */
  readonly closeAtOnce?: boolean
  /**
   * Whether this process may hold the network's connection now, asked by its actor right before it opens a socket
   * (ActorDeps.fence): a cluster node's shard fence (docs/decisions/several-nodes.md "Several nodes"). Absent: always.
   */
  readonly fence?: (networkId: number) => boolean
}

export interface LocalActors {
  /** The network's actor if one runs in this process now. */
  readonly running: (networkId: number) => NetworkActor.NetworkActor | undefined
  /**
   * Runs the network's actor in the calling fiber, life after life (a dead actor is logged and started again after
   * a backing-off delay), until interrupted or the network is no longer stored.
   */
  readonly supervise: (networkId: number) => Effect.Effect<void>
  /** The running actor (if any) reads its stored settings again, keeping its connection. */
  readonly reconfigure: (networkId: number) => Effect.Effect<void>
  /** Hands an end-to-end key change to the network's actor, if it runs here (it applies it from its inbox). */
  readonly applyKeyChange: (change: E2eKeyChange) => void
  /** QUIT on the network's running actor, waiting for its socket to close (at most QUIT_GRACE + SHUTDOWN_SLACK). */
  readonly quit: (networkId: number) => Effect.Effect<void>
  /**
   * Destroys at once the socket of every running actor whose network `keep` refuses (a cluster node's sweep of the
   * networks whose shard it lost); returns those networks. Their actors retry through the fence.
   */
  readonly severUnless: (keep: (networkId: number) => boolean) => Effect.Effect<ReadonlyArray<number>>
  /** Every running actor QUITs in parallel, then the history is flushed, all within SHUTDOWN_BOUND. */
  readonly shutdown: Effect.Effect<void>
  /**
   * The port over the actors of this process. `isSupervised` says whether a network without a running actor is
   * between two lives (NotConnected) rather than not run here at all (UnknownNetwork).
   */
  readonly control: (isSupervised: (networkId: number) => boolean) => NetworkControlService
}

/**
 * One network's rows in Networks, for its actor. A class, so that an idle network keeps one small object rather than
 * a closure per method; the effects are built when asked for (a getter), as an `Effect.fn` call captures a stack
 * trace for its span, which an actor holding the effect would keep alive.
 */
class NetworkRepoOf implements NetworkActor.NetworkRepo {
  constructor(private readonly networks: Networks, private readonly networkId: number) {}
  get config() {
    return this.networks.config(this.networkId)
  }
  get channels() {
    return this.networks.channels(this.networkId)
  }
  rememberChannel(mapping: CaseMapping, name: string, key?: string | null) {
    return this.networks.rememberChannel(this.networkId, mapping, name, key)
  }
  forgetChannel(mapping: CaseMapping, name: string) {
    return this.networks.forgetChannel(this.networkId, mapping, name)
  }
  setEnabled(enabled: boolean) {
    return this.networks.setEnabled(this.networkId, enabled)
  }
  setAwayMessage(message: string | null) {
    return this.networks.setAwayMessage(this.networkId, message)
  }
}

export const make = (options: LocalActorsOptions = {}) =>
  Effect.gen(function*() {
    const networks = yield* Networks
    const store = yield* MessageWriter
    const e2e = yield* E2eKeys
    const settings = yield* AppConfig
    const metrics = yield* Metrics
    const transport = yield* IrcTransport
    // The member's tabs on this node and, in a cluster, on the others (services/nodes/ClusterEvents.ts).
    const clusterEvents = yield* ClusterEvents
    const feed = yield* NetworkFeed
    // What every actor reports, built once: the member's tabs (ClusterEvents, which hands them to MemberEvents here
    // and to the other nodes) and IRC clients (NetworkFeed) hear it.
    const events: NetworkActor.ActorDeps["events"] = {
      listening: clusterEvents.actorEvents.listening,
      status: (accountId, name, status, features) => {
        clusterEvents.actorEvents.status(accountId, name, status, features)
        feed.publishStatus({ accountId, name, status })
      },
      publish: clusterEvents.actorEvents.publish,
      line: (accountId, networkId, line, time) => {
        const place = lineRows.published(networkId, line)
        if (feed.listening()) feed.publishLine({ accountId, networkId, line, time, ...place })
      }
    }
    // Where each line a network publishes to the feed stands among the rows it appended (LineRows.ts), so that the IRC
    // listener sends it after the stored messages before it, and a stored channel event with its row's msgid
    // (docs/decisions/irc-listener.md "Live lines in the upstream's order"). The actor appends in the order it reads.
    const lineRows = makeLineRows()
    // One writer for every actor (each message names its network), not one per network: an idle network costs
    // no closures here.
    const actorStore: MessageWriter = MessageWriter.make({
      stored: store.stored,
      flush: store.flush,
      appended: store.appended,
      sequenceOf: store.sequenceOf,
      relay: store.relay,
      storedHere: store.storedHere,
      highestAnnounced: store.highestAnnounced,
      redact: store.redact,
      redacted: store.redacted,
      redactedElsewhere: store.redactedElsewhere,
      append: (message) => Effect.map(store.append(message), () => lineRows.appended(message, store.appended()))
    })

    const actors = new Map<number, NetworkActor.NetworkActor>()
    const timers = yield* ActorTimers.make
    const throttle = yield* ConnectThrottle.make()

    // End-to-end key changes: one subscription and one fiber for the process, subscribed before any actor starts (an
    // actor attaches before reading its keys, so nothing published meanwhile is lost). A change for a network whose
    // actor is between lives reaches nobody; its next actor reads the stored keys, which already hold it.
    const keySinks = new Map<number, (change: E2eKeyChange) => void>()
    const applyKeyChange = (change: E2eKeyChange) => keySinks.get(change.networkId)?.(change)
    const keyChanges = yield* PubSub.subscribe(e2e.changes)
    yield* Queue.take(keyChanges).pipe(
      Effect.flatMap((change) => Effect.sync(() => applyKeyChange(change))),
      Effect.forever,
      Effect.forkScoped
    )
    // Scope.addFinalizer, not acquireRelease: the latter keeps a snapshot of the fiber's FiberRefs per finalizer for
    // as long as the network lives (NetworkActor.make says the same of its own finalizers).
    const attachKeys = (networkId: number) => (deliver: (change: E2eKeyChange) => void) =>
      Effect.flatMap(Effect.scope, (scope) =>
        Effect.uninterruptible(Effect.suspend(() => {
          keySinks.set(networkId, deliver)
          return Scope.addFinalizer(
            scope,
            Effect.sync(() => {
              if (keySinks.get(networkId) === deliver) keySinks.delete(networkId)
            })
          )
        })))

    const repoFor = (networkId: number): NetworkActor.NetworkRepo => new NetworkRepoOf(networks, networkId)

    const { fence } = options
    /** Builds the network's actor in `scope` and registers it until the scope closes. */
    const startActor = (networkId: number) =>
      Effect.gen(function*() {
        const actor = yield* NetworkActor.make({
          networkId,
          repo: repoFor(networkId),
          store: actorStore,
          transport,
          allowedHosts: settings.allowedHosts,
          e2e: {
            load: Effect.suspend(() => Effect.map(e2e.forNetwork(networkId), (keys) => [...keys.values()])),
            attach: attachKeys(networkId)
          },
          timers,
          throttle,
          events,
          closeAtOnce: options.closeAtOnce,
          fence: fence === undefined ? undefined : () => fence(networkId),
          upstreamSource: Option.getOrUndefined(settings.upstreamSource)
        })
        actors.set(networkId, actor)
        yield* Scope.addFinalizer(
          yield* Effect.scope,
          Effect.sync(() => {
            if (actors.get(networkId) === actor) actors.delete(networkId)
          })
        )
        return actor
      })

    // The supervising fiber of a network also runs its dispatcher, so whatever wraps `actor.run` stays on that
    // fiber's stack for as long as the network idles. Hence flat combinators below rather than Effect.scoped, a
    // generator around the run and annotateLogs, and the scope closed by hand rather than with acquireUseRelease
    // inside Effect.exit: while idle the fiber holds five frames (the life's continuation, the mask and its restore,
    // the exit handler, the dispatcher's `take`) where it held fifteen, each a closure, its context and an Effect
    // (heap snapshots; an idle network is budgeted 32 KiB of the whole service).

    /**
     * One actor lifetime: built in its own scope, registered, its dispatcher run here; the scope closes with its exit
     * (the dispatcher only ends by failing or being interrupted), which is returned. Built first, then run: the
     * frames left on the stack while the network idles then hold `actor.run`, not the effects that built the actor.
     */
    const runActor = (networkId: number): Effect.Effect<Exit.Exit<never, NetworkActor.NetworkGone>> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(Scope.make(), (scope) => {
          const closeWith = (cause: Cause.Cause<NetworkActor.NetworkGone>) =>
            Effect.map(Effect.exit(Scope.close(scope, Exit.failCause(cause))), (closed) =>
              Exit.failCause(Exit.isFailure(closed) ? Cause.sequential(cause, closed.cause) : cause))
          return Effect.flatMap(Effect.exit(restore(Scope.extend(startActor(networkId), scope))), (built) =>
            Exit.isFailure(built)
              ? closeWith(built.cause)
              : Effect.matchCauseEffect(restore(built.value.run), { onFailure: closeWith, onSuccess: (never) => never }))
        }))

    /** What follows an actor's end: true to start it again (after the backoff), false to stop supervising it. */
    const afterLife = (exit: Exit.Exit<never, NetworkActor.NetworkGone>, startedAt: number, restarts: Stepper) =>
      Effect.gen(function*() {
        if (Exit.isFailure(exit)) {
          const gone = Cause.failureOption(exit.cause)
          if (Option.isSome(gone) && gone.value._tag === "NetworkGone") {
            yield* Effect.logInfo("network no longer stored; not supervising it")
            return false
          }
          if (Cause.isInterruptedOnly(exit.cause)) return false
          yield* Effect.logError("network actor died; restarting it", exit.cause)
        }
        // An actor that ran for a while before dying starts over from the shortest delay.
        if ((yield* Clock.currentTimeMillis) - startedAt >= Duration.toMillis(STABLE_CONNECTION)) yield* restarts.reset
        yield* Effect.sleep(yield* restarts.next)
        return true
      })

    /** Restart on death, with backoff; stop when the network is gone. Interruption (removal, shutdown) ends it. */
    const supervise = (networkId: number) =>
      Effect.flatMap(makeStepper(actorRestartSchedule), (restarts) => {
        const life: Effect.Effect<void> = Effect.flatMap(Clock.currentTimeMillis, (startedAt) =>
          Effect.flatMap(runActor(networkId), (exit) =>
            Effect.flatMap(afterLife(exit, startedAt, restarts), (again) => (again ? life : Effect.void))))
        // The fiber is this network's alone: its log annotation is set once, leaving no frame behind.
        const annotate = FiberRef.update(FiberRef.currentLogAnnotations, HashMap.set<string, unknown>("networkId", networkId))
        return Effect.zipRight(annotate, life)
      })

    const quitActor = (actor: NetworkActor.NetworkActor) =>
      Effect.flatMap(Deferred.make<void>(), (reply) =>
        Effect.zipRight(
          actor.offer({ _tag: "Shutdown", reply }),
          Deferred.await(reply).pipe(Effect.timeout(Duration.sum(QUIT_GRACE, SHUTDOWN_SLACK)), Effect.ignore)
        ))

    const severUnless = (keep: (networkId: number) => boolean) =>
      Effect.gen(function*() {
        const severed: Array<number> = []
        for (const [networkId, actor] of actors) {
          if (!keep(networkId) && (yield* actor.sever)) severed.push(networkId)
        }
        return severed
      })

    const quit = (networkId: number) =>
      Effect.suspend(() => {
        const actor = actors.get(networkId)
        return actor === undefined ? Effect.void : Effect.interruptible(quitActor(actor))
      })

    // Finalizers run uninterruptibly, and a timeout cannot cut short what it cannot interrupt: hence the explicit
    // `interruptible`, so a database that never answers the flush cannot hold the shutdown past its bound.
    const shutdown = Effect.gen(function*() {
      const running = [...actors.values()]
      yield* Effect.forEach(running, quitActor, { concurrency: "unbounded", discard: true })
      yield* store.flush
      yield* Effect.logInfo("network actors stopped and history flushed").pipe(Effect.annotateLogs({ networks: running.length }))
    }).pipe(
      Effect.interruptible,
      Effect.timeoutFail({ duration: SHUTDOWN_BOUND, onTimeout: () => "timeout" as const }),
      Effect.catchAllCause((cause) => Effect.logWarning("shutdown of the network actors did not finish in time", cause))
    )

    const reconfigure = (networkId: number) =>
      Effect.suspend(() => {
        const actor = actors.get(networkId)
        if (actor === undefined) return Effect.void
        return Effect.flatMap(networks.config(networkId), Option.match({ onNone: () => Effect.void, onSome: (config) => actor.reconfigure(config) }))
      })

    metrics.registerGauge("belay_connections", "IRC networks by connection state.", () =>
      Effect.gen(function*() {
        const counts = new Map<NetworkState, number>(STATES.map((s) => [s, 0]))
        for (const actor of actors.values()) {
          const { state } = yield* actor.status.get
          counts.set(state, (counts.get(state) ?? 0) + 1)
        }
        return STATES.map((state) => [{ state }, counts.get(state) ?? 0] as const)
      }))

    const control = (isSupervised: (networkId: number) => boolean): NetworkControlService => {
      /**
       * Sends a command to a network's actor and waits for its answer. No actor: UnknownNetwork, unless the network
       * is supervised and its actor is between lives (NotConnected). The actor dying (NotConnected) or not answering
       * within COMMAND_TIMEOUT (Timeout) never leaves the caller hanging.
       */
      const ask = <A, E>(
        networkId: number,
        command: (reply: Deferred.Deferred<A, E>) => NetworkActor.Command
      ): Effect.Effect<A, E | DeliveryError> =>
        Effect.gen(function*() {
          const actor = actors.get(networkId)
          if (actor === undefined) {
            return yield* isSupervised(networkId) ? new NotConnected({ networkId }) : new UnknownNetwork({ networkId })
          }
          const reply = yield* Deferred.make<A, E>()
          yield* actor.offer(command(reply))
          const died = actor.await.pipe(Effect.catchAllCause(() => new NotConnected({ networkId })))
          return yield* Effect.raceFirst(Deferred.await(reply), died).pipe(
            Effect.timeoutFail({
              duration: COMMAND_TIMEOUT,
              onTimeout: () =>
                new Timeout({ operation: `the command to network ${networkId}`, seconds: Duration.toSeconds(COMMAND_TIMEOUT) })
            })
          )
        })

      /** `run`, unless one of the named fields carries CR, LF or NUL. */
      const guarded = <A, E>(
        fields: Record<string, string | undefined>,
        run: () => Effect.Effect<A, E>
      ): Effect.Effect<A, E | InvalidArguments> => {
        const refused = lineBreaking(fields)
        return refused !== undefined ? Effect.fail(refused) : run()
      }

      /** The network's keys from the store (authoritative, whether or not its actor runs); None when unreadable. */
      const keyTable = (networkId: number): Effect.Effect<Option.Option<E2eKeyTable>> =>
        e2e.forNetwork(networkId).pipe(
          Effect.map((keys) => Option.some(E2eKeyTable.fromEntries(keys.values()))),
          Effect.catchAllCause((cause) =>
            Effect.as(Effect.logWarning("could not read end-to-end keys; treating targets as encrypted", cause), Option.none())
          )
        )

      /** The network's CASEMAPPING and STATUSMSG as its actor last saw them (defaults before ISUPPORT). */
      const namesOf = (networkId: number) =>
        Effect.gen(function*() {
          const actor = actors.get(networkId)
          if (actor === undefined) return { caseMapping: defaultISupport.caseMapping, statusMsg: defaultISupport.statusMsg }
          const { caseMapping } = yield* actor.status.get
          return { caseMapping, statusMsg: yield* actor.statusMsg }
        })

      const isEncrypted = (networkId: number, target: string): Effect.Effect<boolean> =>
        Effect.gen(function*() {
          const table = yield* keyTable(networkId)
          if (Option.isNone(table)) return true
          return table.value.has((yield* namesOf(networkId)).caseMapping, target)
        })

      /**
       * The interface, send_raw: the keyed target a raw PRIVMSG/NOTICE would send plaintext to (E2eCodec's guard, with
       * the network's STATUSMSG and CASEMAPPING). Lines carrying no message skip the store; an unreadable store fails
       * closed, naming the line's first target.
       */
      const encryptedTargetOfRaw = (networkId: number, line: string): Effect.Effect<Option.Option<string>> =>
        Effect.gen(function*() {
          const targets = messageTargetsOfRawLine(line)
          if (targets.length === 0) return Option.none()
          const table = yield* keyTable(networkId)
          if (Option.isNone(table)) return Option.fromNullable(targets[0])
          return Option.fromNullable(keyedTargetOfRaw(table.value, yield* namesOf(networkId), line))
        })

      const { Command } = NetworkActor

      const rawLines = (
        networkId: number,
        lines: ReadonlyArray<string>
      ): Effect.Effect<void, WriteError | E2eChannelUseSendMessage | QuotaExceeded> =>
        Effect.gen(function*() {
          const refused = lines.map((line) => lineBreaking({ line })).find((r) => r !== undefined)
          if (refused !== undefined) return yield* refused
          if (lines.length > SEND_QUEUE_LINES) {
            return yield* new InvalidArguments({ message: `at most ${SEND_QUEUE_LINES} lines can be sent together` })
          }
          // The interface, send_raw: plaintext to an end-to-end encrypted target is refused, whoever calls (the
          // actor checks again against its own keys, atomically with the write).
          for (const line of lines) {
            const keyed = yield* encryptedTargetOfRaw(networkId, line)
            if (Option.isSome(keyed)) return yield* new E2eChannelUseSendMessage({ networkId, target: keyed.value })
          }
          // A JOIN counts against the account's channel limit, read here, off the actor (it never waits on SQL).
          const joins = lines.some((line) => /^\s*(?:@\S+\s+)?(?::\S+\s+)?JOIN\s/i.test(line))
          return yield* ask(networkId, Command.raw(lines, joins ? yield* networks.channelLimit(networkId) : null))
        })

      return {
        status: (networkId) =>
          Effect.suspend(() => {
            const actor = actors.get(networkId)
            return actor === undefined ? Effect.succeed(offlineStatus(networkId)) : actor.status.get
          }),
        statusNow: (networkId) => actors.get(networkId)?.status.now ?? offlineStatus(networkId),
        upstream: (networkId) =>
          Effect.suspend(() => {
            const actor = actors.get(networkId)
            return actor === undefined ? Effect.succeed(Option.none()) : actor.upstream
          }),
        statuses: Effect.suspend(() => Effect.forEach([...actors.values()], (actor) => actor.status.get)),
        view: (networkId, deliver) =>
          Effect.gen(function*() {
            const actor = actors.get(networkId)
            if (actor !== undefined) {
              const done = yield* Deferred.make<void>()
              yield* actor.view(deliver, done)
              const died = Effect.ignore(actor.await)
              const drawn = yield* Effect.raceFirst(Effect.as(Deferred.await(done), true), Effect.as(died, false)).pipe(
                Effect.timeoutTo({ duration: COMMAND_TIMEOUT, onTimeout: () => false, onSuccess: (ok) => ok })
              )
              if (drawn) return
            }
            // Between two lives, or not supervised: offline, under its stored name.
            const config = yield* networks.config(networkId)
            if (Option.isNone(config)) return
            deliver([{
              type: "network",
              network: { id: networkId, name: config.value.name, state: "offline", nick: null, features: NO_FEATURES }
            }])
          }),
        say: (networkId, kind, target, text) =>
          guarded({ target, text }, () => ask(networkId, Command.say(kind, target, text))),
        raw: (networkId, line) => rawLines(networkId, [line]),
        rawLines,
        join: (networkId, channel, key) =>
          guarded({ channel, key: Option.getOrUndefined(key) }, () =>
            Effect.flatMap(networks.channelLimit(networkId), (limit) => ask(networkId, Command.join(channel, key, limit)))),
        part: (networkId, channel, reason) =>
          guarded({ channel, reason: Option.getOrUndefined(reason) }, () => ask(networkId, Command.part(channel, reason))),
        nick: (networkId, nick) => guarded({ nick }, () => ask(networkId, Command.nick(nick))),
        away: (networkId, message) =>
          guarded({ message: Option.getOrUndefined(message) }, () => ask(networkId, Command.away(message))),
        whois: (networkId, nick) => guarded({ nick }, () => ask(networkId, Command.whois(nick))),
        connect: (networkId, reconnect) => ask(networkId, Command.connect(reconnect)),
        disconnect: (networkId) => ask(networkId, Command.disconnect()),
        members: (networkId, channel) => guarded({ channel }, () => ask(networkId, Command.members(channel))),
        topic: (networkId, channel) => guarded({ channel }, () => ask(networkId, Command.topic(channel))),
        setTopic: (networkId, channel, topic) =>
          guarded({ channel, topic }, () => ask(networkId, Command.setTopic(channel, topic))),
        // The actor answers within MODE_LIST_TIMEOUT, inside COMMAND_TIMEOUT, so the caller hears the actor's Timeout.
        modeList: (networkId, channel, letter) =>
          guarded({ channel, letter }, () => ask(networkId, Command.modeList(channel, letter))),
        setModes: (networkId, channel, changes) =>
          guarded(
            Object.fromEntries([["channel", channel], ...changes.map((c, i) => [`changes[${i}].param`, c.param] as const)]),
            () => ask(networkId, Command.setModes(channel, changes))
          ),
        isEncrypted,
        encryptedTargetOfRaw
      }
    }

    return {
      running: (networkId) => actors.get(networkId),
      supervise,
      reconfigure,
      applyKeyChange,
      quit,
      severUnless,
      shutdown,
      control
    } satisfies LocalActors
  })
