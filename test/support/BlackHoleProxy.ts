/**
 * BlackHoleProxy: a TCP relay on a free loopback port in front of PostgreSQL that can black-hole every connection it
 * carries: from `blackHole()` on, bytes in both directions are dropped and nothing is closed, as when a network path
 * fails silently. Each relayed connection's local port towards the server is kept (`upstreamPorts`), so a test can
 * end those sessions on the server (pg_terminate_backend), as PostgreSQL's own keepalives would for a dead host.
 *
 * Concurrency rule: driven by Node socket callbacks on the one event loop.
 */
import * as Net from "node:net"
import { Effect, type Scope } from "effect"

export interface BlackHoleProxy {
  readonly port: number
  readonly blackHole: () => void
  readonly upstreamPorts: () => ReadonlyArray<number>
}

export const blackHoleProxy = (target: { readonly host: string; readonly port: number }): Effect.Effect<BlackHoleProxy, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<{ proxy: BlackHoleProxy; close: () => void }>((resume) => {
      let holed = false
      const sockets = new Set<Net.Socket>()
      const ports: Array<number> = []
      const server = Net.createServer((client) => {
        const upstream = Net.connect(target)
        sockets.add(client).add(upstream)
        upstream.once("connect", () => {
          if (upstream.localPort !== undefined) ports.push(upstream.localPort)
        })
        const relay = (from: Net.Socket, to: Net.Socket) => {
          from.on("data", (chunk) => {
            if (!holed) to.write(chunk)
          })
          from.on("close", () => {
            sockets.delete(from)
            if (!holed) to.destroy()
          })
          from.on("error", () => {})
        }
        relay(client, upstream)
        relay(upstream, client)
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed({
          proxy: { port, blackHole: () => void (holed = true), upstreamPorts: () => [...ports] },
          close: () => {
            server.close()
            for (const s of sockets) s.destroy()
          }
        }))
      })
    }),
    ({ close }) => Effect.sync(close)
  ).pipe(Effect.map(({ proxy }) => proxy))
