/**
 * Section I, export: `belay account export` of a member with 1,000,000 stored messages (the MCP section's corpus
 * loader, bench/sections/Mcp.ts `loadMessages`, with Belay stopped), streamed through the admin socket into a pipe
 * this process reads and counts. The figure is the growth of the `belay serve` process's RSS over the export (its
 * peak, sampled every 20 ms, minus its RSS just before), against the 32 MiB the export may use
 * (docs/decisions/leaving.md "The export: one JSON Lines stream, a `kind` on every line"), and the rate in messages
 * and megabytes a second.
 *
 * Concurrency rule: sequential; the sampler and the reader of the export run side by side in this process.
 */
import * as Child from "node:child_process"
import { addNetworkWithCli, createAccount, ACCOUNT, startBelay } from "../lib/Belay.js"
import { BIN, databaseMode, freshDatabase } from "../lib/Env.js"
import { processMemory } from "../lib/Memory.js"
import type { SectionResult } from "../lib/Report.js"
import { loadMessages } from "./Mcp.js"

const MiB = 1024 * 1024
const BUDGET = 32 * MiB
const SAMPLE_MS = 20

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
          { name: "RSS growth", value: growth / MiB, unit: "MiB" }
        ],
        targets: [
          { name: "RSS growth while exporting 1,000,000 messages (MiB)", measured: growth / MiB, comparator: "<=", target: BUDGET / MiB },
          { name: "every message exported", measured: outcome.lines >= loaded.stored ? 1 : 0, comparator: "==", target: 1 }
        ],
        method: [
          `Belay ran as \`node bin/belay serve\` on ${databaseMode} (fresh data dir); the account and one network were made with the CLI, then, with Belay stopped, ${loaded.stored.toLocaleString("en-US")} messages went into one buffer by the MCP section's loader (INSERT … SELECT generate_series over the bench corpus).`,
          "Belay was started again and left 3 s; then `node bin/belay account export bench` ran with its stdout piped to this process, which counted bytes and lines as fast as they came.",
          `RSS of the serve process (/proc/PID/smaps_rollup) was sampled every ${SAMPLE_MS} ms during the export; the figure is the peak minus the RSS just before. The embedded PostgreSQL is a separate process and is not counted.`
        ]
      }
    } finally {
      await belay.stop()
    }
  } finally {
    await db.dispose()
  }
}
