// ToolHandlers over the real services of the app and the scriptable network actors (FakeNetworkControl): set_away
// through the one write gate (docs/contract.md "MCP tool shapes") with one network named and with every network, and a
// failure of the port reaching the wire as the port gave it. One app for the file; each test has its own account.
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option } from "effect"
import { makeToolHandlers } from "../../../src/http/mcp/ToolHandlers.js"
import { NetworkId } from "../../../src/schema/Ids.js"
import { toolSuccessResult } from "../../../src/schema/ToolCatalog.js"
import { toToolFailurePayload } from "../../../src/schema/ToolErrors.js"
import { MessageWriter } from "../../../src/services/history/MessageWriter.js"
import type { Principal } from "../../../src/services/identity/Authenticator.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import { seedAccount, startTestApp } from "../../support/TestApp.js"
import { describeMode } from "../../support/TestDatabase.js"

class App extends Context.Tag("test/ToolHandlers/App")<App, Effect.Effect.Success<ReturnType<typeof startTestApp>>>() {}

/** An account with two networks (both offline), its principal, and the handlers. */
const account = (name: string) =>
  Effect.gen(function*() {
    const app = yield* App
    const { accountId, networkId } = yield* seedAccount(app, { name })
    const second = yield* app.get(Networks).add(name, {
      name: "othernet",
      host: "irc.other.test",
      port: 6667,
      tls: false,
      tlsInsecure: false,
      nick: name,
      username: Option.none(),
      realname: Option.none(),
      serverPassword: Option.none(),
      sasl: Option.none(),
      join: []
    }).pipe(Effect.orDie)
    const handlers = yield* Effect.provide(makeToolHandlers, app.context)
    const principal: Principal = {
      accountId,
      credential: "api-token",
      grantedScope: "read-write",
      paused: false,
      scope: "read-write",
      tokenId: 1,
      oauthKind: null,
      clientId: null
    }
    const ids = [networkId, second]
    /** The away commands that passed the fake's write gate on this account's networks: [networkId, message]. */
    const awayCalls = Effect.map(app.fake.calls, (calls) =>
      calls.filter((c) => c.method === "away" && ids.includes(c.networkId)).map((c) => [c.networkId, ...c.args]))
    return { app, handlers, principal, first: NetworkId.make(networkId), second: NetworkId.make(second), awayCalls } as const
  })

describe(`ToolHandlers on ${describeMode}`, () => {
  it.layer(Layer.scoped(App, startTestApp()), { timeout: 120_000 })((it) => {
    it.effect("set_away naming a network that is not connected answers not-connected and tells no one", () =>
      Effect.gen(function*() {
        const { app, awayCalls, first, handlers, principal, second } = yield* account("ann")
        app.fake.network(second).status = { state: "connected", nick: "ann" }
        app.fake.network(first).status = { state: "backoff" }
        const failure = yield* Effect.flip(handlers.set_away(principal, { networkId: first, message: "lunch" }))
        expect(toToolFailurePayload(failure)).toEqual({
          ok: false,
          error: "not-connected",
          message: `network ${first} is not connected; connect_network starts a connection`
        })
        expect(yield* awayCalls).toEqual([])
      }))

    it.effect("set_away without networkId and no network connected answers not-connected", () =>
      Effect.gen(function*() {
        const { awayCalls, handlers, principal } = yield* account("bea")
        const failure = yield* Effect.flip(handlers.set_away(principal, { message: "lunch" }))
        expect(toToolFailurePayload(failure)).toEqual({
          ok: false,
          error: "not-connected",
          message: "no network of the account is connected; connect_network starts a connection"
        })
        expect(yield* awayCalls).toEqual([])
      }))

    it.effect("set_away without networkId applies to every connected network and leaves the others alone", () =>
      Effect.gen(function*() {
        const { app, awayCalls, first, handlers, principal, second } = yield* account("cat")
        app.fake.network(second).status = { state: "connected", nick: "cat" }
        expect(yield* handlers.set_away(principal, { message: "lunch" })).toEqual({ ok: true, away: true })
        expect(yield* awayCalls).toEqual([[second, "lunch"]])
        app.fake.network(first).status = { state: "connected", nick: "cat" }
        expect(yield* handlers.set_away(principal, {})).toEqual({ ok: true, away: false })
        expect((yield* awayCalls).slice(1)).toEqual(expect.arrayContaining([[first, null], [second, null]]))
        expect(yield* awayCalls).toHaveLength(3)
      }))

    it.effect("a failure of the port reaches the wire as the port gave it: locked-down names the host", () =>
      Effect.gen(function*() {
        const { app, first, handlers, principal } = yield* account("dee")
        app.fake.network(first).lockedDown = true
        const failure = yield* Effect.flip(handlers.connect_network(principal, { networkId: first, reconnect: false }))
        expect(toToolFailurePayload(failure)).toEqual({
          ok: false,
          error: "locked-down",
          message: "this instance does not allow connecting to irc.test"
        })
      }))

    it.effect("recent_messages answers a kept page without a fiber, and folds the target with the status of each call", () =>
      Effect.gen(function*() {
        const { app, first, handlers, principal } = yield* account("ivy")
        const store = app.get(MessageWriter)
        // A buffer is its target folded by the network's CASEMAPPING (docs/contract.md): RFC 1459 folds [ to {, ASCII not.
        yield* store.append({
          networkId: first, target: "#ivy{x}", targetFolded: "#ivy{x}", bufferKind: "channel",
          time: new Date(), kind: "privmsg", nick: "bob", text: "kept", self: false
        })
        yield* store.flush
        const texts = (payload: object) => {
          const page = JSON.parse(toolSuccessResult(payload).json) as { messages: Array<{ text: string }> }
          return page.messages.map((m) => m.text)
        }
        const input = { networkId: first, target: "#IVY[X]", limit: 50 }
        expect(texts(yield* handlers.recent_messages(principal, input))).toEqual(["kept"])
        const kept = handlers.recent_messages(principal, input)
        expect(Exit.isExit(kept)).toBe(true)
        expect(texts(yield* kept)).toEqual(["kept"])
        app.fake.network(first).status = { caseMapping: "ascii" }
        expect(texts(yield* handlers.recent_messages(principal, input))).toEqual([])
      }))
  })
})
