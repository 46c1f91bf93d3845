/**
 * FakeIrcServer: a scripted IRC server on 127.0.0.1 for deterministic network-actor tests, shaped after soju's
 * server_test.go (createTestUpstream → `make`, mustAccept → `nextConnection`, expectMessage → `expectNext`/`waitFor`,
 * registerUpstreamConn → `register`). It is a real TCP listener on port 0 (optionally TLS with the fixed certificate in
 * ./certs.ts), so the code under test connects to it exactly as to a real network with irc-framework.
 *
 * Owns: the listener, every accepted socket, and the queue of accepted connections. Each connection (its line log and
 * inbox) is a FakeIrcConnection, its registration script FakeRegistration, its lines FakeLine; their exports are
 * re-exported here so a test needs this one module. Self-contained on purpose: none of them imports src/irc/*, so a bug
 * there cannot hide behind the same bug in the fake.
 *
 * Concurrency rule: sockets are driven only by Node event callbacks on the one event loop; the server-wide methods may
 * be called from any fiber, and each connection's inbox has one consumer at a time (see FakeIrcConnection). Socket
 * I/O is real, so every wait (nextConnection, expectNext, waitFor, register, waitClosed) is bounded on the live clock,
 * never the ambient TestClock (see FakeIrcError): a test may drive the actor's backoff and keepalive with TestClock
 * while these waits still expire in real milliseconds. Nothing here sleeps: a wait ends on a line, a close, or its
 * deadline. (`it.live`/`it.scopedLive` work as well; they simply make the rule moot.)
 *
 * Outside Effect (benchmarks): every method is an Effect with no requirements, so `Effect.runPromise` runs it;
 * `startFakeIrcServer` wraps `make` in its own Scope and returns a Promise plus a close function.
 */
import * as net from "node:net"
import * as tls from "node:tls"
import { Cause, Deferred, Duration, Effect, Exit, FiberSet, Queue, Scope } from "effect"
import { FAKE_IRC_TLS_CERT, FAKE_IRC_TLS_KEY } from "./certs.js"
import {
  type ConnectionConfig,
  type ConnectionHandle,
  type FakeIrcConnection,
  makeConnection
} from "./FakeIrcConnection.js"
import { FakeIrcError, withDeadline } from "./FakeIrcError.js"
import type { SaslBehaviour } from "./FakeRegistration.js"

export {
  type FakeIrcConnection,
  FLOOD_BATCH_BYTES,
  flood,
  type FloodOptions,
  type FloodStats
} from "./FakeIrcConnection.js"
export { FakeIrcError } from "./FakeIrcError.js"
export { type FakeLine, type LineMatcher, parseLine } from "./FakeLine.js"
export {
  type RegisterOptions,
  type Registration,
  type SaslBehaviour,
  type SaslCredentials
} from "./FakeRegistration.js"

// Constants, in one block (soju server.go habit).

const HOST = "127.0.0.1"
/** Default bound for every wait; generous because CI machines stall, small next to vitest's 30 s testTimeout. */
const DEFAULT_TIMEOUT: Duration.DurationInput = "5 seconds"
const DEFAULT_SERVER_NAME = "irc.fake.test"
/** listen(2) backlog: the reconnect-storm bench opens 500 connections at once. */
const LISTEN_BACKLOG = 1024

export const DEFAULT_ISUPPORT: ReadonlyArray<string> = [
  "CASEMAPPING=rfc1459",
  "CHANTYPES=#&",
  "PREFIX=(ov)@+",
  "CHANMODES=beI,k,l,imnpst",
  "MODES=4",
  "NICKLEN=30",
  "NETWORK=FakeNet"
]

export const DEFAULT_MOTD: ReadonlyArray<string> = ["Welcome to the fake IRC server."]

export interface FakeIrcServerOptions {
  /** Serve TLS with FAKE_IRC_TLS_CERT (clients trust it with `ca: FAKE_IRC_TLS_CERT` or skip verification). */
  readonly tls?: boolean
  readonly serverName?: string
  /** Default capability list for `register` (default: none offered, but CAP is understood); null: CAP → 421. */
  readonly caps?: ReadonlyArray<string> | null
  /** Default SASL behaviour for `register` (default "success"). */
  readonly sasl?: SaslBehaviour
  /** Default MOTD for `register` (default DEFAULT_MOTD); null: 422. */
  readonly motd?: ReadonlyArray<string> | null
  /** Default ISUPPORT tokens for `register` (default DEFAULT_ISUPPORT). */
  readonly isupport?: ReadonlyArray<string>
  /** Initial autoPong of each connection (default true). */
  readonly autoPong?: boolean
  /** Start refusing: accept then close every socket at once (default false). */
  readonly refuse?: boolean
  /** Default bound for every wait (default 5 seconds). */
  readonly timeout?: Duration.DurationInput
  /**
   * Forked in the server's scope for each accepted connection (e.g. `(c) => c.register()` for benchmarks). Its
   * failures are recorded in `stats.handlerFailures`. The connection is still offered to `nextConnection`.
   */
  readonly onConnection?: (connection: FakeIrcConnection) => Effect.Effect<unknown, FakeIrcError>
}

export interface FakeIrcServerStats {
  /** Sockets accepted and kept (refused ones excluded), since make. */
  readonly accepted: number
  /** Sockets closed at once because the server was refusing. */
  readonly refused: number
  /** Accepted sockets still open. */
  readonly open: number
  readonly listening: boolean
  readonly handlerFailures: ReadonlyArray<string>
}

export interface FakeIrcServer {
  readonly host: string
  /** Chosen by the OS at make; restart listens on the same port again. */
  readonly port: number
  readonly tls: boolean
  /** The source of every line the fake writes, e.g. ":irc.fake.test 001 ...". */
  readonly serverName: string
  /** The next accepted connection, in accept order (connections that already closed are still delivered). */
  readonly nextConnection: (timeout?: Duration.DurationInput) => Effect.Effect<FakeIrcConnection, FakeIrcError>
  /** Accepted sockets open right now. */
  readonly connections: Effect.Effect<number>
  readonly stats: Effect.Effect<FakeIrcServerStats>
  /** While true, every new socket is accepted and closed at once (the client sees EOF), to exercise backoff. */
  readonly setRefusing: (refuse: boolean) => Effect.Effect<void>
  /** Closes the listener (new connects get ECONNREFUSED) and destroys every socket; completes when all are closed. */
  readonly stop: Effect.Effect<void>
  /** stop, then listen again on the same port. */
  readonly restart: Effect.Effect<void>
}

export const make = (options: FakeIrcServerOptions = {}): Effect.Effect<FakeIrcServer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const config: ConnectionConfig = {
      serverName: options.serverName ?? DEFAULT_SERVER_NAME,
      host: HOST,
      caps: options.caps !== undefined ? options.caps : [],
      sasl: options.sasl ?? "success",
      motd: options.motd !== undefined ? options.motd : DEFAULT_MOTD,
      isupport: options.isupport ?? DEFAULT_ISUPPORT,
      autoPong: options.autoPong ?? true,
      timeout: Duration.decode(options.timeout ?? DEFAULT_TIMEOUT)
    }
    const secureContext = options.tls === true
      ? tls.createSecureContext({ key: FAKE_IRC_TLS_KEY, cert: FAKE_IRC_TLS_CERT })
      : undefined
    // Created before the listener so its finalizer (interrupting onConnection fibers) runs after stop.
    const runFork = yield* FiberSet.makeRuntime<never>()
    const incoming = yield* Queue.unbounded<FakeIrcConnection>()

    let listener: net.Server | undefined
    let refusing = options.refuse ?? false
    let accepted = 0
    let refused = 0
    const handlerFailures: Array<string> = []
    const open = new Set<ConnectionHandle>()
    const rawSockets = new Set<net.Socket>()

    const onSocket = (raw: net.Socket) => {
      rawSockets.add(raw)
      raw.once("close", () => rawSockets.delete(raw))
      raw.on("error", () => {})
      if (refusing) {
        refused++
        raw.destroy()
        return
      }
      accepted++
      const socket = secureContext === undefined ? raw : new tls.TLSSocket(raw, { isServer: true, secureContext })
      const handle = makeConnection(accepted, socket, raw, config)
      open.add(handle)
      socket.once("close", () => open.delete(handle))
      incoming.unsafeOffer(handle.connection)
      if (options.onConnection !== undefined) {
        runFork(
          options.onConnection(handle.connection).pipe(
            Effect.catchAllCause((cause) =>
              Cause.isInterruptedOnly(cause)
                ? Effect.void
                : Effect.sync(() => {
                  handlerFailures.push(`connection #${handle.connection.id}: ${Cause.pretty(cause)}`)
                })
            )
          )
        )
      }
    }

    const listen = (port: number) =>
      Effect.async<number, Error>((resume) => {
        const server = net.createServer({ noDelay: true }, onSocket)
        const onError = (error: Error) => resume(Effect.fail(error))
        server.once("error", onError)
        server.listen({ host: HOST, port, backlog: LISTEN_BACKLOG }, () => {
          server.off("error", onError)
          server.on("error", () => {})
          listener = server
          const address = server.address()
          resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : port))
        })
      }).pipe(Effect.orDie)

    const stop: Effect.Effect<void> = Effect.suspend(() => {
      const server = listener
      listener = undefined
      const closing = [...open].map((handle) => handle.closed)
      for (const handle of open) handle.socket.destroy()
      for (const raw of rawSockets) raw.destroy()
      const closeListener = server === undefined
        ? Effect.void
        : Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
        })
      return Effect.zipRight(closeListener, Effect.forEach(closing, Deferred.await, { discard: true }))
    })

    const port = yield* Effect.acquireRelease(listen(0), () => stop)

    const nextConnection = (timeout?: Duration.DurationInput) => {
      const d = timeout === undefined ? config.timeout : Duration.decode(timeout)
      return withDeadline(
        Queue.take(incoming),
        d,
        () =>
          new FakeIrcError({
            reason: "Timeout",
            message: `FakeIrcServer :${port}: no connection within ${Duration.format(d)} (accepted ${accepted}, refused ${refused}, ${
              listener === undefined ? "stopped" : refusing ? "refusing" : "listening"
            })`
          })
      )
    }

    const server: FakeIrcServer = {
      host: HOST,
      port,
      tls: secureContext !== undefined,
      serverName: config.serverName,
      nextConnection,
      connections: Effect.sync(() => open.size),
      stats: Effect.sync(() => ({
        accepted,
        refused,
        open: open.size,
        listening: listener !== undefined,
        handlerFailures: handlerFailures.slice()
      })),
      setRefusing: (refuse) =>
        Effect.sync(() => {
          refusing = refuse
        }),
      stop,
      restart: Effect.zipRight(stop, Effect.asVoid(listen(port)))
    }
    return server
  })

/**
 * For plain Node scripts (the benchmark harness): starts a server in its own Scope. Run the returned server's
 * Effects with `Effect.runPromise`; `close` ends the scope (stop + interrupt onConnection fibers).
 */
export const startFakeIrcServer = async (
  options: FakeIrcServerOptions = {}
): Promise<{ readonly server: FakeIrcServer; readonly close: () => Promise<void> }> => {
  const scope = Effect.runSync(Scope.make())
  const server = await Effect.runPromise(Scope.extend(make(options), scope))
  return { server, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}
