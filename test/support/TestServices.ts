/**
 * The product's services (main.ts `Services`, the very graph `belay serve` builds) over a fresh test database
 * (TestDatabase.ts: PGlite, or TEST_DATABASE_URL), and the network supervisor with the real IRC transport, for tests
 * that drive NetworkControl against a fake or a real IRC server.
 *
 * Concurrency rule: the services are shared by everything in the test; the supervisor lives in its own scope, which
 * must close before the services' does (its actors flush to the MessageWriter on the way out), so `withTestServices`
 * closes the test's scope first and `startSupervisor` is called inside it.
 */
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { IrcTransportLive } from "../../src/actors/IrcTransport.js"
import { NetworkControl } from "../../src/actors/NetworkApi.js"
import { NetworkSupervisorLive } from "../../src/actors/NetworkSupervisor.js"
import { Services } from "../../src/main.js"
import { Accounts } from "../../src/services/identity/Accounts.js"
import { MessageHistory } from "../../src/services/history/MessageHistory.js"
import { MessageWriter } from "../../src/services/history/MessageWriter.js"
import { type NetworkSettings, Networks } from "../../src/services/networks/Networks.js"
import * as MemoryMessageStore from "./MemoryMessageStore.js"
import { TestDatabaseLive } from "./TestDatabase.js"

/** The services over a fresh database; `env` is extra configuration (e.g. BELAY_ALLOWED_HOSTS). */
export const TestServicesLive = (env: Record<string, string> = {}) => Services.pipe(Layer.provideMerge(TestDatabaseLive(env)))

export type TestServices = Layer.Layer.Success<ReturnType<typeof TestServicesLive>>

/**
 * Runs `body` over fresh TestServicesLive. The body's scope (its supervisor, servers and peers) closes before the
 * services are released, so nothing outlives the database it writes to.
 */
export const withTestServices = <A, E>(
  body: Effect.Effect<A, E, TestServices | Scope.Scope>,
  env: Record<string, string> = {}
): Effect.Effect<A, E> => body.pipe(Effect.scoped, Effect.provide(TestServicesLive(env)))

/**
 * Starts a network supervisor (real IRC transport) over the services in context, optionally with `store` in place of
 * the MessageWriter (to inject faults or read what the actors stored). It runs in its own scope: `stop` shuts it down
 * (observably, mid-test); otherwise it stops with the caller's scope.
 */
export const startSupervisor = (options: { readonly store?: MemoryMessageStore.MemoryMessageStore } = {}) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const stop = Scope.close(scope, Exit.void)
    yield* Effect.addFinalizer(() => stop)
    const supervisor = NetworkSupervisorLive.pipe(Layer.provide(IrcTransportLive))
    const layer = options.store === undefined
      ? supervisor
      : supervisor.pipe(Layer.provide(MemoryMessageStore.layer(options.store)))
    const context = yield* Layer.buildWithScope(layer, scope)
    return { control: Context.get(context, NetworkControl), stop }
  })

/** Creates account `account` and adds `settings` as its network; returns the network's id. */
export const accountWithNetwork = (account: string, settings: NetworkSettings) =>
  Effect.gen(function*() {
    yield* (yield* Accounts).create(account, "a long password").pipe(Effect.orDie)
    return yield* (yield* Networks).add(account, settings).pipe(Effect.orDie)
  })

/** A buffer's history once everything appended before is stored: the newest `limit` messages, oldest first. */
export const storedHistory = (networkId: number, targetFolded: string, limit = 500) =>
  Effect.zipRight(
    Effect.flatMap(MessageWriter, (writer) => writer.flush),
    Effect.flatMap(MessageHistory, (history) => history.recent(networkId, targetFolded, { before: Option.none(), limit }))
  )
