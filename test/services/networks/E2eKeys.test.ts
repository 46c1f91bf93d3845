// E2eKeys' delivery: set and clear return only once the change was delivered where the network runs (a cluster
// node's owner, NetworkChangeRelay), so a key change is in effect when `belay channel encrypt|decrypt` returns.
import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Fiber, Option } from "effect"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { E2eKeys, type E2eKeyChange } from "../../../src/services/networks/E2eKeys.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import { describeMode } from "../../support/TestDatabase.js"
import { TestServicesLive } from "../../support/TestServices.js"

describe(`E2eKeys on ${describeMode}`, () => {
  it.layer(TestServicesLive(), { timeout: 60_000 })((it) => {
    it.scoped("set and clear wait for the delivery of their change", () =>
      Effect.gen(function*() {
        const account = "keys1"
        yield* (yield* Accounts).create(account, "a long password").pipe(Effect.orDie)
        const networkId = yield* (yield* Networks).add(account, {
          name: "n", host: "irc.example.org", port: 6697, tls: true, tlsInsecure: false, nick: "k",
          username: Option.none(), realname: Option.none(), serverPassword: Option.none(), sasl: Option.none(), join: []
        }).pipe(Effect.orDie)
        const e2e = yield* E2eKeys
        const delivered: Array<E2eKeyChange> = []
        const gate = yield* Deferred.make<void>()
        yield* e2e.deliverBy((change) => Effect.zipRight(Deferred.await(gate), Effect.sync(() => void delivered.push(change))))

        const setting = yield* Effect.fork(e2e.set(account, networkId, "#secret", "cbc:a-long-enough-key"))
        yield* Effect.sleep("100 millis")
        expect(Option.isNone(yield* Fiber.poll(setting))).toBe(true)
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(setting)
        expect(delivered.map((c) => [c.networkId, c.target, c.key !== undefined])).toEqual([[networkId, "#secret", true]])

        expect(yield* e2e.clear(account, networkId, "#secret")).toBe(true)
        expect(delivered.map((c) => c.key !== undefined)).toEqual([true, false])
      }).pipe(Effect.orDie, Effect.withClock(Clock.make())))
  })
})
