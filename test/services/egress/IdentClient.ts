/**
 * A bare RFC 1413 client for the ident server's tests: sends bytes from a chosen local address, and collects what the
 * server writes until it closes (or `within` ends). Each call owns its socket; safe from any fiber.
 */
import * as Net from "node:net"
import { Effect } from "effect"

export interface IdentExchange {
  /** Everything the server wrote, latin1. */
  readonly answer: string
  /** Whether the server closed the connection within the time given. */
  readonly closed: boolean
  /** Milliseconds from connect to close (or to giving up). */
  readonly ms: number
}

/**
 * Connects to `to:port` from `from`, writes `bytes` (if any; then half-closes with `end`), and waits up to `within` ms
 * for the server to close.
 */
export const exchange = (
  port: number,
  bytes: string | Buffer | null,
  options: { readonly from?: string; readonly to?: string; readonly within?: number; readonly end?: boolean } = {}
): Effect.Effect<IdentExchange> =>
  Effect.async<IdentExchange>((resume) => {
    const started = Date.now()
    let answer = ""
    let done = false
    const socket = Net.connect({
      host: options.to ?? "127.0.0.1",
      port,
      ...(options.from !== undefined ? { localAddress: options.from } : {})
    })
    const finish = (closed: boolean) => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      resume(Effect.succeed({ answer, closed, ms: Date.now() - started }))
    }
    const timer = setTimeout(() => finish(false), options.within ?? 5000)
    socket.setEncoding("latin1")
    socket.on("data", (chunk: string) => {
      answer += chunk
    })
    socket.on("connect", () => {
      if (bytes !== null) socket.write(bytes)
      // Half-close after the bytes: the server has nothing more to wait for.
      if (options.end === true) socket.end()
    })
    socket.on("error", () => finish(true))
    socket.on("close", () => finish(true))
  })

/** Opens a socket from `from` to `to:port` and keeps it open until the scope closes; resolves once connected. */
export const holdOpen = (port: number, from: string, to = "127.0.0.1") =>
  Effect.acquireRelease(
    Effect.async<Net.Socket, Error>((resume) => {
      const socket = Net.connect({ host: to, port, localAddress: from }, () => resume(Effect.succeed(socket)))
      socket.once("error", (error) => resume(Effect.fail(error)))
    }),
    (socket) => Effect.sync(() => socket.destroy())
  )
