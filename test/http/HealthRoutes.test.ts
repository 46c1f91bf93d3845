/**
 * `GET /healthz` and `GET /metrics` over HTTP (docs/decisions/operations.md). The metrics run on the whole application with real network actors connected to
 * the scripted fake IRC server, so every series moves because something a member can see
 * happened: a network connected, a line stored, a tool called. The health check runs against a
 * database reached through a proxy the test can stop forwarding, which is what "the database
 * does not answer" looks like from Belay: queries sent, no reply.
 */
import * as Net from "node:net"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Logger, LogLevel, Option, Redacted } from "effect"
import { healthRoutes } from "../../src/http/HealthRoutes.js"
import { HttpAddress, HttpRoutes, HttpServerLive } from "../../src/http/HttpServer.js"
import { makeAppLayer, NetworkActorsLive } from "../../src/main.js"
import { Accounts } from "../../src/services/identity/Accounts.js"
import { ApiTokens } from "../../src/services/identity/ApiTokens.js"
import { AppConfig } from "../../src/services/AppConfig.js"
import { Metrics } from "../../src/services/upkeep/Metrics.js"
import { Networks } from "../../src/services/networks/Networks.js"
import * as FakeIrcServer from "../support/FakeIrcServer.js"
import { eventually } from "../support/Eventually.js"
import { createDatabase, describeMode, settingsFrom, testEnvironment } from "../support/TestDatabase.js"

const get = (url: string) =>
  Effect.promise(async () => {
    const res = await fetch(url)
    return { status: res.status, type: res.headers.get("content-type"), cache: res.headers.get("cache-control"), body: await res.text() }
  })

/** The value of one series (`name{labels}` exactly as rendered, labels sorted), or undefined when absent. */
const sample = (metrics: string, series: string): number | undefined => {
  const line = metrics.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

const scrape = (url: string) => Effect.map(get(`${url}/metrics`), (r) => r.body)

describe(`/metrics on ${describeMode}`, () => {
  it.live("Prometheus text: connections by state, messages stored, MCP calls by tool and outcome, HTTP latency", () =>
    Effect.scoped(Effect.gen(function*() {
      const irc = yield* FakeIrcServer.make()
      const settings = yield* settingsFrom(yield* testEnvironment({ HOST: "127.0.0.1" }))
      const context = yield* Layer.build(makeAppLayer(settings, NetworkActorsLive).pipe(Layer.orDie))
      const url = Context.get(context, HttpAddress).url

      const first = yield* get(`${url}/metrics`)
      expect(first.status).toBe(200)
      expect(first.type).toBe("text/plain; version=0.0.4; charset=utf-8")
      expect(first.body).toContain("# TYPE belay_connections gauge")
      expect(first.body).toContain("# TYPE belay_http_request_duration_seconds histogram")
      for (const state of ["connected", "connecting", "backoff", "offline"]) {
        expect(sample(first.body, `belay_connections{state="${state}"}`)).toBe(0)
      }

      // a network connects: the gauge moves from 0 to 1
      yield* Context.get(context, Accounts).create("alice", "a long password").pipe(Effect.orDie)
      const networkId = yield* Context.get(context, Networks).add("alice", {
        name: "fake", host: "127.0.0.1", port: irc.port, tls: false, tlsInsecure: false, nick: "alice",
        username: Option.none(), realname: Option.none(), serverPassword: Option.none(), sasl: Option.none(), join: ["#belay"]
      }).pipe(Effect.orDie)
      const conn = yield* irc.nextConnection("10 seconds")
      yield* conn.register("alice")
      yield* conn.waitFor(/^JOIN #belay/)
      const connected = yield* eventually("the connected gauge", scrape(url), (m) => sample(m, "belay_connections{state=\"connected\"}") === 1)
      expect(sample(connected, "belay_connections{state=\"offline\"}")).toBe(0)

      // a line from IRC is stored: the counter grows by at least that line
      const storedBefore = sample(connected, "belay_messages_stored_total") ?? 0
      yield* conn.send(":bob!b@host PRIVMSG #belay :counted")
      const stored = yield* eventually("the stored counter", scrape(url), (m) => (sample(m, "belay_messages_stored_total") ?? 0) > storedBefore)
      expect(stored).toContain("# TYPE belay_messages_stored_total counter")

      // tool calls, counted by tool and outcome; the /mcp requests land in the latency histogram
      const token = yield* Context.get(context, ApiTokens).create("alice", "agent", "read-write").pipe(Effect.orDie)
      const call = (name: string, args: Record<string, unknown>) =>
        Effect.promise(() =>
          fetch(`${url}/mcp`, {
            method: "POST",
            headers: { "authorization": `Bearer ${token}`, "content-type": "application/json", "accept": "application/json, text/event-stream" },
            body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } })
          }).then((res) => res.status)
        )
      const mcpCount = "belay_http_request_duration_seconds_count{route=\"/mcp\",status=\"200\"}"
      expect(sample(stored, mcpCount)).toBeUndefined()
      expect(yield* call("list_networks", {})).toBe(200)
      expect(yield* call("list_networks", {})).toBe(200)
      expect(yield* call("recent_messages", { networkId: networkId + 1000, target: "#belay" })).toBe(200)
      const after = yield* scrape(url)
      expect(after).toContain("# TYPE belay_mcp_calls_total counter")
      expect(sample(after, "belay_mcp_calls_total{outcome=\"ok\",tool=\"list_networks\"}")).toBe(2)
      expect(sample(after, "belay_mcp_calls_total{outcome=\"error\",tool=\"recent_messages\"}")).toBe(1)
      expect(sample(after, mcpCount)).toBe(3)
      expect(sample(after, "belay_http_request_duration_seconds_bucket{route=\"/mcp\",status=\"200\",le=\"+Inf\"}")).toBe(3)
      expect(sample(after, "belay_http_request_duration_seconds_sum{route=\"/mcp\",status=\"200\"}")).toBeGreaterThan(0)
      // the earlier scrapes are observed too
      expect(sample(after, "belay_http_request_duration_seconds_count{route=\"/metrics\",status=\"200\"}")).toBeGreaterThan(0)
    })).pipe(Logger.withMinimumLogLevel(LogLevel.Error)), 60_000)
})

/** A TCP proxy to `upstream` that can stop forwarding: while held, bytes either way are kept, not delivered. */
const holdingProxy = (upstream: Net.NetConnectOpts) =>
  Effect.gen(function*() {
    let held = false
    const waiting: Array<() => void> = []
    const sockets = new Set<Net.Socket>()
    const forward = (from: Net.Socket, to: Net.Socket) =>
      from.on("data", (chunk) => {
        if (held) waiting.push(() => to.write(chunk))
        else to.write(chunk)
      })
    const server = yield* Effect.acquireRelease(
      Effect.async<Net.Server>((resume) => {
        const s = Net.createServer((client) => {
          const server = Net.connect(upstream)
          for (const socket of [client, server]) {
            sockets.add(socket)
            socket.on("error", () => undefined)
            socket.on("close", () => {
              client.destroy()
              server.destroy()
            })
          }
          forward(client, server)
          forward(server, client)
        })
        s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
      }),
      (s) =>
        Effect.async<void>((resume) => {
          for (const socket of sockets) socket.destroy()
          s.close(() => resume(Effect.void))
        })
    )
    const address = server.address()
    return {
      port: typeof address === "object" && address ? address.port : 0,
      hold: Effect.sync(() => {
        held = true
      }),
      release: Effect.sync(() => {
        held = false
        for (const deliver of waiting.splice(0)) deliver()
      })
    } as const
  })

/**
 * The run's PostgreSQL to proxy to, as a fresh database: the TEST_DATABASE_URL server over TCP, or the embedded
 * server over its Unix socket (it listens on no TCP port). The URL Belay gets names the proxy instead.
 */
const upstreamDatabase = Effect.gen(function*() {
  const url = new URL((yield* createDatabase).url)
  const socketDir = url.searchParams.get("host")
  const port = Number(url.searchParams.get("port") ?? (url.port || 5432))
  const target: Net.NetConnectOpts = socketDir?.startsWith("/")
    ? { path: `${socketDir}/.s.PGSQL.${port}` }
    : { host: url.hostname, port }
  url.searchParams.delete("host")
  url.searchParams.delete("port")
  return { target, url }
})

describe(`/healthz on ${describeMode}`, () => {
  it.live("200 {ok: true} while the database answers, 503 while it does not, 200 again once it does", () =>
    Effect.scoped(Effect.gen(function*() {
      const upstream = yield* upstreamDatabase
      const proxy = yield* holdingProxy(upstream.target)
      const url = new URL(upstream.url)
      url.hostname = "127.0.0.1"
      url.port = String(proxy.port)
      const settings = yield* settingsFrom({ HOST: "127.0.0.1", PORT: "0", LOG_FORMAT: "json" })
      // One pooled connection, as the embedded database runs: the health query cannot dodge the
      // held connection by opening another.
      const sql = PgClient.layer({ url: Redacted.make(url.toString()), maxConnections: 1 })
      const app = HttpServerLive.pipe(
        Layer.provide(Layer.effect(HttpRoutes, healthRoutes)),
        Layer.provideMerge(Layer.mergeAll(sql, Metrics.Default, Layer.succeed(AppConfig, settings)))
      )
      const base = Context.get(yield* Layer.build(app.pipe(Layer.orDie)), HttpAddress).url

      const up = yield* get(`${base}/healthz`)
      expect([up.status, up.type, up.cache, JSON.parse(up.body)]).toEqual([200, "application/json", "no-store", { ok: true }])

      yield* proxy.hold
      const down = yield* get(`${base}/healthz`)
      expect(down.status).toBe(503)
      expect(down.cache).toBe("no-store")
      expect(JSON.parse(down.body)).toMatchObject({ ok: false })
      // /metrics does not need the database and keeps answering
      const metrics = yield* get(`${base}/metrics`)
      expect(metrics.status).toBe(200)
      expect(sample(metrics.body, "belay_http_request_duration_seconds_count{route=\"/healthz\",status=\"503\"}")).toBe(1)

      yield* proxy.release
      const back = yield* eventually("/healthz answering 200 again", get(`${base}/healthz`), (r) => r.status === 200)
      expect(JSON.parse(back.body)).toEqual({ ok: true })
    })).pipe(Logger.withMinimumLogLevel(LogLevel.Error)), 60_000)
})
