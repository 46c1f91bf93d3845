// The network actor's fence (ActorDeps.fence: a cluster node's "do I still hold this network's shard?"), against the
// scripted fake IRC server: asked right before every socket, a refusal opens none and asks again later, and `sever`
// closes the socket at once with no reconnect while the fence stays shut (docs/decisions/several-nodes.md "Several nodes").
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { FENCE_RECHECK } from "../../../src/actors/network/Connection.js"
import { noConnectionWithin, startActor } from "../../support/ActorHarness.js"
import * as FakeIrcServer from "../../support/FakeIrcServer.js"

describe("NetworkActor: the fence", () => {
  it.scoped("opens no socket while the fence is shut, and connects once it opens", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make()
      let open = false
      const h = yield* startActor(server, { fence: () => open })
      const refused = yield* h.waitStatus((s) => s.state === "backoff")
      expect(refused.lastError).toContain("cluster fence")
      yield* noConnectionWithin(server, 300)
      // Still shut at the recheck: still no socket.
      yield* TestClock.adjust(FENCE_RECHECK)
      yield* noConnectionWithin(server, 300)
      open = true
      yield* TestClock.adjust(FENCE_RECHECK)
      const conn = yield* server.nextConnection()
      yield* conn.register()
      yield* h.waitState("connected")
    }))

  it.scoped("sever closes the socket at once, and the retry asks the fence before reconnecting", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make()
      let open = true
      const h = yield* startActor(server, { fence: () => open })
      const conn = yield* server.nextConnection()
      yield* conn.register()
      yield* h.waitState("connected")
      open = false
      expect(yield* h.actor.sever).toBe(true)
      yield* conn.waitClosed("2 seconds")
      yield* h.waitState("backoff")
      // Well past any reconnect delay: the fence refuses each attempt.
      yield* TestClock.adjust(Duration.minutes(1))
      yield* noConnectionWithin(server, 300)
      expect((yield* h.actor.status.get).lastError).toContain("cluster fence")
    }))
})
