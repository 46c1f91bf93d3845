/**
 * Two Belay service stacks on one database, as two processes would be (two pools, two LISTEN connections, two
 * credential caches): a revocation or a pause made through one takes effect at the other's very next request,
 * although the other's answer was cached and TestClock stands still (so no cached answer expires by itself). The
 * other process's consumers hear it once, and the process that made it does not hear its own notice again. A lost
 * LISTEN connection empties the cache when it is back, so a revocation it could not hear is not served from memory.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Context, Effect, Layer, Option, Queue } from "effect"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { ApiTokens } from "../../../src/services/identity/ApiTokens.js"
import { AppConfig } from "../../../src/services/AppConfig.js"
import { Authenticator } from "../../../src/services/identity/Authenticator.js"
import { BrowserSessions } from "../../../src/services/identity/BrowserSessions.js"
import { CredentialRevocations, type CredentialRevoked } from "../../../src/services/identity/CredentialRevocations.js"
import { DatabaseLive } from "../../../src/services/storage/Database.js"
import { OAuthTokens } from "../../../src/services/identity/OAuthTokens.js"
import { eventually } from "../../support/Eventually.js"
import { describeMode, settingsFrom, testEnvironment } from "../../support/TestDatabase.js"

const stackLayer = Layer.mergeAll(
  Authenticator.Default,
  Accounts.Default,
  ApiTokens.Default,
  OAuthTokens.Default,
  BrowserSessions.Default,
  CredentialRevocations.Default
)

/** One process's services over the shared database: a pool, a LISTEN connection, a cache of its own. */
const startStack = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const settings = yield* settingsFrom(env)
    const context = yield* Layer.build(
      stackLayer.pipe(Layer.provideMerge(DatabaseLive), Layer.provideMerge(Layer.succeed(AppConfig, settings)), Layer.orDie)
    )
    const get = <I, S>(tag: Context.Tag<I, S>): S => Context.unsafeGet(context as Context.Context<never>, tag)
    const principal = (raw: string) => get(Authenticator).authenticate(`Bearer ${raw}`)
    const events = yield* get(CredentialRevocations).subscribe
    return { get, principal, events } as const
  })

type Stack = Effect.Effect.Success<ReturnType<typeof startStack>>

/** Both stacks on one fresh database; `a` migrates it first. */
const twoStacks = Effect.gen(function*() {
  const env = yield* testEnvironment()
  const a = yield* startStack(env)
  const b = yield* startStack(env)
  return { a, b } as const
})

let seq = 0
/** A member (created through `a`) with an API token and an app's OAuth token. */
const member = (a: Stack) =>
  Effect.gen(function*() {
    const name = `cross${++seq}`
    const account = yield* a.get(Accounts).create(name, "a long password").pipe(Effect.orDie)
    const apiToken = yield* a.get(ApiTokens).create(name, "agent", "read-write").pipe(Effect.orDie)
    const clientId = `app-${name}`
    yield* a.get(SqlClient.SqlClient)`INSERT INTO oauth_clients (client_id, client_name, redirect_uris, created_at, approved_at)
      VALUES (${clientId}, 'App', ARRAY['http://127.0.0.1/cb'], now(), now())`.pipe(Effect.orDie)
    const oauth = yield* a.get(OAuthTokens).issue(clientId, account.id)
    return { name, accountId: account.id, apiToken, oauth, clientId } as const
  })

const takeAll = (queue: Queue.Dequeue<CredentialRevoked>) => Effect.map(Queue.takeAll(queue), Chunk.toArray)

describe(`revocation across processes on ${describeMode}`, () => {
  it.scoped("a token revoked through one process is refused by the other at its next request", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoStacks
      const m = yield* member(a)
      // B has both answers cached.
      expect(Option.isSome(yield* b.principal(m.apiToken))).toBe(true)
      expect(Option.isSome(yield* b.principal(m.oauth.accessToken))).toBe(true)

      yield* a.get(ApiTokens).revoke(m.name, "agent").pipe(Effect.orDie)
      const apiEvent: CredentialRevoked = { credential: "api-token", tokenId: expect.any(Number), accountId: m.accountId }
      // The notice is delivered by PostgreSQL at the commit; B applies it before its next answer.
      yield* eventually("B hears the API token's revocation", Effect.map(Queue.size(b.events), (n) => n), (n) => n >= 1)
      expect(yield* b.principal(m.apiToken)).toEqual(Option.none())
      expect(Option.isSome(yield* b.principal(m.oauth.accessToken))).toBe(true)

      expect(yield* a.get(OAuthTokens).revokeById(m.oauth.tokenId)).toBe(true)
      const oauthEvent: CredentialRevoked = { credential: "oauth", tokenId: m.oauth.tokenId, accountId: m.accountId }
      yield* eventually("B hears the OAuth token's revocation", Queue.size(b.events), (n) => n >= 2)
      expect(yield* b.principal(m.oauth.accessToken)).toEqual(Option.none())
      // B's consumers (sockets, push) heard each once.
      expect(yield* takeAll(b.events)).toEqual([apiEvent, oauthEvent])

      // A revocation through B, heard by A: A's own notices came back to it first (PostgreSQL delivers in commit
      // order) and were skipped, so A's consumers heard each of its own revocations once.
      const second = yield* a.get(OAuthTokens).issue(m.clientId, m.accountId)
      expect(Option.isSome(yield* a.principal(second.accessToken))).toBe(true)
      expect(yield* b.get(OAuthTokens).revokeById(second.tokenId)).toBe(true)
      yield* eventually("A hears B's revocation", Queue.size(a.events), (n) => n >= 3)
      expect(yield* a.principal(second.accessToken)).toEqual(Option.none())
      expect(yield* takeAll(a.events)).toEqual([apiEvent, oauthEvent, { ...oauthEvent, tokenId: second.tokenId }])
    }), { timeout: 120_000 })

  it.scoped("a pause through one process narrows the other's cached credentials at once; recovery ends them", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoStacks
      const m = yield* member(a)
      const scopeAtB = (raw: string) => Effect.map(b.principal(raw), Option.map((p) => p.scope))
      expect(yield* scopeAtB(m.apiToken)).toEqual(Option.some("read-write"))
      yield* a.get(Accounts).setStatus(m.name, "paused").pipe(Effect.orDie)
      yield* eventually("B narrows the paused account", scopeAtB(m.apiToken), (s) => Option.getOrNull(s) === "read")
      expect(yield* scopeAtB(m.oauth.accessToken)).toEqual(Option.some("read"))
      yield* a.get(Accounts).setStatus(m.name, "active").pipe(Effect.orDie)
      yield* eventually("B widens the resumed account", scopeAtB(m.apiToken), (s) => Option.getOrNull(s) === "read-write")

      // Recovery through A: B refuses the app token and hears the browser session's end.
      const session = yield* a.get(BrowserSessions).create(m.accountId)
      const sessionRow = Option.getOrThrow(yield* b.get(BrowserSessions).lookup(session))
      expect(Option.isSome(yield* b.principal(m.oauth.accessToken))).toBe(true)
      yield* a.get(Accounts).recover(m.name, "another long password").pipe(Effect.orDie)
      yield* eventually("B hears the recovery", Queue.size(b.events), (n) => n >= 2)
      expect(yield* b.principal(m.oauth.accessToken)).toEqual(Option.none())
      expect(Option.isSome(yield* b.principal(m.apiToken))).toBe(true)
      const heard = yield* takeAll(b.events)
      expect(heard).toHaveLength(2)
      expect(heard).toEqual(expect.arrayContaining([
        { credential: "oauth", tokenId: m.oauth.tokenId, accountId: m.accountId },
        { credential: "session", tokenId: sessionRow.sessionId, accountId: m.accountId }
      ]))
    }), { timeout: 120_000 })

  it.scoped("when its LISTEN connection is back after a loss, a process answers nothing from before", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoStacks
      const m = yield* member(a)
      const revocations = b.get(CredentialRevocations)
      const resyncs = yield* revocations.resyncs
      expect(Option.isSome(yield* b.principal(m.oauth.accessToken))).toBe(true)
      const before = revocations.listenState()
      expect(before.listening).toBe(true)

      // Revoked while nothing is listening would hear it: by hand, announcing nothing.
      const sql = a.get(SqlClient.SqlClient)
      yield* sql`UPDATE oauth_tokens SET revoked_at = now() WHERE id = ${m.oauth.tokenId}`.pipe(Effect.orDie)
      // The server drops both processes' LISTEN connections (as a restart of PostgreSQL would).
      const dropped = yield* sql<{ n: number }>`
        SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'belay-events'`.pipe(Effect.orDie)
      expect(dropped[0]!.n).toBe(2)
      yield* eventually("B listens again", Effect.sync(() => revocations.listenState()), (s) =>
        s.listening && s.generation > before.generation)
      // Its other consumers are told to read again what they hold.
      expect(yield* Queue.size(resyncs)).toBeGreaterThanOrEqual(1)
      expect(yield* b.principal(m.oauth.accessToken)).toEqual(Option.none())
    }), { timeout: 120_000 })
})
