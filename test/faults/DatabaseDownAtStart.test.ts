/**
 * Fault: the database is unreachable when `belay serve` starts (DATABASE_URL names a loopback port where nothing
 * listens). Belay must not half start: it connects to the database before it opens any listener, so /healthz never
 * answers while the database is down, and start-up ends with one line naming the failure and the address, and a
 * non-zero exit.
 */
import * as Child from "node:child_process"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { BIN, freePort } from "../support/BelayProcess.js"
import { faultSummary, seconds } from "../support/HistoryAudit.js"
import { tempDir } from "../support/TestDatabase.js"

describe("fault: no database at start", () => {
  it.scopedLive("a clear error and a non-zero exit; /healthz never answers 200", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const deadPort = yield* freePort
      const env = {
        ...process.env,
        BELAY_DATA_DIR: yield* tempDir("belay-faults-"),
        DATABASE_URL: `postgres://postgres@127.0.0.1:${deadPort}/belay`,
        LOG_LEVEL: "info",
        LOG_FORMAT: "json",
        PORT: String(port),
        HOST: "127.0.0.1"
      }
      const started = performance.now()
      const child = yield* Effect.acquireRelease(
        Effect.sync(() => Child.spawn(process.execPath, [BIN, "serve"], { env, stdio: ["ignore", "pipe", "pipe"] })),
        (c) => Effect.sync(() => void (c.exitCode === null && c.signalCode === null && c.kill("SIGKILL")))
      )
      let output = ""
      child.stdout!.on("data", (c) => (output += c))
      child.stderr!.on("data", (c) => (output += c))
      const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
      let exitCode: number | null | undefined
      void exit.then((code) => (exitCode = code))

      // Poll /healthz until the process ends (or a minute passes): any answer at all is a half-started server.
      const answers: Array<number> = []
      let polls = 0
      while (exitCode === undefined && performance.now() - started < 60_000) {
        polls++
        const status = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status, () => 0))
        if (status !== 0) answers.push(status)
        yield* Effect.sleep("50 millis")
      }
      const code = yield* Effect.promise(() => exit)
      const tookMs = performance.now() - started
      const lastLines = output.trim().split("\n").slice(-3).join(" | ")
      yield* faultSummary(
        `database unreachable at start: exit ${code} after ${seconds(tookMs)}, /healthz answered ${answers.length} ` +
          `of ${polls} polls; says: ${lastLines.slice(0, 240)}`
      )
      expect(answers).toEqual([])
      expect(code).not.toBe(0)
      expect(code).not.toBeNull()
      // One line that says what failed and where: the driver's words name the address DATABASE_URL points at.
      expect(output).toContain(`start-up failed: PgClient: Failed to connect: connect ECONNREFUSED 127.0.0.1:${deadPort}`)
    }), { timeout: 120_000 })
})
