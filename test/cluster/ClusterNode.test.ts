// Every test runs on the live Clock: the cluster's own loops (shard acquisition, the reconciler) run on it.
// One cluster node over @effect/cluster's in-memory TestRunner (it holds every shard) and the real services, with
// irc-framework against scripted fake IRC servers: the reconciler starts what is stored, the change relay carries
// adds, edits and removes to the entity, the entity's RPCs answer what the port answers across the wire encoding
// (the runner simulates remote serialization), and a node's shutdown QUITs its networks. Fencing across nodes needs
// real shard locks: test/system/ClusterFailover.test.ts.
import { TestRunner } from "@effect/cluster"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Context, Duration, Effect, Exit, Layer, Option, Scope } from "effect"
import { IrcTransportLive } from "../../src/actors/IrcTransport.js"
import { NetworkControl, type NetworkControlService } from "../../src/actors/NetworkApi.js"
import { ClusterNetworkControlLive } from "../../src/cluster/ClusterNetworkControl.js"
import { checkSecretKey, clusterDatabaseUrl } from "../../src/cluster/ClusterRunner.js"
import { NetworkChangeRelayLive } from "../../src/cluster/NetworkChangeRelay.js"
import { entityIdOf, NetworkEntity } from "../../src/cluster/NetworkEntity.js"
import { NetworkEntityLive } from "../../src/cluster/NetworkEntityLive.js"
import { NetworkReconcilerLive } from "../../src/cluster/NetworkReconciler.js"
import { NodeActorsLive } from "../../src/cluster/NodeActors.js"
import type { NetworkStatus } from "../../src/schema/Network.js"
import { Accounts } from "../../src/services/identity/Accounts.js"
import { appConfigFromMap } from "../../src/services/AppConfig.js"
import { Networks } from "../../src/services/networks/Networks.js"
import { SecretBox } from "../../src/services/crypto/SecretBox.js"
import * as FakeIrcServer from "../support/FakeIrcServer.js"
import { describeMode } from "../support/TestDatabase.js"
import { TestServicesLive } from "../support/TestServices.js"

/** A node in its own scope (closed by `stop`): the port and the Sharding it runs on. */
const startNode = Effect.gen(function*() {
  const scope = yield* Scope.make()
  const stop = Scope.close(scope, Exit.void)
  yield* Effect.addFinalizer(() => stop)
  const node = Layer.mergeAll(ClusterNetworkControlLive, NetworkEntityLive, NetworkReconcilerLive, NetworkChangeRelayLive)
    .pipe(Layer.provide(NodeActorsLive), Layer.provideMerge(TestRunner.layer), Layer.provide(IrcTransportLive))
  const context = yield* Layer.buildWithScope(node, scope)
  const client = yield* NetworkEntity.client.pipe(Effect.provide(context))
  return { control: Context.get(context, NetworkControl), owner: (networkId: number) => client(entityIdOf(networkId)), stop }
})

let accountSeq = 0
const newAccount = Effect.gen(function*() {
  const name = `node${++accountSeq}`
  yield* (yield* Accounts).create(name, "a long password").pipe(Effect.orDie)
  return name
})

const addNetwork = (account: string, server: FakeIrcServer.FakeIrcServer, nick: string) =>
  (Effect.flatMap(Networks, (networks) =>
    networks.add(account, {
      name: `net-${nick}`,
      host: server.host,
      port: server.port,
      tls: false,
      tlsInsecure: false,
      nick,
      username: Option.none(),
      realname: Option.none(),
      serverPassword: Option.none(),
      sasl: Option.none(),
      join: []
    }).pipe(Effect.orDie)))

const waitStatus = (control: NetworkControlService, networkId: number, predicate: (s: NetworkStatus) => boolean) =>
  Effect.gen(function*() {
    for (;;) {
      const status = yield* control.status(networkId)
      if (predicate(status)) return status
      yield* Effect.sleep("20 millis")
    }
  }).pipe(Effect.timeoutFail({ duration: Duration.seconds(15), onTimeout: () => new Error("status not reached") }))

const connected = (server: FakeIrcServer.FakeIrcServer, control: NetworkControlService, networkId: number) =>
  Effect.gen(function*() {
    const conn = yield* server.nextConnection("15 seconds")
    yield* conn.register()
    yield* waitStatus(control, networkId, (s) => s.state === "connected")
    return conn
  })

describe(`a cluster node on ${describeMode}`, () => {
  it("DATABASE_URL gets TCP keepalives for the cluster's sessions, keeping options it has", () => {
    const plain = new URL(clusterDatabaseUrl("postgres://u:p@db.example:5432/belay"))
    expect(plain.searchParams.get("options")).toBe("-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=2 -c tcp_keepalives_count=3")
    expect(plain.password).toBe("p")
    const kept = new URL(clusterDatabaseUrl("postgres://db.example/belay?options=-c%20statement_timeout%3D5000&sslmode=require"))
    expect(kept.searchParams.get("options")).toMatch(/^-c statement_timeout=5000 -c tcp_keepalives_idle=10 /)
    expect(kept.searchParams.get("sslmode")).toBe("require")
  })

  it.layer(TestServicesLive(), { timeout: 120_000 })((it) => {
    it.scoped("the reconciler starts the stored networks; the port and the entity answer alike", () =>
      Effect.gen(function*() {
        const account = yield* newAccount
        const server = yield* FakeIrcServer.make()
        const id = yield* addNetwork(account, server, "alpha")
        const { control, owner } = yield* startNode
        // Nothing sent it a message: the reconciler starts it once the node holds its shard.
        const conn = yield* connected(server, control, id)

        yield* control.say(id, "privmsg", "#c", "through the port")
        yield* conn.waitFor("PRIVMSG #c :through the port")
        yield* owner(id).Say({ kind: "notice", target: "#c", text: "through the entity" })
        yield* conn.waitFor("NOTICE #c :through the entity")
        expect(yield* owner(id).Status()).toEqual(yield* control.status(id))
        // Tool failures cross the wire as themselves.
        // (Compared by field: an error that crossed the RPC client is wrapped in a span-carrying Proxy.)
        const refused = yield* Effect.flip(owner(id).Say({ kind: "privmsg", target: "#c", text: "a\r\nQUIT" }))
        expect(refused._tag).toBe("InvalidArguments")
        const notIn = yield* Effect.flip(owner(id).Part({ channel: "#nowhere", reason: null }))
        expect(notIn._tag).toBe("NotInChannel")
        const drawn = yield* owner(id).View()
        expect(drawn[0]).toMatchObject({ type: "network", network: { id, state: "connected", nick: "alpha" } })

        // A network this node runs no actor for goes through the entity, and answers as the port would.
        const unknown = yield* Effect.flip(control.say(999_999, "privmsg", "#c", "hi"))
        expect(unknown._tag === "UnknownNetwork" ? unknown.networkId : unknown._tag).toBe(999_999)
        expect((yield* server.stats).accepted).toBe(1)
      }).pipe(Effect.withClock(Clock.make())))

    it.scoped("a node whose BELAY_SECRET_KEY cannot open the stored secrets refuses to join", () =>
      Effect.gen(function*() {
        const account = yield* newAccount
        yield* (yield* Networks).add(account, {
          name: "sealed", host: "irc.example.org", port: 6697, tls: true, tlsInsecure: false, nick: "sealed",
          username: Option.none(), realname: Option.none(), serverPassword: Option.some("hunter2"), sasl: Option.none(),
          join: []
        }).pipe(Effect.orDie)
        // The services' own key opens them.
        yield* checkSecretKey
        const otherKey = SecretBox.Default.pipe(
          Layer.provide(appConfigFromMap({ BELAY_SECRET_KEY: Buffer.alloc(32, 7).toString("base64") }))
        )
        const refused = yield* Effect.flip(checkSecretKey.pipe(Effect.provide(otherKey)))
        expect(refused.message).toContain("BELAY_SECRET_KEY")
      }))

    it.scoped("adds, connection edits and removes reach the entity; stopping the node QUITs", () =>
      Effect.gen(function*() {
        const account = yield* newAccount
        const accountId = (yield* (yield* Accounts).require(account).pipe(Effect.orDie)).id
        const serverA = yield* FakeIrcServer.make()
        const serverB = yield* FakeIrcServer.make()
        const { control, stop } = yield* startNode
        const networks = yield* Networks

        const id = yield* addNetwork(account, serverA, "beta")
        const first = yield* connected(serverA, control, id)

        // A new server: the old session QUITs and closes before the new one is opened.
        yield* networks.update(accountId, id, { host: serverB.host, port: serverB.port }).pipe(Effect.orDie)
        yield* first.waitFor("QUIT")
        yield* first.waitClosed()
        const second = yield* connected(serverB, control, id)

        const other = yield* addNetwork(account, serverA, "gamma")
        const third = yield* connected(serverA, control, other)

        yield* networks.remove(account, id).pipe(Effect.orDie)
        yield* second.waitFor("QUIT")
        yield* second.waitClosed()
        expect(yield* Effect.flip(control.say(id, "privmsg", "#c", "hi"))).toMatchObject({ _tag: "UnknownNetwork" })

        yield* stop
        yield* third.waitFor("QUIT")
        yield* third.waitClosed()
      }).pipe(Effect.withClock(Clock.make())))
  })
})
