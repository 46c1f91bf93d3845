/**
 * Section G (`cluster`): several nodes (docs/decisions/several-nodes.md "Several nodes"), side by side with one process in the same run.
 *
 * 1. One process (no BELAY_CLUSTER_ADDRESS) and a cluster of two nodes, each on its own fresh database (DATABASE_URL
 *    is required: a cluster needs an external PostgreSQL), each with the bench account and one network on a fake IRC
 *    server that fed it 200 private messages.
 * 2. Idle: the CPU each process spends over 12 s without requests, then heap used and RSS of the single process and
 *    of the cluster node not running the network, after forced collections (SIGUSR2 → bench/gc-on-signal.ts).
 * 3. /mcp under autocannon (BENCH_SECONDS each after BENCH_WARMUP): `send_message` through the node that does not own
 *    the network and through its owner; `tools/list` on the non-owner and on the single process; `recent_messages`
 *    (limit 50) on both nodes and on the single process. Each rate also reports the CPU per call of the Belay
 *    processes serving it (both nodes for a cluster call), which moves far less than a rate with the machine's
 *    other work. The network's send queue paces lines under the server's flood limit, so most send_message
 *    calls are refused with a full queue: the figure is what a write call costs end to end, the actor's answer
 *    included, not lines sent. That is kept on purpose: a line accepted would add the owner's storing of its echo
 *    to both sides and flatter the ratio, while the figure wanted is what the hop between nodes costs.
 * 4. Failover: a third node joins, BENCH_CLUSTER_NETWORKS (default 300) networks are added and connected, the busiest
 *    node gets kill -9, and the time until the survivors report them all connected is measured.
 *
 * Concurrency rule: sequential; every Belay started here is stopped before the section returns.
 */
import * as Crypto from "node:crypto"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { Effect } from "effect"
import { startFakeIrcServer } from "../../test/support/FakeIrcServer.js"
import { addNetworkWithAdmin, connectedCount, cpuSeconds, createAccount, type RunningBelay, startBelay } from "../lib/Belay.js"
import { freePort } from "../../test/support/BelayProcess.js"
import { databaseUrl, freshDatabase, ROOT, sleep, waitUntil } from "../lib/Env.js"
import { measure } from "../lib/Load.js"
import type { Figure, SectionResult, Target } from "../lib/Report.js"

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3)
const NETWORKS = Number(process.env.BENCH_CLUSTER_NETWORKS ?? 300)
const CONNECTIONS = 10
const MiB = 1024 * 1024
const FED = 200

const body = (method: string, params: Record<string, unknown>) => JSON.stringify({ jsonrpc: "2.0", id: 1, method, params })
const call = (name: string, args: Record<string, unknown>) => body("tools/call", { name, arguments: args })
const headers = (token: string) => ({
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  authorization: `Bearer ${token}`
})

const idleMemory = async (belay: RunningBelay) => {
  let last = { heap: NaN, rss: NaN }
  for (let i = 0; i < 2; i++) {
    belay.signal("SIGUSR2")
    await sleep(500)
    const m = await belay.metrics()
    last = { heap: m.get("nodejs_heap_size_used_bytes") ?? NaN, rss: m.get("process_resident_memory_bytes") ?? NaN }
  }
  return last
}

interface Rate {
  readonly perSecond: number
  /** CPU milliseconds per call, summed over `serving` (every Belay process that takes part in a call). */
  readonly cpuMs: number
}

/**
 * autocannon's rate on `belay`'s /mcp, and the CPU the processes in `serving` spent per call meanwhile: on a shared
 * machine the rate moves with the other work, the CPU a call costs much less.
 */
const rate = async (
  belay: RunningBelay,
  token: string,
  payload: string,
  serving: ReadonlyArray<RunningBelay> = [belay]
): Promise<Rate> => {
  const request = { url: `${belay.url}/mcp`, body: payload, headers: headers(token), connections: CONNECTIONS, seconds: SECONDS }
  await measure({ ...request, seconds: WARMUP }, 0)
  const cpu = () => serving.reduce((sum, b) => sum + (cpuSeconds(b.pid) ?? NaN), 0)
  const cpu0 = cpu()
  const result = await measure(request, 0)
  const cpu1 = cpu()
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`/mcp answered ${result.non2xx} non-2xx, ${result.errors} errors`)
  return { perSecond: result.requestsPerSecond, cpuMs: ((cpu1 - cpu0) * 1000) / result.total }
}

export const runCluster = async (): Promise<SectionResult> => {
  if (databaseUrl === undefined) throw new Error("the cluster section needs DATABASE_URL (a cluster runs on an external PostgreSQL)")
  const started = performance.now()
  const fake = await startFakeIrcServer({
    onConnection: (connection) =>
      Effect.gen(function*() {
        const registration = yield* connection.register()
        for (let i = 0; i < FED; i++) yield* connection.send(`:feeder!f@fake.test PRIVMSG ${registration.nick} :line ${i}`)
      })
  })
  const preload = pathToFileURL(Path.join(ROOT, "dist-bench/bench/gc-on-signal.js")).href
  const nodeFlags = ["--expose-gc", "--import", preload]
  const singleDb = await freshDatabase("cluster-single")
  const clusterDb = await freshDatabase("cluster")
  const secretKey = Crypto.randomBytes(32).toString("base64")
  const nodes: Array<RunningBelay> = []
  const startNode = async (name: string) => {
    const node = await startBelay({
      ...clusterDb.env,
      BELAY_SECRET_KEY: secretKey,
      BELAY_CLUSTER_ADDRESS: `127.0.0.1:${await Effect.runPromise(freePort)}`,
      BELAY_ADMIN_SOCKET: Path.join(clusterDb.env.BELAY_DATA_DIR!, `${name}.sock`),
      LOG_LEVEL: "warning"
    }, { nodeFlags })
    nodes.push(node)
    return node
  }
  let single: RunningBelay | undefined
  try {
    // 1. One process, and two nodes, each with the account and one network that was fed FED lines.
    single = await startBelay({ ...singleDb.env, LOG_LEVEL: "warning" }, { nodeFlags })
    const singleFixture = await createAccount(single)
    const singleId = await addNetworkWithAdmin(single, "one", fake.server.port)
    const a = await startNode("a")
    const clusterFixture = await createAccount(a)
    const b = await startNode("b")
    const clusterId = await addNetworkWithAdmin(a, "one", fake.server.port)
    await waitUntil("the networks connected", 60_000, async () =>
      connectedCount(await single!.metrics()) === 1 &&
        connectedCount(await a.metrics()) + connectedCount(await b.metrics()) === 1 ? true : undefined, 200)
    await sleep(3_000)
    const [owner, other] = connectedCount(await a.metrics()) === 1 ? [a, b] : [b, a]

    // 2. Idle memory, and the CPU each process spends idle (a cluster node's own timers share the core with the load).
    const idleCpu0 = [single, owner, other].map((b) => cpuSeconds(b.pid) ?? NaN)
    const idleT0 = performance.now()
    await sleep(12_000)
    const idleSeconds = (performance.now() - idleT0) / 1000
    const [idleSingle, idleOwner, idleOther] = [single, owner, other].map((b, i) =>
      (((cpuSeconds(b.pid) ?? NaN) - idleCpu0[i]!) / idleSeconds) * 100
    )
    const singleMemory = await idleMemory(single)
    const nodeMemory = await idleMemory(other)

    // 3. /mcp.
    const say = (id: number) => call("send_message", { networkId: id, target: "feeder", text: "bench" })
    const recent = (id: number) => call("recent_messages", { networkId: id, target: "feeder", limit: 50 })
    const list = body("tools/list", {})
    const both = [owner, other]
    const sendViaOther = await rate(other, clusterFixture.token, say(clusterId), both)
    const sendViaOwner = await rate(owner, clusterFixture.token, say(clusterId), both)
    const listCluster = await rate(other, clusterFixture.token, list)
    const listSingle = await rate(single, singleFixture.token, list)
    const recentCluster = await rate(other, clusterFixture.token, recent(clusterId), both)
    const recentOwner = await rate(owner, clusterFixture.token, recent(clusterId), both)
    const recentSingle = await rate(single, singleFixture.token, recent(singleId))

    // 4. Failover of NETWORKS networks after kill -9.
    await startNode("c")
    for (let i = 1; i < NETWORKS; i++) await addNetworkWithAdmin(a, `n${i}`, fake.server.port)
    const total = async (of: ReadonlyArray<RunningBelay>) => {
      let n = 0
      for (const node of of) n += connectedCount(await node.metrics())
      return n
    }
    await waitUntil(`${NETWORKS} networks connected`, 180_000, async () => (await total(nodes)) === NETWORKS ? true : undefined, 250)
    await sleep(3_000)
    const held = await Promise.all(nodes.map(async (node) => connectedCount(await node.metrics())))
    const victim = held.indexOf(Math.max(...held))
    const survivors = nodes.filter((_, i) => i !== victim)
    const t0 = performance.now()
    nodes[victim]!.signal("SIGKILL")
    await waitUntil("the survivors connected every network", 120_000, async () =>
      (await total(survivors)) === NETWORKS ? true : undefined, 100)
    const failoverSeconds = (performance.now() - t0) / 1000

    const figures: Array<Figure> = [
      { name: "send_message through the owner", value: sendViaOwner.perSecond, unit: "calls/s" },
      { name: "send_message through the other node", value: sendViaOther.perSecond, unit: "calls/s" },
      { name: "tools/list, one process", value: listSingle.perSecond, unit: "calls/s" },
      { name: "tools/list, a cluster node", value: listCluster.perSecond, unit: "calls/s" },
      { name: "recent_messages (limit 50), one process", value: recentSingle.perSecond, unit: "calls/s" },
      { name: "recent_messages (limit 50), the node not running the network", value: recentCluster.perSecond, unit: "calls/s" },
      { name: "recent_messages (limit 50), the node running the network", value: recentOwner.perSecond, unit: "calls/s" },
      { name: "CPU per call, send_message through the owner (both nodes)", value: sendViaOwner.cpuMs, unit: "ms" },
      { name: "CPU per call, send_message through the other node (both nodes)", value: sendViaOther.cpuMs, unit: "ms" },
      { name: "CPU per call, tools/list, one process", value: listSingle.cpuMs, unit: "ms" },
      { name: "CPU per call, tools/list, a cluster node", value: listCluster.cpuMs, unit: "ms" },
      { name: "CPU per call, recent_messages, one process", value: recentSingle.cpuMs, unit: "ms" },
      { name: "CPU per call, recent_messages on the node not running the network (both nodes)", value: recentCluster.cpuMs, unit: "ms" },
      { name: "CPU per call, recent_messages on the node running the network (both nodes)", value: recentOwner.cpuMs, unit: "ms" },
      { name: "CPU idle, one process", value: idleSingle!, unit: "% of a core" },
      { name: "CPU idle, the cluster node running the network", value: idleOwner!, unit: "% of a core" },
      { name: "CPU idle, the other cluster node", value: idleOther!, unit: "% of a core" },
      { name: "heap used idle, one process", value: singleMemory.heap / MiB, unit: "MiB" },
      { name: "heap used idle, a cluster node", value: nodeMemory.heap / MiB, unit: "MiB" },
      { name: "RSS idle, one process", value: singleMemory.rss / MiB, unit: "MiB" },
      { name: "RSS idle, a cluster node", value: nodeMemory.rss / MiB, unit: "MiB" },
      { name: `networks held by the killed node (of ${NETWORKS}, 3 nodes)`, value: held[victim]! },
      { name: `failover after kill -9: all ${NETWORKS} connected on the survivors in`, value: failoverSeconds, unit: "s" }
    ]
    const targets: Array<Target> = [
      { name: "send_message through another node ÷ through the owner", measured: sendViaOther.perSecond / sendViaOwner.perSecond, comparator: ">=", target: 0.5 },
      { name: "tools/list, cluster node ÷ one process", measured: listCluster.perSecond / listSingle.perSecond, comparator: ">=", target: 0.9 },
      { name: "recent_messages, the node not running the network ÷ one process", measured: recentCluster.perSecond / recentSingle.perSecond, comparator: ">=", target: 0.9 },
      { name: "recent_messages, the node running the network ÷ one process", measured: recentOwner.perSecond / recentSingle.perSecond, comparator: ">=", target: 0.9 },
      { name: `failover of ${NETWORKS} networks after kill -9`, measured: failoverSeconds, comparator: "<=", target: 30, unit: "s" },
      { name: "idle RSS, cluster node ÷ one process", measured: nodeMemory.rss / singleMemory.rss, comparator: "<=", target: 1.5 }
    ]
    return {
      key: "cluster",
      title: "G. Several nodes",
      seconds: (performance.now() - started) / 1000,
      figures,
      targets,
      method: [
        `One process and a two-node cluster (BELAY_CLUSTER_ADDRESS, one shared fresh database) on the same PostgreSQL, run one after the other in this section; each has the bench account and one network on a fake IRC server that fed it ${FED} private messages.`,
        `Rates: autocannon, ${CONNECTIONS} connections, ${SECONDS} s after ${WARMUP} s of warm-up, on POST /mcp; CPU per call is the user + system time of the serving Belay processes (/proc) over the measured seconds, divided by the calls answered. send_message goes to target "feeder"; the network's send queue (5 lines at once, then one every 2 s, 64 waiting) refuses most calls with a full queue, so the figure is a write call answered by the network's actor, not lines sent. tools/list was measured on the node that does not run the network, recent_messages on both: every node keeps newest pages in memory, fed by the rows other nodes store (docs/decisions/several-nodes.md "Recent pages on every node"); the node not running the network asks the owner for the status (kept 1 s).`,
        `Belay processes are all pinned to one core (the load generator has the other): a call through another node is served by two processes on that one core, so the ratio to the owner is the ratio of their CPU per call; on separate machines the hop costs latency, not the owner's CPU.`,
        `Idle: CPU over 12 s without requests (from /proc), then heap used and RSS from /metrics after two SIGUSR2 → gc() rounds; the cluster node is the one not running the network.`,
        `Failover: a third node joined, ${NETWORKS - 1} more networks were added through the admin socket, and once all ${NETWORKS} were connected, the node holding the most got SIGKILL; the time runs until the survivors' /metrics count them all connected.`
      ]
    }
  } finally {
    await Promise.all(nodes.map((node) => node.stop()))
    if (single !== undefined) await single.stop()
    await fake.close()
    await singleDb.dispose()
    await clusterDb.dispose()
  }
}
