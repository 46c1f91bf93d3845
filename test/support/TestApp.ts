/**
 * The whole application in-process for HTTP-level tests: the real layer graph of
 * src/main.ts on a fresh database, listening on a free port, with the network actors
 * either real or replaced by a scriptable fake. Scoped: everything closes afterwards.
 */
import { Context, Effect, Layer, Option } from "effect"
import { HttpAddress } from "../../src/http/HttpServer.js"
import { makeAppLayer } from "../../src/main.js"
import { Accounts } from "../../src/services/identity/Accounts.js"
import { ApiTokens } from "../../src/services/identity/ApiTokens.js"
import { Networks } from "../../src/services/networks/Networks.js"
import { fakeNetworkControlLayer, makeFakeNetworkControl } from "./FakeNetworkControl.js"
import { settingsFrom, testEnvironment } from "./TestDatabase.js"

/** App with the fake actors; returns the URL, the context (services) and the fake. */
export const startTestApp = (env: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const settings = yield* settingsFrom(yield* testEnvironment({ HOST: "127.0.0.1", ...env }))
    const fake = yield* makeFakeNetworkControl
    const context = yield* Layer.build(makeAppLayer(settings, fakeNetworkControlLayer(fake)).pipe(Layer.orDie))
    const address = Context.get(context, HttpAddress)
    const get = <I, S>(tag: Context.Tag<I, S>): S => Context.unsafeGet(context, tag)
    return { url: address.url, fake, settings, get, context } as const
  })

/** An account with a network and a token of the given scope; returns their ids and the raw token. */
export const seedAccount = (
  app: { readonly get: <I, S>(tag: Context.Tag<I, S>) => S },
  options: { readonly name?: string; readonly scope?: "read" | "read-write" } = {}
) =>
  Effect.gen(function*() {
    const name = options.name ?? "alice"
    const accounts = app.get(Accounts)
    const account = yield* accounts.create(name, "a long password").pipe(Effect.orDie)
    const networkId = yield* app.get(Networks).add(name, {
      name: "testnet",
      host: "irc.test",
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
    const token = yield* app.get(ApiTokens).create(name, `t-${options.scope ?? "read-write"}`, options.scope ?? "read-write").pipe(
      Effect.orDie
    )
    return { accountId: account.id, networkId, token } as const
  })

