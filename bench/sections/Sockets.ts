/**
 * Section C, sockets: the browser WebSocket (`/api/ws`) at scale. One member holds BENCH_SOCKETS (default 1,000) open
 * sockets, all opened with one password-sign-in token (`POST /api/auth/login/token`), while one network of theirs
 * is connected to the scripted fake IRC server (test/support/FakeIrcServer.ts).
 *
 * 1. Memory per socket: what the service holds (bench/lib/Memory.ts: Belay's RSS and PSS, the embedded PostgreSQL's
 *    PSS; heap after full collections through bench/gc-on-signal.ts) with no socket open, then with every socket open
 *    and idle; the difference divided by the number of sockets.
 * 2. Fan-out latency: the fake writes BENCH_SOCKET_LINES (default 200) PRIVMSG lines at a steady BENCH_SOCKET_RATE
 *    (default 20 a second). For each line: when the fake wrote it; when it became visible to a reader of the database
 *    (the bench polls `messages` on a connection of its own every POLL_MS, as recent_messages would read it); when the
 *    first socket had it; when every socket had it. p50 and p99 over the lines.
 *
 * The sockets' client side is this process (the load core): its own time to read 1,000 frames per line is part of
 * "every socket had it", so that figure is an upper bound of Belay's.
 *
 * Concurrency rule: sequential; the line sender, the store poll and the sockets' frame callbacks run side by side on
 * this event loop, every wait bounded.
 */
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { Effect } from "effect"
import pg from "pg"
import WebSocket from "ws"
import { startFakeIrcServer } from "../../test/support/FakeIrcServer.js"
import { ACCOUNT, addNetworkWithCli, connectedCount, createAccount, type RunningBelay, startBelay } from "../lib/Belay.js"
import { runningDatabaseUrl } from "../lib/Db.js"
import { databaseMode, freshDatabase, ROOT, sleep, waitUntil } from "../lib/Env.js"
import { belayMemory } from "../lib/Memory.js"
import type { Figure, SectionResult } from "../lib/Report.js"
import { percentile } from "../lib/Stats.js"

const SOCKETS = Number(process.env.BENCH_SOCKETS ?? 1_000)
const LINES = Number(process.env.BENCH_SOCKET_LINES ?? 200)
const RATE = Number(process.env.BENCH_SOCKET_RATE ?? 20)
/** The password createAccount gives the bench's member. */
const PASSWORD = "bench-password-0123456789"
const TARGET = "#sockets"
/** Sockets opened at once. */
const OPEN_BATCH = 50
/** How often the store poll reads `messages`. */
const POLL_MS = 2
/** Long enough for the database pool's idle connections (10 s) to close before each memory reading. */
const IDLE_SETTLE_MS = 12_000
/** Every line must reach every socket within this after the last was sent. */
const DELIVERY_TIMEOUT_MS = 60_000
const KiB = 1024
const MiB = 1024 * 1024

/** The text of line `i`; the marker lets a frame be matched without parsing it. */
const MARK = "socket-bench-line-"
const MARK_RE = new RegExp(`${MARK}(\\d+)\\b`)
const lineText = (i: number) => `${MARK}${i} the quick brown fox jumps over the lazy dog`

interface Line {
  sent: number
  stored: number
  first: number
  all: number
  received: number
}

export const runSockets = async (): Promise<SectionResult> => {
  const started = performance.now()
  const fake = await startFakeIrcServer({ timeout: "30 seconds" })
  const db = await freshDatabase("sockets")
  const preload = pathToFileURL(Path.join(ROOT, "dist-bench/bench/gc-on-signal.js")).href
  const sockets: Array<WebSocket> = []
  const poller = new pg.Client({ connectionString: runningDatabaseUrl(db.env) })
  let polling = false
  try {
    const belay = await startBelay(db.env, { nodeFlags: ["--expose-gc", "--import", preload] })
    try {
      await createAccount(belay)
      await addNetworkWithCli(belay, "sockets", fake.server.port)
      const connection = await Effect.runPromise(fake.server.nextConnection("30 seconds"))
      await Effect.runPromise(connection.register())
      await waitUntil("the network to be connected", 30_000, async () => connectedCount(await belay.metrics()) === 1 || undefined)
      const login = await fetch(`${belay.url}/api/auth/login/token`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ username: ACCOUNT, password: PASSWORD })
      })
      if (login.status !== 200) throw new Error(`password sign-in answered ${login.status}: ${await login.text()}`)
      const token = ((await login.json()) as { access_token: string }).access_token

      await sleep(IDLE_SETTLE_MS)
      const before = await belayMemory(belay)

      // Open every socket; each counts as open once its hello frame arrived.
      const lines: Array<Line> = Array.from({ length: LINES }, () => ({ sent: NaN, stored: NaN, first: NaN, all: NaN, received: 0 }))
      const wsUrl = `${belay.url.replace(/^http/, "ws")}/api/ws`
      const open = (): Promise<WebSocket> =>
        new Promise((resolve, reject) => {
          const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false })
          let hello = false
          ws.on("message", (data: Buffer) => {
            const text = data.toString("utf8")
            if (!hello) {
              if (text.includes("\"type\":\"hello\"")) {
                hello = true
                resolve(ws)
              }
              return
            }
            const match = MARK_RE.exec(text)
            if (match === null) return
            const line = lines[Number(match[1])]
            if (line === undefined) return
            const now = performance.now()
            if (line.received === 0) line.first = now
            if (++line.received === SOCKETS) line.all = now
          })
          ws.once("unexpected-response", (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)))
          ws.once("error", reject)
          ws.once("close", (code) => {
            if (!hello) reject(new Error(`socket closed before hello: ${code}`))
          })
        })
      const openStarted = performance.now()
      for (let i = 0; i < SOCKETS; i += OPEN_BATCH) {
        sockets.push(...(await Promise.all(Array.from({ length: Math.min(OPEN_BATCH, SOCKETS - i) }, open))))
      }
      const openSeconds = (performance.now() - openStarted) / 1000
      await sleep(IDLE_SETTLE_MS)
      const after = await belayMemory(belay)
      const stillOpen = sockets.filter((ws) => ws.readyState === WebSocket.OPEN).length

      // The store poll: the newest rows of `messages`, read as any reader would see them.
      await poller.connect()
      const floor = await poller.query<{ id: string | null }>("SELECT max(id)::text AS id FROM messages")
      let lastId = floor.rows[0]?.id ?? "0"
      polling = true
      const poll = (async () => {
        while (polling) {
          const rows = await poller.query<{ id: string; text: string }>(
            "SELECT id::text AS id, text FROM messages WHERE id > $1::int8 ORDER BY id",
            [lastId]
          )
          const now = performance.now()
          for (const row of rows.rows) {
            lastId = row.id
            const match = MARK_RE.exec(row.text)
            const line = match === null ? undefined : lines[Number(match[1])]
            if (line !== undefined && Number.isNaN(line.stored)) line.stored = now
          }
          await sleep(POLL_MS)
        }
      })()

      const interval = 1000 / RATE
      const sendStarted = performance.now()
      for (let i = 0; i < LINES; i++) {
        const due = sendStarted + i * interval
        const wait = due - performance.now()
        if (wait > 0) await sleep(wait)
        lines[i]!.sent = performance.now()
        await Effect.runPromise(connection.send(`:talker!u@bench.test PRIVMSG ${TARGET} :${lineText(i)}`))
      }
      await waitUntil("every line on every socket, and stored", DELIVERY_TIMEOUT_MS, async () =>
        lines.every((l) => !Number.isNaN(l.all) && !Number.isNaN(l.stored)) || undefined, 20)
      polling = false
      await poll

      const ms = (pick: (l: Line) => number) => lines.map(pick)
      const stats = (name: string, values: ReadonlyArray<number>): Array<Figure> => [
        { name: `${name}, p50`, value: percentile(values, 50), unit: "ms" },
        { name: `${name}, p99`, value: percentile(values, 99), unit: "ms" }
      ]
      const stored = ms((l) => l.stored - l.sent)
      const first = ms((l) => l.first - l.sent)
      const all = ms((l) => l.all - l.sent)
      const fanOut = ms((l) => l.all - l.stored)
      const perSocket = (a: number, b: number) => (b - a) / SOCKETS / KiB
      return {
        key: "sockets",
        title: "C. Browser WebSockets",
        seconds: (performance.now() - started) / 1000,
        figures: [
          { name: "sockets open (one member, one password-sign-in token)", value: stillOpen },
          { name: "opened (and hello received) in", value: openSeconds, unit: "s" },
          { name: "service PSS (Belay + PostgreSQL), no socket", value: (before.belayPss + before.postgresPss) / MiB, unit: "MiB" },
          { name: `service PSS (Belay + PostgreSQL), ${SOCKETS} sockets`, value: (after.belayPss + after.postgresPss) / MiB, unit: "MiB" },
          { name: "per socket: service PSS", value: perSocket(before.belayPss + before.postgresPss, after.belayPss + after.postgresPss), unit: "KiB" },
          { name: "per socket: Belay RSS", value: perSocket(before.rss, after.rss), unit: "KiB" },
          { name: "per socket: Belay heap used (after GC)", value: perSocket(before.heap, after.heap), unit: "KiB" },
          { name: "lines sent", value: LINES },
          ...stats("line → stored (visible to a reader)", stored),
          ...stats("line → first socket has it", first),
          ...stats(`line → all ${SOCKETS} sockets have it`, all),
          ...stats("stored → all sockets have it", fanOut)
        ],
        targets: [],
        method: [
          `Belay ran as \`node --expose-gc --import bench/gc-on-signal.js bin/belay serve\` on ${databaseMode} (fresh data dir); the member's one network pointed at the fake IRC server (in the bench process, load core), which registered it. The member signed in with \`POST /api/auth/login/token\` and opened ${SOCKETS} sockets to \`/api/ws\` with that token (${OPEN_BATCH} at a time, each counted once its hello frame arrived), from this process with the \`ws\` package.`,
          `Memory: read ${IDLE_SETTLE_MS / 1000} s after the last request with no socket open, and again ${IDLE_SETTLE_MS / 1000} s after the last socket opened (idle: the pool's connections closed), each after two SIGUSR2-and-collect rounds; Belay's RSS and heap from GET /metrics, PSS of Belay and its PostgreSQL processes from /proc/<pid>/smaps_rollup (bench/lib/Memory.ts). Per socket = (after − before) ÷ ${SOCKETS}.`,
          `Latency: the fake wrote ${LINES} \`PRIVMSG ${TARGET}\` lines at a steady ${RATE} a second. Per line: "stored" is when a poll of \`messages\` (its own connection, every ${POLL_MS} ms plus the query's time) first returned the row, as recent_messages would read it; "first" and "all" are when the first and the ${SOCKETS}th socket received its frame (matched by a marker in the text). Sockets get a message only after its batch is committed (MessageWriter's 100 ms / 500 rows window), so "stored" includes the batch wait.`,
          `The sockets' client side is this one process: reading ${SOCKETS} frames per line is part of "all sockets", which is therefore an upper bound of Belay's own fan-out.`
        ]
      }
    } finally {
      polling = false
      for (const ws of sockets) ws.terminate()
      await poller.end().catch(() => undefined)
      await belay.stop()
    }
  } finally {
    await fake.close()
    await db.dispose()
  }
}
