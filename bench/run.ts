/**
 * `npm run bench [-- SECTION…]`: runs the benchmark sections and prints the table. Sections: `mcp`, `ingest`,
 * `memory`, `settled` (B2b: memory as users run it, no forced collection, Node 24 and 20 beside The Lounge,
 * bench/sections/Settled.ts), `storm`, `sockets`, `client`, `search`, `listener` (the IRC client listener,
 * bench/sections/Listener.ts), `cluster`, `scale` (one node, 10,000 networks, bench/sections/Scale.ts), `export` (RSS
 * growth and rate of `belay account export` at 1,000,000 messages, bench/sections/Export.ts); `irc` means
 * ingest, memory and storm; none means all but `scale` (`cluster` only with DATABASE_URL, which a cluster needs;
 * `scale` only when named: about 9 minutes a run at 10,000 networks, BENCH_RUNS of them). `client` drives the web
 * client in Chromium beside The Lounge (bench/sections/Client.ts); `search` measures search_messages and the IRC
 * listener's SEARCH on two corpora (bench/sections/Search.ts). A full
 * run (every section) writes bench/results/latest.json and latest.md; a partial run writes its files to the system's
 * temp dir and says where, and with BENCH_MERGE=1 also puts its sections into latest.* in place of the same sections,
 * every other one kept, each merged section saying when it was measured.
 * Targets are reported, not asserted: the exit code is 0 unless the harness itself broke (a section that throws is
 * reported as failed and the others still run).
 *
 * Repetition, so that figures come with their spread: `mcp` loads its million messages once and measures in
 * BENCH_ROUNDS rounds (default 3) inside the section; `ingest`, `memory`/`storm`, `sockets`, `listener`, `cluster`
 * and `scale` start from scratch BENCH_RUNS times (default 3). Each figure is then the median of its values, shown with their range.
 *
 * Knobs (environment): DATABASE_URL (a PostgreSQL server; a fresh database is created per Belay and dropped after;
 * unset: Belay's embedded PostgreSQL, as users run it), BENCH_SECONDS (measured load, default 10), BENCH_WARMUP
 * (default 3), BENCH_ROUNDS, BENCH_RUNS, BENCH_MCP_MESSAGES (default 1,000,000), BENCH_MCP_NETWORKS (default 100),
 * BENCH_SEARCH_PASSES (default 20), BENCH_SEARCH_MESSAGES (per corpus of `search`, default 1,000,000),
 * BENCH_INGEST_LINES (default 200,000), BENCH_NETWORKS (default 500),
 * BENCH_SOCKETS (default 1,000), BENCH_SOCKET_LINES (default 200), BENCH_SOCKET_RATE (lines a second, default 20),
 * BENCH_LISTENER_CLIENTS (default 100), BENCH_LISTENER_NETWORKS (default 10), BENCH_LISTENER_LINES (default 20,000),
 * BENCH_LISTENER_IDLE (idle clients for the memory reading, default 1,000),
 * BENCH_SCALE_NETWORKS (default 10,000), BENCH_SCALE_BASELINE (default 100), BENCH_SCALE_PER_ACCOUNT (default 1,000),
 * BENCH_PROFILE=1 (always profile /mcp), BENCH_KEEP=1 (keep the scratch dir).
 *
 * Concurrency rule: sections run one after another; each owns every process it starts and stops it before returning.
 */
import * as Os from "node:os"
import { databaseMode, databaseUrl, pinning, pinSelf, removeScratch, RESULTS_DIR, scratch } from "./lib/Env.js"
import { combineRuns, loadNow, machine, merge, type RunResult, type SectionResult, write } from "./lib/Report.js"
import { runExport } from "./sections/Export.js"
import { runIngest } from "./sections/Ingest.js"
import { runListener } from "./sections/Listener.js"
import { runMcp } from "./sections/Mcp.js"
import { runNetworks } from "./sections/Networks.js"
import { runSearch } from "./sections/Search.js"
import { runSettled } from "./sections/Settled.js"
import { runClient } from "./sections/Client.js"
import { runCluster } from "./sections/Cluster.js"
import { runScale } from "./sections/Scale.js"
import { runSockets } from "./sections/Sockets.js"

const ALL = ["mcp", "ingest", "memory", "settled", "storm", "sockets", "client", "search", "listener", "cluster", "scale", "export"] as const
type Section = (typeof ALL)[number]

const RUNS = Number(process.env.BENCH_RUNS ?? 3)

/**
 * What a run without arguments (a full run) measures: the cluster only where it can run, on DATABASE_URL; never
 * `scale`, which takes about 9 minutes a run (half an hour for three).
 */
const DEFAULT: ReadonlyArray<Section> = ALL.filter((s) => s !== "scale" && (s !== "cluster" || databaseUrl !== undefined))

const parse = (argv: ReadonlyArray<string>): ReadonlyArray<Section> => {
  if (argv.length === 0) return DEFAULT
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

/** Runs a section `runs` times (a fresh start each time) and returns one result per key, its runs combined. */
const repeated = async (
  key: string,
  title: string,
  runs: number,
  run: () => Promise<ReadonlyArray<SectionResult>>
): Promise<ReadonlyArray<SectionResult>> => {
  const byKey = new Map<string, Array<SectionResult>>()
  for (let i = 1; i <= runs; i++) {
    process.stderr.write(`bench: ${title}, run ${i} of ${runs}…\n`)
    const s0 = performance.now()
    const load0 = loadNow()
    let results: ReadonlyArray<SectionResult>
    try {
      results = await run()
    } catch (error) {
      results = [failed(key, title, error, (performance.now() - s0) / 1000)]
    }
    const load = { start: load0, end: loadNow() }
    for (const r of results) byKey.set(r.key, [...(byKey.get(r.key) ?? []), { ...r, load: r.load ?? [load] }])
  }
  return [...byKey.values()].map((rs) => (rs.length === 1 ? rs[0]! : combineRuns(rs)))
}

const main = async () => {
  const sections = parse(process.argv.slice(2))
  pinSelf()
  const startedAt = new Date()
  const loadAtStart = Os.loadavg()[0]!
  const t0 = performance.now()
  process.stderr.write(`bench: ${sections.join(", ")} on ${databaseMode}${pinning ? ", pinned" : ""}; scratch ${scratch()}\n`)
  const results: Array<SectionResult> = []
  if (sections.includes("mcp")) results.push(...(await repeated("mcp", "A. MCP", 1, async () => [await runMcp()])))
  if (sections.includes("ingest")) {
    results.push(...(await repeated("ingest", "B1. IRC ingest", RUNS, async () => [await runIngest()])))
  }
  const memory = sections.includes("memory")
  const storm = sections.includes("storm")
  if (memory || storm) {
    const title = memory ? "B2. Memory: the whole service, and per network" : "B3. Reconnect storm"
    results.push(...(await repeated(memory ? "memory" : "storm", title, RUNS, () => runNetworks({ memory, storm }))))
  }
  if (sections.includes("settled")) {
    results.push(...(await repeated("settled", "B2b. Memory as users run it", RUNS, async () => [await runSettled()])))
  }
  if (sections.includes("sockets")) {
    results.push(...(await repeated("sockets", "C. Browser WebSockets", RUNS, async () => [await runSockets()])))
  }
  if (sections.includes("client")) results.push(...(await repeated("client", "D. Web client", 1, async () => [await runClient()])))
  if (sections.includes("search")) results.push(...(await repeated("search", "E. Search", 1, async () => [await runSearch()])))
  if (sections.includes("listener")) {
    results.push(...(await repeated("listener", "F. IRC client listener", RUNS, async () => [await runListener()])))
  }
  if (sections.includes("cluster")) {
    results.push(...(await repeated("cluster", "G. Several nodes", RUNS, async () => [await runCluster()])))
  }
  if (sections.includes("scale")) {
    results.push(...(await repeated("scale", "H. One node, ten thousand networks", RUNS, async () => [await runScale()])))
  }
  if (sections.includes("export")) {
    results.push(...(await repeated("export", "I. Account export", 1, async () => [await runExport()])))
  }
  const run: RunResult = {
    startedAt: startedAt.toISOString(),
    seconds: (performance.now() - t0) / 1000,
    sections: results,
    machine: machine(databaseMode, pinning, loadAtStart)
  }
  const full = DEFAULT.every((s) => sections.includes(s))
  const dir = full ? RESULTS_DIR : Os.tmpdir()
  const name = full ? "latest" : `belay-bench-${sections.join("-")}`
  process.stdout.write(write(dir, name, run))
  process.stderr.write(
    `bench: results in ${dir}/${name}.md and .json${full ? "" : " (a partial run replaces no section of bench/results/latest.* unless BENCH_MERGE=1)"}\n`
  )
  if (!full && process.env.BENCH_MERGE === "1") {
    write(RESULTS_DIR, "latest", merge(RESULTS_DIR, "latest", run, ALL))
    process.stderr.write(`bench: ${sections.join(", ")} merged into ${RESULTS_DIR}/latest.md and .json\n`)
  }
  removeScratch()
}

main().catch((error) => {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  removeScratch()
  process.exit(1)
})
