/**
 * OAuthCodes and OAuthTokens against a real database on TestClock: the 10-minute life,
 * the order of the checks after the atomic claim (each spends the code), single use under
 * concurrency, and reuse revoking the token the code issued — at once, even for a token
 * whose authentication is cached.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Option, type Scope, TestClock } from "effect"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { Authenticator } from "../../../src/services/identity/Authenticator.js"
import { OAuthCodes } from "../../../src/services/oauth/OAuthCodes.js"
import { OAuthTokens } from "../../../src/services/identity/OAuthTokens.js"
import { s256 } from "../../../src/services/oauth/Pkce.js"
import { describeMode, TestDatabaseLive } from "../../support/TestDatabase.js"

const VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
const REDIRECT = "http://127.0.0.1:5555/cb"

const layer = Layer.mergeAll(OAuthCodes.Default, OAuthTokens.Default, Authenticator.Default, Accounts.Default).pipe(
  Layer.provideMerge(TestDatabaseLive())
)

const T0 = Date.parse("2026-01-01T00:00:00Z")

/** Sets TestClock to T0 before the services start (their prune fibers sleep on it), then runs `body`. */
const run = <A, E, R extends Layer.Layer.Success<typeof layer> | Scope.Scope>(body: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(T0)
    return yield* body.pipe(Effect.provide(layer))
  })

/** A member, an approved client and a fresh code bound to VERIFIER. */
const setup = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const account = yield* (yield* Accounts).create("alice", "a long password").pipe(Effect.orDie)
  const now = new Date(T0)
  yield* sql`INSERT INTO oauth_clients (client_id, client_name, redirect_uris, created_at, approved_at)
    VALUES ('c1', 'One', ARRAY['http://127.0.0.1/cb'], ${now}, ${now}), ('c2', 'Two', ARRAY['http://127.0.0.1/cb'], ${now}, ${now})`
  const codes = yield* OAuthCodes
  const issue = codes.issue({ clientId: "c1", accountId: account.id, redirectUri: REDIRECT, codeChallenge: s256(VERIFIER) })
  const request = (code: string, overrides: Partial<Record<"client_id" | "redirect_uri" | "code_verifier", string>> = {}) => ({
    grant_type: "authorization_code" as const,
    client_id: "c1",
    code,
    redirect_uri: REDIRECT,
    code_verifier: VERIFIER,
    ...overrides
  })
  return { sql, codes, issue, request, accountId: account.id }
})

describe(`OAuthCodes on ${describeMode}`, () => {
  it.scoped("a code lives 10 minutes: 9:59 redeems, 10:00 is invalid_grant", () =>
    run(Effect.gen(function*() {
      const { codes, issue, request } = yield* setup
      const early = yield* issue
      const late = yield* issue
      yield* TestClock.adjust("599 seconds")
      const ok = yield* codes.redeem(request(early))
      expect(ok.createdAt).toBe(Date.parse("2026-01-01T00:09:59Z"))
      yield* TestClock.adjust("1 second")
      const expired = yield* Effect.either(codes.redeem(request(late)))
      expect(Either.isLeft(expired) && expired.left._tag).toBe("InvalidGrant")
    })))

  it.scoped.each([
    ["another client", { client_id: "c2" }],
    ["another redirect_uri", { redirect_uri: "http://127.0.0.1:5556/cb" }],
    ["a wrong verifier", { code_verifier: "x".repeat(43) }]
  ] as const)("%s: invalid_grant, and the code is spent for the right request too", ([, overrides]) =>
    run(Effect.gen(function*() {
      const { codes, issue, request, sql } = yield* setup
      const code = yield* issue
      expect(Either.isLeft(yield* Effect.either(codes.redeem(request(code, overrides))))).toBe(true)
      expect(Either.isLeft(yield* Effect.either(codes.redeem(request(code))))).toBe(true)
      const tokens = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM oauth_tokens`
      expect(tokens[0]!.n).toBe(0)
    })))

  it.scoped("20 concurrent redemptions: exactly one token; the replays revoke it", () =>
    run(Effect.gen(function*() {
      const { codes, issue, request, sql } = yield* setup
      const code = yield* issue
      const results = yield* Effect.all(Array.from({ length: 20 }, () => Effect.either(codes.redeem(request(code)))), {
        concurrency: "unbounded"
      })
      const wins = results.filter(Either.isRight)
      expect(wins).toHaveLength(1)
      const token = wins[0]!.right
      const rows = yield* sql<{ id: number; revoked: boolean }>`
        SELECT id, revoked_at IS NOT NULL AS revoked FROM oauth_tokens`
      expect(rows).toEqual([{ id: token.tokenId, revoked: true }])
      const principal = yield* (yield* Authenticator).authenticate(`Bearer ${token.accessToken}`)
      expect(Option.isNone(principal)).toBe(true)
    })))

  it.scoped("a spent code presented after its token was issued revokes that token (RFC 6749 §4.1.2)", () =>
    run(Effect.gen(function*() {
      const { codes, issue, request } = yield* setup
      const code = yield* issue
      const token = yield* codes.redeem(request(code))
      const authenticator = yield* Authenticator
      expect(Option.isSome(yield* authenticator.authenticate(`Bearer ${token.accessToken}`))).toBe(true)
      yield* TestClock.adjust("1 hour")
      expect(Either.isLeft(yield* Effect.either(codes.redeem(request(code))))).toBe(true)
      expect(Option.isNone(yield* authenticator.authenticate(`Bearer ${token.accessToken}`))).toBe(true)
    })))
})

describe(`OAuthTokens on ${describeMode}`, () => {
  it.scoped("revokeForApp touches only the app's own token; revokeForClient every token of one app for one member", () =>
    run(Effect.gen(function*() {
      const { codes, issue, request } = yield* setup
      const tokens = yield* OAuthTokens
      const authenticator = yield* Authenticator
      const live = (raw: string) => Effect.map(authenticator.authenticate(`Bearer ${raw}`), Option.isSome)
      const a = yield* codes.redeem(request(yield* issue))
      const b = yield* codes.redeem(request(yield* issue))
      expect(yield* tokens.revokeForApp(a.accessToken, "c2")).toBe(false)
      expect(yield* live(a.accessToken)).toBe(true)
      expect(yield* tokens.revokeForApp(a.accessToken, "c1")).toBe(true)
      expect(yield* live(a.accessToken)).toBe(false)
      expect(yield* tokens.revokeForApp(a.accessToken, "c1")).toBe(false)
      const accountId = (yield* (yield* Accounts).require("alice").pipe(Effect.orDie)).id
      expect(yield* tokens.revokeForClient(accountId, "c1")).toBe(1)
      expect(yield* live(b.accessToken)).toBe(false)
    })))
})
