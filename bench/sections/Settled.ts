/**
 * Section B2b: memory as users run Belay. B2 reads right after forced full collections (`--expose-gc` and
 * a preload that collects on SIGUSR2), which no user runs; its figures can sit far from what `ps` or a container's
 * memory shows. This section reads what a user's service holds:
 *
 * - Belay is `bin/belay serve` exactly as `npm start` runs it: no node flag, no preload, no environment of the
 *   bench's (on Node 20, which has no `process.execve`, that means without MALLOC_MMAP_THRESHOLD_, as a service runs
 *   unless its unit sets it), with its embedded PostgreSQL; on Node 24 and on Node 20, one after the other. The Lounge
 *   4.5.2 runs the same way in the same run (its one preload only keeps its failed update check from ending it
 *   offline, bench/lounge-offline.ts).
 * - Each service runs alone (the others stopped) on a private copy of its Node binary in the scratch dir, so no
 *   measured process shares the binary's pages with the bench or with the other services: PSS counts them whole.
 * - Nothing is forced: each reading is the PSS of the process tree once it has settled — at least SETTLE_MIN_MS
 *   after the last change (Belay idle with its account; all networks registered), then when the last SETTLE_WINDOW
 *   one-second samples have not fallen by more than SETTLE_SLACK_MIB — or after SETTLE_MAX_MS.
 * - Beside PSS, the embedded PostgreSQL's shared memory segment that no live process maps: pages a backend touched
 *   stay resident there after it exits, and PSS counts none of them (bench/lib/Memory.ts `sharedSegmentResident`).
 * - Networks are added to Belay through the admin socket one every BENCH_SETTLED_ADD_MS (default 500 ms), about a
 *   user's pace with `belay network add` (0.5–2 s a call): added all at once, the connect burst and V8's memory reducer
 *   happened to line up and hid what Node 24 kept (bench/results/memory-breakdown.md "Node 24, 100 idle networks").
 *   The Lounge connects the networks of its user file itself, 1 to 2 s apart.
 *
 * Concurrency rule: sequential; each service is started, read and stopped before the next; the fake IRC servers'
 * callbacks only count registrations.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { Effect } from "effect"
import { freePort } from "../../test/support/BelayProcess.js"
import { startFakeIrcServer } from "../../test/support/FakeIrcServer.js"
import { addNetworkWithAdmin, createAccount, startBelay } from "../lib/Belay.js"
import { freshDatabase, ROOT, scratch, sleep, waitUntil } from "../lib/Env.js"
import { type ProcessMemory, processMemory, processTree, sharedSegmentResident, sum } from "../lib/Memory.js"
import type { Figure, SectionResult, Target } from "../lib/Report.js"
import { loadNow } from "../lib/Report.js"
import { LOUNGE_VERSION, loungeNode, startLounge } from "../lib/TheLounge.js"

const NETWORKS = Number(process.env.BENCH_MEMORY_NETWORKS ?? 100)
const ADD_EVERY_MS = Number(process.env.BENCH_SETTLED_ADD_MS ?? 500)
const SETTLE_MIN_MS = 15_000
const SETTLE_MAX_MS = 60_000
const SETTLE_WINDOW = 7
const SETTLE_SLACK_MIB = 0.25
const KiB = 1024
const MiB = KiB * KiB

/** The Node 20 binary: this bench's own when it runs on 20, else BENCH_NODE20; none, and Node 20 is skipped. */
const node20 = (): string | undefined => {
  if (process.env.BENCH_NODE20 !== undefined && process.env.BENCH_NODE20 !== "") return process.env.BENCH_NODE20
  return process.versions.node.startsWith("20.") ? process.execPath : undefined
}

/** The Node 24 binary: The Lounge's (loungeNode: BENCH_LOUNGE_NODE, this node if 22+, or test/conformance's). */
const node24 = (): string => loungeNode()

const version = (node: string) => execFileSync(node, ["--version"], { encoding: "utf8" }).trim()

let copies = 0
/** A private copy of `node` in the scratch dir, for one measured process. */
const privateNode = (node: string): string => {
  const copy = Path.join(scratch(), `node-${++copies}`)
  Fs.copyFileSync(node, copy)
  Fs.chmodSync(copy, 0o755)
  return copy
}

const treeMemory = (pid: number) => processTree(pid).map(processMemory).filter((p): p is ProcessMemory => p !== undefined)
const treePss = (pid: number) => sum(treeMemory(pid), "pss")

/**
 * Bytes of the embedded PostgreSQL's shared memory segment resident but mapped by none of its live processes (so in
 * no PSS): the segment's resident size less the shared-memory PSS of the processes under Belay. NaN if unreadable.
 */
const unmappedShared = (belayPid: number): number => {
  const [, ...postgres] = treeMemory(belayPid)
  // The postmaster is the one whose command line is its binary's path; its children rename themselves "postgres: …".
  const postmaster = postgres.find((p) => !p.name.startsWith("postgres:"))
  const resident = postmaster === undefined ? undefined : sharedSegmentResident(postmaster.pid)
  return resident === undefined ? NaN : Math.max(0, resident - sum(postgres, "pssShmem"))
}

/** PSS of Belay's own process, and of the rest of its tree (the embedded PostgreSQL), now. */
const split = (belayPid: number) => {
  const [belay, ...postgres] = treeMemory(belayPid)
  return { belay: belay?.pss ?? NaN, postgres: sum(postgres, "pss") }
}

export interface Settled {
  /** PSS of the tree when settled, bytes. */
  readonly pss: number
  /** Seconds from the start of the wait to the reading. */
  readonly seconds: number
  /** Whether it settled before SETTLE_MAX_MS. */
  readonly settled: boolean
  /** The 1-minute load average at the reading. */
  readonly load: number
}

/** Samples the tree's PSS every second until it has settled (see the module doc); its last sample. */
export const settledPss = async (pid: number): Promise<Settled> => {
  const t0 = performance.now()
  const samples: Array<number> = []
  for (;;) {
    await sleep(1000)
    const pss = treePss(pid)
    if (!(pss > 0)) throw new Error(`process ${pid} is gone`)
    samples.push(pss)
    const elapsed = performance.now() - t0
    if (elapsed >= SETTLE_MIN_MS && samples.length >= SETTLE_WINDOW) {
      const window = samples.slice(-SETTLE_WINDOW)
      const fell = window[0]! - window[SETTLE_WINDOW - 1]!
      if (fell <= SETTLE_SLACK_MIB * MiB) return { pss, seconds: elapsed / 1000, settled: true, load: loadNow() }
    }
    if (elapsed >= SETTLE_MAX_MS) return { pss, seconds: elapsed / 1000, settled: false, load: loadNow() }
  }
}

/** Belay on `node` as users run it: idle with its account, then NETWORKS networks added at a user's pace. */
const belayAsRun = async (node: string, ircPort: number, registered: () => number) => {
  const db = await freshDatabase("settled")
  try {
    const belay = await startBelay(db.env, { node: privateNode(node), asUsersRun: true })
    try {
      await createAccount(belay)
      const idle = await settledPss(belay.pid)
      const idleUnmapped = unmappedShared(belay.pid)
      const idleSplit = split(belay.pid)
      const before = registered()
      const addNetworks = async (from: number) => {
        for (let i = from; i < from + NETWORKS; i++) {
          await addNetworkWithAdmin(belay, `s${i}`, ircPort)
          await sleep(ADD_EVERY_MS)
        }
        await waitUntil(`${from + NETWORKS - 1} networks registered`, 120_000, async () =>
          registered() - before >= from + NETWORKS - 1 || undefined, 200)
      }
      await addNetworks(1)
      const full = await settledPss(belay.pid)
      const fullUnmapped = unmappedShared(belay.pid)
      const fullSplit = split(belay.pid)
      const m = await belay.metrics()
      // NETWORKS more: what each network added past NETWORKS costs, once the first connections' one-time costs (code
      // compiled on first use, malloc's heap grown) are paid (bench/results/memory-breakdown.md "Node 24, 100 idle
      // networks, settled").
      await addNetworks(NETWORKS + 1)
      const double = await settledPss(belay.pid)
      return { idle, full, double, idleUnmapped, fullUnmapped, idleSplit, fullSplit, young: m.get(`nodejs_heap_space_size_total_bytes{space="new"}`) ?? NaN }
    } finally {
      await belay.stop()
    }
  } finally {
    await db.dispose()
  }
}

/** The Lounge with NETWORKS networks on a private copy of Node 24, read once settled. */
const loungeAsRun = async (ircPort: number, registered: () => number) => {
  const offline = pathToFileURL(Path.join(ROOT, "dist-bench/bench/lounge-offline.js")).href
  const httpPort = await Effect.runPromise(freePort)
  const before = registered()
  const lounge = startLounge({
    dir: Path.join(scratch(), "thelounge-settled"),
    httpPort,
    ircPort,
    networks: NETWORKS,
    nodeFlags: ["--import", offline],
    node: privateNode(node24())
  })
  try {
    await waitUntil("The Lounge listening", 60_000, async () =>
      (await fetch(`http://127.0.0.1:${httpPort}/`).then((r) => r.ok, () => false)) || undefined, 200)
    await waitUntil(`The Lounge's ${NETWORKS} networks registered`, NETWORKS * 2000 + 60_000, async () =>
      registered() - before >= NETWORKS || undefined, 200).catch((e) => {
      throw new Error(`${String(e)}\n${lounge.output()}`)
    })
    return await settledPss(lounge.pid)
  } finally {
    await lounge.stop()
  }
}

const mib = (bytes: number) => bytes / MiB
const at = (s: Settled) => `settled after ${s.seconds.toFixed(0)} s${s.settled ? "" : " (not settled: read at the bound)"}, load ${s.load.toFixed(1)}`

export const runSettled = async (): Promise<SectionResult> => {
  const started = performance.now()
  let registered = 0
  const fake = await startFakeIrcServer({
    timeout: "60 seconds",
    onConnection: (connection) => Effect.zipRight(connection.register(), Effect.sync(() => registered++))
  })
  const count = () => registered
  const figures: Array<Figure> = []
  const targets: Array<Target> = []
  const notes: Array<string> = []
  try {
    const lounge = await loungeAsRun(fake.server.port, count)
    figures.push({ name: `The Lounge ${LOUNGE_VERSION}, ${NETWORKS} networks, Node ${version(node24())} (PSS)`, value: mib(lounge.pss), unit: "MiB" })
    notes.push(`The Lounge: ${at(lounge)}`)
    const nodes: Array<readonly [string, string]> = [["24", node24()]]
    const n20 = node20()
    if (n20 !== undefined) nodes.push(["20", n20])
    for (const [label, node] of nodes) {
      const r = await belayAsRun(node, fake.server.port, count)
      const per = (r.full.pss - r.idle.pss) / NETWORKS / KiB
      const marginal = (r.double.pss - r.full.pss) / NETWORKS / KiB
      const name = `Belay on Node ${version(node)}`
      figures.push(
        { name: `${name}: whole service idle, no network (PSS)`, value: mib(r.idle.pss), unit: "MiB" },
        { name: `${name}: whole service, ${NETWORKS} idle networks (PSS)`, value: mib(r.full.pss), unit: "MiB" },
        { name: `${name}: per added idle network (PSS, 0 → ${NETWORKS}, one-time costs included)`, value: per, unit: "KiB" },
        { name: `${name}: each idle network added at ${NETWORKS} (PSS, ${NETWORKS} → ${2 * NETWORKS})`, value: marginal, unit: "KiB" },
        { name: `${name}: ÷ The Lounge's, ${NETWORKS} networks`, value: r.full.pss / lounge.pss },
        { name: `${name}: young generation committed at the reading`, value: mib(r.young), unit: "MiB" },
        { name: `${name}: idle, Belay's own process (PSS)`, value: mib(r.idleSplit.belay), unit: "MiB" },
        { name: `${name}: idle, its PostgreSQL's processes (PSS)`, value: mib(r.idleSplit.postgres), unit: "MiB" },
        { name: `${name}: ${NETWORKS} networks, Belay's own process (PSS)`, value: mib(r.fullSplit.belay), unit: "MiB" },
        { name: `${name}: ${NETWORKS} networks, its PostgreSQL's processes (PSS)`, value: mib(r.fullSplit.postgres), unit: "MiB" },
        { name: `${name}: PostgreSQL shared memory resident, in no PSS, idle`, value: mib(r.idleUnmapped), unit: "MiB" },
        { name: `${name}: PostgreSQL shared memory resident, in no PSS, ${NETWORKS} networks`, value: mib(r.fullUnmapped), unit: "MiB" }
      )
      notes.push(`${name}: idle ${at(r.idle)}; ${NETWORKS} networks ${at(r.full)}; ${2 * NETWORKS} networks ${at(r.double)}`)
      if (label === "24") {
        targets.push(
          { name: `Node 24: each idle network added at ${NETWORKS} (PSS, settled, ${NETWORKS} → ${2 * NETWORKS})`, measured: marginal, comparator: "<=", target: 48, unit: "KiB" },
          { name: `Node 24: whole service with ${NETWORKS} idle networks ÷ The Lounge's`, measured: r.full.pss / lounge.pss, comparator: "<=", target: 1.2 },
          { name: "Node 24: whole service idle, no network (PSS, settled)", measured: mib(r.idle.pss), comparator: "<=", target: 100, unit: "MiB" }
        )
      }
    }
    if (n20 === undefined) notes.push("Node 20: not measured (this bench runs on another Node; set BENCH_NODE20)")
  } finally {
    await fake.close()
  }
  return {
    key: "settled",
    title: "B2b. Memory as users run it: settled, no forced collection, Node 24 and Node 20, beside The Lounge",
    seconds: (performance.now() - started) / 1000,
    figures,
    targets,
    method: [
      "Belay ran as `node bin/belay serve`, exactly as `npm start` runs it after the build: no node flag, no preload, nothing added to the environment (on Node 20 no MALLOC_MMAP_THRESHOLD_: Node 20 cannot re-execute itself with it, and a service runs without it unless its unit sets it), with its embedded PostgreSQL; on Node 24, then on Node 20. The Lounge 4.5.2 ran as `node …/thelounge/index.js start` with only bench/lounge-offline.js preloaded (it keeps the failed update check of a machine without internet from ending it).",
      "Each service ran alone, the others stopped, on a private copy of its Node binary in the scratch dir, so the binary's pages are not shared with the bench's Node or another service and PSS counts them whole. The embedded PostgreSQL's binary is the package's, shared with any other embedded PostgreSQL running on the machine.",
      `No collection was forced. A reading is the PSS (/proc/<pid>/smaps_rollup) of the service's process tree once settled: sampled every second, at least ${SETTLE_MIN_MS / 1000} s after the last change, then when the last ${SETTLE_WINDOW} samples had not fallen by more than ${SETTLE_SLACK_MIB} MiB, else at ${SETTLE_MAX_MS / 1000} s. Idle: Belay with its account (created with the admin socket) and no network. Then ${NETWORKS} networks were added through the admin socket, one every ${ADD_EVERY_MS} ms (a user's pace with \`belay network add\`), to a fake IRC server in the bench process that registers every connection; the reading was taken once all had registered and the tree settled. The Lounge: a fresh home whose one user lists the ${NETWORKS} networks, read once all registered and settled.`,
      `Per added network = (reading at ${NETWORKS} − idle reading) ÷ ${NETWORKS}, one-time costs included (code compiled on first use, pages first touched). Each network added at ${NETWORKS} = (reading at ${2 * NETWORKS} − reading at ${NETWORKS}) ÷ ${NETWORKS}, ${NETWORKS} more networks added the same way after the reading at ${NETWORKS}: the cost of one more network once those one-time costs are paid, which is what the target bounds.`,
      "\"PostgreSQL shared memory resident, in no PSS\": the embedded PostgreSQL's main shared memory segment's resident size (fincore on the postmaster's /proc/<pid>/map_files entry) less the shared-memory PSS of its processes: pages that backends since exited touched (shared buffers, mostly), resident and part of what the service holds, but counted by no PSS. Not added to the PSS figures, so they stay comparable with earlier runs and with The Lounge's (which has none); NaN where it cannot be read (needs root and util-linux's fincore).",
      ...notes
    ]
  }
}
