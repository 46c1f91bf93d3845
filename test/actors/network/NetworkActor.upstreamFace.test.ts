// The network actor and BELAY_UPSTREAM_SOURCE (docs/decisions/hosting.md "Each member their own face upstream"): a
// member inside the range connects from its address; a member the range has no address for is never connected from
// another's or the node's own address, and stays offline saying why, also when asked to connect again.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Command } from "../../../src/actors/network/NetworkActor.js"
import { parseSourceRange, type SourceRange } from "../../../src/net/UpstreamFace.js"
import { noConnectionWithin, registered, startWithServer as setup } from "../../support/ActorHarness.js"

const range = (text: string): SourceRange => {
  const parsed = parseSourceRange(text)
  if ("error" in parsed) throw new Error(parsed.error)
  return parsed
}

describe("NetworkActor: the member's source address", () => {
  it.scoped("a member inside the range connects and registers", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup({}, { config: { accountId: 2 }, upstreamSource: range("127.0.0.0/30") })
      yield* registered(server, h)
      expect((yield* h.actor.status.get).lastError).toBeNull()
    }))

  it.scoped("a member beyond the range stays offline with the reason, and connect_network does not change it", () =>
    Effect.gen(function*() {
      const { server, h } = yield* setup({}, { config: { accountId: 3 }, upstreamSource: range("127.0.0.0/30") })
      const status = yield* h.waitStatus((s) => s.lastError !== null)
      expect(status.state).toBe("offline")
      expect(status.lastError).toBe(
        "no upstream source address for account 3: BELAY_UPSTREAM_SOURCE 127.0.0.0/30 holds accounts 1 to 2"
      )
      yield* h.ask(Command.connect(true))
      yield* noConnectionWithin(server, 300)
      const again = yield* h.actor.status.get
      expect(again).toMatchObject({ state: "offline", lastError: status.lastError })
      expect((yield* server.stats).accepted).toBe(0)
    }))
})
