/**
 * Slow and abandoned connections against the real node:http listener (docs/decisions/http-and-mcp.md "Slow and abandoned
 * connections"), over real sockets: headers trickled a byte at a time, a body trickled or stopped half-way, a request
 * that stops in the middle of its headers, hundreds of sockets opened and left, a header block over the bound and more
 * connections than allowed. The bounds are shrunk through the HttpLimits layer so that the test waits well under a
 * second for each; what is asserted is only that the server closed the connection (with the answer it gave) and that
 * a normal request was answered meanwhile, never how long anything took.
 */
import * as Net from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, FiberRef, Layer, LogLevel, Stream } from "effect"
import {
  BodyTimedOut,
  HttpAddress,
  HTTP_DRAIN_BODY_BYTES,
  HTTP_PREREAD_BODY_BYTES,
  HttpRoutes,
  HttpServerLive,
  json,
  type Route
} from "../../src/http/HttpServer.js"
import { HttpLimits, type HttpLimitsSettings } from "../../src/http/HttpLimits.js"
import { appConfigFromMap } from "../../src/services/AppConfig.js"
import { Metrics } from "../../src/services/upkeep/Metrics.js"

/** Small bounds: every phase ends within a second, checked every 50 ms. */
const SMALL: HttpLimitsSettings = {
  headersTimeoutMs: 400,
  requestTimeoutMs: 900,
  bodyTimeoutMs: 500,
  // A streamed body of STREAM_LIMIT bytes has 500 ms + 500 ms.
  streamFloorBytesPerSecond: 160 * 1024,
  keepAliveTimeoutMs: 300,
  idleSocketTimeoutMs: 2_000,
  checkIntervalMs: 50,
  maxHeaderBytes: 2_048,
  maxConnections: 1_000
}

/**
 * The streamed route's limit, and the largest upload (node's own request bound follows it): past the pre-read bound,
 * so that the body is streamed as an upload's is, not read before the handler.
 */
const STREAM_LIMIT = 80 * 1024

const routes: ReadonlyArray<Route> = [
  { method: "GET", path: "/ok", handler: () => Effect.succeed(json(200, { ok: true })) },
  {
    method: "POST",
    path: "/echo",
    handler: (request) =>
      request.body(1024).pipe(
        Effect.map((body) => json(200, { length: body.length })),
        Effect.catchAll((e) => Effect.succeed(json(e instanceof BodyTimedOut ? 408 : 400, { error: e._tag })))
      )
  },
  {
    method: "POST",
    path: "/stream",
    handler: (request) =>
      Stream.runFold(request.bodyStream!(STREAM_LIMIT), 0, (n, chunk) => n + chunk.length).pipe(
        Effect.map((length) => json(200, { length })),
        Effect.catchAll((e) => Effect.succeed(json(e instanceof BodyTimedOut ? 408 : 400, { error: e._tag })))
      )
  },
  // Answers without reading the body.
  { method: "POST", path: "/ignore", handler: () => Effect.succeed(json(200, { ignored: true })) }
]

/** The listener alone (no database): the routes above, on a free port, with `limits`. */
const serve = (limits: HttpLimitsSettings) =>
  Effect.zipRight(
    // The listener logs at info; keep test output to warnings.
    Effect.locallyScoped(FiberRef.currentMinimumLogLevel, LogLevel.Warning),
    Layer.build(
    HttpServerLive.pipe(
      Layer.provide(Layer.succeed(HttpRoutes, routes)),
      Layer.provide(Metrics.Default),
      Layer.provide(appConfigFromMap({ HOST: "127.0.0.1", PORT: "0", LOG_LEVEL: "error", BELAY_UPLOAD_MAX_BYTES: String(STREAM_LIMIT) })),
      Layer.provide(Layer.succeed(HttpLimits, limits)),
      Layer.orDie
    )
  ).pipe(Effect.map((context) => Context.get(context, HttpAddress))))

interface RawSocket {
  readonly socket: Net.Socket
  /** Everything the server sent so far. */
  readonly received: () => string
  /** Resolves when the server (or the network) closed the socket. */
  readonly closed: Promise<void>
}

const openSocket = (port: number) =>
  Effect.acquireRelease(
    Effect.async<RawSocket>((resume) => {
      const socket = Net.connect({ host: "127.0.0.1", port })
      let data = ""
      socket.setEncoding("latin1")
      socket.on("data", (chunk: string) => (data += chunk))
      socket.on("error", () => undefined)
      const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()))
      socket.once("connect", () => resume(Effect.succeed({ socket, received: () => data, closed })))
    }),
    ({ socket }) => Effect.sync(() => socket.destroy())
  )

/** Waits for the server to close the socket; a liveness guard only, far above the bounds under test. */
const awaitClosed = (raw: RawSocket) =>
  Effect.promise(() => raw.closed).pipe(
    Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("the server never closed the socket") })
  )

/** Writes `text` one byte at a time, `everyMs` apart, until it is all sent or the socket is closed. */
const trickle = (raw: RawSocket, text: string, everyMs: number) =>
  Effect.promise(async () => {
    for (const byte of text) {
      if (raw.socket.destroyed || raw.socket.writableEnded) return
      raw.socket.write(byte)
      await new Promise((r) => setTimeout(r, everyMs))
    }
  })

const getOk = (url: string) =>
  Effect.promise(async () => {
    const res = await fetch(`${url}/ok`)
    return { status: res.status, body: await res.json() }
  })

const statusOf = (response: string) => /^HTTP\/1\.1 (\d{3})/.exec(response)?.[1]

describe("slow and abandoned connections", () => {
  it.scopedLive("headers trickled a byte at a time are cut with 408, and a normal request is answered meanwhile", () =>
    Effect.gen(function*() {
      const server = yield* serve(SMALL)
      const slow = yield* openSocket(server.port)
      // Far longer than the header bound at one byte per 20 ms: only the server can end it.
      const headers = `GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ${"a".repeat(400)}\r\n\r\n`
      const trickling = yield* Effect.fork(trickle(slow, headers, 20))
      expect(yield* getOk(server.url)).toEqual({ status: 200, body: { ok: true } })
      yield* awaitClosed(slow)
      expect(statusOf(slow.received())).toBe("408")
      yield* trickling.await
      expect(yield* getOk(server.url)).toEqual({ status: 200, body: { ok: true } })
    }))

  it.scopedLive("a request that stops in the middle of its headers and goes silent is closed", () =>
    Effect.gen(function*() {
      const server = yield* serve(SMALL)
      const half = yield* openSocket(server.port)
      half.socket.write("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
      yield* awaitClosed(half)
      expect(statusOf(half.received())).toBe("408")
    }))

  it.scopedLive("a body that stops half-way is answered 408 by the body reader, and the connection closes", () =>
    Effect.gen(function*() {
      const server = yield* serve(SMALL)
      const half = yield* openSocket(server.port)
      half.socket.write("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nhalf a bo")
      yield* awaitClosed(half)
      const response = half.received()
      expect(statusOf(response)).toBe("408")
      expect(response.toLowerCase()).toContain("connection: close")
      expect(response).toContain(`{"error":"BodyTimedOut"}`)
    }))

  it.scopedLive("a body is answered alike whether it is read before the handler (declared, small) or when it asks", () =>
    Effect.gen(function*() {
      const server = yield* serve(SMALL)
      const post = (body: string | ReadableStream<Uint8Array>) =>
        Effect.promise(async () => {
          const res = await fetch(`${server.url}/echo`, {
            method: "POST",
            body,
            // A stream has no declared length (chunked): read when the handler asks.
            ...(typeof body === "string" ? {} : { duplex: "half" })
          } as RequestInit)
          return { status: res.status, body: await res.json() }
        })
      const stream = (text: string) =>
        new ReadableStream<Uint8Array>({
          start: (controller) => {
            controller.enqueue(new TextEncoder().encode(text))
            controller.close()
          }
        })
      // Declared and at most HTTP_PREREAD_BODY_BYTES: read first, then judged by the route's own limit (1024).
      expect(yield* post("x".repeat(10))).toEqual({ status: 200, body: { length: 10 } })
      expect(yield* post("x".repeat(1024))).toEqual({ status: 200, body: { length: 1024 } })
      expect(yield* post("x".repeat(1025))).toEqual({ status: 400, body: { error: "BodyTooLarge" } })
      // Declared beyond the pre-read bound, and undeclared: read by the handler.
      expect(yield* post("x".repeat(HTTP_PREREAD_BODY_BYTES + 1))).toEqual({ status: 400, body: { error: "BodyTooLarge" } })
      expect(yield* post(stream("y".repeat(10)))).toEqual({ status: 200, body: { length: 10 } })
      expect(yield* post(stream("y".repeat(2000)))).toEqual({ status: 400, body: { error: "BodyTooLarge" } })
    }))

  it.scopedLive("a small body in its head's packet, in a later packet, or behind another request is each request's own", () =>
    Effect.gen(function*() {
      const server = yield* serve(SMALL)
      const raw = yield* openSocket(server.port)
      const request = (body: string) =>
        `POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: ${body.length}\r\n\r\n${body}`
      const lengths = () => [...raw.received().matchAll(/\{"length":(\d+)\}/g)].map((m) => Number(m[1]))
      const until = (count: number) =>
        Effect.promise(async () => {
          for (let i = 0; i < 200 && lengths().length < count; i++) await new Promise((r) => setTimeout(r, 10))
        })
      // Head and body in one write: taken whole before the handler runs.
      raw.socket.write(request("a".repeat(5)))
      yield* until(1)
      // The body's second half in a later packet: collected when it comes, within the body deadline.
      const split = request("b".repeat(7))
      raw.socket.write(split.slice(0, -3))
      yield* Effect.sleep("100 millis")
      raw.socket.write(split.slice(-3))
      yield* until(2)
      // Two requests in one write: each answer has its own body's length, in order.
      raw.socket.write(request("c".repeat(9)) + request("d".repeat(11)))
      yield* until(4)
      expect(lengths()).toEqual([5, 7, 9, 11])
      expect(raw.received().match(/HTTP\/1\.1 200 /g)).toHaveLength(4)
      // One connection throughout: none of them closed it.
      expect(raw.socket.destroyed).toBe(false)
    }))

  it.scopedLive("a body trickled a byte at a time is cut, and a normal request is answered meanwhile", () =>
    Effect.gen(function*() {
      const server = yield* serve(SMALL)
      const slow = yield* openSocket(server.port)
      slow.socket.write("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 500\r\n\r\n")
      const trickling = yield* Effect.fork(trickle(slow, "b".repeat(500), 20))
      expect(yield* getOk(server.url)).toEqual({ status: 200, body: { ok: true } })
      yield* awaitClosed(slow)
      expect(statusOf(slow.received())).toBe("408")
      yield* trickling.await
    }))

  it.scopedLive("a streamed body (an upload) may take longer than a read body, at the floor rate; below it, it is cut with 408", () =>
    Effect.gen(function*() {
      const server = yield* serve(SMALL)
      // 80 KiB in ten parts over 700 ms: past the 500 ms a read body has, within the streamed body's 1 s.
      const steady = yield* openSocket(server.port)
      steady.socket.write(`POST /stream HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${STREAM_LIMIT}\r\n\r\n`)
      for (let i = 0; i < 10; i++) {
        steady.socket.write("s".repeat(STREAM_LIMIT / 10))
        yield* Effect.sleep("70 millis")
      }
      yield* Effect.promise(() =>
        new Promise<void>((resolve) => {
          const check = () => (steady.received().includes("\r\n\r\n{") ? resolve() : setTimeout(check, 20))
          check()
        })
      ).pipe(Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("no answer") }))
      expect(statusOf(steady.received())).toBe("200")
      expect(steady.received()).toContain(`{"length":${STREAM_LIMIT}}`)
      // A byte every 5 ms (200 B/s, far below the floor): cut at its deadline, the connection closed.
      const slow = yield* openSocket(server.port)
      slow.socket.write(`POST /stream HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${STREAM_LIMIT}\r\n\r\n`)
      const trickling = yield* Effect.fork(trickle(slow, "t".repeat(STREAM_LIMIT), 5))
      yield* awaitClosed(slow)
      expect(statusOf(slow.received())).toBe("408")
      expect(slow.received().toLowerCase()).toContain("connection: close")
      expect(slow.received()).toContain(`{"error":"BodyTimedOut"}`)
      yield* trickling.await
    }))

  it.scopedLive("a body no handler reads, declared past the drain bound, ends with the answer: the connection closes", () =>
    Effect.gen(function*() {
      const server = yield* serve(SMALL)
      const raw = yield* openSocket(server.port)
      raw.socket.write(`POST /ignore HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${HTTP_DRAIN_BODY_BYTES + 1}\r\n\r\nsome`)
      yield* awaitClosed(raw)
      expect(statusOf(raw.received())).toBe("200")
      expect(raw.received().toLowerCase()).toContain("connection: close")
    }))

  it.scopedLive("a body no handler reads, within the drain bound, is drained: the client writes it all, reads the answer and reuses the connection", () =>
    Effect.gen(function*() {
      const server = yield* serve(SMALL)
      const raw = yield* openSocket(server.port)
      const size = HTTP_PREREAD_BODY_BYTES * 4
      raw.socket.write(`POST /ignore HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${size}\r\n\r\n`)
      // Written after the answer could have been sent: a server that closed would make these writes fail.
      yield* Effect.sleep("100 millis")
      const wrote = yield* Effect.async<boolean>((resume) => {
        raw.socket.write(Buffer.alloc(size, 0x61), (error) => resume(Effect.succeed(error === undefined || error === null)))
      })
      expect(wrote).toBe(true)
      raw.socket.write("GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
      yield* Effect.promise(async () => {
        while (!raw.received().includes(`{"ok":true}`) && !raw.socket.destroyed) await new Promise((r) => setTimeout(r, 10))
      })
      expect(statusOf(raw.received())).toBe("200")
      expect(raw.received()).toContain(`{"ignored":true}`)
      expect(raw.received()).toContain(`{"ok":true}`)
      expect(raw.received().toLowerCase()).not.toContain("connection: close")
    }))

  it.scopedLive("a drained body that stops half-way is cut at the body deadline", () =>
    Effect.gen(function*() {
      const server = yield* serve(SMALL)
      const raw = yield* openSocket(server.port)
      raw.socket.write(`POST /ignore HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${HTTP_PREREAD_BODY_BYTES + 100}\r\n\r\nsome`)
      yield* awaitClosed(raw)
      expect(statusOf(raw.received())).toBe("200")
    }))

  it.scopedLive("200 abandoned sockets (silent, or with half a request) do not stop a normal request, and all are closed", () =>
    Effect.gen(function*() {
      const server = yield* serve(SMALL)
      const abandoned: Array<RawSocket> = []
      for (let i = 0; i < 200; i++) {
        const raw = yield* openSocket(server.port)
        if (i % 2 === 1) raw.socket.write("GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        abandoned.push(raw)
      }
      expect(yield* getOk(server.url)).toEqual({ status: 200, body: { ok: true } })
      yield* Effect.forEach(abandoned, awaitClosed, { concurrency: "unbounded", discard: true })
      expect(abandoned.every((raw) => raw.socket.destroyed || raw.socket.readableEnded)).toBe(true)
      expect(yield* getOk(server.url)).toEqual({ status: 200, body: { ok: true } })
    }))

  it.scopedLive("a header block over the bound is refused with 431 and closed", () =>
    Effect.gen(function*() {
      const server = yield* serve(SMALL)
      const big = yield* openSocket(server.port)
      big.socket.write(`GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${"x".repeat(SMALL.maxHeaderBytes * 2)}\r\n\r\n`)
      yield* awaitClosed(big)
      expect(statusOf(big.received())).toBe("431")
    }))

  it.scopedLive("past the connection bound a new socket is closed unanswered; once the idle ones are cut, requests are served", () =>
    Effect.gen(function*() {
      const server = yield* serve({ ...SMALL, maxConnections: 5 })
      const idle: Array<RawSocket> = []
      for (let i = 0; i < 5; i++) idle.push(yield* openSocket(server.port))
      const extra = yield* openSocket(server.port)
      extra.socket.write("GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
      yield* awaitClosed(extra)
      expect(extra.received()).toBe("")
      yield* Effect.forEach(idle, awaitClosed, { concurrency: "unbounded", discard: true })
      expect(yield* getOk(server.url)).toEqual({ status: 200, body: { ok: true } })
    }))

  it.scopedLive("an idle keep-alive connection is closed after its request", () =>
    Effect.gen(function*() {
      const server = yield* serve(SMALL)
      const kept = yield* openSocket(server.port)
      kept.socket.write("GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n")
      yield* awaitClosed(kept)
      expect(statusOf(kept.received())).toBe("200")
      expect(kept.received()).toContain(`{"ok":true}`)
    }))
})
