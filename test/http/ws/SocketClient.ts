/**
 * A Node client of the browser WebSocket on the `ws` package, for tests: opens `/api/ws` with the headers a test
 * chooses (Origin, Cookie, Authorization), keeps every frame in arrival order, and records how the socket ended.
 * `refusal` opens and expects the HTTP answer that refuses the upgrade instead.
 *
 * Concurrency rule: the ws callbacks only push into unbounded queues; one fiber at a time reads a client's frames.
 */
import { Deferred, Duration, Effect, Option, Queue } from "effect"
import WebSocket from "ws"

export type Frame = Record<string, unknown> & { readonly type: string }

export interface SocketClient {
  readonly ws: WebSocket
  /** The next frame, within `timeout` (5 s). */
  readonly next: (timeout?: Duration.DurationInput) => Effect.Effect<Frame>
  /** Frames until one satisfies `pred` (inclusive); the skipped ones are returned too, in order. */
  readonly until: (pred: (f: Frame) => boolean, timeout?: Duration.DurationInput) => Effect.Effect<ReadonlyArray<Frame>>
  /** Sends a frame (an object is encoded as JSON). */
  readonly send: (frame: unknown) => Effect.Effect<void>
  /** Calls a tool and waits for its result (other frames meanwhile are kept for `next`). */
  readonly call: (name: string, args?: Record<string, unknown>) => Effect.Effect<Frame>
  /** How the socket ended: the close code and reason. */
  readonly closed: Effect.Effect<{ readonly code: number; readonly reason: string }>
  /** Whether the socket has closed yet. */
  readonly isClosed: Effect.Effect<boolean>
  readonly pings: Effect.Effect<number>
  readonly close: Effect.Effect<void>
}

const wsUrl = (url: string, query = "") => `${url.replace(/^http/, "ws")}/api/ws${query}`

const TIMEOUT = "5 seconds"

/** Opens a socket that the server must accept; the connection closes with the scope. */
export const connect = (
  url: string,
  options: { readonly headers?: Record<string, string>; readonly query?: string; readonly autoPong?: boolean } = {}
) =>
  Effect.gen(function*() {
    const frames = yield* Queue.unbounded<Frame>()
    const held: Array<Frame> = []
    const ended = yield* Deferred.make<{ readonly code: number; readonly reason: string }>()
    let pings = 0
    let callSeq = 0
    const ws = yield* Effect.acquireRelease(
      Effect.async<WebSocket, Error>((resume) => {
        const socket = new WebSocket(wsUrl(url, options.query), { headers: options.headers ?? {}, autoPong: options.autoPong ?? true })
        socket.on("message", (data) => frames.unsafeOffer(JSON.parse(data.toString()) as Frame))
        socket.on("ping", () => {
          pings++
        })
        socket.on("close", (code, reason) => Deferred.unsafeDone(ended, Effect.succeed({ code, reason: reason.toString() })))
        socket.once("open", () => resume(Effect.succeed(socket)))
        socket.once("unexpected-response", (_req, res) => resume(Effect.fail(new Error(`upgrade refused: ${res.statusCode}`))))
        socket.once("error", (e) => resume(Effect.fail(e)))
      }).pipe(Effect.orDie),
      (socket) => Effect.sync(() => socket.terminate())
    )

    const take = (timeout: Duration.DurationInput) =>
      Effect.suspend(() => {
        const kept = held.shift()
        return kept !== undefined
          ? Effect.succeed(kept)
          : Queue.take(frames).pipe(
            Effect.timeoutFail({ duration: timeout, onTimeout: () => new Error("no frame in time") }),
            Effect.orDie
          )
      })

    const until = (pred: (f: Frame) => boolean, timeout: Duration.DurationInput = TIMEOUT) =>
      Effect.gen(function*() {
        const seen: Array<Frame> = []
        for (;;) {
          const f = yield* Effect.catchAllDefect(take(timeout), () =>
            Effect.dieMessage(`no matching frame in time; saw ${JSON.stringify(seen).slice(0, 2000)}`))
          seen.push(f)
          if (pred(f)) return seen
        }
      })

    const send = (frame: unknown) =>
      Effect.sync(() => ws.send(typeof frame === "string" ? frame : JSON.stringify(frame)))

    const call = (name: string, args: Record<string, unknown> = {}) =>
      Effect.gen(function*() {
        const id = `c${++callSeq}`
        yield* send({ type: "call", id, name, arguments: args })
        const skipped: Array<Frame> = []
        for (;;) {
          const f = yield* take(TIMEOUT)
          if ((f.type === "result" || f.type === "error") && f.id === id) {
            held.unshift(...skipped)
            return f
          }
          skipped.push(f)
        }
      })

    return {
      ws,
      next: (timeout: Duration.DurationInput = TIMEOUT) => take(timeout),
      until,
      send,
      call,
      closed: Deferred.await(ended).pipe(
        Effect.timeoutFail({ duration: TIMEOUT, onTimeout: () => new Error("the socket did not close in time") }),
        Effect.orDie
      ),
      isClosed: Deferred.isDone(ended),
      pings: Effect.sync(() => pings),
      close: Effect.sync(() => ws.close())
    } satisfies SocketClient
  })

/** Opens a socket the server must refuse before the upgrade; returns the HTTP status and body. */
export const refusal = (url: string, options: { readonly headers?: Record<string, string>; readonly query?: string } = {}) =>
  Effect.async<{ readonly status: number; readonly body: string }, Error>((resume) => {
    const socket = new WebSocket(wsUrl(url, options.query), { headers: options.headers ?? {} })
    socket.once("open", () => {
      socket.terminate()
      resume(Effect.fail(new Error("the upgrade was accepted")))
    })
    socket.once("unexpected-response", (_req, res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() })))
    })
    socket.once("error", (e) => resume(Effect.fail(e)))
  }).pipe(Effect.orDie)

/** The first frame of type `type` among `frames`, if any. */
export const frameOf = (frames: ReadonlyArray<Frame>, type: string): Option.Option<Frame> =>
  Option.fromNullable(frames.find((f) => f.type === type))
