/**
 * CredentialUsage against a real database on TestClock: uses are remembered in memory and
 * written by `flush`, by the minute's job, and when the layer closes; a last-used time
 * never moves backwards.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope, TestClock } from "effect"
import { CredentialUsage } from "../../../src/services/identity/CredentialUsage.js"
import { describeMode, TestDatabaseLive } from "../../support/TestDatabase.js"

const T0 = Date.parse("2026-01-01T00:00:00Z")

/** An account with one API token and one password-sign-in token; their ids. */
const seed = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [account] = yield* sql<{ id: number }>`INSERT INTO accounts (name, password_hash) VALUES ('alice', 'x') RETURNING id`
  const [api] = yield* sql<{ id: number }>`
    INSERT INTO api_tokens (account_id, name, scope, token_hash) VALUES (${account!.id}, 'cli', 'read', ${Buffer.from("a")}) RETURNING id`
  const [oauth] = yield* sql<{ id: number }>`
    INSERT INTO oauth_tokens (token_hash, kind, client_id, account_id, created_at)
    VALUES (${Buffer.from("b")}, 'password', NULL, ${account!.id}, now()) RETURNING id`
  return { api: api!.id, oauth: oauth!.id }
})

const lastUsed = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [api] = yield* sql<{ at: Date | null }>`SELECT last_used_at AS at FROM api_tokens`
  const [oauth] = yield* sql<{ at: Date | null }>`SELECT last_used_at AS at FROM oauth_tokens`
  return { api: api!.at?.getTime() ?? null, oauth: oauth!.at?.getTime() ?? null }
})

describe(`CredentialUsage on ${describeMode}`, () => {
  // The clock is set before the service starts: its minute's job would otherwise replay every
  // minute between the epoch and T0.
  it.scoped("flush writes the latest use of each token, never an older time over a newer one", () =>
    Effect.zipRight(TestClock.setTime(T0), Effect.gen(function*() {
      const ids = yield* seed
      const usage = yield* CredentialUsage
      usage.record("api-token", ids.api)
      yield* TestClock.setTime(T0 + 5_000)
      usage.record("api-token", ids.api)
      usage.record("oauth", ids.oauth)
      expect(yield* lastUsed).toEqual({ api: null, oauth: null })
      yield* usage.flush
      expect(yield* lastUsed).toEqual({ api: T0 + 5_000, oauth: T0 + 5_000 })

      // A use recorded with an earlier time (another process, a slow request) does not win.
      yield* TestClock.setTime(T0)
      usage.record("api-token", ids.api)
      yield* usage.flush
      expect((yield* lastUsed).api).toBe(T0 + 5_000)
    }).pipe(Effect.provide(CredentialUsage.Default.pipe(Layer.provideMerge(TestDatabaseLive()))))))

  it.scoped("the minute's job and the layer's close write what is pending", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const ids = yield* seed
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(CredentialUsage.Default, scope)
      const usage = Context.get(context, CredentialUsage)
      usage.record("api-token", ids.api)
      yield* TestClock.adjust("1 minute")
      // The job's write is a database round trip after the clock moved: wait for it.
      let seen = yield* lastUsed
      for (let i = 0; i < 100 && seen.api === null; i++) {
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
        seen = yield* lastUsed
      }
      expect(seen.api).toBe(T0)
      usage.record("oauth", ids.oauth)
      yield* Scope.close(scope, Exit.void)
      expect((yield* lastUsed).oauth).toBe(T0 + 60_000)
    }).pipe(Effect.provide(TestDatabaseLive())))
})
