/**
 * Sections B2 and B3: many idle connected networks in one Belay.
 *
 * B2 memory: Belay runs with `--expose-gc` and a preload that collects garbage on SIGUSR2 (bench/gc-on-signal.ts);
 * heap used and RSS come from its /metrics (`nodejs_heap_size_used_bytes`, `process_resident_memory_bytes`). Baseline:
 * the same process with the account but 0 networks; then 500 networks are added through the admin socket (exactly
 * what `belay network add` sends, without 500 CLI processes) against one fake IRC server that registers every
 * connection; once all 500 are `connected`, per network = (after − baseline) / 500.
 *
 * B3 reconnect storm: with the 500 connected, the fake server restarts (every socket dropped, listening again on the
 * same port at once). Every accepted connection is time-stamped at the fake; the checks are that all 500 come back
 * within the documented bound of src/actors/ReconnectPolicy.ts (`reconnectBound`: the longest first delay, then one
 * connect slot each, N ÷ CONNECT_RATE; the first delay is sampled from `reconnectSchedule` itself and the slots come
 * from the policy's constants, so the bound follows the policy) and that no more than a fifth of them connect in
 * any one-second window.
 *
 * Concurrency rule: sequential; the fake server's callbacks only append time stamps, read after each phase.
 */
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { Duration, Effect } from "effect"
import {
  CONNECT_BURST,
  CONNECT_RATE,
  CONNECT_SPACING,
  makeStepper,
  RECONNECT_BASE,
  reconnectBound,
  reconnectSchedule
} from "../../src/actors/ReconnectPolicy.js"
import { startFakeIrcServer } from "../../test/support/FakeIrcServer.js"
import { addNetworkWithAdmin, connectedCount, createAccount, type RunningBelay, startBelay } from "../lib/Belay.js"
import { databaseMode, freshDatabase, ROOT, sleep, waitUntil } from "../lib/Env.js"
import { serviceMemory, sum } from "../lib/Memory.js"
import type { Figure, SectionResult, Target } from "../lib/Report.js"

const NETWORKS = Number(process.env.BENCH_NETWORKS ?? 500)
const KiB = 1024
/** Long enough for the database pool's idle connections (10 s) to close before the idle reading. */
const IDLE_SETTLE_MS = 12_000
/** Slack on the reconnect bound: noticing the drop, the event loop, and the fake accepting 500 sockets on one core. */
const BOUND_SLACK_MS = 1000

/**
 * Heap and RSS after full collections (SIGUSR2 → gc-on-signal.ts), read twice and the second kept; and what the whole
 * service holds (bench/lib/Memory.ts): Belay's process and the embedded PostgreSQL's processes, from /proc.
 */
const memory = async (belay: RunningBelay) => {
  let last = { heap: 0, heapTotal: 0, rss: 0 }
  for (let i = 0; i < 2; i++) {
    belay.signal("SIGUSR2")
    await sleep(500)
    const m = await belay.metrics()
    last = {
      heap: m.get("nodejs_heap_size_used_bytes") ?? NaN,
      heapTotal: m.get("nodejs_heap_size_total_bytes") ?? NaN,
      rss: m.get("process_resident_memory_bytes") ?? NaN
    }
  }
  if (Number.isNaN(last.heap) || Number.isNaN(last.rss)) throw new Error("/metrics has no process memory gauges")
  return { ...last, service: serviceMemory(belay.pid) }
}

type Reading = Awaited<ReturnType<typeof memory>>

/** Belay's RSS plus the PSS of its PostgreSQL processes: what the service costs the machine. */
const serviceTotal = (r: Reading) => (r.service === undefined ? NaN : r.service.belay.rss + sum(r.service.postgres, "pss"))

/** Where the memory of a reading goes, as figures (MiB). */
const breakdown = (label: string, r: Reading): Array<Figure> => {
  if (r.service === undefined) return []
  const { belay, postgres } = r.service
  const mib = (bytes: number) => bytes / KiB / KiB
  const processes = postgres
    .map((p) => `${p.name.replace(/^postgres: /, "").replace(/^\S*\/postgres .*/, "postmaster")} ${mib(p.pss).toFixed(1)}`)
    .join("; ")
  return [
    { name: `${label}: whole service (Belay RSS + its PostgreSQL's PSS)`, value: mib(serviceTotal(r)), unit: "MiB" },
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

/** The largest number of time stamps inside any window of `windowMs` (sliding, not fixed buckets). */
const maxInWindow = (stamps: ReadonlyArray<number>, windowMs: number) => {
  const sorted = [...stamps].sort((a, b) => a - b)
  let best = 0
  let lo = 0
  for (let hi = 0; hi < sorted.length; hi++) {
    while (sorted[hi]! - sorted[lo]! >= windowMs) lo++
    best = Math.max(best, hi - lo + 1)
  }
  return best
}

/** The longest first reconnect delay the policy can choose, sampled (the schedule is jittered). */
const firstDelayBound = async () => {
  let max = 0
  for (let i = 0; i < 2000; i++) {
    const stepper = await Effect.runPromise(makeStepper(reconnectSchedule))
    max = Math.max(max, Duration.toMillis(await Effect.runPromise(stepper.next)))
  }
  return max
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

      // Added in two halves with a reading after each: the second half's growth is the marginal cost of a network,
      // free of one-time costs (code compiled on first use, caches) that the first networks pay.
      const half = Math.floor(NETWORKS / 2)
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
      await addUpTo(half)
      await sleep(IDLE_SETTLE_MS)
      const middle = await memory(belay)
      await addUpTo(NETWORKS)
      const connectSeconds = connectMs / 1000
      const addSeconds = addMs / 1000
      await sleep(IDLE_SETTLE_MS)
      const after = await memory(belay)
      const stats = await Effect.runPromise(fake.server.stats)
      if (stats.handlerFailures.length > 0) throw new Error(`fake server: ${stats.handlerFailures.slice(0, 3).join("\n")}`)

      if (which.memory) {
        const heapPer = (after.heap - before.heap) / NETWORKS / KiB
        const rssPer = (after.rss - before.rss) / NETWORKS / KiB
        const heapMarginal = (after.heap - middle.heap) / (NETWORKS - half) / KiB
        const rssMarginal = (after.rss - middle.rss) / (NETWORKS - half) / KiB
        const servicePer = (serviceTotal(after) - serviceTotal(before)) / NETWORKS / KiB
        const idleTotal = serviceTotal(before) / KiB / KiB
        results.push({
          key: "memory",
          title: "B2. Memory: the whole service, and per network",
          seconds: (performance.now() - started) / 1000,
          figures: [
            ...breakdown("idle, 0 networks", before),
            { name: "networks connected", value: NETWORKS },
            { name: "added through the admin socket in", value: addSeconds, unit: "s" },
            { name: "added and all connected (registered) in", value: connectSeconds, unit: "s" },
            ...breakdown(`idle, ${NETWORKS} networks`, after),
            { name: "heap used, 0 networks", value: before.heap / KiB / KiB, unit: "MiB" },
            { name: `heap used, ${NETWORKS} networks`, value: after.heap / KiB / KiB, unit: "MiB" },
            { name: "RSS, 0 networks", value: before.rss / KiB / KiB, unit: "MiB" },
            { name: `RSS, ${NETWORKS} networks`, value: after.rss / KiB / KiB, unit: "MiB" },
            { name: "heap per network", value: heapPer, unit: "KiB" },
            { name: "RSS per network", value: rssPer, unit: "KiB" },
            ...(Number.isNaN(servicePer) ? [] : [{ name: "whole service per network", value: servicePer, unit: "KiB" }]),
            { name: `marginal heap per network (${half} → ${NETWORKS})`, value: heapMarginal, unit: "KiB" },
            { name: `marginal RSS per network (${half} → ${NETWORKS})`, value: rssMarginal, unit: "KiB" }
          ],
          targets: [
            ...(Number.isNaN(idleTotal)
              ? []
              : [{ name: "whole service idle, no network (Belay RSS + PostgreSQL PSS)", measured: idleTotal, comparator: "<=" as const, target: 200, unit: "MiB" }]),
            { name: "heap per network", measured: heapPer, comparator: "<=", target: 64, unit: "KiB" },
            { name: "RSS per network", measured: rssPer, comparator: "<=", target: 160, unit: "KiB" }
          ],
          method: [
            `Belay ran as \`node --expose-gc --import bench/gc-on-signal.js bin/belay serve\` on ${databaseMode}; the preload only runs gc() on SIGUSR2. Heap used and RSS are read from GET /metrics after two signal-and-collect rounds.`,
            `The whole service: Belay's RSS plus the proportional set size (PSS, /proc/<pid>/smaps_rollup) of every process under it — the embedded PostgreSQL's postmaster and its children (checkpointer, background writer, WAL writer, autovacuum launcher, logical replication launcher, and any open backend). PSS shares each shared page among the processes mapping it, so the shared buffers (32 MB reserved, counted as touched) and the postgres binary count once. With DATABASE_URL only Belay is counted.`,
            `Baseline ("idle, 0 networks"): the same process with the account and no network, ${IDLE_SETTLE_MS / 1000} s after the last request, when the database pool has closed its idle connections. Then ${NETWORKS} networks (plain TCP, no channels) were added through the admin socket with the request \`belay network add\` sends, all pointing at one fake IRC server in the bench process that registers each connection (001–005, MOTD); measured ${IDLE_SETTLE_MS / 1000} s after /metrics showed all ${NETWORKS} connected (idle again: the pool's connections closed). Belay paces connects (ConnectThrottle: ${CONNECT_BURST} at once, then ${CONNECT_RATE} a second), so connecting them all takes at least ${NETWORKS} ÷ ${CONNECT_RATE} s.`,
            "Per network = (measured − baseline) ÷ networks (the targets). The networks were added in two halves with a reading after the first; the marginal figures divide the second half's growth by its size, leaving out one-time costs (code compiled on first use). The fake server's memory is not in the figure (another process)."
          ]
        })
      }

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
