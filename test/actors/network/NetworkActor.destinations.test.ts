// The destination guard on the real transport (docs/decisions/hosting.md "One destination guard"): under
// BELAY_PRIVATE_DESTINATIONS=deny a network on a loopback address is never contacted, and it stays offline with
// lastError `locked-down: …` naming the address and its class; opened by BELAY_DESTINATION_EXCEPTIONS it connects
// and registers through the pinned address; `allow` changes nothing.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { noConnectionWithin, registered, startActor } from "../../support/ActorHarness.js"
import * as FakeIrcServer from "../../support/FakeIrcServer.js"

describe("NetworkActor: destinations", () => {
  it.scoped("deny: a loopback network is never contacted; offline, locked-down, naming the address and its class", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make({})
      const h = yield* startActor(server, { destinations: { BELAY_PRIVATE_DESTINATIONS: "deny" } })
      const status = yield* h.waitStatus((s) => s.lastError !== null)
      expect(status.state).toBe("offline")
      expect(status.lastError).toMatch(/^locked-down: 127\.0\.0\.1 is a loopback address/)
      yield* noConnectionWithin(server, 300)
      expect((yield* server.stats).accepted).toBe(0)
    }))

  it.scoped("deny, with the server's address and port as an exception: connects to the checked address", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make({})
      const h = yield* startActor(server, {
        destinations: { BELAY_PRIVATE_DESTINATIONS: "deny", BELAY_DESTINATION_EXCEPTIONS: `127.0.0.1:${server.port}` }
      })
      const { registration } = yield* registered(server, h)
      expect(registration.nicksTried[0]).toBe("belay")
      expect(yield* h.actor.status.get).toMatchObject({ state: "connected", lastError: null })
    }))

  it.scoped("deny: an exception for another port opens nothing", () =>
    Effect.gen(function*() {
      const server = yield* FakeIrcServer.make({})
      const h = yield* startActor(server, {
        destinations: { BELAY_PRIVATE_DESTINATIONS: "deny", BELAY_DESTINATION_EXCEPTIONS: `127.0.0.1:${server.port + 1}` }
      })
      const status = yield* h.waitStatus((s) => s.lastError !== null)
      expect(status.lastError).toMatch(/^locked-down:/)
      expect((yield* server.stats).accepted).toBe(0)
    }))
})
