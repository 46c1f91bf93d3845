/**
 * The IRC client listener over the whole application for loopback tests: the app layer with BELAY_IRC_LISTEN on a
 * free loopback port, account `alice` (password PASSWORD, a read token) with network `fake` on the scripted fake IRC
 * server, registered upstream and joined to #belay (topic, three members); and a client that signs in as Goguma or
 * senpai do (CAP 302, SASL PLAIN).
 *
 * Concurrency rule: everything is in the caller's scope; one fiber drives each scripted client or upstream at a time.
 */
import { Context, Effect, FiberRef, Layer, LogLevel, Option } from "effect"
import { IrcListenerAddress } from "../../src/listener/IrcListener.js"
import { makeAppLayer, NetworkActorsLive } from "../../src/main.js"
import { Accounts } from "../../src/services/Accounts.js"
import { ApiTokens } from "../../src/services/ApiTokens.js"
import { Networks } from "../../src/services/Networks.js"
import * as FakeIrcServer from "./FakeIrcServer.js"
import { connectClient, saslPlain } from "./IrcTestClient.js"
import { settingsFrom, testEnvironment } from "./TestDatabase.js"

export const PASSWORD = "a long password"

export const start = Effect.gen(function*() {
  yield* Effect.locallyScoped(FiberRef.currentMinimumLogLevel, LogLevel.Warning)
  const irc = yield* FakeIrcServer.make()
  const settings = yield* settingsFrom(yield* testEnvironment({ HOST: "127.0.0.1", BELAY_IRC_LISTEN: "127.0.0.1:0" }))
  const context = yield* Layer.build(makeAppLayer(settings, NetworkActorsLive).pipe(Layer.orDie))
  const address = Context.get(context, IrcListenerAddress)
  if (Option.isNone(address)) return yield* Effect.dieMessage("the listener did not start")
  yield* Context.get(context, Accounts).create("alice", PASSWORD).pipe(Effect.orDie)
  const readToken = yield* Context.get(context, ApiTokens).create("alice", "reader", "read").pipe(Effect.orDie)
  const networkId = yield* Context.get(context, Networks).add("alice", {
    name: "fake",
    host: "127.0.0.1",
    port: irc.port,
    tls: false,
    tlsInsecure: false,
    nick: "alice",
    username: Option.none(),
    realname: Option.none(),
    serverPassword: Option.none(),
    sasl: Option.none(),
    join: ["#belay"]
  }).pipe(Effect.orDie)
  const upstream = yield* irc.nextConnection("10 seconds")
  yield* upstream.register("alice")
  yield* upstream.waitFor(/^JOIN #belay/)
  yield* upstream.send(
    ":alice!a@host JOIN #belay",
    ":irc.fake.test 332 alice #belay :Belay talk",
    ":irc.fake.test 333 alice #belay bob 1700000000",
    ":irc.fake.test 353 alice = #belay :@alice bob +carol",
    ":irc.fake.test 366 alice #belay :End of /NAMES list."
  )
  return { irc, upstream, context, port: address.value.port, networkId, readToken }
})

export const CAPS = "server-time message-tags echo-message batch labeled-response draft/chathistory draft/read-marker soju.im/bouncer-networks"

/** CAP 302 + SASL PLAIN as Goguma or senpai sign in. */
export const saslClient = (port: number, user: string, secret: string, caps = CAPS) =>
  Effect.gen(function*() {
    const c = yield* connectClient(port)
    yield* c.send("CAP LS 302", "NICK someone", `USER ${user} 0 * :Real`)
    yield* c.next((l) => l.command === "CAP" && l.params[1] === "LS" && l.params[2] !== "*")
    yield* c.send(`CAP REQ :sasl ${caps}`)
    yield* c.next((l) => l.command === "CAP" && l.params[1] === "ACK")
    yield* c.send("AUTHENTICATE PLAIN")
    yield* c.next("AUTHENTICATE")
    yield* c.send(`AUTHENTICATE ${saslPlain(user, secret)}`)
    return c
  })
