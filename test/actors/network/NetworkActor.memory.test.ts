// What each network keeps for as long as it lives, by the shape of its objects (bench/results/memory-breakdown.md "At
// 10,000 networks, per-network objects"): V8 gives an object made by a spread followed by more fields a hidden class
// of its own (a Map and its descriptors, some 450 bytes), where objects made field by field share one. The transport
// options every connection keeps must share theirs; and the actor's end, which holds no Deferred until somebody
// waits on it, is still told to a caller who waits before it and to one who asks after it.
import * as V8 from "node:v8"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Option, Scope } from "effect"
import * as ActorTimers from "../../../src/actors/ActorTimers.js"
import * as ConnectThrottle from "../../../src/actors/ConnectThrottle.js"
import type { IrcConnection, IrcTransportService, TransportOptions } from "../../../src/actors/IrcTransport.js"
import * as NetworkActor from "../../../src/actors/network/NetworkActor.js"
import type { NetworkConfig } from "../../../src/services/networks/Networks.js"
import { memoryRepo } from "../../support/ActorHarness.js"
import * as MemoryMessageStore from "../../support/MemoryMessageStore.js"

// V8's own test intrinsic; the flag applies to code compiled after it is set, such as this function.
V8.setFlagsFromString("--allow-natives-syntax")
const sameHiddenClass = new Function("a", "b", "return %HaveSameMap(a, b)") as (a: object, b: object) => boolean

const config = (id: number): NetworkConfig => ({
  id,
  accountId: id,
  name: `net${id}`,
  host: "irc.example.test",
  port: 6667,
  tls: false,
  tlsInsecure: false,
  nick: `nick${id}`,
  username: null,
  realname: null,
  serverPassword: null,
  sasl: null,
  enabled: true,
  awayMessage: null
})

/**
 * Networks started in the first test: V8 gives the objects of one spread their own hidden classes only once the site
 * has run some eight times (its feedback then takes the generic path), so two would share one either way.
 */
const NETWORKS = 20

/** A transport that records what each connection was opened with and never answers (an idle socket). */
const recordingTransport = (opened: Array<TransportOptions>, all: Deferred.Deferred<void>): IrcTransportService => ({
  open: (options) => {
    opened.push(options)
    if (opened.length === NETWORKS) Deferred.unsafeDone(all, Exit.void)
    const connection: IrcConnection = {
      write: () => true,
      quit: () => {},
      destroy: () => {},
      sendKeepalive: () => true,
      keepaliveAnswered: () => true
    }
    return connection
  }
})

const actorFor = (id: number, transport: IrcTransportService) =>
  Effect.gen(function*() {
    return yield* NetworkActor.start({
      networkId: id,
      repo: memoryRepo(config(id)).repo,
      store: yield* MemoryMessageStore.make,
      transport,
      allowedHosts: Option.none(),
      e2e: { load: Effect.succeed([]), attach: () => Effect.void },
      timers: yield* ActorTimers.make,
      throttle: yield* ConnectThrottle.make()
    })
  })

describe("NetworkActor: what a network keeps", () => {
  it.scopedLive(`the transport options of ${NETWORKS} networks share one hidden class`, () =>
    Effect.gen(function*() {
      const opened: Array<TransportOptions> = []
      const all = yield* Deferred.make<void>()
      const transport = recordingTransport(opened, all)
      for (let id = 1; id <= NETWORKS; id++) yield* actorFor(id, transport)
      yield* Deferred.await(all).pipe(Effect.timeout("5 seconds"))
      expect(new Set(opened.map((o) => o.nick)).size).toBe(NETWORKS)
      expect(opened.filter((o) => !sameHiddenClass(o, opened[0]!)).map((o) => o.nick)).toEqual([])
    }))

  it.scopedLive("`await` fails once the actor's scope closes, for a caller waiting before and one asking after", () =>
    Effect.gen(function*() {
      const opened: Array<TransportOptions> = []
      const transport = recordingTransport(opened, yield* Deferred.make<void>())
      const scope = yield* Scope.make()
      const actor = yield* Scope.extend(actorFor(1, transport), scope)
      const waiting = yield* Effect.fork(Effect.exit(actor.await))
      yield* Effect.sleep("50 millis")
      yield* Scope.close(scope, Exit.void)
      const before = yield* Fiber.join(waiting).pipe(Effect.timeout("5 seconds"))
      const after = yield* Effect.exit(actor.await)
      for (const exit of [before, after]) {
        expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      }
    }))
})
