/**
 * The listener's bounds over the application with the fake network actors: the registration deadline on Effect's
 * Clock (moved with TestClock), at most 10 registering connections per address, and the configuration rules of
 * BELAY_IRC_LISTEN (plaintext only on loopback unless opted in; TLS files go together).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, FiberRef, LogLevel, Option, TestClock } from "effect"
import { IrcListenerAddress } from "../../src/listener/IrcListener.js"
import { UNREGISTERED_PER_ADDRESS } from "../../src/listener/SessionHub.js"
import { appConfigFromMap, AppConfig } from "../../src/services/AppConfig.js"
import { connectClient } from "../support/IrcTestClient.js"
import { startTestApp } from "../support/TestApp.js"

const listen = Effect.gen(function*() {
  yield* Effect.locallyScoped(FiberRef.currentMinimumLogLevel, LogLevel.Warning)
  const app = yield* startTestApp({ BELAY_IRC_LISTEN: "127.0.0.1:0" })
  const address = app.get(IrcListenerAddress)
  if (Option.isNone(address)) return yield* Effect.dieMessage("the listener did not start")
  return address.value.port
})

describe("IRC listener bounds", () => {
  it.scoped("a client that does not register within 30 s is told so and closed", () =>
    Effect.gen(function*() {
      const port = yield* listen
      const c = yield* connectClient(port)
      yield* c.send("NICK slow", "PING x")
      yield* c.next("PONG")
      yield* TestClock.adjust("29 seconds")
      yield* c.send("PING y")
      yield* c.next("PONG")
      yield* TestClock.adjust("2 seconds")
      const last = yield* c.closed()
      expect(last.at(-1)?.raw).toBe("ERROR :Connection registration timed out")
    }))

  it.scoped(`at most ${UNREGISTERED_PER_ADDRESS} connections of one address register at once`, () =>
    Effect.gen(function*() {
      const port = yield* listen
      for (let i = 0; i < UNREGISTERED_PER_ADDRESS; i++) {
        const c = yield* connectClient(port)
        yield* c.send(`PING ${i}`)
        yield* c.next("PONG")
      }
      const extra = yield* connectClient(port)
      const lines = yield* extra.closed()
      expect(lines.at(-1)?.raw).toBe("ERROR :Too many unregistered connections from your address")
    }))

  const refused: ReadonlyArray<{ readonly env: Record<string, string>; readonly message: string }> = [
    { env: { BELAY_IRC_LISTEN: "0.0.0.0:6697" }, message: "BELAY_IRC_TLS_CERT" },
    { env: { BELAY_IRC_LISTEN: "127.0.0.1:6697", BELAY_IRC_TLS_CERT: "/x.pem" }, message: "go together" },
    { env: { BELAY_IRC_LISTEN: "nonsense" }, message: "host:port" }
  ]
  it.effect.each(refused)("refuses $env", ({ env, message }) =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.provide(AppConfig, appConfigFromMap(env)))
      expect(String(error)).toContain(message)
    }))

  const accepted: ReadonlyArray<{ readonly env: Record<string, string>; readonly expected: Option.Option<{ host: string; port: number }> }> = [
    { env: {}, expected: Option.none() },
    { env: { BELAY_IRC_LISTEN: "0.0.0.0:6697", BELAY_IRC_PLAINTEXT: "true" }, expected: Option.some({ host: "0.0.0.0", port: 6697 }) },
    { env: { BELAY_IRC_LISTEN: "[::1]:6667" }, expected: Option.some({ host: "::1", port: 6667 }) }
  ]
  it.effect.each(accepted)("accepts $env", ({ env, expected }) =>
    Effect.gen(function*() {
      const settings = yield* Effect.provide(AppConfig, appConfigFromMap(env))
      expect(settings.ircListen).toEqual(expected)
    }))
})
