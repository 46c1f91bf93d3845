/**
 * Section I, export: `belay account export` of a member with 1,000,000 stored messages (the MCP section's corpus
 * loader, bench/lib/MessageLoad.ts `loadMessages`, with Belay stopped), streamed through the admin socket into a pipe
 * this process reads and counts. The figure is the growth of the `belay serve` process's RSS over the export (its
 * peak, sampled every 20 ms, minus its RSS just before), against the 32 MiB the export may use
 * (docs/decisions/leaving.md "The export: one JSON Lines stream, a `kind` on every line"), and the rate in messages
 * and megabytes a second. Beside it, where the growth is: each V8 space's committed size and the memory held outside
 * the heap, read from the process's own /metrics (what told promoted garbage in the old generation and large objects
 * apart from a leak).
 *
 * Concurrency rule: sequential; the sampler and the reader of the export run side by side in this process.
 */
import * as Child from "node:child_process"
import { addNetworkWithCli, createAccount, ACCOUNT, startBelay } from "../lib/Belay.js"
import { BIN, databaseMode, freshDatabase } from "../lib/Env.js"
import { processMemory } from "../lib/Memory.js"
import { loadMessages } from "../lib/MessageLoad.js"
import type { SectionResult } from "../lib/Report.js"

const MiB = 1024 * 1024
const BUDGET = 32 * MiB
const SAMPLE_MS = 20
/** /metrics is answered by the process measured: read it less often than RSS, and never two reads at once. */
const HEAP_SAMPLE_MS = 250

type HeapPart = "young" | "old" | "large" | "youngLarge" | "external"
const HEAP_PARTS: ReadonlyArray<readonly [HeapPart, string]> = [
  ["young", 'nodejs_heap_space_size_total_bytes{space="new"}'],
  ["old", 'nodejs_heap_space_size_total_bytes{space="old"}'],
  ["large", 'nodejs_heap_space_size_total_bytes{space="large_object"}'],
  ["youngLarge", 'nodejs_heap_space_size_total_bytes{space="new_large_object"}'],
  ["external", "nodejs_external_memory_bytes"]
]
const HEAP_LABEL: Readonly<Record<HeapPart, string>> = {
  young: "V8 young generation (committed)",
  old: "V8 old generation (committed)",
  large: "V8 large objects (committed)",
  youngLarge: "V8 young large objects (committed)",
  external: "memory outside the V8 heap held by JavaScript (buffers)"
}

export const runExport = async (): Promise<SectionResult> => {
  const started = performance.now()
  const db = await freshDatabase("export")
  try {
    // The account and its network as a user makes them; the network points nowhere (it stays in backoff).
    let belay = await startBelay(db.env)
    let networkId: number
    try {
      await createAccount(belay)
      networkId = await addNetworkWithCli(belay, "export", 9)
    } finally {
      await belay.stop()
    }
    const loaded = await loadMessages(db.env, networkId)

    belay = await startBelay(db.env)
    try {
      // Settled: what start-up allocates is not the export's.
      await new Promise((r) => setTimeout(r, 3000))
      const rssOf = () => processMemory(belay.pid)?.rss ?? 0
      // Where the growth is, read from the process's own /metrics (V8's spaces, committed; buffers outside the heap).
      const heapOf = async () => {
        const m = await belay.metrics()
        return Object.fromEntries(HEAP_PARTS.map(([key, metric]) => [key, m.get(metric) ?? 0])) as Record<HeapPart, number>
      }
      const heapBefore = await heapOf()
      const heapPeak = { ...heapBefore }
      let heapReading = false
      const heapSampler = setInterval(() => {
        if (heapReading) return
        heapReading = true
        heapOf().then((now) => {
          for (const [key] of HEAP_PARTS) heapPeak[key] = Math.max(heapPeak[key], now[key])
        }, () => {}).finally(() => (heapReading = false))
      }, HEAP_SAMPLE_MS)
      const before = rssOf()
      let peak = before
      const sampler = setInterval(() => (peak = Math.max(peak, rssOf())), SAMPLE_MS)
      const t0 = performance.now()
      const outcome = await new Promise<{ code: number | null; bytes: number; lines: number; stderr: string }>((resolve) => {
        const child = Child.spawn(process.execPath, [BIN, "account", "export", ACCOUNT], {
          env: { ...process.env, ...belay.env },
          stdio: ["ignore", "pipe", "pipe"]
        })
        let bytes = 0
        let lines = 0
        let stderr = ""
        child.stdout.on("data", (c: Buffer) => {
          bytes += c.length
          for (let i = c.indexOf(10); i !== -1; i = c.indexOf(10, i + 1)) lines++
        })
        child.stderr.on("data", (c) => (stderr += c))
        child.on("close", (code) => resolve({ code, bytes, lines, stderr }))
      })
      const seconds = (performance.now() - t0) / 1000
      clearInterval(sampler)
      clearInterval(heapSampler)
      peak = Math.max(peak, rssOf())
      if (outcome.code !== 0) throw new Error(`belay account export exited ${outcome.code}: ${outcome.stderr}`)
      const growth = peak - before
      return {
        key: "export",
        title: "I. Account export",
        seconds: (performance.now() - started) / 1000,
        figures: [
          { name: "messages stored", value: loaded.stored },
          { name: "lines exported", value: outcome.lines },
          { name: "bytes exported", value: outcome.bytes / MiB, unit: "MiB" },
          { name: "export time", value: seconds, unit: "s" },
          { name: "messages exported per second", value: loaded.stored / seconds },
          { name: "MiB per second", value: outcome.bytes / MiB / seconds },
          { name: "belay serve RSS before", value: before / MiB, unit: "MiB" },
          { name: "belay serve RSS peak during the export", value: peak / MiB, unit: "MiB" },
          { name: "RSS growth", value: growth / MiB, unit: "MiB" },
          ...HEAP_PARTS.map(([key]) => ({ name: `${HEAP_LABEL[key]}: growth to its peak`, value: (heapPeak[key] - heapBefore[key]) / MiB, unit: "MiB" }))
        ],
        targets: [
          { name: "RSS growth while exporting 1,000,000 messages (MiB)", measured: growth / MiB, comparator: "<=", target: BUDGET / MiB },
          { name: "every message exported", measured: outcome.lines >= loaded.stored ? 1 : 0, comparator: "==", target: 1 }
        ],
        method: [
          `Belay ran as \`node bin/belay serve\` on ${databaseMode} (fresh data dir); the account and one network were made with the CLI, then, with Belay stopped, ${loaded.stored.toLocaleString("en-US")} messages went into one buffer by the MCP section's loader (INSERT … SELECT generate_series over the bench corpus).`,
          "Belay was started again and left 3 s; then `node bin/belay account export bench` ran with its stdout piped to this process, which counted bytes and lines as fast as they came.",
          `RSS of the serve process (/proc/PID/smaps_rollup) was sampled every ${SAMPLE_MS} ms during the export; the figure is the peak minus the RSS just before. The embedded PostgreSQL is a separate process and is not counted.`,
          `Where the growth is: the process's own /metrics (V8's heap spaces, committed, and external memory) read every ${HEAP_SAMPLE_MS} ms, each part's peak minus its value just before (peaks of parts need not coincide).`
        ]
      }
    } finally {
      await belay.stop()
    }
  } finally {
    await db.dispose()
  }
}
