/**
 * ConnectionRelay: a TCP relay on a free loopback port in front of a server that a test stops and starts (ngircd),
 * recording when each client connection arrived and when it ended. It waits for the server (retrying its connect
 * for up to UPSTREAM_PATIENCE) rather than refusing, so the time a client reconnects is the client's own decision
 * (its backoff), not the server's start-up time.
 *
 * Concurrency rule: driven by Node socket callbacks on the one event loop; they only append to the two logs and
 * pipe bytes. Readers copy the logs.
 */
import * as Net from "node:net"
import { Effect, type Scope } from "effect"
import { freePort } from "./BelayProcess.js"

const UPSTREAM_PATIENCE_MS = 15_000
const UPSTREAM_RETRY_MS = 50

export interface RelayedConnection {
  /** performance.now() when the client's connection was accepted. */
  readonly acceptedAt: number
  /** performance.now() when it ended (either side closed), or undefined while open. */
  readonly closedAt: number | undefined
}

export interface ConnectionRelay {
  readonly port: number
  /** Every client connection so far, in accept order. */
  readonly connections: () => ReadonlyArray<RelayedConnection>
}

export const connectionRelay = (upstreamPort: number): Effect.Effect<ConnectionRelay, never, Scope.Scope> =>
  Effect.gen(function*() {
    const port = yield* freePort
    const log: Array<{ acceptedAt: number; closedAt: number | undefined }> = []
    const sockets = new Set<Net.Socket>()
    const server = Net.createServer((client) => {
      const entry = { acceptedAt: performance.now(), closedAt: undefined as number | undefined }
      log.push(entry)
      sockets.add(client)
      client.pause()
      const giveUpAt = Date.now() + UPSTREAM_PATIENCE_MS
      let upstream: Net.Socket | undefined
      const end = () => {
        entry.closedAt ??= performance.now()
        client.destroy()
        upstream?.destroy()
      }
      client.on("close", end).on("error", end)
      const attempt = () => {
        if (client.destroyed) return
        const socket = Net.connect({ host: "127.0.0.1", port: upstreamPort })
        socket.once("connect", () => {
          upstream = socket
          sockets.add(socket)
          socket.on("close", end).on("error", end)
          socket.pipe(client)
          client.pipe(socket)
          client.resume()
        })
        socket.once("error", () => {
          if (upstream === socket) return
          socket.destroy()
          if (Date.now() < giveUpAt) setTimeout(attempt, UPSTREAM_RETRY_MS)
          else end()
        })
      }
      attempt()
    })
    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => {
        server.listen(port, "127.0.0.1", () => resume(Effect.void))
      }),
      () =>
        Effect.async<void>((resume) => {
          for (const s of sockets) s.destroy()
          server.close(() => resume(Effect.void))
        })
    )
    return { port, connections: () => log.map((e) => ({ ...e })) }
  })
