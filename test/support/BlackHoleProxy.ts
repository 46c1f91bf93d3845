/**
 * BlackHoleProxy: a TCP relay on a free loopback port in front of PostgreSQL (its TCP address, or its Unix socket, as
 * the embedded server has only that) that can black-hole every connection it carries: from `blackHole()` on, bytes in
 * both directions are dropped and nothing is closed, as when a network path fails silently. `endUpstream()` then
 * closes the relay's connections to the server alone, so the server ends those sessions as its own keepalives would
 * for a dead host, while the client side stays black-holed.
 *
 * Concurrency rule: driven by Node socket callbacks on the one event loop.
 */
import * as Net from "node:net"
import { Effect, type Scope } from "effect"

export interface BlackHoleProxy {
  readonly port: number
  readonly blackHole: () => void
  readonly endUpstream: () => void
}

/** Where the server listens: a TCP address, or a Unix socket's path. */
export type ProxyTarget = { readonly host: string; readonly port: number } | { readonly path: string }

export const blackHoleProxy = (target: ProxyTarget): Effect.Effect<BlackHoleProxy, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<{ proxy: BlackHoleProxy; close: () => void }>((resume) => {
      let holed = false
      const sockets = new Set<Net.Socket>()
      const upstreams = new Set<Net.Socket>()
      const server = Net.createServer((client) => {
        const upstream = Net.connect(target)
        sockets.add(client).add(upstream)
        upstreams.add(upstream)
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
          proxy: {
            port,
            blackHole: () => void (holed = true),
            endUpstream: () => {
              for (const upstream of upstreams) upstream.destroy()
            }
          },
          close: () => {
            server.close()
            for (const s of sockets) s.destroy()
          }
        }))
      })
    }),
    ({ close }) => Effect.sync(close)
  ).pipe(Effect.map(({ proxy }) => proxy))
