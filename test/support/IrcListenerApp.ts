/**
 * IrcListenerApp: the whole application with its IRC client listener on a loopback port, a real network actor
 * connected to the scripted fake IRC server (registered as `alice`, joined to #belay with a topic and three members),
 * and the sign-in helpers the listener's loopback tests share: SASL PLAIN as Goguma or senpai do it, and the end of a
 * batch. Scoped: the app, the fake server and every client close afterwards.
 */
import { Context, Effect, FiberRef, Layer, LogLevel, Option } from "effect"
import { HttpAddress } from "../../src/http/HttpServer.js"
import { IrcListenerAddress } from "../../src/listener/IrcListener.js"
import { makeAppLayer, NetworkActorsLive } from "../../src/main.js"
import { Accounts } from "../../src/services/identity/Accounts.js"
import { ApiTokens } from "../../src/services/identity/ApiTokens.js"
import { Networks } from "../../src/services/networks/Networks.js"
import * as FakeIrcServer from "./FakeIrcServer.js"
import { type ClientLine, connectClient, saslPlain } from "./IrcTestClient.js"
import { settingsFrom, testEnvironment } from "./TestDatabase.js"

export const PASSWORD = "a long password"

/** The capabilities a modern client (Goguma, senpai) asks for. */
export const CAPS =
  "server-time message-tags echo-message batch labeled-response draft/chathistory draft/read-marker soju.im/bouncer-networks"

export interface StartOptions {
  /** Capabilities the fake upstream offers (default: none). */
  readonly upstreamCaps?: ReadonlyArray<string>
  /** More environment for Belay. */
  readonly env?: Record<string, string>
  /** ISUPPORT tokens the fake upstream sends (default: FakeIrcServer's DEFAULT_ISUPPORT). */
  readonly isupport?: ReadonlyArray<string>
}

export const startListenerApp = (options: StartOptions = {}) =>
  Effect.gen(function*() {
    yield* Effect.locallyScoped(FiberRef.currentMinimumLogLevel, LogLevel.Warning)
    const irc = yield* FakeIrcServer.make()
    const settings = yield* settingsFrom(yield* testEnvironment({ HOST: "127.0.0.1", BELAY_IRC_LISTEN: "127.0.0.1:0", ...options.env }))
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
    yield* upstream.register("alice", options.isupport, options.upstreamCaps !== undefined ? { caps: options.upstreamCaps } : {})
    yield* upstream.waitFor(/^JOIN #belay/)
    yield* upstream.send(
      ":alice!a@host JOIN #belay",
      ":irc.fake.test 332 alice #belay :Belay talk",
      ":irc.fake.test 333 alice #belay bob 1700000000",
      ":irc.fake.test 353 alice = #belay :@alice bob +carol",
      ":irc.fake.test 366 alice #belay :End of /NAMES list."
    )
    const get = <I, S>(tag: Context.Tag<I, S>): S => Context.unsafeGet(context, tag)
    return {
      irc,
      upstream,
      context,
      get,
      port: address.value.port,
      httpUrl: Context.get(context, HttpAddress).url,
      networkId,
      readToken
    }
  })

/** CAP 302 + SASL PLAIN as Goguma or senpai sign in; the caller reads 903 or 904 next. */
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

/** A client signed in by SASL and welcomed (its burst read up to the end of the channel's NAMES). */
export const welcomedClient = (port: number, user: string, secret: string, caps = CAPS) =>
  Effect.gen(function*() {
    const c = yield* saslClient(port, user, secret, caps)
    yield* c.next("903")
    yield* c.send("CAP END")
    const burst = yield* c.until("366")
    return Object.assign(c, { burst })
  })

/** The end of a batch. */
export const batchEnd = (l: ClientLine) => l.command === "BATCH" && l.params[0]!.startsWith("-")

/** The texts of the PRIVMSGs among `lines`. */
export const texts = (lines: ReadonlyArray<ClientLine>) => lines.filter((l) => l.command === "PRIVMSG").map((l) => l.params[1])
