/**
 * OAuthClients against a real database on TestClock: the one-hour life of a pending
 * registration (lookup refuses it at once; the prune job, a fiber on the Clock, deletes
 * it), approval keeps a registration, and the pending cap with its Retry-After.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Either, Layer, Option, TestClock } from "effect"
import { OAuthClients } from "../../../src/services/oauth/OAuthClients.js"
import { eventually } from "../../support/Eventually.js"
import { describeMode, TestDatabaseLive } from "../../support/TestDatabase.js"

const registration = { client_name: "App", redirect_uris: ["http://127.0.0.1/cb"] as [string] }

const T0 = Date.parse("2026-01-01T00:00:00Z")

/** Runs `body` with OAuthClients over a fresh database, on TestClock set to T0. */
const withClients = <A, E>(body: (clients: OAuthClients, sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(T0)
    return yield* Effect.gen(function*() {
      return yield* body(yield* OAuthClients, yield* SqlClient.SqlClient)
    }).pipe(Effect.provide(OAuthClients.Default.pipe(Layer.provideMerge(TestDatabaseLive()))))
  })

describe(`OAuthClients on ${describeMode}`, () => {
  it.scoped("a pending registration is refused by lookup at one hour and deleted by the prune job; an approved one is kept", () =>
    withClients((clients, sql) =>
      Effect.gen(function*() {
        const pending = yield* clients.register(registration, "192.0.2.1")
        const approved = yield* clients.register(registration, "192.0.2.1")
        expect(pending.createdAt.toISOString()).toBe("2026-01-01T00:00:00.000Z")
        yield* TestClock.adjust("30 minutes")
        expect(yield* clients.approve(approved.clientId)).toBe(true)

        yield* TestClock.adjust("29 minutes")
        expect(Option.isSome(yield* clients.lookup(pending.clientId))).toBe(true)
        yield* TestClock.adjust("1 minute")
        // exactly one hour: gone for every caller, even before the job runs
        expect(Option.isNone(yield* clients.lookup(pending.clientId))).toBe(true)
        expect(yield* clients.approve(pending.clientId)).toBe(false)

        yield* TestClock.adjust("5 minutes")
        const rows = yield* eventually(
          "the prune job deleting the expired registration",
          sql<{ clientId: string }>`SELECT client_id AS "clientId" FROM oauth_clients`,
          (rows) => rows.length === 1,
          "5 seconds"
        )
        expect(rows.map((r) => r.clientId)).toEqual([approved.clientId])

        yield* TestClock.adjust("1 day")
        expect(Option.isSome(yield* clients.lookup(approved.clientId))).toBe(true)
      })
    ))

  it.scoped("at 1,000 pending every registration fails with the oldest's expiry as Retry-After; expired and approved ones do not count", () =>
    withClients((clients, sql) =>
      Effect.gen(function*() {
        const t0 = new Date(T0)
        yield* sql`
          INSERT INTO oauth_clients (client_id, client_name, redirect_uris, created_at)
          SELECT 'seed-' || g, 'Seed', ARRAY['http://127.0.0.1/cb'], ${t0} FROM generate_series(1, 999) g`
        yield* TestClock.adjust("10 minutes")
        yield* clients.register(registration, "192.0.2.1")
        const full = yield* Effect.either(clients.register(registration, "192.0.2.1"))
        expect(Either.isLeft(full) && full.left._tag).toBe("TemporarilyUnavailable")
        if (Either.isLeft(full)) expect(full.left.retryAfterSeconds).toBe(50 * 60)

        yield* sql`UPDATE oauth_clients SET approved_at = ${t0} WHERE client_id = 'seed-1'`
        yield* clients.register(registration, "192.0.2.1")
        expect(Either.isLeft(yield* Effect.either(clients.register(registration, "192.0.2.1")))).toBe(true)

        // the 998 seeds left pending expire at 1:00; the job need not have run
        yield* TestClock.adjust("50 minutes")
        yield* clients.register(registration, "192.0.2.1")
      })
    ))
})
