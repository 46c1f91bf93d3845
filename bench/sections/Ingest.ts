/**
 * Section B1, ingest: the scripted fake IRC server (test/support/FakeIrcServer.ts) floods 200,000 PRIVMSG
 * lines at one connected network of a running Belay; lines stored per second, from the first line written until
 * Belay's `belay_messages_stored_total` counter has grown by the number sent, divided by plain 500-row multi-row
 * INSERTs of the same rows into a fresh database of the same kind (bench/insert-baseline.ts, on Belay's core).
 * Afterwards the stored count is checked twice: the counter grew by exactly the number sent, and (with Belay
 * stopped) the channel's buffer holds exactly that many rows. Then the same flood with pruning: a second Belay with
 * BELAY_HISTORY_RETENTION_DAYS set, whose retention job deletes old history while the flood is stored; its rate over
 * the first one's is the figure 'with pruning' (target ≥ 0.9).
 *
 * Concurrency rule: sequential; the flood and the counter poll run side by side in this process, every wait bounded.
 */
import { Effect } from "effect"
import { startFakeIrcServer } from "../../test/support/FakeIrcServer.js"
import { addNetworkWithCli, connectedCount, cpuSeconds, createAccount, type RunningBelay, startBelay } from "../lib/Belay.js"
import { SqlClient } from "@effect/sql"
import { countMessages, withDatabase, withRunningDatabase } from "../lib/Db.js"
import { databaseMode, freshDatabase, sleep, waitUntil } from "../lib/Env.js"
import { FLOOD_TARGET, floodLine, runInsertBaseline } from "../lib/Flood.js"
import type { SectionResult } from "../lib/Report.js"

const LINES = Number(process.env.BENCH_INGEST_LINES ?? 200_000)
/** Generous: Belay must store 200k lines in this; far beyond the 0.5× target at any plausible baseline. */
const STORE_TIMEOUT_MS = 240_000
const STORED = "belay_messages_stored_total"
/** Old rows for the retention job to prune during the flood: at its pace (500 a window, resting 19 times the window's time, 20 ms at least) more than the flood lasts. */
const OLD_LINES = Number(process.env.BENCH_INGEST_OLD_LINES ?? 600_000)

const stored = async (belay: RunningBelay) => (await belay.metrics()).get(STORED) ?? 0

interface Flooded {
  readonly networkId: number
  readonly base: number
  readonly elapsed: number
  readonly floodSeconds: number
  readonly afterSettle: number
  readonly cores: number | undefined
  /** What `duringFlood` measured, if given. */
  readonly during?: { readonly before: number; readonly after: number }
}

/**
 * One Belay on `env`, one network on the fake server, LINES flooded and timed until stored; Belay stopped after.
 * `duringFlood`: read just before the flood starts and just after the last line is stored (old rows left, with pruning).
 */
const floodOnce = async (
  fake: Awaited<ReturnType<typeof startFakeIrcServer>>,
  env: Record<string, string>,
  hooks: { readonly ready?: (belay: RunningBelay) => Promise<void>; readonly duringFlood?: () => Promise<number> } = {}
): Promise<Flooded> => {
  const belay = await startBelay(env)
  try {
    await createAccount(belay)
    const networkId = await addNetworkWithCli(belay, "flood", fake.server.port)
    const connection = await Effect.runPromise(fake.server.nextConnection("30 seconds"))
    await Effect.runPromise(connection.register())
    await waitUntil("the network to be connected", 30_000, async () => connectedCount(await belay.metrics()) === 1 || undefined)
    // Registration lines (001…376) are stored too: wait until the counter stops moving, then count from there.
    let last = -1
    const base = await waitUntil("the stored-message counter to settle", 30_000, async () => {
      const now = await stored(belay)
      const settled = now === last ? now : undefined
      last = now
      return settled
    }, 500)
    await hooks.ready?.(belay)
    const before = await hooks.duringFlood?.()

    const cpu0 = cpuSeconds(belay.pid)
    const t0 = performance.now()
    const flooding = Effect.runPromise(connection.flood(LINES, floodLine)).then(() => (performance.now() - t0) / 1000)
    const target = base + LINES
    await waitUntil(`${LINES} stored messages (${STORED} ≥ ${target})`, STORE_TIMEOUT_MS, async () =>
      (await stored(belay)) >= target || undefined, 50)
    const elapsed = (performance.now() - t0) / 1000
    const cpu1 = cpuSeconds(belay.pid)
    const after = await hooks.duringFlood?.()
    const cores = cpu0 === undefined || cpu1 === undefined ? undefined : (cpu1 - cpu0) / elapsed
    const floodSeconds = await flooding
    // Anything stored beyond the flood would show up within a flush interval or two.
    await sleep(1000)
    const afterSettle = await stored(belay)
    return {
      networkId,
      base,
      elapsed,
      floodSeconds,
      afterSettle,
      cores,
      ...(before === undefined || after === undefined ? {} : { during: { before, after } })
    }
  } finally {
    await belay.stop()
  }
}

/**
 * Old history for the retention job to prune while the flood runs (docs/decisions/account-limits.md "Retention: windows of the oldest ids, one node at a time"):
 * OLD_LINES rows dated 60 days back, in the buffer of a disabled network of another account, written before Belay
 * starts (Belay then runs with BELAY_HISTORY_RETENTION_DAYS=30).
 */
const prefillOld = (env: Record<string, string>) =>
  withDatabase(env, (sql) =>
    Effect.gen(function*() {
      const [account] = yield* sql<{ id: number }>`INSERT INTO accounts (name, password_hash) VALUES ('old', 'x') RETURNING id`
      const [network] = yield* sql<{ id: number }>`
        INSERT INTO networks (account_id, name, host, port, nick, enabled) VALUES (${account!.id}, 'old', '127.0.0.1', 6667, 'old', false)
        RETURNING id`
      const [buffer] = yield* sql<{ id: number }>`
        INSERT INTO buffers (network_id, target, target_folded, kind) VALUES (${network!.id}, '#old', '#old', 'channel') RETURNING id`
      yield* sql`
        INSERT INTO messages (buffer_id, time, kind, nick, text, raw)
        SELECT ${buffer!.id}, now() - interval '60 days' + g * interval '1 millisecond', 'privmsg', 'old' || (g % 50),
               'an old line of history number ' || g, ':old!u@bench.test PRIVMSG #old :an old line'
        FROM generate_series(1, ${OLD_LINES}) g`
    }))

/** Rows older than the retention limit, counted in the running Belay's database. */
const oldLeft = (env: Record<string, string>) => () =>
  withRunningDatabase(env, Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM messages WHERE time < now() - interval '30 days'`, (r) => r[0]!.n)))

export const runIngest = async (): Promise<SectionResult> => {
  const started = performance.now()
  const fake = await startFakeIrcServer({ timeout: "30 seconds" })
  const db = await freshDatabase("ingest")
  const baselineDb = await freshDatabase("ingest-baseline")
  const shapeDb = await freshDatabase("ingest-cte")
  const pruneDb = await freshDatabase("ingest-pruning")
  try {
    const { networkId, base, elapsed, floodSeconds, afterSettle, cores } = await floodOnce(fake, db.env)

    // The same flood with the retention job pruning old history beside it, in a database that has some.
    await prefillOld(pruneDb.env)
    const pruneEnv = { ...pruneDb.env, BELAY_HISTORY_RETENTION_DAYS: "30" }
    const left = oldLeft(pruneEnv)
    const pruned = await floodOnce(fake, pruneEnv, {
      // The job's first round starts 10 s after start-up (HistoryRetention.ts): the flood waits until it deletes.
      ready: async () => {
        await waitUntil("the retention job to start deleting", 60_000, async () => (await left()) < OLD_LINES || undefined, 500)
      },
      duringFlood: left
    })
    const inBuffer = await countMessages(db.env, networkId, FLOOD_TARGET)
    const baseline = await runInsertBaseline(baselineDb.env, LINES, 300_000)
    if (baseline.rows !== LINES) throw new Error(`baseline stored ${baseline.rows} rows, expected ${LINES}`)
    // Informative: Belay's own statement shape, same rows, same kind of fresh database.
    const shape = await runInsertBaseline(shapeDb.env, LINES, 300_000, "cte")

    const belayRate = LINES / elapsed
    const baselineRate = baseline.rows / baseline.seconds
    const ratio = belayRate / baselineRate
    const prunedRate = LINES / pruned.elapsed
    const deletedDuring = pruned.during === undefined ? 0 : pruned.during.before - pruned.during.after
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
        { name: "for comparison: 500-row batches in MessageWriter's CTE shape, rows per second", value: shape.rows / shape.seconds },
        { name: "with pruning: lines stored per second", value: prunedRate },
        { name: "with pruning: old rows deleted while the flood was stored", value: deletedDuring },
        { name: "with pruning: old rows still left when it was stored (> 0: pruning ran throughout)", value: pruned.during?.after ?? 0 },
        { name: "with pruning: counter growth", value: pruned.afterSettle - pruned.base },
        { name: "ratio with pruning ÷ without", value: prunedRate / belayRate }
      ],
      targets: [
        { name: "ingest rate ÷ 500-row INSERT rate", measured: ratio, comparator: ">=", target: 0.5 },
        { name: "stored ÷ sent (counter)", measured: (afterSettle - base) / LINES, comparator: "==", target: 1 },
        { name: "stored ÷ sent (rows in buffer)", measured: inBuffer / LINES, comparator: "==", target: 1 },
        { name: "ingest rate with pruning ÷ without", measured: prunedRate / belayRate, comparator: ">=", target: 0.9 },
        // The ratio means something only if the job deleted during the measured flood, and had not finished before
        // it ended (else part of the flood ran without it).
        { name: "with pruning: old rows deleted during the flood", measured: deletedDuring, comparator: ">=", target: 1 },
        { name: "with pruning: old rows still left when the flood was stored", measured: pruned.during?.after ?? 0, comparator: ">=", target: 1 },
        { name: "stored ÷ sent with pruning (counter)", measured: (pruned.afterSettle - pruned.base) / LINES, comparator: "==", target: 1 }
      ],
      method: [
        `Belay ran as \`node bin/belay serve\` on ${databaseMode} (fresh data dir), one network added with \`belay network add\` pointing at the fake IRC server (test/support/FakeIrcServer.ts, in the bench process on the load core), which registered it.`,
        `After registration the stored-message counter was left to settle; then the fake wrote ${LINES.toLocaleString("en-US")} \`PRIVMSG ${FLOOD_TARGET}\` lines (corpus text, 50 nicks) as fast as the socket took them. The clock ran from the first write until GET /metrics (polled every 50 ms) showed \`${STORED}\` grown by the number sent.`,
        "Baseline: bench/insert-baseline.ts on Belay's core, a fresh database of the same kind opened through the app's Database layer (same schema and indexes), the same rows (nick, text, raw line, kind, buffer) written with sequential `sql.insert` statements of 500 rows.",
        "For comparison (no target): the same batches in MessageWriter.ts's statement shape (INSERT … RETURNING in a CTE that updates buffers.last_message_at), run the same way, separating the statement's cost from the pipeline's.",
        "Stored = sent is checked on the counter (1 s after the target, no extra rows) and by counting the buffer's rows with SQL once Belay stopped.",
        `With pruning: the same flood at a second Belay started with BELAY_HISTORY_RETENTION_DAYS=30 on a fresh database holding ${OLD_LINES.toLocaleString("en-US")} rows dated 60 days back (another account's disabled network, written before start-up). The flood began once the retention job (src/services/history/HistoryRetention.ts: windows of 500 ids, resting 19 times as long as each took, 20 ms at least and 1 s at most) had started deleting; the old rows left were counted with SQL just before the flood and once it was stored, so the deletions during it are shown, and rows still left mean the job ran the whole time. Ratio: its rate over the first Belay's in this run.`
      ]
    }
  } finally {
    await fake.close()
    await db.dispose()
    await baselineDb.dispose()
    await shapeDb.dispose()
    await pruneDb.dispose()
  }
}
