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
