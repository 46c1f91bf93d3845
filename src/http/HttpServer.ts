/**
 * HttpServer owns the HTTP listener: one `node:http` server whose requests are routed
 * by method and path (Router: find-my-way, path parameters allowed) to Effect handlers,
 * each run as its own fiber on the application runtime (so logging, config and services
 * are the app's).
 *
 * Why not @effect/platform's HttpServer/HttpRouter on the hot path: measured on this
 * machine it answers at ~0.1× a bare node:http server, and /mcp must answer at
 * ≥ 0.5× of one (docs/decisions.md). Here a request costs one fiber; bodies are read once, bounded, as a Buffer.
 * @effect/platform-node still provides the runtime (signals, main) around it.
 *
 * A request to take the connection over (`Upgrade: websocket`, RFC 6455 §4.1) goes to the
 * `HttpUpgrades` route of its path, if the graph provides one (the browser WebSocket,
 * src/http/ws/), else it is answered 404 and closed.
 *
 * Concurrency: handlers run concurrently, one fiber per request. When the layer's scope
 * closes (SIGTERM) the connections taken over are closed first, the listener stops
 * accepting, and the requests in flight get HTTP_DRAIN to finish before what is left is
 * interrupted (docs/decisions.md "Shutdown").
 */
import * as Http from "node:http"
import type { Duplex } from "node:stream"
import { Context, Data, Duration, Effect, Exit, Fiber, Layer, Option, Runtime } from "effect"
import { AppConfig } from "../services/AppConfig.js"
import { Metrics } from "../services/Metrics.js"
import { makeRouter } from "./Router.js"

export class BodyTooLarge extends Data.TaggedError("BodyTooLarge")<{ readonly limit: number }> {}
export class BodyReadFailed extends Data.TaggedError("BodyReadFailed")<{ readonly cause: unknown }> {}

export interface HttpRequest {
  readonly method: string
  readonly path: string
  /** Path parameters of the matched route (`:id` → `params.id`), percent-decoded. */
  readonly params: Readonly<Record<string, string>>
  readonly query: URLSearchParams
  readonly headers: Http.IncomingHttpHeaders
  /** The TCP peer; the forwarded client address is resolved by ClientIp when trusted. */
  readonly remoteAddress: string
  /** Reads the whole body; call it once per request. Fails with BodyTooLarge past `limit` bytes. */
  readonly body: (limit: number) => Effect.Effect<Buffer, BodyTooLarge | BodyReadFailed>
  readonly header: (name: string) => string | undefined
}

export interface HttpResponse {
  readonly status: number
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string | Buffer
}

export type Handler = (request: HttpRequest) => Effect.Effect<HttpResponse>

export interface Route {
  readonly method: "GET" | "POST" | "DELETE" | "PUT" | "PATCH" | "OPTIONS"
  /** find-my-way syntax: `/settings/passkeys/:id/remove`. */
  readonly path: string
  /** Label for metrics; defaults to the path. */
  readonly name?: string
  readonly handler: Handler
}

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

const readBody = (req: Http.IncomingMessage, limit: number) =>
  Effect.async<Buffer, BodyTooLarge | BodyReadFailed>((resume) => {
    const declared = Number(req.headers["content-length"])
    if (Number.isFinite(declared) && declared > limit) {
      req.resume()
      resume(Effect.fail(new BodyTooLarge({ limit })))
      return
    }
    const chunks: Array<Buffer> = []
    let size = 0
    let done = false
    const onData = (chunk: Buffer) => {
      if (done) return
      size += chunk.length
      if (size > limit) {
        done = true
        req.resume()
        resume(Effect.fail(new BodyTooLarge({ limit })))
        return
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      if (done) return
      done = true
      resume(Effect.succeed(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)))
    }
    const onError = (cause: unknown) => {
      if (done) return
      done = true
      resume(Effect.fail(new BodyReadFailed({ cause })))
    }
    req.on("data", onData)
    req.on("end", onEnd)
    req.on("error", onError)
    return Effect.sync(() => {
      req.off("data", onData)
      req.off("end", onEnd)
      req.off("error", onError)
    })
  })

const makeRequest = (req: Http.IncomingMessage, path: string, params: Readonly<Record<string, string>>): HttpRequest => {
  const rawUrl = req.url ?? "/"
  const q = rawUrl.indexOf("?")
  let query: URLSearchParams | undefined
  return {
    method: req.method ?? "GET",
    path,
    params,
    // Parsed on first use: /mcp never looks at its query string.
    get query() {
      return (query ??= new URLSearchParams(q === -1 ? "" : rawUrl.slice(q + 1)))
    },
    headers: req.headers,
    remoteAddress: req.socket.remoteAddress ?? "",
    body: (limit) => readBody(req, limit),
    header: (name) => {
      const v = req.headers[name]
      return Array.isArray(v) ? v.join(", ") : v
    }
  }
}

const send = (res: Http.ServerResponse, response: HttpResponse) => {
  if (res.headersSent) return
  // Encode once: the length header and the write use the same bytes.
  const body = typeof response.body === "string" ? Buffer.from(response.body) : response.body ?? EMPTY
  const headers: Record<string, string | number> = { ...response.headers }
  headers["content-length"] = body.length
  res.writeHead(response.status, headers)
  res.end(body)
}

const EMPTY = Buffer.alloc(0)

/** A plain HTTP response on a connection that asked to be upgraded, then closed (RFC 6455 §4.2.2). */
export const refuseUpgrade = (socket: Duplex, response: HttpResponse): void => {
  if (socket.destroyed) return
  const body = typeof response.body === "string" ? Buffer.from(response.body) : response.body ?? EMPTY
  const head = [`HTTP/1.1 ${response.status} ${Http.STATUS_CODES[response.status] ?? ""}`]
  for (const [name, value] of Object.entries(response.headers ?? {})) head.push(`${name}: ${value}`)
  head.push(`content-length: ${body.length}`, "connection: close", "", "")
  socket.end(Buffer.concat([Buffer.from(head.join("\r\n")), body]))
}

const notFound = json(404, { error: "not_found" })

/**
 * How long the requests in flight at shutdown may take to finish (docs/decisions.md "Shutdown"): a tool call
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

    const server = Http.createServer({ keepAliveTimeout: 5_000 }, (req, res) => {
      const started = performance.now()
      const rawUrl = req.url ?? "/"
      const q = rawUrl.indexOf("?")
      const path = q === -1 ? rawUrl : rawUrl.slice(0, q)
      const matched = router.match(req.method ?? "GET", path)
      if (matched._tag !== "Found") {
        const response = matched._tag === "MethodNotAllowed"
          ? json(405, { error: "method_not_allowed" }, { allow: matched.allow.join(", ") })
          : notFound
        send(res, response)
        // Never the raw path as a label: with path parameters a client could mint labels at will.
        metrics.observeHttp("unmatched", response.status, (performance.now() - started) / 1000)
        return
      }
      const route = matched.route
      const request = makeRequest(req, path, matched.params)
      const fiber = runFork(
        route.handler(request).pipe(
          Effect.catchAllCause((cause) =>
            Effect.logError("request failed", cause).pipe(
              Effect.as(json(500, { error: "server_error", error_description: "internal error" }))
            )
          ),
          Effect.map((response) => {
            send(res, response)
            metrics.observeHttp(route.name ?? route.path, response.status, (performance.now() - started) / 1000)
          })
        )
      )
      inflight.add(fiber)
      fiber.addObserver((exit) => {
        inflight.delete(fiber)
        if (Exit.isFailure(exit) && !res.headersSent) send(res, json(503, { error: "shutting_down" }))
      })
      // A client that goes away mid-request stops its handler.
      res.on("close", () => {
        if (!res.writableFinished) fiber.unsafeInterruptAsFork(fiber.id())
      })
    })

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
        route.handle(makeRequest(req, path, {}), req, socket, head).pipe(
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

