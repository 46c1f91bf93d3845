/**
 * NetworkActor: one IRC network of one account, kept connected and recorded. This file builds the actor and wires
 * its parts; each part is a module of this folder over the actor's state (ActorState.ts):
 *
 * - Connection.ts — attempts, the socket, close, retry or offline, keepalive; connect, disconnect, shutdown.
 * - Outbound.ts, TokenBucket.ts — every line written, in order, paced under the server's flood limit.
 * - Registration.ts — welcome, nick fallback, ISUPPORT, end of burst (rejoin, away), nick regain.
 * - Inbound.ts — the reducer of what the server sends: own queries' replies, history, channel state.
 * - Commands.ts — the tagged commands callers send, each answered through its Deferred.
 * - Persistence.ts — history into the MessageWriter; stored channels, keys, enabled and away into Networks.
 * - Timers.ts, ModeListWaiters.ts — named deadlines; get_mode_list callers waiting for their answer.
 * - LiveView.ts — what the member's open tabs are told: after every input, the channel changes it made.
 * - ChannelState.ts, ChannelReducer.ts, ModeListRequests.ts, History.ts, ChannelErrors.ts, E2eCodec.ts — the pure
 *   values and functions they reduce lines with, no I/O.
 *
 * Concurrency rule (docs/architecture.md; soju `doc/architecture.md`): one inbox, one dispatcher. Commands (each
 * with a Deferred reply), transport events (pushed by irc-framework callbacks with `unsafeOffer`, never handled
 * there), end-to-end key changes (delivered by the supervisor the same way) and timer expiries all go through the
 * unbounded inbox (Inbox.ts), and the dispatcher (`run`, `dispatch` below) is the only code that reads or changes
 * the actor's state. Timers are entries in the supervisor's ActorTimers, whose one fiber only enqueues when they
 * are due. The only other fibers are Persistence's writer and channel reader, which exist while they have work.
 * Other services read the public status from a StatusCell and talk to the actor only through the supervisor.
 *
 * Memory: an idle connected actor is one fiber (the supervisor runs `run` in the fiber that supervises the
 * network), one inbox and its state. Every Effect fiber costs kilobytes (its FiberRefs are copied at fork), so
 * nothing here forks a fiber that lives while the network idles.
 */
import { Cause, Data, Deferred, Effect, Exit, FiberId, Option, Scope } from "effect"
import { CaseMappedMap, DEFAULT_CASE_MAPPING } from "../../irc/CaseMapping.js"
import { defaultISupport, formatISupportToken } from "../../irc/ISupport.js"
import type { NetworkStatus } from "../../schema/Network.js"
import type { NetworkEvent } from "../../schema/NetworkEvent.js"
import type { NetworkConfig } from "../../services/networks/Networks.js"
import type { UpstreamView } from "../NetworkApi.js"
import { makeStepper, reconnectSchedule, regainNickSchedule } from "../ReconnectPolicy.js"
import type { ActorDeps } from "./ActorDeps.js"
import { type Actor, connected, current, publish } from "./ActorState.js"
import { onCommand } from "./Commands.js"
import * as Connection from "./Connection.js"
import * as E2e from "./E2eCodec.js"
import { onTransport, onWhoTimeout } from "./Inbound.js"
import type { Command, Input } from "./Inbox.js"
import { InputQueue } from "./InputQueue.js"
import * as LiveView from "./LiveView.js"
import * as ModeListWaiters from "./ModeListWaiters.js"
import * as Outbound from "./Outbound.js"
import { drainUnsaved } from "./Persistence.js"
import { afterBurst, onChannelsLoaded, onRegainDue } from "./Registration.js"
import { StatusCell } from "./StatusCell.js"
import { disarmAll } from "./Timers.js"

export type { ActorDeps, E2eKeySource, NetworkRepo } from "./ActorDeps.js"
export { Command, type Gated } from "./Inbox.js"

/** The network no longer exists (removed while the actor was starting): the supervisor stops supervising it. */
export class NetworkGone extends Data.TaggedError("NetworkGone")<{ readonly networkId: number }> {}

export interface NetworkActor {
  readonly networkId: number
  readonly status: StatusCell
  /** STATUSMSG of the network (for send_raw's end-to-end guard); "" before ISUPPORT. */
  readonly statusMsg: Effect.Effect<string>
  /** The registered connection as the server sees it (NetworkApi.UpstreamView); None while not connected. */
  readonly upstream: Effect.Effect<Option.Option<UpstreamView>>
  /** Takes new stored settings that keep the connection (the supervisor read them); publishes the status again. */
  readonly reconfigure: (config: NetworkConfig) => Effect.Effect<void>
  /** Enqueues a command; the caller awaits its Deferred. Never blocks (unbounded inbox). */
  readonly offer: (command: Command) => Effect.Effect<void>
  /** Draws the whole network for one new tab through `deliver`, from the dispatcher fiber (LiveView.view). */
  readonly view: (deliver: (events: ReadonlyArray<NetworkEvent>) => void, done: Deferred.Deferred<void>) => Effect.Effect<void>
  /** Completes (with the dispatcher's failure) when the actor's scope closes: the dispatcher died or was stopped. */
  readonly await: Effect.Effect<never>
  /**
   * Destroys the current socket at once, from any fiber; true when there was one. For a cluster node that finds it no
   * longer holds the network's shard (NodeActors.ts): the close then reaches the dispatcher like any other, and the
   * retry asks the fence first. Only the socket is touched here; the actor's state stays the dispatcher's.
   */
  readonly sever: Effect.Effect<boolean>
  /**
   * The dispatcher: takes the inbox one input at a time until interrupted (or a defect). It runs in the caller's
   * fiber, so the supervisor spends one fiber per network, not two; `start` forks it instead.
   */
  readonly run: Effect.Effect<never>
}

/** Routes one input to the part of the actor that handles it; inputs naming an ended session are dropped. */
const dispatch = (a: Actor, input: Input): Effect.Effect<unknown> => {
  switch (input._tag) {
    case "Start":
      return a.config.enabled
        ? Connection.requestAttempt(a)
        : Effect.zipRight(Effect.logInfo("network disconnected by the account; staying offline"), publish(a))
    case "Transport": {
      const s = current(a, input.session)
      return s === undefined ? Effect.void : onTransport(a, s, input.event)
    }
    case "RetryDue":
      return Connection.onRetryDue(a, input.token, input.slot)
    case "RegistrationTimeout": {
      const s = current(a, input.session)
      return s === undefined ? Effect.void : Connection.onRegistrationTimeout(s)
    }
    case "KeepaliveDue": {
      const s = current(a, input.session)
      return s === undefined ? Effect.void : Connection.onKeepalive(a, s)
    }
    case "RegainDue": {
      const s = current(a, input.session)
      return s === undefined ? Effect.void : onRegainDue(a, s)
    }
    case "RejoinFallback": {
      const s = current(a, input.session)
      return s === undefined ? Effect.void : afterBurst(a, s)
    }
    case "ChannelsLoaded": {
      const s = current(a, input.session)
      if (s === undefined) return Effect.void
      // The reader has ended; forget it so the finished fiber is not kept.
      a.channelsReader = undefined
      return a.state !== "connected" ? Effect.void : onChannelsLoaded(a, s, input.channels)
    }
    case "QuitGraceOver": {
      const s = current(a, input.session)
      return s === undefined ? Effect.void : Connection.onQuitGraceOver(s)
    }
    case "ModeListTimeout":
      return ModeListWaiters.onTimeout(a, input.requestId)
    case "WhoTimeout": {
      const s = current(a, input.session)
      return s === undefined ? Effect.void : onWhoTimeout(a, s)
    }
    case "SendDue": {
      const s = current(a, input.session)
      return s === undefined ? Effect.void : Outbound.onSendDue(a, s)
    }
    case "E2eKeyChanged":
      return Effect.sync(() => {
        a.e2eKeys = a.e2eKeys.apply(input.change)
      })
    case "View":
      return LiveView.view(a, input.deliver, input.done)
    case "Reconfigure":
      return Effect.suspend(() => {
        a.config = input.config
        return publish(a)
      })
    default:
      return onCommand(a, input)
  }
}

/**
 * Runs when the actor's scope closes, after its dispatcher stopped (the supervisor interrupts `run` before closing
 * the scope), so it sees the final state: a removed network or a dead actor still says QUIT instead of leaking its
 * socket, and leaves no timer behind in the shared ActorTimers.
 */
const release = (a: Actor) =>
  Effect.sync(() => {
    disarmAll(a)
    Connection.release(a)
  })

/**
 * The actor as the supervisor sees it. A class, so its methods live on the prototype: an object literal of closures
 * would cost every network a closure, its context and an Effect per method for as long as it lives.
 */
class Handle implements NetworkActor {
  /**
   * Made by the first `await`, which callers only do while they wait on the actor: a Deferred has a hidden class of its
   * own in V8 (Effect builds it as a spread followed by more fields: some 570 bytes a network for as long as it lives,
   * bench/results/memory-breakdown.md "At 10,000 networks, per-network objects").
   */
  private died: Deferred.Deferred<never, unknown> | undefined = undefined
  /** How the actor's scope closed, once it has. */
  private ended: Cause.Cause<unknown> | undefined = undefined

  constructor(private readonly a: Actor) {}

  /** The actor's scope closed: `await` fails with `cause`, now and from now on. */
  end(cause: Cause.Cause<unknown>): void {
    this.ended = cause
    if (this.died !== undefined) Deferred.unsafeDone(this.died, Exit.failCause(cause))
  }

  get networkId() {
    return this.a.networkId
  }

  get status() {
    return this.a.status
  }

  get statusMsg() {
    const a = this.a
    return Effect.sync(() => a.isupport.statusMsg)
  }

  get upstream() {
    const a = this.a
    return Effect.sync(() => {
      const s = connected(a)
      if (s === undefined) return Option.none()
      return Option.some<UpstreamView>({
        nick: s.nick,
        user: s.user ?? null,
        host: s.host ?? null,
        isupport: Array.from(s.isupport.tokens, ([key, value]) => formatISupportToken(key, value)),
        caps: [...s.caps],
        capValues: Object.fromEntries(s.capValues ?? []),
        away: a.awayMessage !== null
      })
    })
  }

  offer(command: Command) {
    return this.a.inbox.offer(command)
  }

  reconfigure(config: NetworkConfig) {
    return this.a.inbox.offer({ _tag: "Reconfigure", config })
  }

  view(deliver: (events: ReadonlyArray<NetworkEvent>) => void, done: Deferred.Deferred<void>) {
    return this.a.inbox.offer({ _tag: "View", deliver, done })
  }

  get await() {
    return Effect.orDie(Effect.suspend(() => {
      if (this.ended !== undefined) return Effect.failCause(this.ended)
      this.died ??= Deferred.unsafeMake<never, unknown>(FiberId.none)
      return Deferred.await(this.died)
    }))
  }

  get sever() {
    const a = this.a
    return Effect.sync(() => {
      const s = a.session
      if (s === undefined) return false
      s.connection.destroy()
      return true
    })
  }

  get run(): Effect.Effect<never> {
    const a = this.a
    // A loop of its own rather than Effect.forever, whose two frames (and a yield per input) would stay on the idle
    // fiber's stack: while the inbox is empty, the stack holds only the `take` continuation. The fiber still yields
    // to others after a run of operations (Effect's scheduler), so a busy network cannot starve the rest.
    // After each input the member's tabs hear what it changed (LiveView.observe), then the next input: one step,
    // built once, so an input costs the loop no more than its own effect (an idle network's only input is its
    // keepalive every 90 s; docs/architecture.md "Memory").
    const next = (): Effect.Effect<never> => {
      LiveView.observe(a)
      return loop
    }
    const loop: Effect.Effect<never> = Effect.flatMap(a.inbox.take, (input) => Effect.flatMap(dispatch(a, input), next))
    return loop
  }
}

/**
 * Builds the actor in the caller's scope: reads the network's config and end-to-end keys, attaches to the key
 * changes, and queues its Start. Nothing runs until `run` does (the supervisor runs it in its own fiber).
 */
export const make = (deps: ActorDeps): Effect.Effect<NetworkActor, NetworkGone, Scope.Scope> =>
  Effect.gen(function*() {
    const { networkId } = deps
    const loaded = yield* deps.repo.config
    if (Option.isNone(loaded)) return yield* new NetworkGone({ networkId })
    const config: NetworkConfig = loaded.value
    const inbox = new InputQueue<Input>()
    // Keys are known before anything can be sent: without them a message to an encrypted channel would go out in
    // plaintext. Attaching first means a key set while they are read is applied afterwards, never lost.
    yield* deps.e2e.attach((change) => {
      inbox.unsafeOffer({ _tag: "E2eKeyChanged", change })
    })
    const initialE2eKeys = yield* deps.e2e.load
    const a: Actor = {
      networkId,
      deps,
      config,
      inbox,
      status: new StatusCell({
        networkId,
        state: "offline",
        nick: null,
        nextRetryAt: null,
        lastError: null,
        caseMapping: DEFAULT_CASE_MAPPING,
        channelTypes: defaultISupport.chanTypes
      }),
      scope: yield* Effect.scope,
      backoff: yield* makeStepper(reconnectSchedule),
      regain: yield* makeStepper(regainNickSchedule),
      timers: new Map(),
      state: "offline",
      nextRetryAt: null,
      lastError: null,
      session: undefined,
      sessionSeq: 0,
      retryToken: 0,
      stopping: false,
      shutdownWaiters: [],
      wantedNick: config.nick,
      awayMessage: config.awayMessage,
      isupport: defaultISupport,
      storedKeys: CaseMappedMap.empty<string | null>(DEFAULT_CASE_MAPPING),
      e2eKeys: E2e.E2eKeyTable.fromEntries(initialE2eKeys),
      modeListWaiters: undefined,
      modeListSeq: 0,
      unsaved: [],
      writing: false,
      channelsReader: undefined,
      viewed: undefined
    }
    // Finalizers run in reverse order: the writer (forked later, so closed first) is interrupted; then this one:
    // `await` ends (the supervisor closes the scope with the dispatcher's exit as soon as `run` ends, so no frame
    // around `run` is needed for it: the dispatcher's fiber keeps its stack while the network idles), the drain
    // writes what is left, and `release` says QUIT even if the drain failed. Added to the scope itself rather than
    // with Effect.addFinalizer, which keeps a snapshot of the fiber's FiberRefs per finalizer (about 1 KiB each for
    // as long as the network lives), and as one closure that builds its effects when it runs: built up front, the
    // drain's timeout, log annotation and error handler cost an idle network a dozen closures (heap snapshots).
    // It runs in the fiber that closes the scope, the supervising one, with the same log annotations.
    const handle = new Handle(a)
    yield* Scope.addFinalizerExit(a.scope, (exit) =>
      Effect.zipRight(
        Effect.sync(() => handle.end(Exit.isFailure(exit) ? exit.cause : Cause.die("the network actor stopped"))),
        Effect.ensuring(drainUnsaved(a), release(a))
      ))
    inbox.unsafeOffer({ _tag: "Start" })
    return handle
  })

/** `make`, with the dispatcher forked into the same scope (tests; the supervisor runs `run` itself). */
export const start = (deps: ActorDeps): Effect.Effect<NetworkActor, NetworkGone, Scope.Scope> =>
  Effect.tap(make(deps), (actor) => Effect.forkScoped(Effect.annotateLogs(actor.run, { networkId: deps.networkId })))
