/**
 * Authenticator and CredentialCache against a real database, with TestClock standing still (so no cached answer
 * ever expires by itself): a credential's revocation — API token, OAuth token, account recovery — takes effect at
 * the very next request, and a pause narrows every credential of the account at once. CredentialCache alone: it
 * answers from memory, never stores an answer read while a revocation was announced, and lets concurrent misses of
 * a key share one lookup unless a revocation came between them.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Option } from "effect"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { ApiTokens } from "../../../src/services/identity/ApiTokens.js"
import { Authenticator, type Principal } from "../../../src/services/identity/Authenticator.js"
import { CredentialCache } from "../../../src/services/identity/CredentialCache.js"
import { CredentialRevocations } from "../../../src/services/identity/CredentialRevocations.js"
import { OAuthTokens } from "../../../src/services/identity/OAuthTokens.js"
import { describeMode, TestDatabaseLive } from "../../support/TestDatabase.js"

const layer = Layer.mergeAll(Authenticator.Default, Accounts.Default, ApiTokens.Default, OAuthTokens.Default).pipe(
  Layer.provideMerge(TestDatabaseLive())
)

let seq = 0
/** A fresh member with an API token and an access token of a registered app. */
const member = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const name = `auth${++seq}`
  const account = yield* (yield* Accounts).create(name, "a long password").pipe(Effect.orDie)
  const apiToken = yield* (yield* ApiTokens).create(name, "agent", "read-write").pipe(Effect.orDie)
  const clientId = `app-${name}`
  yield* sql`INSERT INTO oauth_clients (client_id, client_name, redirect_uris, created_at, approved_at)
    VALUES (${clientId}, 'App', ARRAY['http://127.0.0.1/cb'], now(), now())`
  const oauth = yield* (yield* OAuthTokens).issue(clientId, account.id)
  const authenticator = yield* Authenticator
  const principal = (raw: string) => authenticator.authenticate(`Bearer ${raw}`)
  return { name, accountId: account.id, apiToken, oauth, clientId, principal } as const
})

const scopeOf = (principal: Option.Option<Principal>) => Option.map(principal, (p) => p.scope)

describe(`Authenticator on ${describeMode}`, () => {
  it.layer(layer, { timeout: 120_000 })((it) => {
    it.effect("a revoked API token is refused at the next request, although its answer was cached", () =>
      Effect.gen(function*() {
        const m = yield* member
        expect(yield* m.principal(m.apiToken)).toEqual(Option.some({
          accountId: m.accountId,
          credential: "api-token",
          tokenId: expect.any(Number),
          oauthKind: null,
          clientId: null,
          grantedScope: "read-write",
          paused: false,
          scope: "read-write"
        }))
        yield* (yield* ApiTokens).revoke(m.name, "agent").pipe(Effect.orDie)
        expect(yield* m.principal(m.apiToken)).toEqual(Option.none())
        // The member's other credential is untouched.
        expect(Option.isSome(yield* m.principal(m.oauth.accessToken))).toBe(true)
      }))

    it.effect("a revoked OAuth token is refused at the next request (logout, and the authorized-apps page)", () =>
      Effect.gen(function*() {
        const m = yield* member
        const tokens = yield* OAuthTokens
        expect(yield* m.principal(m.oauth.accessToken)).toEqual(Option.some({
          accountId: m.accountId,
          credential: "oauth",
          tokenId: m.oauth.tokenId,
          oauthKind: "app",
          clientId: expect.any(String),
          grantedScope: "read-write",
          paused: false,
          scope: "read-write"
        }))
        expect(yield* tokens.revokeById(m.oauth.tokenId)).toBe(true)
        expect(yield* m.principal(m.oauth.accessToken)).toEqual(Option.none())

        const second = yield* tokens.issue(m.clientId, m.accountId)
        expect(Option.isSome(yield* m.principal(second.accessToken))).toBe(true)
        expect(yield* tokens.revokeForClient(m.accountId, m.clientId)).toBe(1)
        expect(yield* m.principal(second.accessToken)).toEqual(Option.none())
      }))

    it.effect("account recovery refuses every app token at once, keeps API tokens, and ends browser sessions", () =>
      Effect.gen(function*() {
        const m = yield* member
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO browser_sessions (account_id, token_hash, created_at, expires_at, last_seen_at)
          VALUES (${m.accountId}, '\\x00', now(), now() + interval '1 day', now())`
        expect(Option.isSome(yield* m.principal(m.oauth.accessToken))).toBe(true)
        const result = yield* (yield* Accounts).recover(m.name, "another long password").pipe(Effect.orDie)
        expect(result).toEqual({ accountId: m.accountId, revokedApps: 1 })
        expect(yield* m.principal(m.oauth.accessToken)).toEqual(Option.none())
        expect(Option.isSome(yield* m.principal(m.apiToken))).toBe(true)
        const sessions = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM browser_sessions WHERE account_id = ${m.accountId}`
        expect(sessions[0]!.n).toBe(0)
      }))

    it.effect("pausing narrows every credential of the account to read at once; resuming widens it again", () =>
      Effect.gen(function*() {
        const m = yield* member
        const other = yield* member
        const accounts = yield* Accounts
        expect(scopeOf(yield* m.principal(m.apiToken))).toEqual(Option.some("read-write"))
        expect(scopeOf(yield* other.principal(other.apiToken))).toEqual(Option.some("read-write"))
        yield* accounts.setStatus(m.name, "paused").pipe(Effect.orDie)
        expect(yield* m.principal(m.apiToken)).toMatchObject(Option.some({ paused: true, scope: "read" }))
        expect(scopeOf(yield* m.principal(m.oauth.accessToken))).toEqual(Option.some("read"))
        expect(scopeOf(yield* other.principal(other.apiToken))).toEqual(Option.some("read-write"))
        yield* accounts.setStatus(m.name, "active").pipe(Effect.orDie)
        expect(scopeOf(yield* m.principal(m.apiToken))).toEqual(Option.some("read-write"))
      }))

    it.effect("on one connection: the header's hash is reused, yet a revocation, another token or a bad header is judged anew", () =>
      Effect.gen(function*() {
        const m = yield* member
        const authenticator = yield* Authenticator
        const connection = {}
        const on = (authorization: string | undefined) => Effect.suspend(() => authenticator.authenticateNow(authorization, connection))
        const api = `Bearer ${m.apiToken}`
        expect(Option.map(yield* on(api), (p) => p.credential)).toEqual(Option.some("api-token"))
        expect(Option.map(yield* on(api), (p) => p.credential)).toEqual(Option.some("api-token"))
        // Another credential on the same connection is its own principal, then the first one is again.
        expect(Option.map(yield* on(`Bearer ${m.oauth.accessToken}`), (p) => p.credential)).toEqual(Option.some("oauth"))
        expect(Option.map(yield* on(api), (p) => p.credential)).toEqual(Option.some("api-token"))
        // A header that is not a bearer token, and none, are refused without touching what the connection sent before.
        expect(yield* on(`Basic ${m.apiToken}`)).toEqual(Option.none())
        expect(yield* on(undefined)).toEqual(Option.none())
        expect(Option.isSome(yield* on(api))).toBe(true)
        yield* (yield* ApiTokens).revoke(m.name, "agent").pipe(Effect.orDie)
        expect(yield* on(api)).toEqual(Option.none())
      }))

    it.effect("a token that is not a live credential is refused", () =>
      Effect.gen(function*() {
        const m = yield* member
        expect(yield* m.principal(`${m.apiToken}x`)).toEqual(Option.none())
        expect(yield* m.principal("belay_not-a-token-at-all")).toEqual(Option.none())
        expect(yield* (yield* Authenticator).authenticate(undefined)).toEqual(Option.none())
        expect(yield* (yield* Authenticator).authenticate(`Basic ${m.apiToken}`)).toEqual(Option.none())
      }))
  })
})

describe("CredentialCache", () => {
  // CredentialRevocations LISTENs on the database for other processes' notices; the cache answers from memory only
  // while it does.
  const cacheLayer = Layer.mergeAll(CredentialCache.Default, CredentialRevocations.Default).pipe(Layer.provideMerge(TestDatabaseLive()))
  const answer = { credential: "oauth", tokenId: 7, accountId: 1 } as const

  it.scoped("answers from memory until the credential is revoked", () =>
    Effect.gen(function*() {
      const cache = yield* CredentialCache
      const revocations = yield* CredentialRevocations
      let lookups = 0
      const lookup = Effect.sync(() => {
        lookups++
        return Option.some(answer)
      })
      yield* cache.getOrLookup("k", () => lookup)
      yield* cache.getOrLookup("k", () => lookup)
      expect(lookups).toBe(1)
      // Another credential's revocation leaves this answer cached.
      yield* revocations.publish([{ credential: "oauth", tokenId: 8, accountId: 1 }])
      yield* revocations.publish([{ credential: "api-token", tokenId: 7, accountId: 1 }])
      yield* cache.getOrLookup("k", () => lookup)
      expect(lookups).toBe(1)
      yield* revocations.publish([answer])
      yield* cache.getOrLookup("k", () => lookup)
      expect(lookups).toBe(2)
    }).pipe(Effect.provide(cacheLayer)))

  it.scoped("an answer read while a revocation was announced is not stored", () =>
    Effect.gen(function*() {
      const cache = yield* CredentialCache
      const revocations = yield* CredentialRevocations
      let lookups = 0
      // The revocation commits while the lookup is reading: what it read may be stale.
      const racing = Effect.gen(function*() {
        lookups++
        yield* revocations.publish([answer])
        return Option.some(answer)
      })
      yield* cache.getOrLookup("k", () => racing)
      yield* cache.getOrLookup("k", () =>
        Effect.sync(() => {
          lookups++
          return Option.none()
        }))
      expect(lookups).toBe(2)
    }).pipe(Effect.provide(cacheLayer)))

  /**
   * A lookup of key "k" that counts its runs and holds until `release`: `miss` forks a request that misses with it,
   * `started(n)` waits until `n` lookups began, `settle` lets forked requests run as far as they can.
   */
  const heldLookup = Effect.gen(function*() {
    const cache = yield* CredentialCache
    const release = yield* Deferred.make<void>()
    let lookups = 0
    const lookup = Effect.gen(function*() {
      lookups++
      yield* Deferred.await(release)
      return Option.some(answer)
    })
    const started = (n: number) =>
      Effect.gen(function*() {
        for (let i = 0; i < 1_000 && lookups < n; i++) yield* Effect.yieldNow()
        return lookups
      })
    const miss = Effect.fork(cache.getOrLookup("k", () => lookup))
    const settle = Effect.gen(function*() {
      for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
    })
    return { miss, release, started, settle, count: () => lookups } as const
  })

  it.scoped("concurrent misses of one key share one lookup", () =>
    Effect.gen(function*() {
      const held = yield* heldLookup
      const first = yield* held.miss
      expect(yield* held.started(1)).toBe(1)
      const second = yield* held.miss
      yield* held.settle
      yield* Deferred.succeed(held.release, undefined)
      expect(yield* Fiber.join(first)).toEqual(Option.some(answer))
      expect(yield* Fiber.join(second)).toEqual(Option.some(answer))
      expect(held.count()).toBe(1)
    }).pipe(Effect.provide(cacheLayer)))

  it.scoped("a miss after a revocation does not take the answer of a lookup that began before it", () =>
    Effect.gen(function*() {
      const revocations = yield* CredentialRevocations
      const held = yield* heldLookup
      const first = yield* held.miss
      expect(yield* held.started(1)).toBe(1)
      yield* revocations.publish([answer])
      const second = yield* held.miss
      expect(yield* held.started(2)).toBe(2)
      yield* Deferred.succeed(held.release, undefined)
      yield* Fiber.join(first)
      yield* Fiber.join(second)
      expect(held.count()).toBe(2)
    }).pipe(Effect.provide(cacheLayer)))

  it.scoped("when the request that began a lookup goes away, one that joined it looks up itself", () =>
    Effect.gen(function*() {
      const held = yield* heldLookup
      const first = yield* held.miss
      expect(yield* held.started(1)).toBe(1)
      const second = yield* held.miss
      yield* held.settle
      expect(held.count()).toBe(1)
      yield* Fiber.interrupt(first)
      expect(yield* held.started(2)).toBe(2)
      yield* Deferred.succeed(held.release, undefined)
      expect(yield* Fiber.join(second)).toEqual(Option.some(answer))
    }).pipe(Effect.provide(cacheLayer)))
})
