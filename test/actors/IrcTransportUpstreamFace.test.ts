// The real IRC transport giving each member its own face upstream (docs/decisions/hosting.md "Each member their own
// face upstream"): the socket leaves from the member's source address, by name (allow) or to the guard's address
// (deny), and while it is open this node's ident server answers its member's ident to the server it goes to.
import * as Net from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Layer, Option } from "effect"
import { IrcTransport, IrcTransportLive, type TransportEvent } from "../../src/actors/IrcTransport.js"
import { appConfigFromMap } from "../../src/services/AppConfig.js"
import { DestinationGuard, NameLookup, type NameLookupService } from "../../src/services/egress/DestinationGuard.js"
import { IdentServer } from "../../src/services/egress/IdentServer.js"
import { exchange } from "../services/egress/IdentClient.js"

/** The transport and the ident server it registers with, built in the test's scope; names resolved by `lookup`. */
const built = (env: Record<string, string>, lookup?: NameLookupService) => {
  const context = Layer.build(
    IrcTransportLive.pipe(
      Layer.provideMerge(Layer.merge(DestinationGuard.Default, IdentServer.Default)),
      Layer.provide(appConfigFromMap({ BELAY_IDENTD_LISTEN: "0.0.0.0:0", ...env }))
    )
  )
  return Effect.map(
    lookup === undefined ? context : Effect.provideService(context, NameLookup, lookup),
    (context) => ({ transport: Context.get(context, IrcTransport), ident: Context.get(context, IdentServer) })
  )
}

const options = (port: number, face: { readonly ident?: string; readonly localAddress?: string }) => ({
  host: "127.0.0.1",
  port,
  tls: false,
  tlsInsecure: false,
  nick: "belay",
  username: "belay",
  realname: "Belay",
  serverPassword: null,
  sasl: null,
  ...face
})

/** A plain TCP "IRC server" on `host` (127.0.0.1) that keeps every client and records where it came from. */
const listenerOn = (host: string) => Effect.acquireRelease(
  Effect.async<{ readonly server: Net.Server; readonly port: number; readonly peers: Array<Net.Socket> }>((resume) => {
    const peers: Array<Net.Socket> = []
    const server = Net.createServer((socket) => {
      peers.push(socket)
      socket.on("error", () => {})
    })
    server.listen(0, host, () => resume(Effect.succeed({ server, port: (server.address() as Net.AddressInfo).port, peers })))
  }),
  ({ peers, server }) =>
    Effect.sync(() => {
      for (const peer of peers) peer.destroy()
      server.close()
    })
)
const listener = listenerOn("127.0.0.1")

/** Answers as getaddrinfo does: every address, IPv4 first, unless one family is asked for; none of it: ENOTFOUND. */
const dualStack = (answers: Record<string, ReadonlyArray<string>>): NameLookupService => (host, done, family) => {
  const picked = (answers[host] ?? []).filter((a) => family === undefined || Net.isIP(a) === family)
  return picked.length === 0 ? done("ENOTFOUND", []) : done(null, picked)
}

/** Opens a connection and waits for its first event that is not a line. */
const openAndWait = (transport: IrcTransport["Type"], opts: ReturnType<typeof options>) =>
  Effect.gen(function*() {
    const first = yield* Deferred.make<TransportEvent>()
    const closed = yield* Deferred.make<void>()
    const connection = transport.open(opts, (event) => {
      if (event._tag === "Closed") Deferred.unsafeDone(closed, Effect.void)
      if (event._tag !== "Line") Deferred.unsafeDone(first, Effect.succeed(event))
    })
    return { connection, event: yield* Deferred.await(first), closed: Deferred.await(closed) }
  })

const waitFor = (check: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200 && !check(); i++) yield* Effect.sleep("10 millis")
    expect(check()).toBe(true)
  })

describe("IrcTransport: each member's face upstream", () => {
  it.scopedLive("allow: two members leave from their own addresses and the ident server names each", () =>
    Effect.gen(function*() {
      const irc = yield* listener
      const { ident, transport } = yield* built({})
      const identPort = Option.getOrThrow(ident.listening).port
      const a = yield* openAndWait(transport, options(irc.port, { ident: "b5", localAddress: "127.0.0.5" }))
      const b = yield* openAndWait(transport, options(irc.port, { ident: "b6", localAddress: "127.0.0.6" }))
      expect([a.event._tag, b.event._tag]).toEqual(["Opened", "Opened"])
      yield* waitFor(() => irc.peers.length === 2)
      expect(irc.peers.map((p) => p.remoteAddress).sort()).toEqual(["127.0.0.5", "127.0.0.6"])
      for (const peer of irc.peers) {
        // Asked as the IRC server asks: from its own address, at the client's, "<client port> , <server port>".
        const asked = yield* exchange(identPort, `${peer.remotePort} , ${irc.port}\r\n`, { from: "127.0.0.1", to: peer.remoteAddress! })
        const expected = peer.remoteAddress === "127.0.0.5" ? "b5" : "b6"
        expect(asked.answer).toBe(`${peer.remotePort} , ${irc.port} : USERID : UNIX : ${expected}\r\n`)
      }
      expect(ident.size()).toBe(2)
      a.connection.destroy()
      yield* a.closed
      yield* waitFor(() => ident.size() === 1)
      const gone = irc.peers.find((p) => p.remoteAddress === "127.0.0.5")!
      const after = yield* exchange(identPort, `${gone.remotePort} , ${irc.port}\r\n`, { from: "127.0.0.1", to: "127.0.0.5" })
      expect(after.answer).toBe(`${gone.remotePort} , ${irc.port} : ERROR : NO-USER\r\n`)
      b.connection.destroy()
      yield* b.closed
    }))

  it.scopedLive("deny: the guard's address, from the member's source address", () =>
    Effect.gen(function*() {
      const irc = yield* listener
      const { ident, transport } = yield* built({
        BELAY_PRIVATE_DESTINATIONS: "deny",
        BELAY_DESTINATION_EXCEPTIONS: `127.0.0.1:${irc.port}`
      })
      const a = yield* openAndWait(transport, options(irc.port, { ident: "b7", localAddress: "127.0.0.7" }))
      expect(a.event._tag).toBe("Opened")
      yield* waitFor(() => irc.peers.length === 1)
      expect(irc.peers[0]!.remoteAddress).toBe("127.0.0.7")
      const peer = irc.peers[0]!
      expect(ident.lookup("127.0.0.7", peer.remotePort!, "127.0.0.1", irc.port)).toBe("b7")
      a.connection.destroy()
      yield* a.closed
    }))

  it.scopedLive("deny: an address of the other family than the source is an ordinary failure, no socket", () =>
    Effect.gen(function*() {
      const irc = yield* listener
      const { transport } = yield* built({
        BELAY_PRIVATE_DESTINATIONS: "deny",
        BELAY_DESTINATION_EXCEPTIONS: `127.0.0.1:${irc.port}`
      })
      const a = yield* openAndWait(transport, options(irc.port, { ident: "b8", localAddress: "::1" }))
      expect(a.event).toMatchObject({ _tag: "Closed" })
      expect(a.event._tag === "Closed" && a.event.error).toContain("BELAY_UPSTREAM_SOURCE")
      yield* Effect.sleep("200 millis")
      expect(irc.peers).toEqual([])
    }))

  it.scopedLive("an IPv6 source: a name answering IPv4 first connects over IPv6; one without IPv6 fails saying so", () =>
    Effect.gen(function*() {
      const irc = yield* listenerOn("::1")
      const lookup = dualStack({ "dual.test": ["127.0.0.1", "::1"], "v4only.test": ["127.0.0.1"] })
      for (const env of [{}, { BELAY_PRIVATE_DESTINATIONS: "deny", BELAY_DESTINATION_EXCEPTIONS: `[::1]/128:${irc.port},127.0.0.1/32:${irc.port}` }]) {
        const { transport } = yield* built(env, lookup)
        const a = yield* openAndWait(transport, { ...options(irc.port, { ident: "b10", localAddress: "::1" }), host: "dual.test" })
        expect(a.event._tag).toBe("Opened")
        yield* waitFor(() => irc.peers.length === 1)
        expect(irc.peers[0]!.remoteAddress).toBe("::1")
        a.connection.destroy()
        yield* a.closed
        irc.peers.length = 0

        const b = yield* openAndWait(transport, { ...options(irc.port, { ident: "b11", localAddress: "::1" }), host: "v4only.test" })
        expect(b.event).toEqual({
          _tag: "Closed",
          error: "could not resolve v4only.test: no IPv6 address (ENOTFOUND), which the source address ::1 (BELAY_UPSTREAM_SOURCE) needs"
        })
        yield* Effect.sleep("100 millis")
        expect(irc.peers).toEqual([])
      }
    }))

  it.scopedLive("an IPv4 source: the same name connects over IPv4", () =>
    Effect.gen(function*() {
      const irc = yield* listener
      const { transport } = yield* built({}, dualStack({ "dual.test": ["::1", "127.0.0.1"] }))
      const a = yield* openAndWait(transport, { ...options(irc.port, { ident: "b12", localAddress: "127.0.0.12" }), host: "dual.test" })
      expect(a.event._tag).toBe("Opened")
      yield* waitFor(() => irc.peers.length === 1)
      expect(irc.peers[0]!.remoteAddress).toBe("127.0.0.12")
      a.connection.destroy()
      yield* a.closed
    }))

  it.scopedLive("without a source range: the node's address, and still the member's ident", () =>
    Effect.gen(function*() {
      const irc = yield* listener
      const { ident, transport } = yield* built({})
      const a = yield* openAndWait(transport, options(irc.port, { ident: "b9" }))
      expect(a.event._tag).toBe("Opened")
      yield* waitFor(() => irc.peers.length === 1)
      const peer = irc.peers[0]!
      expect(peer.remoteAddress).toBe("127.0.0.1")
      expect(ident.lookup("127.0.0.1", peer.remotePort!, "127.0.0.1", irc.port)).toBe("b9")
      a.connection.destroy()
      yield* a.closed
    }))
})
