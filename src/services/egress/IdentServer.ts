/**
 * IdentServer owns this node's RFC 1413 ident server (BELAY_IDENTD_LISTEN) and the registry it answers from: every
 * upstream IRC connection this node holds open, by its four addresses and ports, with its member's ident
 * (docs/decisions/hosting.md "Each member their own face upstream"). An IRC server asks port 113 of the address a
 * client came from which user holds the connection; the answer is that member's ident, or `NO-USER`. Each node
 * answers for its own connections only, since only it holds them.
 *
 * Bounds: at most MAX_CLIENTS asking at once (more are closed at accept), one query per connection, read within
 * CLIENT_TIMEOUT, a line of at most IDENT_MAX_LINE characters (longer: closed unanswered). A query matches only the
 * connection between the address it was asked from and the address it was asked at (RFC 1413 §2): no server learns
 * the ident of a connection to another.
 *
 * Concurrency: `register` and the answers run on Node's event loop (socket callbacks); the registry is a Map only
 * they touch, each call synchronous. Registration is a no-op without BELAY_IDENTD_LISTEN, so an idle network then
 * costs nothing here.
 */
import * as Net from "node:net"
import { Duration, Effect, Option } from "effect"
import {
  IDENT_MAX_LINE,
  identAnswer,
  identError,
  type IdentQuery,
  parseIdentQuery
} from "../../net/IdentProtocol.js"
import { unmapIpv4 } from "../../net/IpAddress.js"
import { AppConfig } from "../AppConfig.js"

/** Servers asking at once; a server asks once per client connecting, so more are a flood, not a boot storm. */
export const MAX_CLIENTS = 64
/** How long a server may take to send its query; libident's own deadline in ngircd is 10 s too. */
export const CLIENT_TIMEOUT = Duration.seconds(10)
/**
 * How long a query that matches nothing waits before NO-USER: our socket's connect callback and the server's query
 * can arrive in the same turn of the event loop, the query first.
 */
export const LATE_REGISTRATION = Duration.millis(300)

/** One upstream connection, as its socket reports it. */
export interface UpstreamSocket {
  readonly localAddress: string
  readonly localPort: number
  readonly remoteAddress: string
  readonly remotePort: number
  readonly ident: string
}

/** Addresses as both ends of a socket report them: an IPv4 peer on a dual-stack socket is written `::ffff:a.b.c.d`. */
const keyOf = (localAddress: string, localPort: number, remoteAddress: string, remotePort: number) =>
  `${unmapIpv4(localAddress).toLowerCase()} ${localPort} ${unmapIpv4(remoteAddress).toLowerCase()} ${remotePort}`

export class IdentServer extends Effect.Service<IdentServer>()("belay/IdentServer", {
  scoped: Effect.gen(function*() {
    const config = yield* AppConfig
    const enabled = Option.isSome(config.identdListen)
    const registry = new Map<string, { readonly ident: string }>()

    /**
     * Adds a live upstream connection; the returned function removes it (call it when the socket closes). Removing
     * twice, or after another connection took the same four values, removes nothing of the other's.
     */
    const register = (socket: UpstreamSocket): () => void => {
      if (!enabled) return noop
      const key = keyOf(socket.localAddress, socket.localPort, socket.remoteAddress, socket.remotePort)
      const entry = { ident: socket.ident }
      registry.set(key, entry)
      return () => {
        if (registry.get(key) === entry) registry.delete(key)
      }
    }

    /** The ident of our connection from `local` (address, port) to `remote`, if this node holds one. */
    const lookup = (localAddress: string, localPort: number, remoteAddress: string, remotePort: number) =>
      registry.get(keyOf(localAddress, localPort, remoteAddress, remotePort))?.ident

    const answer = (client: Net.Socket, query: IdentQuery, late: boolean) => {
      // The asking server is the connection's remote end, and asks at our end's address (RFC 1413 §2).
      const ident = lookup(client.localAddress ?? "", query.local, client.remoteAddress ?? "", query.remote)
      if (ident === undefined && !late) {
        setTimeout(() => answer(client, query, true), Duration.toMillis(LATE_REGISTRATION)).unref()
        return
      }
      if (!client.destroyed) client.end(ident === undefined ? identError(query, "NO-USER") : identAnswer(query, ident))
    }

    const clients = new Set<Net.Socket>()
    const serve = (client: Net.Socket) => {
      clients.add(client)
      client.once("close", () => clients.delete(client))
      client.setTimeout(Duration.toMillis(CLIENT_TIMEOUT), () => client.destroy())
      client.on("error", () => client.destroy())
      let buffered = ""
      let answered = false
      client.setEncoding("latin1")
      // Half-open: a client that shuts down its side after the query still gets the answer; one that does so before
      // a whole line has nothing to wait for.
      client.on("end", () => {
        if (!answered) client.destroy()
      })
      client.on("data", (chunk: string) => {
        if (answered) return
        buffered += chunk
        const end = buffered.indexOf("\n")
        if (end < 0) {
          if (buffered.length > IDENT_MAX_LINE + 1) client.destroy()
          return
        }
        answered = true
        const query = parseIdentQuery(buffered.slice(0, end).replace(/\r$/, ""))
        buffered = ""
        if (query === "invalid") client.end(identError(query, "INVALID-PORT"))
        else answer(client, query, false)
      })
    }

    const listening = yield* Option.match(config.identdListen, {
      onNone: () => Effect.succeed(Option.none<{ readonly host: string; readonly port: number }>()),
      onSome: ({ host, port }) =>
        Effect.acquireRelease(
          Effect.async<Net.Server, Error>((resume) => {
            const server = Net.createServer({ allowHalfOpen: true }, serve)
            server.maxConnections = MAX_CLIENTS
            server.once("error", (error) => resume(Effect.fail(error)))
            server.listen({ host, port }, () => resume(Effect.succeed(server)))
          }),
          // Every asking socket closed too, so that closing never waits out CLIENT_TIMEOUT.
          (server) =>
            Effect.async<void>((resume) => {
              server.close(() => resume(Effect.void))
              for (const client of clients) client.destroy()
            })
        ).pipe(
          Effect.map((server) => {
            const address = server.address()
            return Option.some({ host, port: address !== null && typeof address === "object" ? address.port : port })
          }),
          Effect.tap((bound) =>
            Effect.logInfo(
              `ident server listening on ${host.includes(":") ? `[${host}]` : host}:${Option.getOrThrow(bound).port}`
            )
          ),
          // One line naming the setting, as every configuration error (docs/decisions/operations.md).
          Effect.mapError((error) => new Error(`BELAY_IDENTD_LISTEN ${host}:${port}: ${error.message}`)),
          Effect.orDie
        )
    })

    // The start-up log says which face members show upstream, so an operator sees it without reading the environment.
    if (Option.isSome(config.upstreamSource)) {
      const range = config.upstreamSource.value
      yield* Effect.logInfo(`member connections: source addresses from ${range.text} (accounts 1 to ${range.capacity})`)
    }

    return {
      /** Whether the ident server runs (BELAY_IDENTD_LISTEN): the transport registers its sockets only then. */
      enabled,
      /** Where it listens, its port resolved (BELAY_IDENTD_LISTEN with port 0 in tests). */
      listening,
      register,
      lookup,
      /** Connections registered now (metrics, tests). */
      size: () => registry.size
    } as const
  })
}) {}

const noop = () => {}
