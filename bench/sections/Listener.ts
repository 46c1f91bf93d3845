/**
 * Section F, listener: the IRC client listener (BELAY_IRC_LISTEN) at the scale of issue point 9 — BENCH_LISTENER_CLIENTS
 * (default 100) IRC clients bound to BENCH_LISTENER_NETWORKS (default 10) networks, each network connected to the
 * scripted fake IRC server (test/support/FakeIrcServer.ts), against a bare Node fan-out (bench/bare-fanout.ts) doing
 * the same delivery with nothing else, in the same run.
 *
 * 1. Memory per idle client: Belay's heap after full collections, RSS and PSS with no IRC client, then with
 *    BENCH_LISTENER_IDLE (default 1,000) clients signed in, bound and idle; the difference ÷ the count. Baseline: the
 *    bare server holding as many idle TCP sockets (heap and RSS the same way).
 * 2. The flood: the fake writes BENCH_LISTENER_LINES (default 20,000) PRIVMSG lines in all, an equal share on each
 *    network, as fast as the sockets take them. Every client must get every line of its network, in order: each line
 *    carries its sequence number, and a client counts a line only if it is the next one expected (a gap or a reversal
 *    makes it fail). Belay's CPU (its own process, /proc) from the first line written until the last client has its
 *    last line, ÷ the lines delivered (lines × clients per network). Baseline: the bare fan-out, the same lines from
 *    the bench to the same number of sockets, its CPU ÷ its deliveries.
 * 3. For scale: the same flood again with no IRC client connected (the actors' parsing and storage alone), so that
 *    what the listener adds per delivered line can be told apart from ingest.
 *
 * The clients are this process (the load core); Belay and the baseline each run alone on the server core.
 *
 * Concurrency rule: sequential phases; within a phase the floods and the clients' socket callbacks run side by side on
 * this event loop, every wait bounded.
 */
import * as Child from "node:child_process"
import * as Net from "node:net"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { Effect } from "effect"
import { freePort } from "../../test/support/BelayProcess.js"
import { type FakeIrcConnection, startFakeIrcServer } from "../../test/support/FakeIrcServer.js"
import { ACCOUNT, addNetworkWithAdmin, connectedCount, cpuSeconds, createAccount, type RunningBelay, startBelay } from "../lib/Belay.js"
import { nickOf, textOf } from "../lib/Corpus.js"
import { databaseMode, freshDatabase, onCore, ROOT, SERVER_CORE, sleep, waitUntil } from "../lib/Env.js"
import { belayMemory } from "../lib/Memory.js"
import type { SectionResult } from "../lib/Report.js"

const CLIENTS = Number(process.env.BENCH_LISTENER_CLIENTS ?? 100)
const NETWORKS = Number(process.env.BENCH_LISTENER_NETWORKS ?? 10)
const LINES = Number(process.env.BENCH_LISTENER_LINES ?? 20_000)
const IDLE = Math.max(CLIENTS, Number(process.env.BENCH_LISTENER_IDLE ?? 1_000))
const PER_NETWORK = Math.floor(LINES / NETWORKS)
const CLIENTS_PER_NETWORK = Math.floor(CLIENTS / NETWORKS)
const TARGET = "#flood"
/** The listener lets 10 connections of one address register at once. */
const OPEN_BATCH = 10
/** Long enough for the database pool's idle connections (10 s) to close before each memory reading. */
const IDLE_SETTLE_MS = 12_000
const DELIVERY_TIMEOUT_MS = 300_000
const KiB = 1024
const MiB = 1024 * 1024

/** Line `seq` of a network's flood; the text starts with the sequence number. */
const floodLine = (seq: number) => `:${nickOf(seq)}!u@bench.test PRIVMSG ${TARGET} :${seq} ${textOf(seq)}`

/**
 * One reader of a line stream: counts the flood's PRIVMSGs only while each is the next expected (the first gap or
 * reversal is kept and the client stops counting), and resolves `waitFor` on a line matching a predicate.
 */
class Reader {
  received = 0
  broken: string | undefined
  done: number = NaN
  expected = 0
  private pending = ""
  private waiters: Array<{ readonly test: (line: string) => boolean; readonly resolve: () => void }> = []
  constructor(readonly socket: Net.Socket, private total: number) {
    socket.setEncoding("utf8")
    socket.on("data", (chunk: string) => this.push(chunk))
    socket.on("error", () => {})
  }
  private push(chunk: string) {
    const data = this.pending + chunk
    let start = 0
    for (;;) {
      const lf = data.indexOf("\n", start)
      if (lf === -1) break
      this.line(data.slice(start, data.charCodeAt(lf - 1) === 13 ? lf - 1 : lf))
      start = lf + 1
    }
    this.pending = data.slice(start)
  }
  private line(line: string) {
    const at = line.indexOf(` PRIVMSG ${TARGET} :`)
    if (at !== -1) {
      const text = line.slice(at + TARGET.length + 11)
      const seq = Number(text.slice(0, text.indexOf(" ")))
      if (this.broken === undefined) {
        if (seq === this.expected) {
          this.expected++
          if (++this.received === this.total) this.done = performance.now()
        } else {
          this.broken = `expected line ${this.expected}, got ${seq}`
        }
      }
      return
    }
    if (this.waiters.length > 0) {
      this.waiters = this.waiters.filter((w) => {
        if (!w.test(line)) return true
        w.resolve()
        return false
      })
    }
  }
  waitFor(test: (line: string) => boolean, what: string, timeoutMs = 30_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs)
      this.waiters.push({ test, resolve: () => (clearTimeout(timer), resolve()) })
      this.socket.once("close", () => reject(new Error(`closed while waiting for ${what}`)))
    })
  }
  reset(total: number) {
    this.total = total
    this.received = 0
    this.expected = 0
    this.done = NaN
    this.broken = undefined
  }
}

const connect = (port: number) =>
  new Promise<Net.Socket>((resolve, reject) => {
    const socket = Net.connect({ host: "127.0.0.1", port, noDelay: true }, () => resolve(socket))
    socket.once("error", reject)
  })

/** A client of Belay's listener, signed in with the API token, bound to `network`, past its welcome. */
const belayClient = async (port: number, token: string, network: string, total: number) => {
  const reader = new Reader(await connect(port), total)
  const registered = reader.waitFor((l) => /^(:\S+ )?PONG .*registered$/.test(l), "the welcome")
  reader.socket.write(
    [
      "CAP LS 302",
      `PASS ${ACCOUNT}/${network}:${token}`,
      "NICK bench",
      "USER bench 0 * :Bench",
      "CAP REQ :server-time message-tags batch echo-message",
      "CAP END",
      "PING :registered"
    ].map((l) => `${l}\r\n`).join("")
  )
  await registered
  return reader
}

/** A client of the bare fan-out. */
const bareClient = async (port: number, network: string, total: number) => {
  const reader = new Reader(await connect(port), total)
  const ok = reader.waitFor((l) => l === "OK", "OK")
  reader.socket.write(`CLIENT ${network}\n`)
  await ok
  return reader
}

/** Opens `count` clients, OPEN_BATCH at a time, client i on network i mod NETWORKS. */
const openClients = async (count: number, open: (network: number) => Promise<Reader>) => {
  const out: Array<Reader> = []
  for (let i = 0; i < count; i += OPEN_BATCH) {
    out.push(...(await Promise.all(Array.from({ length: Math.min(OPEN_BATCH, count - i) }, (_, j) => open((i + j) % NETWORKS)))))
  }
  return out
}

const closeAll = async (readers: ReadonlyArray<Reader>) => {
  await Promise.all(readers.map((r) =>
    new Promise<void>((resolve) => {
      if (r.socket.destroyed) return resolve()
      r.socket.once("close", () => resolve())
      r.socket.end("QUIT\r\n")
      setTimeout(() => r.socket.destroy(), 2000).unref()
    })
  ))
}

interface Bare {
  readonly port: number
  /** Its heap after full collections, RSS, and CPU seconds so far (process.cpuUsage: finer than /proc's ticks). */
  readonly memory: () => Promise<{ heapUsed: number; rss: number; cpuSeconds: number }>
  readonly stop: () => void
}

const startBare = async (): Promise<Bare> => {
  const script = Path.join(ROOT, "dist-bench/bench/bare-fanout.js")
  const [command, argv] = onCore(SERVER_CORE, [process.execPath, "--expose-gc", script])
  const child = Child.spawn(command, argv, { stdio: ["ignore", "pipe", "inherit"] })
  const port = await new Promise<number>((resolve, reject) => {
    let out = ""
    child.stdout!.on("data", (c: Buffer) => {
      out += c.toString("utf8")
      const match = /listening (\d+)/.exec(out)
      if (match) resolve(Number(match[1]))
    })
    child.once("exit", (code) => reject(new Error(`bare fan-out exited ${code}`)))
  })
  const memory = async () => {
    const socket = await connect(port)
    socket.write("MEM\n")
    let data = ""
    socket.setEncoding("utf8")
    socket.on("data", (c: string) => (data += c))
    await new Promise((resolve) => socket.once("end", resolve))
    const stat = JSON.parse(data) as { heapUsed: number; rss: number; cpu: { user: number; system: number } }
    return { heapUsed: stat.heapUsed, rss: stat.rss, cpuSeconds: (stat.cpu.user + stat.cpu.system) / 1e6 }
  }
  return { port, memory, stop: () => child.kill("SIGTERM") }
}

/** Writes `perNetwork` lines on every upstream at once; resolves when all are written. */
type Flood = (perNetwork: number, from: number) => Promise<void>

/** Floods, then waits until every reader has its lines; Belay's (or the baseline's) CPU and the time it took. */
const measureFlood = async (
  cpuOf: () => Promise<number | undefined>,
  readers: ReadonlyArray<Reader>,
  flood: Flood,
  from: number,
  what: string
) => {
  for (const r of readers) r.reset(PER_NETWORK)
  const cpu0 = await cpuOf()
  const t0 = performance.now()
  const written = flood(PER_NETWORK, from)
  await waitUntil(`${what}: every line to every client`, DELIVERY_TIMEOUT_MS, async () => {
    const broken = readers.find((r) => r.broken !== undefined || r.socket.destroyed)
    if (broken !== undefined) throw new Error(`${what}: a client ${broken.broken ?? "was closed"} (${broken.received} lines in order)`)
    return readers.every((r) => !Number.isNaN(r.done)) || undefined
  }, 20)
  const seconds = (performance.now() - t0) / 1000
  const cpu1 = await cpuOf()
  await written
  const inOrder = readers.filter((r) => r.broken === undefined && r.received === PER_NETWORK).length
  return { seconds, cpu: cpu0 === undefined || cpu1 === undefined ? NaN : cpu1 - cpu0, inOrder }
}

export const runListener = async (): Promise<SectionResult> => {
  const started = performance.now()
  if (CLIENTS % NETWORKS !== 0 || LINES % NETWORKS !== 0) throw new Error("clients and lines must divide evenly among the networks")
  const fake = await startFakeIrcServer({ timeout: "30 seconds" })
  const db = await freshDatabase("listener")
  const preload = pathToFileURL(Path.join(ROOT, "dist-bench/bench/gc-on-signal.js")).href
  const readers: Array<Reader> = []
  let bare: Bare | undefined
  try {
    const ircPort = await Effect.runPromise(freePort)
    const belay: RunningBelay = await startBelay(
      { ...db.env, BELAY_IRC_LISTEN: `127.0.0.1:${ircPort}` },
      { nodeFlags: ["--expose-gc", "--import", preload] }
    )
    let idle: { before: Awaited<ReturnType<typeof belayMemory>>; after: Awaited<ReturnType<typeof belayMemory>> }
    let withClients: Awaited<ReturnType<typeof measureFlood>>
    let ingestOnly: Awaited<ReturnType<typeof measureFlood>>
    try {
      const { token } = await createAccount(belay)
      const connections: Array<FakeIrcConnection> = []
      for (let n = 0; n < NETWORKS; n++) {
        await addNetworkWithAdmin(belay, `net${n}`, fake.server.port)
        const connection = await Effect.runPromise(fake.server.nextConnection("30 seconds"))
        await Effect.runPromise(connection.register())
        connections.push(connection)
      }
      await waitUntil("every network connected", 60_000, async () => connectedCount(await belay.metrics()) === NETWORKS || undefined)
      const flood: Flood = async (perNetwork, from) => {
        await Promise.all(connections.map((c) => Effect.runPromise(c.flood(perNetwork, (i) => floodLine(from + i)))))
      }

      // 1. Memory per idle client.
      await sleep(IDLE_SETTLE_MS)
      const before = await belayMemory(belay)
      readers.push(...(await openClients(IDLE, (n) => belayClient(ircPort, token, `net${n}`, PER_NETWORK))))
      await sleep(IDLE_SETTLE_MS)
      const after = await belayMemory(belay)
      idle = { before, after }
      const extra = readers.splice(CLIENTS)
      await closeAll(extra)

      // 2. The flood to CLIENTS clients; its lines are numbered 0…PER_NETWORK−1 on each network.
      withClients = await measureFlood(async () => cpuSeconds(belay.pid), readers, flood, 0, "Belay")

      // 3. The same flood with no client: ingest alone (numbers PER_NETWORK… so nothing repeats).
      await closeAll(readers.splice(0))
      await sleep(2000)
      const storedMetric = "belay_messages_stored_total"
      const target = ((await belay.metrics()).get(storedMetric) ?? 0) + PER_NETWORK * NETWORKS
      const cpu0 = cpuSeconds(belay.pid)
      const t0 = performance.now()
      await flood(PER_NETWORK, PER_NETWORK)
      await waitUntil("the second flood stored", DELIVERY_TIMEOUT_MS, async () =>
        ((await belay.metrics()).get(storedMetric) ?? 0) >= target || undefined, 20)
      ingestOnly = { seconds: (performance.now() - t0) / 1000, cpu: (cpuSeconds(belay.pid) ?? NaN) - (cpu0 ?? NaN), inOrder: 0 }
    } finally {
      await closeAll(readers.splice(0))
      await belay.stop()
    }

    // Baseline: the bare fan-out, the same clients and lines.
    bare = await startBare()
    const bareBefore = await bare.memory()
    const bareReaders = await openClients(IDLE, (n) => bareClient(bare!.port, `net${n}`, PER_NETWORK))
    await sleep(2000)
    const bareAfter = await bare.memory()
    await closeAll(bareReaders.splice(CLIENTS))
    const upstreams: Array<Net.Socket> = []
    for (let n = 0; n < NETWORKS; n++) {
      const socket = await connect(bare.port)
      socket.write(`UP net${n}\n`)
      upstreams.push(socket)
    }
    await sleep(200)
    const bareFlood: Flood = async (perNetwork, from) => {
      await Promise.all(upstreams.map((socket) =>
        new Promise<void>((resolve) => {
          let i = 0
          const pump = () => {
            while (i < perNetwork) {
              let chunk = ""
              while (i < perNetwork && chunk.length < 8 * KiB) chunk += `${floodLine(from + i++)}\r\n`
              if (!socket.write(chunk)) return void socket.once("drain", pump)
            }
            resolve()
          }
          pump()
        })
      ))
    }
    const bareStat = bare
    const baseline = await measureFlood(async () => (await bareStat.memory()).cpuSeconds, bareReaders, bareFlood, 0, "bare fan-out")
    await closeAll(bareReaders)
    for (const s of upstreams) s.destroy()

    const delivered = PER_NETWORK * CLIENTS
    const belayPerLine = withClients.cpu / delivered
    const barePerLine = baseline.cpu / delivered
    const listenerPerLine = (withClients.cpu - ingestOnly.cpu) / delivered
    const perClient = (a: number, b: number) => (b - a) / IDLE / KiB
    const belayRssPerClient = perClient(idle.before.rss, idle.after.rss)
    const bareRssPerClient = perClient(bareBefore.rss, bareAfter.rss)
    return {
      key: "listener",
      title: "F. IRC client listener",
      seconds: (performance.now() - started) / 1000,
      figures: [
        { name: "networks, clients (bound, evenly), lines flooded in all", value: `${NETWORKS}, ${CLIENTS}, ${LINES.toLocaleString("en-US")}` },
        { name: "lines delivered (lines × clients of their network)", value: delivered },
        { name: "clients with every line of their network, in order", value: withClients.inOrder },
        { name: "Belay: first line written → every client has every line", value: withClients.seconds, unit: "s" },
        { name: "Belay: CPU during that", value: withClients.cpu, unit: "s" },
        { name: "Belay: CPU per delivered line", value: belayPerLine * 1e6, unit: "µs" },
        { name: "Belay, no client: the same flood stored, in", value: ingestOnly.seconds, unit: "s" },
        { name: "Belay, no client: CPU", value: ingestOnly.cpu, unit: "s" },
        { name: "Belay: CPU per delivered line beyond ingest (with − without clients)", value: listenerPerLine * 1e6, unit: "µs" },
        { name: "bare fan-out: first line written → every client has every line", value: baseline.seconds, unit: "s" },
        { name: "bare fan-out: CPU per delivered line", value: barePerLine * 1e6, unit: "µs" },
        { name: "bare fan-out: clients with every line, in order", value: baseline.inOrder },
        { name: "ratio Belay ÷ bare fan-out, CPU per delivered line", value: belayPerLine / barePerLine },
        { name: `idle clients for the memory reading`, value: IDLE },
        { name: "per idle client: Belay heap used (after GC)", value: perClient(idle.before.heap, idle.after.heap), unit: "KiB" },
        { name: "per idle client: Belay RSS", value: belayRssPerClient, unit: "KiB" },
        { name: "per idle client: service PSS (Belay + PostgreSQL)", value: perClient(idle.before.belayPss + idle.before.postgresPss, idle.after.belayPss + idle.after.postgresPss), unit: "KiB" },
        { name: "per idle socket: bare Node heap used (after GC)", value: perClient(bareBefore.heapUsed, bareAfter.heapUsed), unit: "KiB" },
        { name: "per idle socket: bare Node RSS", value: bareRssPerClient, unit: "KiB" },
        { name: "ratio Belay ÷ bare, RSS per idle connection", value: belayRssPerClient / bareRssPerClient },
        { name: "Belay heap used with no IRC client (after GC)", value: idle.before.heap / MiB, unit: "MiB" }
      ],
      targets: [
        { name: "Belay: clients with every line in order ÷ clients", measured: withClients.inOrder / CLIENTS, comparator: "==", target: 1 },
        { name: "bare fan-out: clients with every line in order ÷ clients", measured: baseline.inOrder / CLIENTS, comparator: "==", target: 1 }
      ],
      method: [
        `Belay ran as \`node --expose-gc --import bench/gc-on-signal.js bin/belay serve\` on ${databaseMode} (fresh data dir) with BELAY_IRC_LISTEN on a loopback port (plaintext, as loopback allows); ${NETWORKS} networks of one account, added through the admin socket, each connected to the fake IRC server (in the bench process, load core), which registered it.`,
        `Clients (this process): \`CAP LS 302\`, \`PASS ${ACCOUNT}/net<n>:<read-write API token>\`, NICK, USER, \`CAP REQ :server-time message-tags batch echo-message\`, CAP END, then PING, counted as signed in at its PONG (after the welcome); ${OPEN_BATCH} at a time (the listener's limit of registering connections per address); client i bound to network i mod ${NETWORKS}.`,
        `Memory: read ${IDLE_SETTLE_MS / 1000} s after the networks connected with no IRC client, and ${IDLE_SETTLE_MS / 1000} s after ${IDLE} clients were signed in and idle, each after two SIGUSR2-and-collect rounds (heap and RSS from GET /metrics; PSS of Belay and its PostgreSQL processes from /proc, bench/lib/Memory.ts); per client = (after − before) ÷ ${IDLE}. Then all but ${CLIENTS} left (QUIT).`,
        `Flood: each network's fake connection wrote ${PER_NETWORK.toLocaleString("en-US")} \`PRIVMSG ${TARGET}\` lines (corpus text after a sequence number), all networks at once, as fast as the sockets took them. A client counts a line only if its number is the next expected; the clock and Belay's CPU (utime + stime of its process, /proc/<pid>/stat; PostgreSQL's processes not included) run from the first write until every client has all ${PER_NETWORK.toLocaleString("en-US")} lines of its network. Per delivered line = CPU ÷ (${PER_NETWORK.toLocaleString("en-US")} × ${CLIENTS}).`,
        `Ingest alone: the ${CLIENTS} clients quit, and the same flood (new numbers) was written again with no IRC client; Belay's CPU until \`belay_messages_stored_total\` grew by the lines written (polled every 20 ms). "Beyond ingest" = (CPU with clients − CPU without) ÷ lines delivered: what the listener itself costs per line, roughly (the two floods ran at different moments of a shared machine).`,
        `Baseline: bench/bare-fanout.ts, a bare node:net server on Belay's core, started after Belay stopped. The same ${IDLE} client sockets held idle for its memory reading (heap after global.gc(), RSS, from process.memoryUsage()), then ${CLIENTS} of them received the same flood written by this process on ${NETWORKS} upstream sockets; it splits nothing but the last line end of each read and writes the complete lines to each client of the network, one write per read. Its CPU from process.cpuUsage() (asked over a socket before and after; the asking costs it microseconds), per delivered line as for Belay.`
      ]
    }
  } finally {
    bare?.stop()
    await fake.close()
    await db.dispose()
  }
}
