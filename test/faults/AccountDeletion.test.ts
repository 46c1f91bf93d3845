/**
 * Fault: `belay account delete` (docs/decisions/leaving.md "Deleting an account: a marker row, then a resumable job")
 * with `belay serve` SIGKILLed while the deletion job is half-way through a member's history, then started again on the
 * same database.
 *
 * Proves: the account's network QUITs at once; after the kill the account is still marked (half-done: some history
 * gone, some left, the account row there, its name taken); the restarted process resumes the job once the dead
 * process's lease has run out, and finishes it: every message, the network and the account gone, and the name can be
 * taken again. Bounded: ~300,000 messages go in ~10 s and the lease is 10 s.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import pg from "pg"
import { DELETION_JOB_INTERVAL, DELETION_LEASE } from "../../src/services/memberdata/AccountDeletion.js"
import { type RunningBelay, runCli, startBelay } from "../support/BelayProcess.js"
import { eventually } from "../support/Eventually.js"
import * as FakeIrcServer from "../support/FakeIrcServer.js"
import { faultSummary, seconds } from "../support/HistoryAudit.js"
import { testEnvironment } from "../support/TestDatabase.js"

const MESSAGES = 300_000

const query = <R extends pg.QueryResultRow>(databaseUrl: string, text: string, values: ReadonlyArray<unknown> = []) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: databaseUrl })
    await client.connect()
    try {
      return (await client.query<R>(text, [...values])).rows
    } finally {
      await client.end()
    }
  })

const exited = (belay: RunningBelay) =>
  Effect.promise(() =>
    new Promise<NodeJS.Signals | null>((resolve) => {
      if (belay.process.exitCode !== null || belay.process.signalCode !== null) return resolve(belay.process.signalCode)
      belay.process.once("exit", (_code, signal) => resolve(signal))
    })
  )

describe("fault: belay serve killed while deleting an account", () => {
  it.scopedLive("SIGKILL half-way through the history: the restart resumes and finishes, the name is free", () =>
    Effect.gen(function*() {
      const irc = yield* FakeIrcServer.make()
      const env = yield* testEnvironment()
      const db = env.DATABASE_URL!
      const belay = yield* startBelay(env)
      const cli = (args: ReadonlyArray<string>, stdin?: string) => runCli(belay.env, args, stdin)
      expect((yield* cli(["account", "add", "leaver"], "correct horse battery\n")).code).toBe(0)
      const added = yield* cli(["network", "add", "leaver", "--name", "fake", "--host", "127.0.0.1", "--port", String(irc.port)])
      expect(added.code).toBe(0)
      const networkId = Number(added.stdout.trim())
      const conn = yield* irc.nextConnection("30 seconds")
      yield* conn.register()

      // The member's history, straight into the database (the bench's way: one INSERT … SELECT).
      const [buffer] = yield* query<{ id: number }>(db, `
        INSERT INTO buffers (network_id, target, target_folded, kind) VALUES ($1, '#history', '#history', 'channel')
        RETURNING id`, [networkId])
      yield* query(db, `
        INSERT INTO messages (buffer_id, time, kind, nick, text)
        SELECT $1, now(), 'privmsg', 'someone', 'line ' || i FROM generate_series(1, $2::int) AS i`, [buffer!.id, MESSAGES])
      const left = Effect.map(
        query<{ n: number }>(db, "SELECT count(*)::int AS n FROM messages WHERE buffer_id = $1", [buffer!.id]),
        (rows) => rows[0]!.n
      )

      const asked = performance.now()
      const deleted = yield* cli(["account", "delete", "leaver", "--yes"])
      expect(deleted.code).toBe(0)
      // Its network QUITs at once.
      yield* conn.waitFor((l) => l.command === "QUIT", "10 seconds")
      const quitIn = performance.now() - asked

      // Killed once the job is under way, well before it is done.
      const atKill = yield* eventually("the deletion under way", left, (n) => n < MESSAGES, "30 seconds")
      belay.process.kill("SIGKILL")
      expect(yield* exited(belay)).toBe("SIGKILL")
      const remaining = yield* left
      const [marked] = yield* query<{ accounts: number; marks: number }>(db, `
        SELECT (SELECT count(*)::int FROM accounts WHERE name = 'leaver') AS accounts,
               (SELECT count(*)::int FROM account_deletions) AS marks`)
      expect(remaining).toBeGreaterThan(0)
      expect(marked).toEqual({ accounts: 1, marks: 1 })

      // The same database: the job resumes once the dead process's lease has run out, and finishes.
      const restarted = performance.now()
      const again = yield* startBelay(belay.env)
      const bound = Duration.sum(Duration.sum(DELETION_LEASE, DELETION_JOB_INTERVAL), Duration.seconds(45))
      yield* eventually("the account gone", query<{ n: number }>(db, "SELECT count(*)::int AS n FROM accounts WHERE name = 'leaver'"),
        (rows) => rows[0]!.n === 0, bound)
      const finishedIn = performance.now() - restarted
      expect(yield* left).toBe(0)
      expect(yield* query(db, "SELECT 1 FROM networks WHERE id = $1", [networkId])).toEqual([])
      expect(yield* query(db, "SELECT 1 FROM buffers WHERE id = $1", [buffer!.id])).toEqual([])
      expect(yield* query(db, "SELECT 1 FROM account_deletions")).toEqual([])
      // The name can be taken again.
      expect((yield* runCli(again.env, ["account", "add", "leaver"], "another long password\n")).code).toBe(0)

      yield* faultSummary(
        `SIGKILL while deleting an account: QUIT after ${seconds(quitIn)}; killed with ${remaining}/${MESSAGES} ` +
          `messages left (${MESSAGES - atKill} deleted when seen under way); the restart finished the deletion ` +
          `${seconds(finishedIn)} after starting (lease ${Duration.format(DELETION_LEASE)}); the name was free again`
      )
    }), { timeout: 180_000 })
})
