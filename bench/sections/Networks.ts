/**
 * Sections B2 and B3: many idle connected networks in one Belay.
 *
 * B2 memory: what the whole service holds — the proportional set size (PSS) of Belay's process tree, Belay and the
 * embedded PostgreSQL it runs — after full collections, with no network, with BENCH_MEMORY_NETWORKS (default 100) idle
 * and connected, and with BENCH_MEMORY_MARGIN_NETWORKS (default 300); per added network in PSS, from 0 to 100 (one-time
 * costs included: code compiled on first use, binary pages first touched, V8 growing its heap) and from 100 to 300
 * (what one more idle network costs, the target); and, in the same run, The Lounge 4.5.2
 * (bench/lib/TheLounge.ts, installed on demand) with no network and with as many, measured the same way. Belay runs
 * with `--expose-gc` and a preload that collects garbage on SIGUSR2 (bench/gc-on-signal.ts), and so does The Lounge.
 * Heap used and RSS also come from Belay's /metrics. The networks are added through the admin socket (exactly what
 * `belay network add` sends) against one fake IRC server in the bench process that registers every connection; The
 * Lounge's point at a second one, so each side's registrations are counted apart.
 *
 * B3 reconnect storm: with BENCH_NETWORKS (default 500) connected, the fake server restarts (every socket dropped,
 * listening again on the same port at once). Every accepted connection is time-stamped at the fake; the checks are
 * that all come back within the documented bound of src/actors/ReconnectPolicy.ts (`reconnectBound`: the longest
 * first delay, then one connect slot each, N ÷ CONNECT_RATE; the first delay is sampled from `reconnectSchedule`
 * itself and the slots come from the policy's constants, so the bound follows the policy) and that no more than a
 * fifth of them connect in any one-second window.
 *
 * Concurrency rule: sequential; the fake servers' callbacks only append time stamps or count, read after each phase.
 */
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { Duration, Effect } from "effect"
import {
  CONNECT_BURST,
  CONNECT_RATE,
  CONNECT_SPACING,
  RECONNECT_BASE,
  reconnectBound
} from "../../src/actors/ReconnectPolicy.js"
import { freePort } from "../../test/support/BelayProcess.js"
import { startFakeIrcServer } from "../../test/support/FakeIrcServer.js"
import { addNetworkWithAdmin, connectedCount, createAccount, MALLOC_ENV, type RunningBelay, startBelay } from "../lib/Belay.js"
import { databaseMode, freshDatabase, ROOT, scratch, sleep, waitUntil } from "../lib/Env.js"
import { type ProcessMemory, processTree, processMemory, serviceMemory, sum } from "../lib/Memory.js"
import { firstDelayBound, maxInWindow } from "../lib/Storm.js"
import type { Figure, SectionResult, Target } from "../lib/Report.js"
import { LOUNGE_VERSION, loungeNodeVersion, startLounge } from "../lib/TheLounge.js"

const NETWORKS = Number(process.env.BENCH_NETWORKS ?? 500)
/** Networks of the memory reading (the interface's figure is for 100 idle networks). */
const MEMORY_NETWORKS = Number(process.env.BENCH_MEMORY_NETWORKS ?? 100)
/**
 * Networks of the marginal reading. Two hundred more than the first reading: with 50 (the first half of 100, as this
 * section measured before) single jumps of a process's memory were as large as what was measured.
 */
const MARGIN_NETWORKS = Number(process.env.BENCH_MEMORY_MARGIN_NETWORKS ?? 300)
const KiB = 1024
/** Long enough for the database pool's idle connections (10 s) to close before the idle reading. */
const IDLE_SETTLE_MS = 12_000
/** Slack on the reconnect bound: noticing the drop, the event loop, and the fake accepting 500 sockets on one core. */
const BOUND_SLACK_MS = 1000

/** SIGUSR2 (→ gc-on-signal.ts: full collections) twice, half a second apart. */
const collect = async (signal: (s: NodeJS.Signals) => void) => {
  for (let i = 0; i < 2; i++) {
    signal("SIGUSR2")
    await sleep(500)
  }
}

/**
 * Heap and RSS after full collections, read from /metrics; and what the whole service holds (bench/lib/Memory.ts):
 * Belay's process and the embedded PostgreSQL's processes, from /proc.
 */
const memory = async (belay: RunningBelay) => {
  await collect(belay.signal)
  const m = await belay.metrics()
  const last = {
    heap: m.get("nodejs_heap_size_used_bytes") ?? NaN,
    heapTotal: m.get("nodejs_heap_size_total_bytes") ?? NaN,
    rss: m.get("process_resident_memory_bytes") ?? NaN
  }
  if (Number.isNaN(last.heap) || Number.isNaN(last.rss)) throw new Error("/metrics has no process memory gauges")
  return { ...last, service: serviceMemory(belay.pid) }
}

type Reading = Awaited<ReturnType<typeof memory>>

/** The PSS of Belay's process tree: Belay and its PostgreSQL, what the service costs the machine. */
const serviceTotal = (r: Reading) => (r.service === undefined ? NaN : r.service.belay.pss + sum(r.service.postgres, "pss"))

/** The PSS of a process tree (The Lounge: one process). */
const treePss = (pid: number) =>
  sum(processTree(pid).map(processMemory).filter((p): p is ProcessMemory => p !== undefined), "pss")

const mib = (bytes: number) => bytes / KiB / KiB

/** Where the memory of a reading goes, as figures (MiB). */
const breakdown = (label: string, r: Reading): Array<Figure> => {
  if (r.service === undefined) return []
  const { belay, postgres } = r.service
  const processes = postgres
    .map((p) => `${p.name.replace(/^postgres: /, "").replace(/^\S*\/postgres .*/, "postmaster")} ${mib(p.pss).toFixed(1)}`)
    .join("; ")
  return [
    { name: `${label}: whole service (PSS of Belay and its PostgreSQL)`, value: mib(serviceTotal(r)), unit: "MiB" },
    { name: `${label}: Belay PSS`, value: mib(belay.pss), unit: "MiB" },
    { name: `${label}: Belay RSS`, value: mib(belay.rss), unit: "MiB" },
    { name: `${label}: Belay V8 heap used`, value: mib(r.heap), unit: "MiB" },
    { name: `${label}: Belay V8 heap reserved`, value: mib(r.heapTotal), unit: "MiB" },
    { name: `${label}: Belay PSS anonymous (heaps, stacks, buffers)`, value: mib(belay.pssAnon), unit: "MiB" },
    { name: `${label}: Belay PSS file-backed (node binary, libraries)`, value: mib(belay.pssFile), unit: "MiB" },
    { name: `${label}: PostgreSQL processes`, value: postgres.length },
    { name: `${label}: PostgreSQL PSS`, value: mib(sum(postgres, "pss")), unit: "MiB" },
    { name: `${label}: PostgreSQL PSS shared memory (shared buffers and other shared state, as touched)`, value: mib(sum(postgres, "pssShmem")), unit: "MiB" },
    { name: `${label}: PostgreSQL PSS anonymous (each process's private memory)`, value: mib(sum(postgres, "pssAnon")), unit: "MiB" },
    { name: `${label}: PostgreSQL PSS file-backed (the postgres binary, libraries)`, value: mib(sum(postgres, "pssFile")), unit: "MiB" },
    { name: `${label}: PostgreSQL PSS by process (MiB)`, value: processes }
  ]
}

/**
 * The Lounge with no network and with `networks`, each in a fresh home, measured like Belay: PSS of its process tree
 * after full collections, IDLE_SETTLE_MS after its networks all registered at their own fake IRC server.
 */
const loungeMemory = async (networks: number, preload: string) => {
  const offline = pathToFileURL(Path.join(ROOT, "dist-bench/bench/lounge-offline.js")).href
  let registered = 0
  const fake = await startFakeIrcServer({
    timeout: "60 seconds",
    onConnection: (connection) => Effect.zipRight(connection.register(), Effect.sync(() => registered++))
  })
  const readings: Array<number> = []
  try {
    for (const count of [0, networks]) {
      registered = 0
      const httpPort = await Effect.runPromise(freePort)
      const lounge = startLounge({
        dir: Path.join(scratch(), `thelounge-${count}`),
        httpPort,
        ircPort: fake.server.port,
        networks: count,
        nodeFlags: ["--expose-gc", "--import", preload, "--import", offline]
      })
      try {
        await waitUntil("The Lounge listening", 60_000, async () =>
          (await fetch(`http://127.0.0.1:${httpPort}/`).then((r) => r.ok, () => false)) || undefined, 200)
        // The Lounge spaces its networks' first connects 1 to 2 s apart (its Client.connect): up to 2 s each.
        await waitUntil(`The Lounge's ${count} networks registered`, count * 2000 + 60_000, async () =>
          registered >= count || undefined, 200).catch((e) => {
          throw new Error(`${String(e)}\n${lounge.output()}`)
        })
        await sleep(IDLE_SETTLE_MS)
        await collect(lounge.signal)
        const pss = treePss(lounge.pid)
        if (!(pss > 0)) throw new Error(`The Lounge (pid ${lounge.pid}) is not running:\n${lounge.output()}`)
        readings.push(pss)
      } finally {
        await lounge.stop()
      }
    }
  } finally {
    await fake.close()
  }
  return { empty: readings[0]!, full: readings[1]! }
}

export const runNetworks = async (which: { readonly memory: boolean; readonly storm: boolean }): Promise<Array<SectionResult>> => {
  const started = performance.now()
  const accepts: Array<number> = []
  const fake = await startFakeIrcServer({
    timeout: "60 seconds",
    onConnection: (connection) =>
      Effect.zipRight(
        Effect.sync(() => accepts.push(performance.now())),
        connection.register()
      )
  })
  const db = await freshDatabase("networks")
  const preload = pathToFileURL(Path.join(ROOT, "dist-bench/bench/gc-on-signal.js")).href
  const results: Array<SectionResult> = []
  try {
    const belay = await startBelay(db.env, { nodeFlags: ["--expose-gc", "--import", preload] })
    try {
      await createAccount(belay)
      // Idle: the pool closes a connection after 10 s unused (pg's default idleTimeoutMillis), so its backends are
      // gone by the first reading, as they are in a service that nobody uses.
      await sleep(IDLE_SETTLE_MS)
      const before = await memory(belay)

      let addMs = 0
      let connectMs = 0
      let added = 0
      const addUpTo = async (count: number) => {
        const t = performance.now()
        while (added < count) await addNetworkWithAdmin(belay, `n${++added}`, fake.server.port)
        addMs += performance.now() - t
        await waitUntil(`${count} networks connected`, 120_000, async () =>
          connectedCount(await belay.metrics()) === count || undefined, 200)
        connectMs += performance.now() - t
      }

      if (which.memory) {
        // The interface's reading at MEMORY_NETWORKS, then MARGIN_NETWORKS: the growth past the first reading is what
        // one more network costs, free of the one-time costs the first networks pay (code compiled on first use, the
        // binaries' pages first touched, V8 growing its heap).
        await addUpTo(MEMORY_NETWORKS)
        const connectSeconds = connectMs / 1000
        const addSeconds = addMs / 1000
        await sleep(IDLE_SETTLE_MS)
        const after = await memory(belay)
        await addUpTo(MARGIN_NETWORKS)
        await sleep(IDLE_SETTLE_MS)
        const more = await memory(belay)
        const margin = MARGIN_NETWORKS - MEMORY_NETWORKS
        // The Lounge's run failing (it needs Node 22 and the npm registry) leaves Belay's figures standing.
        const lounge = await loungeMemory(MEMORY_NETWORKS, preload).catch((e: unknown) => ({
          empty: NaN,
          full: NaN,
          error: String(e).split("\n").slice(0, 3).join(" ")
        }))
        const heapPer = (after.heap - before.heap) / MEMORY_NETWORKS / KiB
        const rssPer = (after.rss - before.rss) / MEMORY_NETWORKS / KiB
        const heapMarginal = (more.heap - after.heap) / margin / KiB
        const servicePer = (serviceTotal(after) - serviceTotal(before)) / MEMORY_NETWORKS / KiB
        const serviceMarginal = (serviceTotal(more) - serviceTotal(after)) / margin / KiB
        const belayPssPer = after.service === undefined || before.service === undefined
          ? NaN
          : (after.service.belay.pss - before.service.belay.pss) / MEMORY_NETWORKS / KiB
        const loungePer = (lounge.full - lounge.empty) / MEMORY_NETWORKS / KiB
        const idleTotal = mib(serviceTotal(before))
        const fullTotal = mib(serviceTotal(after))
        results.push({
          key: "memory",
          title: "B2. Memory: the whole service, and per network, beside The Lounge",
          seconds: (performance.now() - started) / 1000,
          figures: [
            ...breakdown("idle, 0 networks", before),
            { name: "networks connected", value: MEMORY_NETWORKS },
            { name: "added through the admin socket in", value: addSeconds, unit: "s" },
            { name: "added and all connected (registered) in", value: connectSeconds, unit: "s" },
            ...breakdown(`idle, ${MEMORY_NETWORKS} networks`, after),
            // Through heap reserved: a step in V8's reservation (its young generation growing) shows beside the PSS it moves.
            ...breakdown(`idle, ${MARGIN_NETWORKS} networks`, more).slice(0, 5),
            { name: `whole service per network (PSS, 0 → ${MEMORY_NETWORKS})`, value: servicePer, unit: "KiB" },
            { name: `marginal whole service per network (PSS, ${MEMORY_NETWORKS} → ${MARGIN_NETWORKS})`, value: serviceMarginal, unit: "KiB" },
            { name: "Belay PSS per network", value: belayPssPer, unit: "KiB" },
            { name: "heap per network", value: heapPer, unit: "KiB" },
            { name: `marginal heap per network (${MEMORY_NETWORKS} → ${MARGIN_NETWORKS})`, value: heapMarginal, unit: "KiB" },
            { name: "RSS per network", value: rssPer, unit: "KiB" },
            ...("error" in lounge ? [{ name: `The Lounge ${LOUNGE_VERSION}: not measured`, value: lounge.error }] : []),
            { name: `The Lounge ${LOUNGE_VERSION}, 0 networks (PSS)`, value: mib(lounge.empty), unit: "MiB" },
            { name: `The Lounge ${LOUNGE_VERSION}, ${MEMORY_NETWORKS} networks (PSS)`, value: mib(lounge.full), unit: "MiB" },
            { name: `The Lounge ${LOUNGE_VERSION} per network (PSS)`, value: loungePer, unit: "KiB" }
          ],
          targets: [
            ...(Number.isNaN(fullTotal) || Number.isNaN(lounge.full)
              ? []
              : [{ name: `whole service with ${MEMORY_NETWORKS} idle networks (PSS) ≤ The Lounge's`, measured: fullTotal, comparator: "<=" as const, target: mib(lounge.full), unit: "MiB" }]),
            ...(Number.isNaN(serviceMarginal)
              ? []
              : [{ name: `whole service per added idle network (PSS, ${MEMORY_NETWORKS} → ${MARGIN_NETWORKS})`, measured: serviceMarginal, comparator: "<=" as const, target: 32, unit: "KiB" }]),
            ...(Number.isNaN(idleTotal)
              ? []
              : [{ name: "whole service idle, no network (PSS)", measured: idleTotal, comparator: "<=" as const, target: 200, unit: "MiB" }]),
            { name: "heap per network", measured: heapPer, comparator: "<=", target: 64, unit: "KiB" },
            { name: "RSS per network", measured: rssPer, comparator: "<=", target: 160, unit: "KiB" }
          ],
          method: [
            `Belay ran as \`node --expose-gc --import bench/gc-on-signal.js bin/belay serve\` on ${databaseMode}${MALLOC_ENV.MALLOC_MMAP_THRESHOLD_ === undefined ? "" : ", with MALLOC_MMAP_THRESHOLD_=16384 in its environment (what bin/belay sets by process.execve on Node 22.15 and later; this Node has no execve)"}; the preload only runs gc() on SIGUSR2. Every reading follows two signal-and-collect rounds; heap used and RSS are read from GET /metrics.`,
            "The whole service: the proportional set size (PSS, /proc/<pid>/smaps_rollup) of Belay's process tree — Belay and the embedded PostgreSQL's postmaster and its children (checkpointer, background writer, WAL writer, autovacuum launcher, and any open backend). PSS shares each shared page among the processes mapping it, so the shared buffers (as touched), the node and postgres binaries count once. With DATABASE_URL only Belay is counted.",
            `Baseline ("idle, 0 networks"): the same process with the account and no network, ${IDLE_SETTLE_MS / 1000} s after the last request, when the database pool has closed its idle connections. Then ${MEMORY_NETWORKS} networks (plain TCP, no channels) were added through the admin socket with the request \`belay network add\` sends, then more up to ${MARGIN_NETWORKS}, all pointing at one fake IRC server in the bench process that registers each connection (001–005, MOTD); each reading ${IDLE_SETTLE_MS / 1000} s after /metrics showed all connected. Belay paces connects (ConnectThrottle: ${CONNECT_BURST} at once, then ${CONNECT_RATE} a second).`,
            `Per network = (reading at ${MEMORY_NETWORKS} − baseline) ÷ ${MEMORY_NETWORKS}, which carries the one-time costs the first networks pay (code compiled on first use, binary pages first touched, V8 growing its heap); the marginal figures divide the growth from ${MEMORY_NETWORKS} to ${MARGIN_NETWORKS} networks by ${MARGIN_NETWORKS - MEMORY_NETWORKS}: what one more idle network costs, the per-network target. The fake servers' memory is not in any figure (the bench process).`,
            `The Lounge ${LOUNGE_VERSION} (bench/lib/TheLounge.ts): installed from the npm registry into bench/.cache/thelounge (irc-framework overridden to 4.14.0, install scripts off, so no sqlite3: text logs only), run on Node ${loungeNodeVersion()} (it needs 22 or later; Belay ran on this bench's Node ${process.version}) as \`node --expose-gc --import bench/gc-on-signal.js --import bench/lounge-offline.js …/thelounge/index.js start\` (the second preload only keeps its failed update check from ending it offline) in private mode with one user whose users/bench.json lists the networks (plain TCP, no channels) to a second fake IRC server; a fresh start with 0 and with ${MEMORY_NETWORKS} networks, each read ${IDLE_SETTLE_MS / 1000} s after all registered, after the same two collections: PSS of its process tree.`,
            "Forced `gc()` does not reduce memory: on Node 24 it leaves the pages a shrunk young generation gave back in V8's page pool, and The Lounge, which allocates almost nothing once connected, often still holds its grown young generation at this fixed-time reading (about 30 MiB: 131 MiB where a settled reading is 98–101). Section B2b (`settled`) reads both services as users run them, settled, with no forced collection (bench/results/memory-breakdown.md \"Node 24, 100 idle networks, as users run it\")."
          ]
        })
      }

      if (which.storm) await addUpTo(NETWORKS)
      const stats = await Effect.runPromise(fake.server.stats)
      if (stats.handlerFailures.length > 0) throw new Error(`fake server: ${stats.handlerFailures.slice(0, 3).join("\n")}`)

      if (which.storm) {
        const stormStarted = performance.now()
        const firstDelay = await firstDelayBound()
        // ReconnectPolicy.reconnectBound with the sampled first delay in place of its nominal RECONNECT_BASE: the
        // connect slots of N networks, N ÷ CONNECT_RATE, come after it.
        const slots = Duration.toMillis(reconnectBound(NETWORKS)) - Duration.toMillis(RECONNECT_BASE)
        const bound = firstDelay + slots
        accepts.length = 0
        const t0 = performance.now()
        await Effect.runPromise(fake.server.restart)
        const deadline = bound + BOUND_SLACK_MS + 30_000
        await waitUntil(`${NETWORKS} reconnections`, deadline, async () => accepts.length >= NETWORKS || undefined, 20)
        const lastAccept = Math.max(...accepts.slice(0, NETWORKS)) - t0
        const firstAccept = Math.min(...accepts) - t0
        await waitUntil(`${NETWORKS} networks connected again`, 30_000, async () =>
          connectedCount(await belay.metrics()) === NETWORKS || undefined, 50)
        const allBack = performance.now() - t0
        const peak = maxInWindow(accepts, 1000)
        const figures: Array<Figure> = [
          { name: "networks", value: NETWORKS },
          { name: "first reconnect delay bound (sampled from reconnectSchedule)", value: firstDelay, unit: "ms" },
          { name: `connect slots for ${NETWORKS} networks (N × ${Duration.toMillis(CONNECT_SPACING)} ms, ${CONNECT_RATE}/s after a burst of ${CONNECT_BURST})`, value: slots, unit: "ms" },
          { name: "reconnect bound (first delay + N ÷ rate)", value: bound, unit: "ms" },
          { name: "first reconnection accepted after restart", value: firstAccept, unit: "ms" },
          { name: `last (${NETWORKS}th) reconnection accepted after restart`, value: lastAccept, unit: "ms" },
          { name: "spread of reconnections", value: lastAccept - firstAccept, unit: "ms" },
          { name: "all connected again (per /metrics) after", value: allBack, unit: "ms" },
          { name: "most reconnections in any 1 s window", value: peak },
          { name: "connections accepted during the storm", value: accepts.length }
        ]
        const targets: Array<Target> = [
          {
            name: `last reconnection within reconnect bound + ${BOUND_SLACK_MS} ms`,
            measured: lastAccept,
            comparator: "<=",
            target: bound + BOUND_SLACK_MS,
            unit: "ms"
          },
          { name: "reconnections in any 1 s (≤ a fifth)", measured: peak, comparator: "<=", target: NETWORKS / 5 }
        ]
        results.push({
          key: "storm",
          title: "B3. Reconnect storm",
          seconds: (performance.now() - stormStarted) / 1000,
          figures,
          targets,
          method: [
            `Same Belay and ${NETWORKS} connected networks as B2. The fake IRC server was restarted (every socket destroyed, listening again on the same port at once); each accepted connection was time-stamped at the fake (bench process, load core).`,
            `Reconnect bound (src/actors/ReconnectPolicy.ts \`reconnectBound\`): the largest first delay of \`reconnectSchedule\` over 2,000 fresh steppers (its jitter is random), plus one connect slot per network (${NETWORKS} × ${Duration.toMillis(CONNECT_SPACING)} ms: Belay's ConnectThrottle lets ${CONNECT_BURST} connect at once, then ${CONNECT_RATE} a second), plus ${BOUND_SLACK_MS} ms for noticing the drop and accepting on one core.`,
            "Peak: the most accepts inside any sliding 1-second window; the target is a fifth of the networks."
          ]
        })
      }
    } finally {
      await belay.stop()
    }
  } finally {
    await fake.close()
    await db.dispose()
  }
  return results
}
