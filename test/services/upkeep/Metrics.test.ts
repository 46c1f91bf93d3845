/**
 * Metrics' memory gauges (README "Reading the memory gauges"): RSS, the V8 heap used and committed, external memory,
 * and the heap by space under prom-client's names, the young generation as `space="new"`; each a number that fits
 * the others (used within committed, the spaces within the heap).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Metrics } from "../../../src/services/upkeep/Metrics.js"

/** `name{labels}` → value, from the Prometheus text. */
const gauges = (text: string) =>
  new Map(
    text.split("\n").filter((l) => l !== "" && !l.startsWith("#")).map((l) => {
      const space = l.lastIndexOf(" ")
      return [l.slice(0, space), Number(l.slice(space + 1))] as const
    })
  )

describe("Metrics (memory gauges)", () => {
  it.effect("renders RSS, heap used and committed, external, and the heap by space with the young generation", () =>
    Effect.gen(function*() {
      const text = yield* (yield* Metrics).render
      const g = gauges(text)
      const rss = g.get("process_resident_memory_bytes")!
      const used = g.get("nodejs_heap_size_used_bytes")!
      const committed = g.get("nodejs_heap_size_total_bytes")!
      expect(g.get("nodejs_external_memory_bytes")).toBeGreaterThan(0)
      expect(used).toBeGreaterThan(0)
      expect(used).toBeLessThanOrEqual(committed)
      expect(committed).toBeLessThan(rss)
      const young = g.get(`nodejs_heap_space_size_total_bytes{space="new"}`)
      expect(young).toBeGreaterThan(0)
      expect(g.get(`nodejs_heap_space_size_used_bytes{space="new"}`)).toBeLessThanOrEqual(young!)
      expect(g.get(`nodejs_heap_space_size_total_bytes{space="old"}`)).toBeGreaterThan(0)
      expect(text).toContain(`# TYPE nodejs_heap_space_size_total_bytes gauge`)
      // The spaces add up to the heap's committed size (read a moment apart: within a few MB).
      const spaces = [...g].filter(([k]) => k.startsWith("nodejs_heap_space_size_total_bytes{")).reduce((a, [, v]) => a + v, 0)
      expect(Math.abs(spaces - committed)).toBeLessThan(8 * 1024 * 1024)
    }).pipe(Effect.provide(Metrics.Default)))
})

describe("Metrics (counters and the HTTP histogram)", () => {
  it.effect("a bound counter counts the series increment names, and a series appears at its first count", () =>
    Effect.gen(function*() {
      const metrics = yield* Metrics
      const ok = metrics.counter("t_calls_total", "Calls.", { tool: "b", outcome: "ok" })
      const quoted = metrics.counter("t_calls_total", "Calls.", { tool: "a\"b", outcome: "error" })
      metrics.counter("t_calls_total", "Calls.", { tool: "never", outcome: "ok" })
      ok()
      ok(2)
      metrics.increment("t_calls_total", "Calls.", { outcome: "ok", tool: "b" })
      quoted()
      const g = gauges(yield* metrics.render)
      expect(g.get(`t_calls_total{outcome="ok",tool="b"}`)).toBe(4)
      expect(g.get(`t_calls_total{outcome="error",tool="a\\"b"}`)).toBe(1)
      expect([...g.keys()].filter((k) => k.includes("never"))).toEqual([])
    }).pipe(Effect.provide(Metrics.Default)))

  it.effect("observeHttp keeps one series per route and status, in the order first seen", () =>
    Effect.gen(function*() {
      const metrics = yield* Metrics
      metrics.observeHttp("/mcp", 200, 0.002)
      metrics.observeHttp("/healthz", 200, 0.0005)
      metrics.observeHttp("/mcp", 200, 0.02)
      metrics.observeHttp("/mcp", 401, 0.0001)
      const text = yield* metrics.render
      const g = gauges(text)
      expect(g.get(`belay_http_request_duration_seconds_count{route="/mcp",status="200"}`)).toBe(2)
      expect(g.get(`belay_http_request_duration_seconds_bucket{route="/mcp",status="200",le="0.0025"}`)).toBe(1)
      expect(g.get(`belay_http_request_duration_seconds_bucket{route="/mcp",status="200",le="0.025"}`)).toBe(2)
      expect(g.get(`belay_http_request_duration_seconds_count{route="/mcp",status="401"}`)).toBe(1)
      expect(g.get(`belay_http_request_duration_seconds_count{route="/healthz",status="200"}`)).toBe(1)
      const counts = text.split("\n").filter((l) => l.startsWith("belay_http_request_duration_seconds_count"))
      expect(counts.map((l) => l.slice(0, l.lastIndexOf(" ")))).toEqual([
        `belay_http_request_duration_seconds_count{route="/mcp",status="200"}`,
        `belay_http_request_duration_seconds_count{route="/healthz",status="200"}`,
        `belay_http_request_duration_seconds_count{route="/mcp",status="401"}`
      ])
    }).pipe(Effect.provide(Metrics.Default)))
})
