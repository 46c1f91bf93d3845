/**
 * Section B1, ingest: the scripted fake IRC server (test/support/FakeIrcServer.ts) floods 200,000 PRIVMSG
 * lines at one connected network of a running Belay; lines stored per second, from the first line written until
 * Belay's `belay_messages_stored_total` counter has grown by the number sent, divided by plain 500-row multi-row
 * INSERTs of the same rows into a fresh database of the same kind (bench/insert-baseline.ts, on Belay's core).
 * Afterwards the stored count is checked twice: the counter grew by exactly the number sent, and (with Belay
 * stopped) the channel's buffer holds exactly that many rows.
 *
 * Concurrency rule: sequential; the flood and the counter poll run side by side in this process, every wait bounded.
 */
import { Effect } from "effect"
import { startFakeIrcServer } from "../../test/support/FakeIrcServer.js"
import { addNetworkWithCli, connectedCount, cpuSeconds, createAccount, type RunningBelay, startBelay } from "../lib/Belay.js"
import { countMessages } from "../lib/Db.js"
import { databaseMode, freshDatabase, sleep, waitUntil } from "../lib/Env.js"
import { FLOOD_TARGET, floodLine, runInsertBaseline } from "../lib/Flood.js"
import type { SectionResult } from "../lib/Report.js"

const LINES = Number(process.env.BENCH_INGEST_LINES ?? 200_000)
/** Generous: Belay must store 200k lines in this; far beyond the 0.5× target at any plausible baseline. */
const STORE_TIMEOUT_MS = 240_000
const STORED = "belay_messages_stored_total"

const stored = async (belay: RunningBelay) => (await belay.metrics()).get(STORED) ?? 0

export const runIngest = async (): Promise<SectionResult> => {
  const started = performance.now()
  const fake = await startFakeIrcServer({ timeout: "30 seconds" })
  const db = await freshDatabase("ingest")
  const baselineDb = await freshDatabase("ingest-baseline")
  const shapeDb = await freshDatabase("ingest-cte")
  try {
    const belay = await startBelay(db.env)
    let networkId: number
    let base: number
    let elapsed: number
    let floodSeconds: number
    let afterSettle: number
    let cores: number | undefined
    try {
      await createAccount(belay)
      networkId = await addNetworkWithCli(belay, "flood", fake.server.port)
      const connection = await Effect.runPromise(fake.server.nextConnection("30 seconds"))
      await Effect.runPromise(connection.register())
      await waitUntil("the network to be connected", 30_000, async () => connectedCount(await belay.metrics()) === 1 || undefined)
      // Registration lines (001…376) are stored too: wait until the counter stops moving, then count from there.
      let last = -1
      base = await waitUntil("the stored-message counter to settle", 30_000, async () => {
        const now = await stored(belay)
        const settled = now === last ? now : undefined
        last = now
        return settled
      }, 500)

      const cpu0 = cpuSeconds(belay.pid)
      const t0 = performance.now()
      const flooding = Effect.runPromise(connection.flood(LINES, floodLine)).then(() => (performance.now() - t0) / 1000)
      const target = base + LINES
      await waitUntil(`${LINES} stored messages (${STORED} ≥ ${target})`, STORE_TIMEOUT_MS, async () =>
        (await stored(belay)) >= target || undefined, 50)
      elapsed = (performance.now() - t0) / 1000
      const cpu1 = cpuSeconds(belay.pid)
      cores = cpu0 === undefined || cpu1 === undefined ? undefined : (cpu1 - cpu0) / elapsed
      floodSeconds = await flooding
      // Anything stored beyond the flood would show up within a flush interval or two.
      await sleep(1000)
      afterSettle = await stored(belay)
    } finally {
      await belay.stop()
    }
    const inBuffer = await countMessages(db.env, networkId, FLOOD_TARGET)
    const baseline = await runInsertBaseline(baselineDb.env, LINES, 300_000)
    if (baseline.rows !== LINES) throw new Error(`baseline stored ${baseline.rows} rows, expected ${LINES}`)
    // Informative: Belay's own statement shape, same rows, same kind of fresh database.
    const shape = await runInsertBaseline(shapeDb.env, LINES, 300_000, "cte")

    const belayRate = LINES / elapsed
    const baselineRate = baseline.rows / baseline.seconds
    const ratio = belayRate / baselineRate
    return {
      key: "ingest",
      title: "B1. IRC ingest",
      seconds: (performance.now() - started) / 1000,
      figures: [
        { name: "lines flooded", value: LINES },
        { name: "fake server finished writing after", value: floodSeconds, unit: "s" },
        { name: "Belay: first line sent → all stored", value: elapsed, unit: "s" },
        { name: "Belay: lines stored per second", value: belayRate },
        ...(cores === undefined ? [] : [{ name: "Belay CPU while ingesting (1.0 = one core busy)", value: cores, unit: "cores" }]),
        { name: "counter growth (1 s after reaching the target)", value: afterSettle - base },
        { name: "rows in the channel buffer (SQL, Belay stopped)", value: inBuffer },
        { name: "baseline: 500-row INSERTs, seconds", value: baseline.seconds, unit: "s" },
        { name: "baseline: rows per second", value: baselineRate },
        { name: "ratio Belay ÷ baseline", value: ratio },
        { name: "for comparison: 500-row batches in MessageWriter's CTE shape, rows per second", value: shape.rows / shape.seconds }
      ],
      targets: [
        { name: "ingest rate ÷ 500-row INSERT rate", measured: ratio, comparator: ">=", target: 0.5 },
        { name: "stored ÷ sent (counter)", measured: (afterSettle - base) / LINES, comparator: "==", target: 1 },
        { name: "stored ÷ sent (rows in buffer)", measured: inBuffer / LINES, comparator: "==", target: 1 }
      ],
      method: [
        `Belay ran as \`node bin/belay serve\` on ${databaseMode} (fresh data dir), one network added with \`belay network add\` pointing at the fake IRC server (test/support/FakeIrcServer.ts, in the bench process on the load core), which registered it.`,
        `After registration the stored-message counter was left to settle; then the fake wrote ${LINES.toLocaleString("en-US")} \`PRIVMSG ${FLOOD_TARGET}\` lines (corpus text, 50 nicks) as fast as the socket took them. The clock ran from the first write until GET /metrics (polled every 50 ms) showed \`${STORED}\` grown by the number sent.`,
        "Baseline: bench/insert-baseline.ts on Belay's core, a fresh database of the same kind opened through the app's Database layer (same schema and indexes), the same rows (nick, text, raw line, kind, buffer) written with sequential `sql.insert` statements of 500 rows.",
        "For comparison (no target): the same batches in MessageWriter.ts's statement shape (INSERT … RETURNING in a CTE that updates buffers.last_message_at), run the same way, separating the statement's cost from the pipeline's.",
        "Stored = sent is checked on the counter (1 s after the target, no extra rows) and by counting the buffer's rows with SQL once Belay stopped."
      ]
    }
  } finally {
    await fake.close()
    await db.dispose()
    await baselineDb.dispose()
    await shapeDb.dispose()
  }
}
