/**
 * Metrics owns the process's counters, gauges and the HTTP latency histogram, and
 * renders them in the Prometheus text format for `GET /metrics` (docs/decisions/operations.md).
 *
 * Updates are synchronous and cheap (a Map lookup) so they can sit on hot paths (HTTP,
 * message ingest). Gauges that belong to another service (connections by state) are
 * registered as collectors and read only when /metrics is scraped. Single-threaded JS:
 * no locking needed. The process's own memory (RSS, V8 heap, external) is read at scrape
 * time under the names Prometheus clients use, so operators and `npm run bench` can see
 * what each connected network costs (heap and RSS per network). V8's heap is also given by
 * space (prom-client's `nodejs_heap_space_size_*_bytes{space}`), the young generation being
 * `space="new"`: it grows during a burst and is given back once the process is quiet
 * (upkeep/HeapTrim.ts), so a high RSS with a large `new` space is a burst's leftover, not
 * what the networks hold (README "Reading the memory gauges").
 */
import * as V8 from "node:v8"
import { Effect } from "effect"

type Labels = Readonly<Record<string, string>>

interface Family {
  readonly help: string
  readonly type: "counter" | "gauge"
  readonly values: Map<string, number>
}

const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] as const

const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, "\\\"")
const labelKey = (labels: Labels) =>
  Object.keys(labels).sort().map((k) => `${k}="${escapeLabel(labels[k]!)}"`).join(",")

interface HttpSeries {
  readonly key: string
  readonly buckets: Array<number>
  sum: number
  count: number
}

export type GaugeCollector = () => Effect.Effect<ReadonlyArray<readonly [Labels, number]>>

export class Metrics extends Effect.Service<Metrics>()("belay/Metrics", {
  sync: () => {
    const families = new Map<string, Family>()
    const collectors = new Map<string, { help: string; collect: GaugeCollector }>()
    /** The HTTP latency series, in the order they were first seen (how `render` lists them). */
    const http: Array<HttpSeries> = []

    const family = (name: string, type: Family["type"], help: string) => {
      let f = families.get(name)
      if (!f) {
        f = { help, type, values: new Map() }
        families.set(name, f)
      }
      return f
    }

    const increment = (name: string, help: string, labels: Labels = {}, by = 1) => {
      const f = family(name, "counter", help)
      const key = labelKey(labels)
      f.values.set(key, (f.values.get(key) ?? 0) + by)
    }

    /**
     * One series of a counter, its label string built once: what a hot path that counts a few fixed series calls
     * instead of `increment`, whose label key (sorting, escaping, joining) is made on every call. The series appears
     * in `render` at its first count, as with `increment`.
     */
    const counter = (name: string, help: string, labels: Labels = {}): (by?: number) => void => {
      const values = family(name, "counter", help).values
      const key = labelKey(labels)
      return (by = 1) => {
        values.set(key, (values.get(key) ?? 0) + by)
      }
    }

    // Hot path (every HTTP request): series are found by route, then status, with no key made per request, and
    // their Prometheus label string is built once, when the series is created.
    const byRoute = new Map<string, Map<number, HttpSeries>>()
    const observeHttp = (route: string, status: number, seconds: number) => {
      let statuses = byRoute.get(route)
      if (statuses === undefined) {
        statuses = new Map()
        byRoute.set(route, statuses)
      }
      let h = statuses.get(status)
      if (!h) {
        h = { key: labelKey({ route, status: String(status) }), buckets: HTTP_BUCKETS.map(() => 0), sum: 0, count: 0 }
        statuses.set(status, h)
        http.push(h)
      }
      for (let i = 0; i < HTTP_BUCKETS.length; i++) if (seconds <= HTTP_BUCKETS[i]!) h.buckets[i]!++
      h.sum += seconds
      h.count++
    }

    const registerGauge = (name: string, help: string, collect: GaugeCollector) => {
      collectors.set(name, { help, collect })
    }

    const render = Effect.gen(function*() {
      const out: Array<string> = []
      for (const [name, f] of families) {
        out.push(`# HELP ${name} ${f.help}`, `# TYPE ${name} ${f.type}`)
        for (const [key, value] of f.values) out.push(`${name}${key ? `{${key}}` : ""} ${value}`)
      }
      for (const [name, { help, collect }] of collectors) {
        out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`)
        for (const [labels, value] of yield* collect()) {
          const key = labelKey(labels)
          out.push(`${name}${key ? `{${key}}` : ""} ${value}`)
        }
      }
      const memory = process.memoryUsage()
      out.push(
        "# HELP process_resident_memory_bytes Resident memory size in bytes.",
        "# TYPE process_resident_memory_bytes gauge",
        `process_resident_memory_bytes ${memory.rss}`,
        "# HELP nodejs_heap_size_used_bytes V8 heap in use, in bytes.",
        "# TYPE nodejs_heap_size_used_bytes gauge",
        `nodejs_heap_size_used_bytes ${memory.heapUsed}`,
        "# HELP nodejs_heap_size_total_bytes V8 heap committed (every space, the young generation included), in bytes.",
        "# TYPE nodejs_heap_size_total_bytes gauge",
        `nodejs_heap_size_total_bytes ${memory.heapTotal}`,
        "# HELP nodejs_external_memory_bytes Memory of C++ objects bound to JavaScript (buffers), in bytes.",
        "# TYPE nodejs_external_memory_bytes gauge",
        `nodejs_external_memory_bytes ${memory.external}`
      )
      // By space, named as prom-client names them ("new_space" → space="new"): "new" is the young generation.
      const spaces = V8.getHeapSpaceStatistics().map((s) => ({ ...s, label: s.space_name.replace(/_space$/, "") }))
      out.push(
        "# HELP nodejs_heap_space_size_total_bytes V8 heap committed by space (space=\"new\": the young generation), in bytes.",
        "# TYPE nodejs_heap_space_size_total_bytes gauge",
        ...spaces.map((s) => `nodejs_heap_space_size_total_bytes{space="${s.label}"} ${s.space_size}`),
        "# HELP nodejs_heap_space_size_used_bytes V8 heap in use by space, in bytes.",
        "# TYPE nodejs_heap_space_size_used_bytes gauge",
        ...spaces.map((s) => `nodejs_heap_space_size_used_bytes{space="${s.label}"} ${s.space_used_size}`)
      )
      out.push(
        "# HELP belay_http_request_duration_seconds HTTP request latency by route and status.",
        "# TYPE belay_http_request_duration_seconds histogram"
      )
      for (const h of http) {
        const key = h.key
        HTTP_BUCKETS.forEach((le, i) => out.push(`belay_http_request_duration_seconds_bucket{${key},le="${le}"} ${h.buckets[i]}`))
        out.push(`belay_http_request_duration_seconds_bucket{${key},le="+Inf"} ${h.count}`)
        out.push(`belay_http_request_duration_seconds_sum{${key}} ${h.sum}`)
        out.push(`belay_http_request_duration_seconds_count{${key}} ${h.count}`)
      }
      return out.join("\n") + "\n"
    })

    return { increment, counter, observeHttp, registerGauge, render } as const
  }
}) {}
