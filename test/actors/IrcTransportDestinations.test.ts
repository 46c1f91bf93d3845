// The real IRC transport behind the destination guard (docs/decisions/hosting.md "One destination guard"): under
// `deny` a name is resolved once by the guard, and the socket goes to the address it checked with the name as the TLS
// server name (no second lookup); a refused address gets `Refused` and no socket at all.
import * as Net from "node:net"
import * as Tls from "node:tls"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Layer } from "effect"
import { IrcTransport, IrcTransportLive, type TransportEvent } from "../../src/actors/IrcTransport.js"
import { appConfigFromMap } from "../../src/services/AppConfig.js"
import { DestinationGuard, NameLookup, type NameLookupService } from "../../src/services/egress/DestinationGuard.js"
import { FAKE_IRC_TLS_CERT, FAKE_IRC_TLS_KEY } from "../support/certs.js"

const transportWith = (env: Record<string, string>, lookup: NameLookupService) =>
  IrcTransport.pipe(
    Effect.provide(IrcTransportLive.pipe(Layer.provide(DestinationGuard.Default), Layer.provide(appConfigFromMap(env)))),
    Effect.provideService(NameLookup, lookup)
  )

const options = (host: string, port: number, tls: boolean) => ({
  host,
  port,
  tls,
  tlsInsecure: true,
  nick: "belay",
  username: "belay",
  realname: "Belay",
  serverPassword: null,
  sasl: null
})

/** A TLS listener on 127.0.0.1 that records the server name each client asked for. */
const tlsListener = Effect.acquireRelease(
  Effect.async<{ readonly server: Tls.Server; readonly port: number; readonly names: Array<string> }>((resume) => {
    const names: Array<string> = []
    const server = Tls.createServer({ key: FAKE_IRC_TLS_KEY, cert: FAKE_IRC_TLS_CERT }, (socket) => {
      names.push(String((socket as Tls.TLSSocket & { servername?: string | false }).servername))
      socket.end()
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ server, port: (server.address() as Net.AddressInfo).port, names })))
  }),
  ({ server }) => Effect.sync(() => server.close())
)

describe("IrcTransport behind the destination guard", () => {
  it.scopedLive("deny: the name resolved by the guard, the socket to its address, TLS told the name", () =>
    Effect.gen(function*() {
      const listener = yield* tlsListener
      const asked: Array<string> = []
      const transport = yield* transportWith(
        { BELAY_PRIVATE_DESTINATIONS: "deny", BELAY_DESTINATION_EXCEPTIONS: `127.0.0.1:${listener.port}` },
        (host, done) => {
          asked.push(host)
          done(null, ["127.0.0.1"])
        }
      )
      const opened = yield* Deferred.make<TransportEvent>()
      const connection = transport.open(options("irc.pinned.test", listener.port, true), (event) => {
        if (event._tag !== "Line") Deferred.unsafeDone(opened, Effect.succeed(event))
      })
      expect((yield* Deferred.await(opened))._tag).toBe("Opened")
      // The server's side of the handshake may finish a moment after the client's.
      for (let i = 0; i < 100 && listener.names.length === 0; i++) yield* Effect.sleep("10 millis")
      connection.destroy()
      expect(asked).toEqual(["irc.pinned.test"])
      expect(listener.names).toEqual(["irc.pinned.test"])
    }))

  it.scopedLive("deny: a name answering a private address is Refused before any socket", () =>
    Effect.gen(function*() {
      const listener = yield* tlsListener
      const accepted: Array<unknown> = []
      listener.server.on("connection", (socket) => accepted.push(socket))
      const transport = yield* transportWith({ BELAY_PRIVATE_DESTINATIONS: "deny" }, (_host, done) => done(null, ["127.0.0.1"]))
      const event = yield* Deferred.make<TransportEvent>()
      transport.open(options("sneaky.example", listener.port, true), (e) => Deferred.unsafeDone(event, Effect.succeed(e)))
      const first = yield* Deferred.await(event)
      expect(first).toMatchObject({ _tag: "Refused" })
      expect(first._tag === "Refused" && first.reason).toMatch(/^locked-down: sneaky\.example \(127\.0\.0\.1\) is a loopback/)
      yield* Effect.sleep("200 millis")
      expect(accepted).toEqual([])
    }))

  it.scopedLive("a connection ended while the guard is still resolving opens no socket and reports Closed", () =>
    Effect.gen(function*() {
      let answer: (() => void) | undefined
      const transport = yield* transportWith({ BELAY_PRIVATE_DESTINATIONS: "deny" }, (_host, done) => {
        answer = () => done(null, ["8.8.8.8"])
      })
      const events: Array<TransportEvent> = []
      const connection = transport.open(options("slow.example", 6667, false), (e) => events.push(e))
      connection.destroy()
      yield* Effect.sleep("20 millis")
      answer?.()
      yield* Effect.sleep("50 millis")
      expect(events).toEqual([{ _tag: "Closed", error: null }])
    }))
})
