/**
 * Section H: one node, ten thousand networks (BENCH_SCALE_NETWORKS, default 10,000), every figure beside a baseline
 * measured in the same run.
 *
 * 1. Baseline Belay (fresh database, `--expose-gc` and the gc-on-signal preload as in B2): the bench account, its
 *    memory idle with no network, then BENCH_SCALE_BASELINE (default 100) networks added through the admin socket
 *    against one fake IRC server in the bench process; tools/list ÷ bare `node:http` measured there, and
 *    list_networks' latency on that account, Belay's idle CPU with them connected, and its CPU per tools/list
 *    request. Stopped.
 * 2. While no Belay runs, direct SQL fills the database up to the total: the bench account to BENCH_SCALE_PER_ACCOUNT
 *    (default 1,000) networks and further accounts (`scale1`, `scale2`, …, the bench account's password hash) with as
 *    many each, all pointing at the same fake server (10 accounts × 1,000 at the defaults).
 * 3. Belay again on that database: a boot with every network stored. Checked: every network connected (accepted at
 *    the fake) within the connect throttle's bound, N × CONNECT_SPACING after the first (ConnectThrottle.ts; the
 *    burst only shortens it); then PSS per network, (Belay's PSS idle with all N − Belay's PSS idle with none) ÷ N;
 *    idle CPU; list_networks p95 on the 1,000-network account; tools/list ÷ bare again, divided by the ratio at 100
 *    (and the CPU per request again); last the
 *    reconnect storm (the fake restarts: the last reconnection within ReconnectPolicy's `reconnectBound`, its first
 *    delay sampled, and no 1 s window above a fifth).
 *
 * File descriptors: Belay holds one socket per network and the bench process (the fake server) one per network
 * too, so both need more than N open files; the section checks the soft limit it inherits first (`ulimit -n`, which
 * the children inherit) and refuses to start below N + 1,024.
 *
 * Duration: N ÷ CONNECT_RATE twice by design (boot, storm: 200 s each at 10,000), plus two tools/list measurements
 * (bare, Belay, bare: 3 × (BENCH_WARMUP + BENCH_SECONDS) = 39 s each), two idle settles (12 s each), two idle CPU
 * readings (10 s each), two Belay starts, the SQL fill and the list_networks calls (about a minute): 555 s for one run
 * at 10,000 before the CPU readings (measured, 1-minute load 3 to 8), and BENCH_RUNS runs (default 3, each from a
 * fresh database; figures are their median and range) about half an hour. Hence not part of a full run
 * (bench/run.ts); `BENCH_RUNS=1` for one run.
 *
 * Concurrency rule: sequential; the fake server's callbacks only append time stamps, read after each phase.
 */
import * as Child from "node:child_process"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { Duration, Effect } from "effect"
import { CONNECT_BURST, CONNECT_RATE, CONNECT_SPACING, RECONNECT_BASE, reconnectBound } from "../../src/actors/ReconnectPolicy.js"
import { startFakeIrcServer } from "../../test/support/FakeIrcServer.js"
import { ACCOUNT, addNetworkWithAdmin, connectedCount, cpuSeconds, createAccount, type RunningBelay, startBelay } from "../lib/Belay.js"
import { withDatabase } from "../lib/Db.js"
import { databaseMode, freshDatabase, ROOT, sleep, waitUntil } from "../lib/Env.js"
import { measure, sequentialClient, startBareServer } from "../lib/Load.js"
import { callBody, checkAnswer, headers, probe, rpc } from "../lib/McpCalls.js"
import { belayMemory } from "../lib/Memory.js"
import type { Figure, SectionResult, Target } from "../lib/Report.js"
import { percentile } from "../lib/Stats.js"
import { busiestWindow, firstDelayBound, nth } from "../lib/Storm.js"

const TOTAL = Number(process.env.BENCH_SCALE_NETWORKS ?? 10_000)
const BASELINE = Number(process.env.BENCH_SCALE_BASELINE ?? 100)
const PER_ACCOUNT = Number(process.env.BENCH_SCALE_PER_ACCOUNT ?? 1_000)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3)
/** list_networks calls timed (after LIST_WARMUP untimed), one at a time on one keep-alive connection. */
const LIST_CALLS = 200
const LIST_WARMUP = 20
const CONNECTIONS = 50
const KiB = 1024
/** Long enough for the database pool's idle connections (10 s) to close before an idle reading (as in B2). */
const IDLE_SETTLE_MS = 12_000
/** Slack on the bounds: noticing the drop, the event loop, and the fake accepting on a shared core (as in B3). */
const BOUND_SLACK_MS = 1000
/**
 * How long Belay's idle CPU is read (/proc, user + system, every thread): at 10,000 networks an idle Belay still
 * answers a keepalive PONG and sends a PING about 111 times a second each, and what that costs the core is taken
 * from the requests measured next.
 */
const IDLE_CPU_MS = 10_000
/** Open files each process needs beyond one per network: the pool, the listeners, libraries, the bench's own. */
const FD_HEADROOM = 1024

const softFileLimit = (): number => {
  const out = Child.execFileSync("sh", ["-c", "ulimit -Sn"], { encoding: "utf8" }).trim()
  return out === "unlimited" ? Infinity : Number(out)
}

/**
 * tools/list on Belay ÷ the bare server answering the same bytes; the bare one measured twice around Belay, the higher
 * kept (as in A): on a loaded machine one bare measurement alone came out below Belay's once.
 */
const toolsRatio = async (belay: RunningBelay, token: string) => {
  const body = rpc("tools/list", {})
  const answer = await probe(belay, token, body)
  const bare = await startBareServer(answer.text)
  try {
    const request = { headers: headers(token), connections: CONNECTIONS, seconds: SECONDS, body }
    const bare1 = await measure({ ...request, url: bare.url }, WARMUP, bare.pid)
    const tools = await measure({ ...request, url: `${belay.url}/mcp` }, WARMUP, belay.pid)
    const bare2 = await measure({ ...request, url: bare.url }, WARMUP, bare.pid)
    for (const r of [bare1, tools, bare2]) {
      if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0) throw new Error(`tools/list load: ${JSON.stringify(r)}`)
    }
    const bareRps = Math.max(bare1.requestsPerSecond, bare2.requestsPerSecond)
    // Belay's CPU per request (all threads: GC helpers too): unlike the rate, barely moved by other work on the core.
    const cpuPerRequest = (tools.serverCores ?? NaN) / tools.requestsPerSecond * 1e6
    return { tools: tools.requestsPerSecond, bare: bareRps, ratio: tools.requestsPerSecond / bareRps, cpuPerRequest }
  } finally {
    await bare.stop()
  }
}

/** list_networks timed one call at a time; every answer must list `expected` networks. */
const listNetworksLatency = async (belay: RunningBelay, token: string, expected: number) => {
  const client = sequentialClient(`${belay.url}/mcp`, headers(token), (status, text) => {
    const got = (checkAnswer(status, text).result as { structuredContent?: { networks?: ReadonlyArray<unknown> } })
      .structuredContent?.networks?.length
    if (got !== expected) throw new Error(`list_networks listed ${got} networks, expected ${expected}`)
  })
  const body = callBody("list_networks", {})
  try {
    for (let i = 0; i < LIST_WARMUP; i++) await client.post(body)
    const times: Array<number> = []
    for (let i = 0; i < LIST_CALLS; i++) times.push(await client.post(body))
    const bytes = (await probe(belay, token, body)).bytes
    return { p50: percentile(times, 50), p95: percentile(times, 95), p99: percentile(times, 99), bytes }
  } finally {
    client.close()
  }
}

/**
 * Heap and PSS of an idle Belay (the pool's connections closed), after full collections; and the V8 heap committed
 * (`heapTotal`, read right after), so that the PSS per network splits into what V8 holds, used or not, and the rest.
 */
const idleMemory = async (belay: RunningBelay) => {
  await sleep(IDLE_SETTLE_MS)
  // A fetch on a keep-alive connection the server closed while idle fails once; a dead Belay fails every time.
  for (let attempt = 1; ; attempt++) {
    try {
      const memory = await belayMemory(belay)
      const heapTotal = (await belay.metrics()).get("nodejs_heap_size_total_bytes") ?? NaN
      return { ...memory, heapTotal }
    } catch (e) {
      if (attempt === 3) throw e
      await sleep(1000)
    }
  }
}

/** Belay's CPU over IDLE_CPU_MS with nothing asked of it, in % of a core. */
const idleCpu = async (belay: RunningBelay) => {
  const c0 = cpuSeconds(belay.pid)
  const t0 = performance.now()
  await sleep(IDLE_CPU_MS)
  const c1 = cpuSeconds(belay.pid)
  return c0 === undefined || c1 === undefined ? NaN : (c1 - c0) / ((performance.now() - t0) / 1000) * 100
}

/**
 * Waits for `check` like waitUntil, but fails at once, with how it ended, when Belay is gone: a wait of minutes (the
 * boot, the storm) otherwise ends in a time-out that does not say Belay had stopped.
 */
const whileRunning = <A>(belay: RunningBelay, what: string, timeoutMs: number, check: () => Promise<A | undefined>, everyMs: number) =>
  waitUntil(what, timeoutMs, async () => {
    const ended = belay.ended()
    if (ended !== undefined) throw new Error(`Belay ${ended} while waiting for ${what}`)
    return check()
  }, everyMs)

/**
 * Fills the database up to TOTAL networks by SQL while no Belay runs: the bench account to PER_ACCOUNT, then accounts
 * `scale1`… with PER_ACCOUNT each (the last with the rest). Returns the accounts' sizes.
 */
const fill = (env: Record<string, string>, port: number) =>
  withDatabase(env, (sql) =>
    Effect.gen(function*() {
      const sizes: Array<number> = []
      const bench = (yield* sql<{ id: number; n: number }>`
        SELECT a.id, (SELECT count(*)::int FROM networks WHERE account_id = a.id) AS n FROM accounts a
        WHERE a.name = ${ACCOUNT}`)[0]!
      let left = TOTAL - bench.n
      const insert = (accountId: number, from: number, count: number) =>
        sql`
          INSERT INTO networks (account_id, name, host, port, nick)
          SELECT ${accountId}, 'n' || i, '127.0.0.1', ${port}, 'b' || i
          FROM generate_series(${from}::int, ${from + count - 1}::int) AS i`
      const first = Math.min(left, PER_ACCOUNT - bench.n)
      yield* insert(bench.id, bench.n + 1, first)
      sizes.push(bench.n + first)
      left -= first
      for (let k = 1; left > 0; k++) {
        const count = Math.min(left, PER_ACCOUNT)
        const account = (yield* sql<{ id: number }>`
          INSERT INTO accounts (name, password_hash)
          SELECT ${`scale${k}`}, password_hash FROM accounts WHERE name = ${ACCOUNT} RETURNING id`)[0]!
        yield* insert(account.id, 1, count)
        sizes.push(count)
        left -= count
      }
      return sizes
    }))

export const runScale = async (): Promise<SectionResult> => {
  const started = performance.now()
  const limit = softFileLimit()
  if (limit < TOTAL + FD_HEADROOM) {
    throw new Error(`open-file limit ${limit} is below ${TOTAL + FD_HEADROOM}: raise it (ulimit -n) before the run`)
  }
  const accepts: Array<number> = []
  const fake = await startFakeIrcServer({
    timeout: "60 seconds",
    onConnection: (connection) =>
      Effect.zipRight(
        Effect.sync(() => accepts.push(performance.now())),
        connection.register()
      )
  })
  const db = await freshDatabase("scale")
  const preload = pathToFileURL(Path.join(ROOT, "dist-bench/bench/gc-on-signal.js")).href
  const nodeFlags = ["--expose-gc", "--import", preload]
  const figures: Array<Figure> = []
  const targets: Array<Target> = []
  const spacing = Duration.toMillis(CONNECT_SPACING)
  /** What broke, with the tail of Belay's output; the figures measured before it are still reported. */
  let error: string | undefined
  let belay: RunningBelay | undefined
  try {
    // 1. The baseline: no network, then BASELINE.
    belay = await startBelay(db.env, { nodeFlags })
    let token: string
    let small: Awaited<ReturnType<typeof toolsRatio>>
    let smallList: Awaited<ReturnType<typeof listNetworksLatency>>
    let none: Awaited<ReturnType<typeof idleMemory>>
    let smallIdleCpu: number
    try {
      token = (await createAccount(belay)).token
      none = await idleMemory(belay)
      for (let i = 1; i <= BASELINE; i++) await addNetworkWithAdmin(belay, `n${i}`, fake.server.port)
      await waitUntil(`${BASELINE} networks connected`, 120_000, async () =>
        connectedCount(await belay!.metrics()) === BASELINE || undefined, 200)
      smallIdleCpu = await idleCpu(belay)
      smallList = await listNetworksLatency(belay, token, BASELINE)
      small = await toolsRatio(belay, token)
    } finally {
      await belay.stop()
    }

    // 2. Up to TOTAL by SQL.
    const fillStarted = performance.now()
    const sizes = await fill(db.env, fake.server.port)
    const fillSeconds = (performance.now() - fillStarted) / 1000

    // 3. Boot with every network stored.
    accepts.length = 0
    const boot0 = performance.now()
    belay = await startBelay(db.env, { nodeFlags, readyTimeoutMs: 300_000 })
    try {
      const healthy = performance.now() - boot0
      const bootBound = TOTAL * spacing
      await whileRunning(belay, `${TOTAL} connections accepted`, bootBound + 120_000, async () =>
        accepts.length >= TOTAL || undefined, 100)
      const firstAccept = nth(accepts, 1) - boot0
      const lastAccept = nth(accepts, TOTAL) - boot0
      await whileRunning(belay, `${TOTAL} networks connected`, 120_000, async () =>
        connectedCount(await belay!.metrics()) === TOTAL || undefined, 500)
      const allConnected = performance.now() - boot0
      const bootPeak = busiestWindow(accepts, 1000)
      figures.push(
        { name: "networks", value: TOTAL },
        { name: "accounts (networks each)", value: sizes.join(", ") },
        { name: `stored by SQL (${TOTAL - BASELINE} networks, ${sizes.length - 1} accounts)`, value: fillSeconds, unit: "s" },
        { name: "boot: Belay answered /healthz after", value: healthy, unit: "ms" },
        { name: "boot: first connection accepted after start", value: firstAccept, unit: "ms" },
        { name: `boot: ${TOTAL}th connection accepted after start`, value: lastAccept, unit: "ms" },
        { name: "boot: spread first → last accepted", value: lastAccept - firstAccept, unit: "ms" },
        { name: `connect throttle's bound for ${TOTAL} (N × ${spacing} ms)`, value: bootBound, unit: "ms" },
        { name: "boot: all connected (per /metrics) after start", value: allConnected, unit: "ms" },
        { name: "boot: most connections accepted in any 1 s window", value: bootPeak.count },
        { name: "boot: that window began after start", value: bootPeak.start - boot0, unit: "ms" }
      )
      targets.push({
        name: `boot: all ${TOTAL} connected within the throttle's bound (first → last accept) + ${BOUND_SLACK_MS} ms`,
        measured: lastAccept - firstAccept,
        comparator: "<=",
        target: bootBound + BOUND_SLACK_MS,
        unit: "ms"
      })

      // Memory, idle, every network connected: before the load measurements, whose requests then also meet a Belay
      // done with the boot's writes (the settle lets the pool's connections close).
      const all = await idleMemory(belay)
      const pssPer = (all.belayPss - none.belayPss) / TOTAL / KiB
      figures.push(
        { name: "Belay PSS idle, no network", value: none.belayPss / KiB / KiB, unit: "MiB" },
        { name: `Belay PSS idle, ${TOTAL} networks`, value: all.belayPss / KiB / KiB, unit: "MiB" },
        { name: "V8 heap used per network", value: (all.heap - none.heap) / TOTAL / KiB, unit: "KiB" },
        // Committed (used or free in V8's pages; the young generation's semi-spaces whole) and what is outside it:
        // malloc, stacks, code, file pages (bench/results/memory-breakdown.md "At 10,000 networks").
        { name: "V8 heap committed per network", value: (all.heapTotal - none.heapTotal) / TOTAL / KiB, unit: "KiB" },
        {
          name: "Belay PSS outside V8's heap per network",
          value: (all.belayPss - all.heapTotal - (none.belayPss - none.heapTotal)) / TOTAL / KiB,
          unit: "KiB"
        },
        { name: "Belay PSS per network", value: pssPer, unit: "KiB" }
      )
      targets.push({ name: "Belay PSS per idle network", measured: pssPer, comparator: "<=", target: 32, unit: "KiB" })

      const largeIdleCpu = await idleCpu(belay)
      figures.push(
        { name: `Belay CPU idle, ${BASELINE} networks (baseline Belay, ${IDLE_CPU_MS / 1000} s)`, value: smallIdleCpu, unit: "% of a core" },
        { name: `Belay CPU idle, ${TOTAL} networks (${IDLE_CPU_MS / 1000} s)`, value: largeIdleCpu, unit: "% of a core" }
      )

      // list_networks for the bench account (PER_ACCOUNT networks) among TOTAL.
      const bigList = await listNetworksLatency(belay, token, sizes[0]!)
      figures.push(
        // One figure each (not "p50 / p95 / p99" in one string), so that runs combine into a median and a range.
        { name: `list_networks, ${BASELINE} networks (baseline Belay): p50`, value: smallList.p50, unit: "ms" },
        { name: `list_networks, ${BASELINE} networks (baseline Belay): p95`, value: smallList.p95, unit: "ms" },
        { name: `list_networks, ${sizes[0]} networks of ${TOTAL}: p50`, value: bigList.p50, unit: "ms" },
        { name: `list_networks, ${sizes[0]} networks of ${TOTAL}: p95`, value: bigList.p95, unit: "ms" },
        { name: `list_networks, ${sizes[0]} networks of ${TOTAL}: p99`, value: bigList.p99, unit: "ms" },
        { name: `list_networks answer, ${sizes[0]} networks`, value: bigList.bytes, unit: "bytes" }
      )
      targets.push({ name: `list_networks p95, account with ${sizes[0]} networks`, measured: bigList.p95, comparator: "<=", target: 50, unit: "ms" })

      const large = await toolsRatio(belay, token)
      figures.push(
        { name: `tools/list ÷ bare at ${BASELINE} networks (requests/s ${small.tools.toFixed(0)} ÷ ${small.bare.toFixed(0)})`, value: small.ratio },
        { name: `tools/list ÷ bare at ${TOTAL} networks (requests/s ${large.tools.toFixed(0)} ÷ ${large.bare.toFixed(0)})`, value: large.ratio },
        { name: `tools/list: Belay CPU per request at ${BASELINE} networks`, value: small.cpuPerRequest, unit: "µs" },
        { name: `tools/list: Belay CPU per request at ${TOTAL} networks`, value: large.cpuPerRequest, unit: "µs" }
      )
      targets.push({
        name: `tools/list ÷ bare at ${TOTAL}, ÷ the same at ${BASELINE} (unchanged: within a tenth)`,
        measured: large.ratio / small.ratio,
        comparator: ">=",
        target: 0.9
      })

      // The reconnect storm.
      const firstDelay = await firstDelayBound()
      const stormBound = firstDelay + Duration.toMillis(reconnectBound(TOTAL)) - Duration.toMillis(RECONNECT_BASE)
      accepts.length = 0
      const t0 = performance.now()
      await Effect.runPromise(fake.server.restart)
      await whileRunning(belay, `${TOTAL} reconnections`, stormBound + 120_000, async () => accepts.length >= TOTAL || undefined, 100)
      const stormFirst = nth(accepts, 1) - t0
      const stormLast = nth(accepts, TOTAL) - t0
      const stormPeak = busiestWindow(accepts, 1000)
      figures.push(
        { name: "storm: first reconnect delay bound (sampled from reconnectSchedule)", value: firstDelay, unit: "ms" },
        { name: `storm: reconnect bound (first delay + N × ${spacing} ms)`, value: stormBound, unit: "ms" },
        { name: "storm: first reconnection accepted after restart", value: stormFirst, unit: "ms" },
        { name: `storm: ${TOTAL}th reconnection accepted after restart`, value: stormLast, unit: "ms" },
        { name: "storm: most reconnections in any 1 s window", value: stormPeak.count },
        { name: "storm: that window began after restart", value: stormPeak.start - t0, unit: "ms" }
      )
      targets.push(
        { name: `storm: last reconnection within reconnect bound + ${BOUND_SLACK_MS} ms`, measured: stormLast, comparator: "<=", target: stormBound + BOUND_SLACK_MS, unit: "ms" },
        { name: "storm: reconnections in any 1 s (≤ a fifth)", measured: stormPeak.count, comparator: "<=", target: TOTAL / 5 }
      )
      await whileRunning(belay, `${TOTAL} networks connected again`, 120_000, async () =>
        connectedCount(await belay!.metrics()) === TOTAL || undefined, 500)
      figures.push({ name: "storm: all connected again (per /metrics) after", value: performance.now() - t0, unit: "ms" })
    } finally {
      await belay.stop()
    }
  } catch (e) {
    const tail = belay?.output().slice(-3000) ?? ""
    error = `${e instanceof Error ? (e.stack ?? e.message) : String(e)}\nBelay's output (tail):\n${tail}`
  } finally {
    await fake.close()
    await db.dispose()
  }
  return {
    ...(error === undefined ? {} : { error }),
    key: "scale",
    title: "H. One node, ten thousand networks",
    seconds: (performance.now() - started) / 1000,
    figures,
    targets,
    method: [
      `Belay ran as \`node --expose-gc --import bench/gc-on-signal.js bin/belay serve\` on ${databaseMode}, pinned like every section; one fake IRC server in the bench process registered every connection (001–005, MOTD) and time-stamped each accept. Open files: each process inherits the bench's soft limit (${limit}); the section needs ${TOTAL + FD_HEADROOM}.`,
      `Baseline Belay: the bench account, its idle memory with no network, then ${BASELINE} networks through the admin socket; list_networks timed (${LIST_WARMUP} untimed, ${LIST_CALLS} timed calls, one at a time) and tools/list ÷ bare measured (autocannon, ${CONNECTIONS} connections, ${WARMUP} s warm-up and ${SECONDS} s measured; the bare server twice around Belay, the higher kept).`,
      `Then, Belay stopped, SQL stored the rest: the bench account up to ${PER_ACCOUNT} networks, and accounts scale1… with ${PER_ACCOUNT} each, ${TOTAL} networks in all. Belay started on that database: a boot with every network stored. Throttle bound: N × CONNECT_SPACING (${spacing} ms; ConnectThrottle lets ${CONNECT_BURST} go at once, then ${CONNECT_RATE} a second) from the first accept to the Nth.`,
      `Same measurements at ${TOTAL} (list_networks on the bench account's ${PER_ACCOUNT}); then the storm as in B3 (the fake restarts; bound: the longest first delay of reconnectSchedule over 2,000 samples + N × ${spacing} ms, plus ${BOUND_SLACK_MS} ms slack). Belay's idle CPU (user + system, every thread, from /proc) over ${IDLE_CPU_MS / 1000} s with every network connected, at ${BASELINE} and at ${TOTAL}; its CPU per tools/list request from the same /proc reading over the measured load. Belay's PSS idle right after the boot, before the load (${IDLE_SETTLE_MS / 1000} s after the last request, after two gc rounds): (PSS with ${TOTAL} − PSS with none) ÷ ${TOTAL}.`
    ]
  }
}
