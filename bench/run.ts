/**
 * `npm run bench [-- SECTION…]`: runs the benchmark sections, writes bench/results/latest.json and latest.md, and
 * prints the table. Sections: `mcp` (issue 5), `ingest`, `memory`, `storm` (issue 3); `irc` means the last three;
 * none means all. Targets are reported, not asserted: the exit code is 0 unless the harness itself broke (a section
 * that throws is reported as failed and the others still run).
 *
 * Knobs (environment): DATABASE_URL (real PostgreSQL; a fresh database is created per Belay and dropped after),
 * BENCH_SECONDS (measured load, default 10), BENCH_WARMUP (default 3), BENCH_MCP_MESSAGES (default 1,000,000),
 * BENCH_INGEST_LINES (default 200,000), BENCH_NETWORKS (default 500), BENCH_PROFILE=1 (always profile /mcp),
 * BENCH_KEEP=1 (keep the scratch dir).
 *
 * Concurrency rule: sections run one after another; each owns every process it starts and stops it before returning.
 */
import * as Os from "node:os"
import { databaseMode, pinning, pinSelf, removeScratch, RESULTS_DIR, scratch } from "./lib/Env.js"
import { machine, type RunResult, type SectionResult, write } from "./lib/Report.js"
import { runIngest } from "./sections/Ingest.js"
import { runMcp } from "./sections/Mcp.js"
import { runNetworks } from "./sections/Networks.js"

const ALL = ["mcp", "ingest", "memory", "storm"] as const
type Section = (typeof ALL)[number]

const parse = (argv: ReadonlyArray<string>): ReadonlyArray<Section> => {
  if (argv.length === 0) return ALL
  const out = new Set<Section>()
  for (const arg of argv) {
    if (arg === "irc") for (const s of ["ingest", "memory", "storm"] as const) out.add(s)
    else if ((ALL as ReadonlyArray<string>).includes(arg)) out.add(arg as Section)
    else throw new Error(`unknown section ${JSON.stringify(arg)}; use ${ALL.join(", ")} or irc`)
  }
  return ALL.filter((s) => out.has(s))
}

const failed = (key: string, title: string, error: unknown, seconds: number): SectionResult => ({
  key,
  title,
  seconds,
  figures: [],
  targets: [],
  method: [],
  error: error instanceof Error ? (error.stack ?? error.message) : String(error)
})

const main = async () => {
  const sections = parse(process.argv.slice(2))
  pinSelf()
  const startedAt = new Date()
  const loadAtStart = Os.loadavg()[0]!
  const t0 = performance.now()
  process.stderr.write(`bench: ${sections.join(", ")} on ${databaseMode}${pinning ? ", pinned" : ""}; scratch ${scratch()}\n`)
  const results: Array<SectionResult> = []
  const attempt = async (key: string, title: string, run: () => Promise<ReadonlyArray<SectionResult>>) => {
    const s0 = performance.now()
    process.stderr.write(`bench: ${title}…\n`)
    try {
      results.push(...(await run()))
    } catch (error) {
      results.push(failed(key, title, error, (performance.now() - s0) / 1000))
    }
  }
  if (sections.includes("mcp")) await attempt("mcp", "A. MCP (issue 5)", async () => [await runMcp()])
  if (sections.includes("ingest")) await attempt("ingest", "B1. IRC ingest (issue 3)", async () => [await runIngest()])
  const memory = sections.includes("memory")
  const storm = sections.includes("storm")
  if (memory || storm) {
    await attempt(memory ? "memory" : "storm", memory ? "B2. Memory per network (issue 3)" : "B3. Reconnect storm (issue 3)", () =>
      runNetworks({ memory, storm }))
  }
  const run: RunResult = {
    startedAt: startedAt.toISOString(),
    seconds: (performance.now() - t0) / 1000,
    machine: machine(databaseMode, pinning, loadAtStart),
    sections: results
  }
  process.stdout.write(write(RESULTS_DIR, run))
  removeScratch()
}

main().catch((error) => {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  removeScratch()
  process.exit(1)
})
