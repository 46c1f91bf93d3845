/**
 * FreezingProxy: a TCP relay on a free loopback port in front of PostgreSQL that a test can freeze — every byte in
 * either direction is dropped and no new connection reaches the server, while every connection stays open: the
 * silently dead link (a black-holed network, a proxy that forgot its sessions) that only a heartbeat notices. `thaw`
 * cuts every connection made so far, as such a link ends once it is noticed, and relays again.
 *
 * Concurrency rule: driven by Node socket callbacks on the one event loop.
 */
import * as Net from "node:net"
import { Effect, type Scope } from "effect"

export interface FreezingProxy {
  readonly port: number
  /** `databaseUrl` pointed at the proxy. */
  readonly url: (databaseUrl: string) => string
  readonly freeze: Effect.Effect<void>
  readonly thaw: Effect.Effect<void>
}

export const freezingProxy = (target: Net.NetConnectOpts): Effect.Effect<FreezingProxy, never, Scope.Scope> =>
  Effect.gen(function*() {
    let frozen = false
    const open = new Set<Net.Socket>()
    const server = yield* Effect.acquireRelease(
      Effect.async<Net.Server>((resume) => {
        const s = Net.createServer((client) => {
          open.add(client)
          let upstream: Net.Socket | undefined
          client.on("close", () => {
            open.delete(client)
            upstream?.destroy()
          })
          client.on("error", () => upstream?.destroy())
          // A connection made while frozen never reaches the server; `thaw` cuts it.
          if (frozen) return
          upstream = Net.connect(target)
          open.add(upstream)
          upstream.on("close", () => {
            open.delete(upstream!)
            client.destroy()
          })
          upstream.on("error", () => client.destroy())
          client.on("data", (data) => {
            if (!frozen) upstream!.write(data)
          })
          upstream.on("data", (data) => {
            if (!frozen) client.write(data)
          })
        })
        s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
      }),
      (s) =>
        Effect.async<void>((resume) => {
          for (const socket of open) socket.destroy()
          s.close(() => resume(Effect.void))
        })
    )
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    return {
      port,
      url: (databaseUrl) => {
        const url = new URL(databaseUrl)
        url.hostname = "127.0.0.1"
        url.port = String(port)
        url.searchParams.delete("host")
        url.searchParams.delete("port")
        return url.toString()
      },
      freeze: Effect.sync(() => {
        frozen = true
      }),
      thaw: Effect.sync(() => {
        for (const socket of open) socket.destroy()
        frozen = false
      })
    }
  })
