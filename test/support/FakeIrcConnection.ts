/**
 * FakeIrcConnection: one accepted socket of the FakeIrcServer, seen from the test: its log of the lines the client
 * sent, its inbox that `expectNext`/`waitFor`/`register` consume, and the writes (`send`, `flood`, `close`, `destroy`).
 * The server side of registration is FakeRegistration, played on this connection's inbox.
 *
 * Concurrency rule: the socket is driven only by Node event callbacks on the one event loop. Those callbacks split
 * input into lines, log them, answer PINGs when autoPong is on, and push the rest into the unbounded inbox without
 * ever blocking. The inbox has one consumer at a time: never run expectNext/waitFor/register on the same connection
 * from two fibers at once (each would steal the other's lines). send/flood/close/destroy may be called from any
 * fiber. Every wait is bounded on the live clock (FakeIrcError's `withDeadline`).
 */
import type * as net from "node:net"
import { Deferred, Duration, Effect, Exit, FiberId, Queue } from "effect"
import { FakeIrcError, withDeadline } from "./FakeIrcError.js"
import { describeMatcher, type FakeLine, type LineMatcher, matchesLine, parseLine } from "./FakeLine.js"
import {
  playRegistration,
  type RegisterOptions,
  type Registration,
  type RegistrationDefaults
} from "./FakeRegistration.js"

// Constants, in one block (soju server.go habit).
/** How many of the client's lines an error message shows (the tail of the log). */
const LOG_TAIL = 30
/**
 * Flood writes are batched to about this many bytes per socket.write: half the socket's highWaterMark on Node 20
 * (16 KiB), an eighth from Node 22 on (64 KiB, the streams' new default).
 */
export const FLOOD_BATCH_BYTES = 8 * 1024

export interface FloodOptions {
  /** Called synchronously each time socket.write returns false, with the number of lines queued so far. */
  readonly onBackpressure?: (linesQueued: number) => void
}

export interface FloodStats {
  readonly lines: number
  readonly bytes: number
  /** How many times the flood stopped for 'drain' because socket.write returned false. */
  readonly backpressureWaits: number
  /** The largest socket.writableLength seen right after a write: bounded when backpressure is respected. */
  readonly maxBuffered: number
  /** The socket's writableHighWaterMark: write returns false once this much is buffered (16 KiB on Node 20, 64 KiB after). */
  readonly highWaterMark: number
}

export interface FakeIrcConnection {
  /** 1-based accept order on this server (refused sockets do not count). */
  readonly id: number
  readonly remotePort: number
  /** The very next unconsumed line must match; otherwise fails with Mismatch naming the line that came. */
  readonly expectNext: (matcher: LineMatcher, timeout?: Duration.DurationInput) => Effect.Effect<FakeLine, FakeIrcError>
  /** Consumes lines until one matches; the ones passed over go to `skipped`. The timeout bounds the whole wait. */
  readonly waitFor: (matcher: LineMatcher, timeout?: Duration.DurationInput) => Effect.Effect<FakeLine, FakeIrcError>
  /** Writes raw lines (without line endings; CRLF is added) in one write; completes once handed to the kernel. */
  readonly send: (...lines: ReadonlyArray<string>) => Effect.Effect<void, FakeIrcError>
  /**
   * Plays the server side of registration: answers CAP LS/LIST/REQ/END (IRCv3 capability-negotiation),
   * AUTHENTICATE PLAIN (IRCv3 sasl-3.1: 900+903 or 904, 908 for another mechanism, 906 on abort), records PASS, answers
   * rejected NICKs with 433, and once NICK and USER arrived and CAP negotiation (if started) ended, sends 001–004,
   * 005 with `isupport` (default: server option, else DEFAULT_ISUPPORT; empty: no 005) and 375/372/376 or 422.
   * Other lines are passed over into `skipped`. The timeout bounds the whole exchange.
   */
  readonly register: (
    nick?: string,
    isupport?: ReadonlyArray<string>,
    options?: RegisterOptions
  ) => Effect.Effect<Registration, FakeIrcError>
  /** Writes `count` lines `makeLine(0..count-1)` as fast as the socket takes them, waiting for 'drain' when told to. */
  readonly flood: (
    count: number,
    makeLine: (i: number) => string,
    options?: FloodOptions
  ) => Effect.Effect<FloodStats, FakeIrcError>
  /** Every line the client sent so far, oldest first, including auto-answered PINGs. */
  readonly lines: Effect.Effect<ReadonlyArray<string>>
  /** Lines that waitFor/register consumed without matching, oldest first. */
  readonly skipped: Effect.Effect<ReadonlyArray<string>>
  /** autoPong on: client PINGs are answered with PONG and not put in the inbox. Off: PINGs reach the inbox, silence. */
  readonly setAutoPong: (enabled: boolean) => Effect.Effect<void>
  readonly isOpen: Effect.Effect<boolean>
  /** Completes when the socket has closed (client QUIT/close, or our close/destroy). */
  readonly waitClosed: (timeout?: Duration.DurationInput) => Effect.Effect<void, FakeIrcError>
  /** Graceful close: optional `ERROR :reason`, then FIN; destroys if the peer has not closed within the timeout. */
  readonly close: (reason?: string) => Effect.Effect<void>
  /** Abrupt drop: TCP RST (socket.resetAndDestroy), as when a server or NAT loses the connection. */
  readonly destroy: Effect.Effect<void>
}

const CLOSED: unique symbol = Symbol("FakeIrcConnection.closed")
type InboxItem = string | typeof CLOSED

/** The server-wide behaviour every connection starts from. */
export interface ConnectionConfig extends RegistrationDefaults {
  readonly autoPong: boolean
}

/** What the server keeps of a connection: the test's view, the close signal, and the socket to destroy on stop. */
export interface ConnectionHandle {
  readonly connection: FakeIrcConnection
  readonly closed: Deferred.Deferred<void>
  readonly socket: net.Socket
}

export const makeConnection = (
  id: number,
  socket: net.Socket,
  raw: net.Socket,
  config: ConnectionConfig
): ConnectionHandle => {
  const inbox = Effect.runSync(Queue.unbounded<InboxItem>())
  const closed = Deferred.unsafeMake<void>(FiberId.none)
  const log: Array<string> = []
  const skippedLog: Array<string> = []
  let autoPong = config.autoPong
  let isClosed = false
  const remotePort = raw.remotePort ?? 0
  const src = `:${config.serverName}`

  const writable = () => !isClosed && !socket.destroyed && socket.writable

  const onLine = (line: string) => {
    log.push(line)
    if (autoPong) {
      const parsed = parseLine(line)
      if (parsed.command === "PING") {
        // RFC 2812 §3.7.2/§3.7.3: answer with the same token so the client's keepalive sees its own cookie.
        if (writable()) socket.write(`${src} PONG ${config.serverName} :${parsed.params[0] ?? ""}\r\n`)
        return
      }
    }
    inbox.unsafeOffer(line)
  }

  let pending = ""
  socket.setEncoding("utf8")
  socket.on("data", (chunk: string) => {
    pending += chunk
    let start = 0
    for (;;) {
      const nl = pending.indexOf("\n", start)
      if (nl === -1) break
      // RFC 1459 §2.3.1 says CR-LF, but lenient servers accept a bare LF; empty lines are ignored.
      const end = nl > start && pending.charCodeAt(nl - 1) === 13 ? nl - 1 : nl
      const line = pending.slice(start, end)
      start = nl + 1
      if (line !== "") onLine(line)
    }
    pending = pending.slice(start)
  })
  socket.on("error", () => {
    // A reset or a failed TLS handshake; 'close' follows and is what we act on.
  })
  socket.once("close", () => {
    isClosed = true
    inbox.unsafeOffer(CLOSED)
    Deferred.unsafeDone(closed, Exit.void)
  })

  const describeLog = (): string => {
    const tail = log.slice(-LOG_TAIL)
    const header = log.length === 0
      ? "no lines received"
      : `lines received (${tail.length < log.length ? `last ${tail.length} of ${log.length}` : `${log.length}`}):`
    const state = isClosed ? " [connection closed]" : ""
    return [`${header}${state}`, ...tail.map((line) => `  ${line}`)].join("\n")
  }
  const fail = (reason: FakeIrcError["reason"], what: string) =>
    new FakeIrcError({ reason, message: `FakeIrcConnection #${id}: ${what}\n${describeLog()}` })

  const timeoutOf = (timeout: Duration.DurationInput | undefined) =>
    timeout === undefined ? config.timeout : Duration.decode(timeout)

  /** The next inbox line; on close, leaves the marker in place so every later take fails too. */
  const takeNext = (waitingFor: string): Effect.Effect<string, FakeIrcError> =>
    Effect.flatMap(Queue.take(inbox), (item) =>
      item === CLOSED
        ? Effect.zipRight(
          Queue.offer(inbox, CLOSED),
          Effect.fail(fail("Closed", `connection closed while waiting for ${waitingFor}`))
        )
        : Effect.succeed(item))

  const expectNext = (matcher: LineMatcher, timeout?: Duration.DurationInput) => {
    const what = describeMatcher(matcher)
    const d = timeoutOf(timeout)
    return withDeadline(
      Effect.flatMap(takeNext(what), (raw) => {
        const line = parseLine(raw)
        return matchesLine(matcher, line)
          ? Effect.succeed(line)
          : Effect.fail(fail("Mismatch", `expected the next line to match ${what}, got ${JSON.stringify(raw)}`))
      }),
      d,
      () => fail("Timeout", `timed out after ${Duration.format(d)} waiting for the next line to match ${what}`)
    )
  }

  const waitFor = (matcher: LineMatcher, timeout?: Duration.DurationInput) => Effect.suspend(() => {
    const what = describeMatcher(matcher)
    const d = timeoutOf(timeout)
    let passedOver = 0
    const loop: Effect.Effect<FakeLine, FakeIrcError> = Effect.flatMap(takeNext(what), (raw) => {
      const line = parseLine(raw)
      if (matchesLine(matcher, line)) return Effect.succeed(line)
      skippedLog.push(raw)
      passedOver++
      return loop
    })
    return withDeadline(
      loop,
      d,
      () =>
        fail(
          "Timeout",
          `timed out after ${Duration.format(d)} waiting for a line matching ${what} (passed over ${passedOver})`
        )
    )
  })

  const send = (...lines: ReadonlyArray<string>): Effect.Effect<void, FakeIrcError> =>
    Effect.async<void, FakeIrcError>((resume) => {
      if (!writable()) {
        resume(Effect.fail(fail("Closed", `cannot send ${JSON.stringify(lines[0] ?? "")}: connection closed`)))
        return
      }
      if (lines.length === 0) {
        resume(Effect.void)
        return
      }
      socket.write(lines.map((line) => line + "\r\n").join(""), (error) => {
        resume(
          error == null
            ? Effect.void
            : Effect.fail(fail("Closed", `send failed (${error.message}): ${JSON.stringify(lines[0] ?? "")}`))
        )
      })
    })

  const register = (
    nickArg?: string,
    isupportArg?: ReadonlyArray<string>,
    options?: RegisterOptions
  ): Effect.Effect<Registration, FakeIrcError> =>
    playRegistration(
      {
        defaults: config,
        takeNext,
        send,
        skip: (raw) => {
          skippedLog.push(raw)
        },
        fail
      },
      nickArg,
      isupportArg,
      options
    )

  const flood = (count: number, makeLine: (i: number) => string, options: FloodOptions = {}) =>
    Effect.async<FloodStats, FakeIrcError>((resume) => {
      let i = 0
      let bytes = 0
      let backpressureWaits = 0
      let maxBuffered = 0
      let finished = false
      const finish = (effect: Effect.Effect<FloodStats, FakeIrcError>) => {
        if (finished) return
        finished = true
        socket.off("drain", pump)
        socket.off("close", onClose)
        resume(effect)
      }
      const stats = (): FloodStats => ({ lines: i, bytes, backpressureWaits, maxBuffered, highWaterMark: socket.writableHighWaterMark })
      const onClose = () => finish(Effect.fail(fail("Closed", `connection closed during flood after ${i} of ${count} lines`)))
      function pump(): void {
        while (!finished) {
          if (!writable()) return onClose()
          let chunk = ""
          while (i < count && chunk.length < FLOOD_BATCH_BYTES) chunk += makeLine(i++) + "\r\n"
          if (chunk === "") return finish(Effect.succeed(stats()))
          bytes += Buffer.byteLength(chunk)
          const last = i >= count
          // The last write resolves only once everything is handed to the kernel, so "done" means flushed.
          const ok = socket.write(chunk, last ? (error) => {
            if (error == null) finish(Effect.succeed(stats()))
            else onClose()
          } : undefined)
          maxBuffered = Math.max(maxBuffered, socket.writableLength)
          if (last) return
          if (!ok) {
            backpressureWaits++
            options.onBackpressure?.(i)
            socket.once("drain", pump)
            return
          }
        }
      }
      socket.once("close", onClose)
      pump()
      return Effect.sync(() => {
        finished = true
        socket.off("drain", pump)
        socket.off("close", onClose)
      })
    })

  const waitClosed = (timeout?: Duration.DurationInput) => {
    const d = timeoutOf(timeout)
    return withDeadline(
      Deferred.await(closed),
      d,
      () => fail("Timeout", `timed out after ${Duration.format(d)} waiting for the connection to close`)
    )
  }

  const reset = () => {
    try {
      // RST rather than FIN: the peer sees ECONNRESET, like a dropped route. Only a plain TCP handle can do this.
      raw.resetAndDestroy()
    } catch {
      raw.destroy()
    }
    socket.destroy()
  }

  const destroy = Effect.suspend(() => {
    if (!isClosed) reset()
    return Deferred.await(closed)
  })

  const close = (reason?: string) =>
    Effect.suspend(() => {
      if (isClosed) return Effect.void
      if (reason !== undefined && writable()) socket.write(`ERROR :${reason}\r\n`)
      socket.end()
      return waitClosed().pipe(
        Effect.catchAll(() => Effect.zipRight(Effect.sync(() => socket.destroy()), Deferred.await(closed)))
      )
    })

  const connection: FakeIrcConnection = {
    id,
    remotePort,
    expectNext,
    waitFor,
    send,
    register,
    flood,
    lines: Effect.sync(() => log.slice()),
    skipped: Effect.sync(() => skippedLog.slice()),
    setAutoPong: (enabled) =>
      Effect.sync(() => {
        autoPong = enabled
      }),
    isOpen: Effect.sync(() => !isClosed),
    waitClosed,
    close,
    destroy
  }
  return { connection, closed, socket }
}

/** `flood(conn, lines, makeLine)`: the benchmark's spelling of `conn.flood`. */
export const flood = (
  connection: FakeIrcConnection,
  lines: number,
  makeLine: (i: number) => string,
  options?: FloodOptions
): Effect.Effect<FloodStats, FakeIrcError> => connection.flood(lines, makeLine, options)
