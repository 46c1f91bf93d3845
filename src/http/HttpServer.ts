/**
 * HttpServer owns the HTTP listener: one `node:http` server whose requests are routed
 * by method and path (Router: find-my-way, path parameters allowed) to Effect handlers,
 * each run as its own fiber on the application runtime (so logging, config and services
 * are the app's).
 *
 * Why not @effect/platform's HttpServer/HttpRouter on the hot path: measured on this
 * machine it answers at ~0.1× a bare node:http server, and /mcp must answer at
 * ≥ 0.5× of one (docs/decisions/http-and-mcp.md). Here a request costs at most one fiber; bodies are read once, bounded, as a Buffer —
 * a small one before the fiber starts (HTTP_PREREAD_BODY_BYTES), so that an answer from memory never suspends — or,
 * for an upload, pulled as a stream as the handler writes it away (`bodyStream`).
 * @effect/platform-node still provides the runtime (signals, main) around it.
 *
 * A request to take the connection over (`Upgrade: websocket`, RFC 6455 §4.1) goes to the
 * `HttpUpgrades` route of its path, if the graph provides one (the browser WebSocket,
 * src/http/ws/), else it is answered 404 and closed.
 *
 * Hostile clients (docs/decisions/http-and-mcp.md "Slow and abandoned connections"): every phase of a connection has a bound
 * (HttpLimits) — headers, the whole request, the body as read by a handler, the idle time between requests and on a
 * socket, the header size and the number of open connections — so a client that trickles bytes, stops half-way or
 * opens sockets and leaves them cannot hold the server's memory or sockets for long.
 *
 * Concurrency: handlers run concurrently, one fiber per request. When the layer's scope
 * closes (SIGTERM) the connections taken over are closed first, the listener stops
 * accepting, and the requests in flight get HTTP_DRAIN to finish before what is left is
 * interrupted (docs/decisions/several-nodes.md "Shutdown").
 */
import * as Http from "node:http"
import type { Duplex } from "node:stream"
import { Context, Duration, Effect, Either, Exit, Fiber, Layer, Option, Runtime, Stream } from "effect"
import { AppConfig } from "../services/AppConfig.js"
import { Metrics } from "../services/upkeep/Metrics.js"
import {
  BodyReadFailed,
  BodyTimedOut,
  BodyTooLarge,
  type Handler,
  type HttpRequest,
  type HttpResponse,
  type Route
} from "./Route.js"
import { attempt, valueNow } from "./Immediate.js"
import { makeRouter } from "./Router.js"
import { HttpLimits, type HttpLimitsSettings, streamDeadlineMs } from "./HttpLimits.js"

export { BodyReadFailed, BodyTimedOut, BodyTooLarge }
export type { Handler, HttpRequest, HttpResponse, Route }

/** The routes every feature contributes; assembled once in main.ts. */
export class HttpRoutes extends Context.Tag("belay/HttpRoutes")<HttpRoutes, ReadonlyArray<Route>>() {}

/**
 * A path whose requests take the connection over. `handle` judges the request (it may answer it with a plain HTTP
 * response on `socket`) and owns `socket` from then on; it runs as its own fiber.
 */
export interface UpgradeRoute {
  readonly path: string
  readonly handle: (request: HttpRequest, raw: Http.IncomingMessage, socket: Duplex, head: Buffer) => Effect.Effect<void>
}

export interface HttpUpgradesService {
  readonly routes: ReadonlyArray<UpgradeRoute>
  /** Closes every connection taken over, before the listener closes. */
  readonly closeAll: Effect.Effect<void>
}

export class HttpUpgrades extends Context.Tag("belay/HttpUpgrades")<HttpUpgrades, HttpUpgradesService>() {}

/** The address the server actually listens on (PORT=0 picks a free one). */
export class HttpAddress extends Context.Tag("belay/HttpAddress")<HttpAddress, { readonly host: string; readonly port: number; readonly url: string }>() {}

export const json = (status: number, value: unknown, headers?: Readonly<Record<string, string>>): HttpResponse => ({
  status,
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify(value)
})

export const text = (status: number, value: string, contentType = "text/plain; charset=utf-8"): HttpResponse => ({
  status,
  headers: { "content-type": contentType },
  body: value
})

type BodyOutcome = Effect.Effect<Buffer, BodyTooLarge | BodyReadFailed | BodyTimedOut>

/**
 * Requests whose body did not arrive in time: their answer closes the connection, since the client is still sending
 * (or stalled) and what it sends next is not a request. An answer before a body that is merely too large (413) keeps
 * the connection and lets node drain the rest (bounded by the request timeout), so the client, still writing, is not
 * cut off before it can read the answer.
 */
const timedOutBodies = new WeakSet<Http.IncomingMessage>()

type BodyError = BodyTooLarge | BodyReadFailed | BodyTimedOut
type BodyResult = Either.Either<Buffer, BodyError>

/**
 * Whether every byte `req` declares has been parsed: `alreadyRead` of them taken, the rest in its buffer. Node sets
 * `req.complete` a tick after the bytes are there, so this looks at the bytes; a request already read to its end by
 * someone else (no `end` again) does not count.
 */
const declaredBytesAtHand = (req: Http.IncomingMessage, declared: number, alreadyRead: number): boolean =>
  Number.isFinite(declared) && !req.readableEnded && alreadyRead + req.readableLength >= declared

/**
 * Reads the whole body of `req`, at most `limit` bytes, within `deadlineMs`; `done` is called once with the outcome.
 * Returns what stops the read early (the handler was interrupted).
 */
const collectBody = (
  req: Http.IncomingMessage,
  limit: number,
  deadlineMs: number,
  done: (result: BodyResult) => void
): () => void => {
  const declared = Number(req.headers["content-length"])
  if (Number.isFinite(declared) && declared > limit) {
    req.resume()
    done(Either.left(new BodyTooLarge({ limit })))
    return () => undefined
  }
  const chunks: Array<Buffer> = []
  let size = 0
  let finished = false
  let deadline: ReturnType<typeof setTimeout> | undefined
  const finish = (result: BodyResult) => {
    finished = true
    if (deadline !== undefined) clearTimeout(deadline)
    done(result)
  }
  const onData = (chunk: Buffer) => {
    if (finished) return
    size += chunk.length
    if (size > limit) {
      req.resume()
      finish(Either.left(new BodyTooLarge({ limit })))
      return
    }
    chunks.push(chunk)
  }
  const onEnd = () => {
    if (finished) return
    finish(Either.right(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)))
  }
  const onError = (cause: unknown) => {
    if (finished) return
    finish(Either.left(new BodyReadFailed({ cause })))
  }
  // A request torn down without an error event still ends the read.
  const onClose = () => {
    if (finished) return
    finish(Either.left(new BodyReadFailed({ cause: "closed" })))
  }
  const onDeadline = () => {
    if (finished) return
    chunks.length = 0
    timedOutBodies.add(req)
    finish(Either.left(new BodyTimedOut({ afterMs: deadlineMs })))
  }
  // The deadline is armed only for a body still on its way once the bytes at hand are parsed. A small request arrives
  // whole in one read: by the next tick node's parser has handed over every byte its Content-Length declares (read or
  // still buffered in the request), its end follows, and a timer made and cleared for each such request was a visible
  // share of an answer from memory. A body without a declared length, or already read to its end by someone else
  // (no `end` again), keeps its deadline.
  process.nextTick(() => {
    if (finished) return
    const whole = declaredBytesAtHand(req, declared, size)
    if (!whole) deadline = setTimeout(onDeadline, deadlineMs)
  })
  req.on("data", onData)
  req.on("end", onEnd)
  req.on("error", onError)
  req.on("close", onClose)
  return () => {
    finished = true
    if (deadline !== undefined) clearTimeout(deadline)
    req.off("data", onData)
    req.off("end", onEnd)
    req.off("error", onError)
    req.off("close", onClose)
  }
}

const readBody = (req: Http.IncomingMessage, limit: number, deadlineMs: number): BodyOutcome =>
  Effect.async<Buffer, BodyError>((resume) => {
    const stop = collectBody(req, limit, deadlineMs, (result) => resume(result))
    return Effect.sync(stop)
  })

/**
 * Bodies that declare a length up to this are read before the handler's fiber starts, so that a request whose answer
 * needs nothing asynchronous (an MCP call answered from memory) runs start to finish without suspending: the
 * suspension and resumption through Effect's scheduler was a measured share of a tools/list request. Larger bodies,
 * and bodies without a declared length, are read when the handler asks, after it has judged the request. The bound
 * keeps what unauthenticated clients can make the server hold at 64 KiB a connection (HTTP_MAX_CONNECTIONS of them);
 * an MCP request is a few hundred bytes.
 */
export const HTTP_PREREAD_BODY_BYTES = 64 * 1024

/**
 * Reads the body of a request that declared at most HTTP_PREREAD_BODY_BYTES; `done` is called once with the outcome.
 * A request that arrived whole with its head (an MCP call: a few hundred bytes in one packet) has been parsed into the
 * request's own buffer by the time node's parser returns from the packet, so on the next tick it is taken with one
 * `read()`: no listeners, no switch to flowing mode and no `data` and `end` events to run, which were a measured share
 * of an answer from memory. A body still on its way, or one someone else began reading, is collected by `collectBody`
 * with its deadline. Nothing else runs in between: ticks run before the next I/O callback.
 */
const prereadBody = (req: Http.IncomingMessage, deadlineMs: number, done: (result: BodyResult, takenWhole: boolean) => void) => {
  const declared = Number(req.headers["content-length"])
  process.nextTick(() => {
    const whole = !req.destroyed && req.readableFlowing === null && declaredBytesAtHand(req, declared, 0)
    const body: unknown = whole ? req.read() : null
    if (Buffer.isBuffer(body)) done(Either.right(body), true)
    else collectBody(req, HTTP_PREREAD_BODY_BYTES, deadlineMs, (result) => done(result, false))
  })
}

/** Whether `req` declares a body small enough to read before its handler runs. */
const preread = (req: Http.IncomingMessage): boolean => {
  const declared = req.headers["content-length"]
  if (declared === undefined) return false
  const length = Number(declared)
  return Number.isFinite(length) && length > 0 && length <= HTTP_PREREAD_BODY_BYTES
}

/**
 * A request as handlers see it. A class rather than an object of closures: one is made for every request, and its
 * methods are shared on the prototype.
 */
class NodeRequest implements HttpRequest {
  readonly method: string
  readonly remoteAddress: string
  #query: URLSearchParams | undefined
  constructor(
    private readonly req: Http.IncomingMessage,
    readonly path: string,
    readonly params: Readonly<Record<string, string>>,
    private readonly limits: HttpLimitsSettings,
    /** The body as read before the handler started (HTTP_PREREAD_BODY_BYTES), if it was. */
    private readonly prefetched?: BodyResult
  ) {
    this.method = req.method ?? "GET"
    this.remoteAddress = req.socket.remoteAddress ?? ""
  }
  get headers(): Http.IncomingHttpHeaders {
    return this.req.headers
  }
  // Parsed on first use: /mcp never looks at its query string.
  get query(): URLSearchParams {
    if (this.#query === undefined) {
      const rawUrl = this.req.url ?? "/"
      const q = rawUrl.indexOf("?")
      this.#query = new URLSearchParams(q === -1 ? "" : rawUrl.slice(q + 1))
    }
    return this.#query
  }
  body(limit: number): BodyOutcome {
    const read = this.prefetched
    if (read === undefined) return readBody(this.req, limit, this.limits.bodyTimeoutMs)
    if (Either.isLeft(read)) return Effect.fail(read.left)
    return read.right.length > limit ? Effect.fail(new BodyTooLarge({ limit })) : Effect.succeed(read.right)
  }
  bodyStream(limit: number): Stream.Stream<Uint8Array, BodyTooLarge | BodyReadFailed | BodyTimedOut> {
    const read = this.prefetched
    if (read !== undefined) {
      if (Either.isLeft(read)) return Stream.fail(read.left)
      return read.right.length > limit ? Stream.fail(new BodyTooLarge({ limit })) : Stream.succeed(read.right)
    }
    const req = this.req
    const declared = Number(req.headers["content-length"])
    if (Number.isFinite(declared) && declared > limit) {
      req.resume()
      return Stream.fail(new BodyTooLarge({ limit }))
    }
    let size = 0
    const deadline = Effect.sleep(Duration.millis(streamDeadlineMs(this.limits, limit))).pipe(
      Effect.zipRight(Effect.sync(() => timedOutBodies.add(req))),
      Effect.zipRight(Effect.fail(new BodyTimedOut({ afterMs: streamDeadlineMs(this.limits, limit) })))
    )
    // Not destroyed when the consumer stops early: the rest is drained, so the client can still read the answer.
    return Stream.fromAsyncIterable(
      req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>,
      (cause) => new BodyReadFailed({ cause })
    ).pipe(
      Stream.mapEffect((chunk) => {
        size += chunk.length
        return size > limit ? Effect.fail(new BodyTooLarge({ limit })) : Effect.succeed(chunk as Uint8Array)
      }),
      Stream.interruptWhen(deadline),
      Stream.ensuring(Effect.sync(() => {
        if (!req.readableEnded) req.resume()
      }))
    )
  }
  header(name: string) {
    const v = this.req.headers[name]
    return Array.isArray(v) ? v.join(", ") : v
  }
  get connection(): object {
    return this.req.socket
  }
}

const makeRequest = (
  req: Http.IncomingMessage,
  path: string,
  params: Readonly<Record<string, string>>,
  limits: HttpLimitsSettings,
  prefetched?: BodyResult
): HttpRequest => new NodeRequest(req, path, params, limits, prefetched)

type BodyPart = string | Buffer

/** A response body as the parts to write, in order. */
const bodyParts = (body: HttpResponse["body"]): ReadonlyArray<BodyPart> =>
  body === undefined ? [] : typeof body === "string" || Buffer.isBuffer(body) ? [body] : body

/** What a part weighs on the wire: a string part is written as UTF-8. */
const partLength = (part: BodyPart): number => (typeof part === "string" ? Buffer.byteLength(part) : part.length)

/**
 * The most of an unread body drained so that the connection stays for the answer: the largest JSON body a route takes
 * (an /mcp request, MCP_BODY_LIMIT_BYTES), which any client may send anyway; an upload refused before its body closes.
 */
export const HTTP_DRAIN_BODY_BYTES = 1024 * 1024

const drainable = (req: Http.IncomingMessage): boolean => {
  const declared = Number(req.headers["content-length"])
  return !timedOutBodies.has(req) && Number.isFinite(declared) && declared <= HTTP_DRAIN_BODY_BYTES
}

/**
 * Whether some of `req`'s body may still be on its way. A request without one (a GET) is not `complete` until node's
 * parser returns from the handler, so a handler that answers at once (Immediate.ts) would otherwise see it unfinished;
 * nor is one whose whole body `prereadBody` took (`bodyTaken`).
 */
const bodyPending = (req: Http.IncomingMessage, bodyTaken: boolean): boolean => {
  if (req.complete || bodyTaken) return false
  if (req.headers["transfer-encoding"] !== undefined) return true
  const declared = req.headers["content-length"]
  return declared !== undefined && declared !== "0"
}

const send = (
  req: Http.IncomingMessage,
  res: Http.ServerResponse,
  response: HttpResponse,
  drainMs: number,
  bodyTaken = false
) => {
  if (res.headersSent) return
  const parts = bodyParts(response.body)
  let length = 0
  for (const part of parts) length += partLength(part)
  // Copied with Object.assign, not `{ ...response.headers }`: on Node 20 (V8 11.3) an object made by spread and then
  // given a key its source lacks leaves about 45 bytes per object that outlive two scavenges, so every answer grew
  // the old generation and, under load, the work of each scavenge with it (docs/architecture.md "Memory").
  const headers: Record<string, string | number> = Object.assign({}, response.headers)
  headers["content-length"] = length
  // A body answered before it was read (a 401 before a 1 MiB /mcp body, a 404): one that declares at most
  // HTTP_DRAIN_BODY_BYTES is drained like one after a 413, so a client still writing reads the answer instead of
  // EPIPE (RFC 9112 §9.6: closing at once can lose the answer to a reset). Larger, undeclared or cut by its deadline:
  // the connection ends with the answer, so node's request bound (set for the longest upload) never ends a trickle.
  const pending = bodyPending(req, bodyTaken)
  if (pending && req.readableFlowing !== true && drainable(req)) req.resume()
  if (timedOutBodies.has(req) || (pending && req.readableFlowing !== true)) headers["connection"] = "close"
  else if (pending) {
    setTimeout(() => {
      if (!req.complete) req.socket.destroy()
    }, drainMs).unref()
  }
  res.writeHead(response.status, headers)
  // node:http sends a first write that is a string in one chunk with the status line and headers (OutgoingMessage
  // `_send`), a Buffer as a chunk of its own beside them: a string body, or a string first part, spares the socket
  // write one chunk, and the part its own Buffer.
  if (parts.length === 1) {
    res.end(parts[0])
    return
  }
  // Corked, the head and every part leave in one writev (node:stream), as a single buffer would.
  res.cork()
  for (const part of parts) res.write(part)
  res.end()
}

/**
 * A streamed answer (HttpResponse `stream`): each chunk is written once the socket took the one before, so the
 * producer never runs ahead of the client. A client that goes away interrupts the handler's fiber (`handle`), which
 * ends the wait for `drain`.
 */
const sendStream = (res: Http.ServerResponse, response: HttpResponse, stream: NonNullable<HttpResponse["stream"]>) =>
  Effect.gen(function*() {
    res.writeHead(response.status, Object.assign({}, response.headers))
    yield* Stream.runForEach(stream, (chunk) =>
      Effect.async<void>((resume) => {
        if (res.write(chunk)) return resume(Effect.void)
        const onDrain = () => resume(Effect.void)
        res.once("drain", onDrain)
        return Effect.sync(() => res.off("drain", onDrain))
      }))
    yield* Effect.async<void>((resume) => {
      res.end(() => resume(Effect.void))
    })
  }).pipe(
    Effect.catchAllCause((cause) =>
      Effect.zipRight(Effect.logWarning("a streamed answer failed; connection cut", cause), Effect.sync(() => res.destroy()))
    )
  )

/** A plain HTTP response on a connection that asked to be upgraded, then closed (RFC 6455 §4.2.2). */
export const refuseUpgrade = (socket: Duplex, response: HttpResponse): void => {
  if (socket.destroyed) return
  const body = Buffer.concat(bodyParts(response.body).map((part) => (typeof part === "string" ? Buffer.from(part) : part)))
  const head = [`HTTP/1.1 ${response.status} ${Http.STATUS_CODES[response.status] ?? ""}`]
  for (const [name, value] of Object.entries(response.headers ?? {})) head.push(`${name}: ${value}`)
  head.push(`content-length: ${body.length}`, "connection: close", "", "")
  socket.end(Buffer.concat([Buffer.from(head.join("\r\n")), body]))
}

const notFound = json(404, { error: "not_found" })

/**
 * How long the requests in flight at shutdown may take to finish (docs/decisions/several-nodes.md "Shutdown"): a tool call
 * answers in milliseconds, and the process has 5 s in all, of which the network actors still need theirs to QUIT
 * and flush the history after this.
 */
export const HTTP_DRAIN: Duration.Duration = Duration.millis(1500)

/** Listens on HOST:PORT and serves `HttpRoutes`; on scope close, stops listening and drains (HTTP_DRAIN). */
export const HttpServerLive = Layer.scoped(
  HttpAddress,
  Effect.gen(function*() {
    const config = yield* AppConfig
    const routes = yield* HttpRoutes
    const metrics = yield* Metrics
    const runtime = yield* Effect.runtime<never>()
    const runFork = Runtime.runFork(runtime)

    const router = makeRouter(routes)
    const upgrades = yield* Effect.serviceOption(HttpUpgrades)

    const inflight = new Set<Fiber.RuntimeFiber<void>>()

    const limits = yield* HttpLimits

    const server = Http.createServer({
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      // The longest request is an upload of the largest file at the floor rate (HttpLimitsSettings.requestTimeoutMs).
      // Five seconds past it, so that the body reader's own deadline, not node's, ends a slow upload (with its answer).
      requestTimeout: Math.max(limits.requestTimeoutMs, streamDeadlineMs(limits, config.uploadMaxBytes) + 5_000),
      connectionsCheckingInterval: limits.checkIntervalMs,
      maxHeaderSize: limits.maxHeaderBytes
    }, (req, res) => {
      const started = performance.now()
      const rawUrl = req.url ?? "/"
      const q = rawUrl.indexOf("?")
      const path = q === -1 ? rawUrl : rawUrl.slice(0, q)
      const matched = router.match(req.method ?? "GET", path)
      if (matched._tag !== "Found") {
        const response = matched._tag === "MethodNotAllowed"
          ? json(405, { error: "method_not_allowed" }, { allow: matched.allow.join(", ") })
          : notFound
        send(req, res, response, limits.bodyTimeoutMs)
        // Never the raw path as a label: with path parameters a client could mint labels at will.
        metrics.observeHttp("unmatched", response.status, (performance.now() - started) / 1000)
        return
      }
      const route = matched.route
      if (preread(req)) {
        prereadBody(req, limits.bodyTimeoutMs, (body, takenWhole) =>
          handle(req, res, route, makeRequest(req, path, matched.params, limits, body), started, takenWhole))
      } else {
        handle(req, res, route, makeRequest(req, path, matched.params, limits), started, false)
      }
    })

    /**
     * Sends `route`'s answer: at once if its handler gave a successful Exit (Immediate.ts), else from its own fiber.
     * `bodyTaken`: the request's whole body was read before its handler ran (`prereadBody`).
     */
    const handle = (req: Http.IncomingMessage, res: Http.ServerResponse, route: Route, request: HttpRequest, started: number, bodyTaken: boolean) => {
      const handled = attempt(() => route.handler(request))
      // No fiber for an answer that needed nothing asynchronous: creating, running and ending one was most of the Effect
      // runtime's share of a tools/list (docs/decisions/http-and-mcp.md "Answers from memory are sent without a fiber").
      const now = valueNow(handled)
      if (now !== undefined && now.stream === undefined) {
        send(req, res, now, limits.bodyTimeoutMs, bodyTaken)
        return metrics.observeHttp(route.name ?? route.path, now.status, (performance.now() - started) / 1000)
      }
      const fiber = runFork(
        handled.pipe(
          Effect.catchAllCause((cause) =>
            Effect.logError("request failed", cause).pipe(
              Effect.as(json(500, { error: "server_error", error_description: "internal error" }))
            )
          ),
          Effect.flatMap((response) => {
            const observe = Effect.sync(() =>
              metrics.observeHttp(route.name ?? route.path, response.status, (performance.now() - started) / 1000)
            )
            if (response.stream !== undefined) return Effect.zipRight(sendStream(res, response, response.stream), observe)
            send(req, res, response, limits.bodyTimeoutMs, bodyTaken)
            return observe
          })
        )
      )
      const settle = (exit: Exit.Exit<void>) => {
        if (Exit.isFailure(exit) && !res.headersSent) {
          send(req, res, json(503, { error: "shutting_down" }), limits.bodyTimeoutMs, bodyTaken)
        }
      }
      // A fiber that finished in its first run: nothing to drain or interrupt, so it is not tracked.
      // Tracking it anyway added to and deleted from a long-lived Set on every request, and V8 allocates the new
      // table of a Set that lives in the old generation there too: under load, megabytes a second of old-generation
      // garbage, and a full collection every few seconds (docs/architecture.md "Memory").
      const done = fiber.unsafePoll()
      if (done !== null) return settle(done)
      inflight.add(fiber)
      fiber.addObserver((exit) => {
        inflight.delete(fiber)
        settle(exit)
      })
      // A client that goes away mid-request stops its handler.
      res.on("close", () => {
        if (!res.writableFinished) fiber.unsafeInterruptAsFork(fiber.id())
      })
    }

    // Sockets past the bound are closed by node as soon as accepted. The idle timeout destroys a socket on which
    // nothing moved either way (node's server does so on "timeout" when no listener of ours claims it).
    server.maxConnections = limits.maxConnections
    server.timeout = limits.idleSocketTimeoutMs

    server.on("upgrade", (req: Http.IncomingMessage, socket: Duplex, head: Buffer) => {
      const rawUrl = req.url ?? "/"
      const q = rawUrl.indexOf("?")
      const path = q === -1 ? rawUrl : rawUrl.slice(0, q)
      const route = Option.isSome(upgrades) ? upgrades.value.routes.find((r) => r.path === path) : undefined
      socket.on("error", () => socket.destroy())
      if (route === undefined) {
        refuseUpgrade(socket, notFound)
        return
      }
      const fiber = runFork(
        route.handle(makeRequest(req, path, {}, limits), req, socket, head).pipe(
          Effect.catchAllCause((cause) =>
            Effect.zipRight(
              Effect.logError("upgrade failed", cause),
              Effect.sync(() => refuseUpgrade(socket, json(500, { error: "server_error", error_description: "internal error" })))
            )
          )
        )
      )
      inflight.add(fiber)
      fiber.addObserver(() => inflight.delete(fiber))
    })

    yield* Effect.async<void, Error>((resume) => {
      server.once("error", (e) => resume(Effect.fail(e)))
      server.listen(config.port, config.host, () => resume(Effect.void))
    }).pipe(Effect.mapError((e) => new Error(`cannot listen on ${config.host}:${config.port}: ${e.message}`)), Effect.orDie)

    const address = server.address()
    const port = typeof address === "object" && address ? address.port : config.port
    const hostForUrl = config.host.includes(":") ? `[${config.host}]` : config.host
    yield* Effect.logInfo("http listening").pipe(Effect.annotateLogs({ host: config.host, port }))

    /** Every request in flight has finished, those begun meanwhile on open keep-alive connections included. */
    const drained: Effect.Effect<void> = Effect.suspend(() =>
      inflight.size === 0 ? Effect.void : Effect.zipRight(Fiber.awaitAll([...inflight]), drained)
    )

    // Shutdown: stop accepting, let what is in flight finish within HTTP_DRAIN (an MCP call cut short would leave
    // its caller not knowing whether it was done), then interrupt the rest, which answer 503 shutting_down.
    // Finalizers run uninterruptibly and a timeout cannot cut short what it cannot interrupt: hence `interruptible`.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        if (Option.isSome(upgrades)) yield* upgrades.value.closeAll
        server.close()
        server.closeIdleConnections()
        if (inflight.size > 0) {
          yield* Effect.logInfo("http closing; letting the requests in flight finish").pipe(
            Effect.annotateLogs({ inflight: inflight.size, boundMs: Duration.toMillis(HTTP_DRAIN) })
          )
        }
        const finished = yield* drained.pipe(Effect.interruptible, Effect.timeout(HTTP_DRAIN), Effect.option)
        if (Option.isNone(finished)) {
          yield* Effect.logWarning("requests still running at the shutdown bound are interrupted").pipe(
            Effect.annotateLogs({ inflight: inflight.size, boundMs: Duration.toMillis(HTTP_DRAIN) })
          )
          yield* Fiber.interruptAll(inflight).pipe(Effect.interruptible, Effect.timeout("500 millis"), Effect.ignore)
        }
        yield* Effect.logInfo("http closed")
      }).pipe(Effect.ensuring(Effect.sync(() => server.closeAllConnections())))
    )
    return { host: config.host, port, url: `http://${hostForUrl}:${port}` }
  })
)

