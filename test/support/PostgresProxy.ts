/**
 * PostgresProxy: a TCP listener on a free loopback port that relays each connection to a PostgreSQL server (its Unix
 * socket, `{ path }`, for the embedded server, which listens on no TCP port; or `{ host, port }`), and can lose one
 * answer on purpose: the next statement whose
 * text contains a marker is passed to the server, the server's whole answer up to ReadyForQuery (by then the
 * statement has committed) is swallowed, and the connection is cut. The client then holds a statement whose commit it
 * cannot know: the case the MessageWriter's batch keys are for (docs/decisions/history.md "Message batches and unknown
 * commits").
 *
 * Server messages are framed as the PostgreSQL protocol (Frontend/Backend Protocol, "Message Formats") defines: one
 * type byte, then an Int32 length that counts itself. No client here asks for TLS, so the first server byte is
 * already a message.
 *
 * Concurrency rule: driven by Node socket callbacks on the one event loop; `loseNextAnswer` arms a Deferred that
 * the callbacks complete.
 */
import * as Net from "node:net"
import { Deferred, Effect, FiberId, type Scope } from "effect"
import { freePort } from "./BelayProcess.js"

export interface PostgresProxy {
  readonly port: number
  /** The server's URL through the proxy, for `database`. */
  readonly url: (database: string) => string
  /**
   * Arms the loss: completes once a statement containing `marker` has been answered by the server (ReadyForQuery),
   * the answer swallowed and the connection cut.
   */
  readonly loseNextAnswer: (marker: string) => Effect.Effect<void>
}

const READY_FOR_QUERY = 0x5a // 'Z'

/** Where a `postgres://` URL points: its `host` query parameter (a socket directory) or its host and port. */
export const serverAddress = (databaseUrl: string): Net.NetConnectOpts => {
  const url = new URL(databaseUrl)
  const port = Number(url.searchParams.get("port") ?? (url.port || "5432"))
  const socketDir = url.searchParams.get("host")
  return socketDir !== null && socketDir.startsWith("/")
    ? { path: `${socketDir}/.s.PGSQL.${port}` }
    : { host: url.hostname, port }
}

export const postgresProxy = (target: Net.NetConnectOpts): Effect.Effect<PostgresProxy, never, Scope.Scope> =>
  Effect.gen(function*() {
    const port = yield* freePort
    let armed: { readonly marker: string; readonly done: Deferred.Deferred<void> } | undefined
    const sockets = new Set<Net.Socket>()
    const server = Net.createServer((client) => {
      const upstream = Net.connect(target)
      sockets.add(client).add(upstream)
      const end = () => {
        client.destroy()
        upstream.destroy()
      }
      client.on("close", end).on("error", end)
      upstream.on("close", end).on("error", end)
      // The client's bytes, kept short: enough to find a marker split across two chunks.
      let recent = ""
      let cutting: Deferred.Deferred<void> | undefined
      let pending: Buffer = Buffer.alloc(0)
      client.on("data", (chunk: Buffer) => {
        if (armed !== undefined && cutting === undefined) {
          recent = (recent + chunk.toString("latin1")).slice(-(chunk.length + armed.marker.length))
          if (recent.includes(armed.marker)) {
            cutting = armed.done
            armed = undefined
          }
        }
        upstream.write(chunk)
      })
      upstream.on("data", (chunk: Buffer) => {
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
        // Forward whole messages until the cut is armed; then swallow up to ReadyForQuery and cut.
        while (pending.length >= 5) {
          const length = 1 + pending.readInt32BE(1)
          if (pending.length < length) break
          const message = pending.subarray(0, length)
          pending = pending.subarray(length)
          if (cutting === undefined) {
            client.write(message)
          } else if (message[0] === READY_FOR_QUERY) {
            const done = cutting
            end()
            Deferred.unsafeDone(done, Effect.void)
            return
          }
        }
      })
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
    return {
      port,
      url: (database) => `postgres://postgres@127.0.0.1:${port}/${encodeURIComponent(database)}`,
      loseNextAnswer: (marker) =>
        Effect.suspend(() => {
          const done = Deferred.unsafeMake<void>(FiberId.none)
          armed = { marker, done }
          return Deferred.await(done)
        })
    }
  })
