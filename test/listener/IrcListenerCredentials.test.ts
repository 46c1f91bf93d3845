/**
 * The IRC client listener and the credentials its clients sign in with, over the whole application (real actor,
 * fake IRC server, real database): an OAuth access token signs in, and the connection ends when that token is revoked
 * (logout), as an API token's does; a paused account's connection turns read-only at once and writable when resumed;
 * account recovery ends what signed in with the old password and leaves API-token connections; a token revoked
 * while the LISTEN connection was lost (no notice heard) ends its connection once LISTEN is back; and sign-in failures
 * count in the one limiter the web uses, in both directions.
 */
import { describe, expect, it } from "@effect/vitest"
import { APPLICATION_NAME } from "../../src/services/storage/EventChannel.js"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { Accounts } from "../../src/services/identity/Accounts.js"
import { ApiTokens } from "../../src/services/identity/ApiTokens.js"
import { SignInLimits } from "../../src/services/identity/SignInLimiter.js"
import { connectClient, saslPlain } from "../support/IrcTestClient.js"
import { PASSWORD, saslClient, startListenerApp, welcomedClient } from "../support/IrcListenerApp.js"
import { describeMode } from "../support/TestDatabase.js"

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  Effect.promise(() =>
    fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) })
  )

describe(`IRC clients and their credentials on ${describeMode}`, () => {
  it.scopedLive("a token revoked while the LISTEN connection was lost ends its connection once LISTEN is back", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp()
      const revoked = yield* app.get(ApiTokens).create("alice", "irc", "read-write").pipe(Effect.orDie)
      const kept = yield* app.get(ApiTokens).create("alice", "kept", "read-write").pipe(Effect.orDie)
      const byRevoked = yield* welcomedClient(app.port, "alice/fake@revoked", revoked)
      const byKept = yield* welcomedClient(app.port, "alice/fake@kept", kept)
      const sql = app.get(SqlClient.SqlClient)
      // Revoked by hand, announcing nothing (as if its notice was sent while nothing listened), then the server drops
      // the LISTEN connection (as a restart of PostgreSQL would).
      yield* sql`UPDATE api_tokens SET revoked_at = now() WHERE name = 'irc'`.pipe(Effect.orDie)
      const dropped = yield* sql<{ n: number }>`
        SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = ${APPLICATION_NAME}`.pipe(Effect.orDie)
      expect(dropped[0]!.n).toBeGreaterThanOrEqual(1)
      // The listener reconnects (100 ms) and every session judges its credential again.
      expect((yield* byRevoked.closed("15 seconds")).at(-1)?.raw).toMatch(/^ERROR :.*revoked/)
      yield* byKept.send("PING :still")
      expect((yield* byKept.next("PONG")).params.at(-1)).toBe("still")
    }), 60_000)

  it.scopedLive("revoked tokens end their connections; pause makes them read-only at once; recovery ends password sign-ins", () =>
    Effect.gen(function*() {
      const app = yield* startListenerApp()
      const { port, upstream, httpUrl } = app

      // An OAuth access token (a password-sign-in token of the web's API) signs in over SASL.
      const login = yield* post(`${httpUrl}/api/auth/login/token`, { username: "alice", password: PASSWORD })
      expect(login.status).toBe(200)
      const oauth = ((yield* Effect.promise(() => login.json())) as { access_token: string }).access_token
      const byOAuth = yield* welcomedClient(port, "alice/fake@oauth", oauth)
      const apiToken = yield* app.get(ApiTokens).create("alice", "irc", "read-write").pipe(Effect.orDie)
      const byToken = yield* welcomedClient(port, "alice/fake@token", apiToken)
      const byPassword = yield* welcomedClient(port, "alice/fake@password", PASSWORD)

      // The OAuth token can write (it is read-write).
      yield* byOAuth.send("PRIVMSG #belay :by oauth")
      yield* upstream.waitFor("PRIVMSG #belay :by oauth")

      // Logout revokes the OAuth token: its connection ends, the others stay.
      const logout = yield* post(`${httpUrl}/api/auth/logout`, {}, { authorization: `Bearer ${oauth}` })
      expect(logout.status).toBeLessThan(300)
      const ended = yield* byOAuth.closed()
      expect(ended.at(-1)?.raw).toMatch(/^ERROR :.*revoked/)

      // Revoking the API token ends its connection.
      yield* app.get(ApiTokens).revoke("alice", "irc").pipe(Effect.orDie)
      expect((yield* byToken.closed()).at(-1)?.raw).toMatch(/^ERROR :.*revoked/)

      // Pausing: the password connection is told and refused writes at once; resuming lets it write again.
      yield* app.get(Accounts).setStatus("alice", "paused").pipe(Effect.orDie)
      const paused = yield* byPassword.next("NOTICE")
      expect(paused.source).toBe("belay")
      expect(paused.params[1]).toContain("paused")
      yield* byPassword.send("PRIVMSG #belay :while paused", "JOIN #other")
      expect((yield* byPassword.next("FAIL")).params.slice(0, 2)).toEqual(["PRIVMSG", "READ_ONLY"])
      expect((yield* byPassword.next("FAIL")).params.slice(0, 2)).toEqual(["JOIN", "READ_ONLY"])
      yield* app.get(Accounts).setStatus("alice", "active").pipe(Effect.orDie)
      expect((yield* byPassword.next("NOTICE")).params[1]).toContain("resumed")
      yield* byPassword.send("PRIVMSG #belay :written again")
      yield* upstream.waitFor("PRIVMSG #belay :written again")
      expect((yield* upstream.lines).some((l) => l.includes("while paused") || l.includes("#other"))).toBe(false)

      // A new API token's connection and a password one; recovery ends only the password one.
      const second = yield* app.get(ApiTokens).create("alice", "irc2", "read-write").pipe(Effect.orDie)
      const stays = yield* welcomedClient(port, "alice/fake@token2", second)
      yield* app.get(Accounts).recover("alice", "a brand new password").pipe(Effect.orDie)
      expect((yield* byPassword.closed()).at(-1)?.raw).toMatch(/^ERROR :.*recovered/)
      yield* stays.send("PING still")
      expect((yield* stays.next("PONG")).params.at(-1)).toBe("still")
      // The old password no longer signs in; the new one does.
      const old = yield* saslClient(port, "alice/fake", PASSWORD)
      expect((yield* old.next((l) => l.command === "903" || l.command === "904")).command).toBe("904")
      yield* welcomedClient(port, "alice/fake", "a brand new password")
    }), 90_000)

  it.scopedLive("sign-in failures over IRC and over the web count in one limiter", () =>
    Effect.gen(function*() {
      const { port, httpUrl } = yield* startListenerApp()
      const half = SignInLimits.failuresPerWindow / 2
      // Half the allowance spent over IRC (SASL lets a client retry on the same connection)…
      const irc = yield* retryingSasl(port)
      for (let i = 0; i < half; i++) {
        yield* irc.attempt("wrong password")
        expect((yield* irc.client.next((l) => l.command === "904" || l.command === "903")).command).toBe("904")
      }
      // …and half over the web.
      for (let i = 0; i < half; i++) {
        const refused = yield* post(`${httpUrl}/api/auth/login/token`, { username: "alice", password: "wrong password" })
        expect(refused.status).toBe(401)
      }
      // Now both refuse even the right password: the web with 429, IRC with 904 and ERROR.
      const web = yield* post(`${httpUrl}/api/auth/login/token`, { username: "alice", password: PASSWORD })
      expect(web.status).toBe(429)
      yield* irc.attempt(PASSWORD)
      const last = yield* irc.client.closed()
      expect(last.map((l) => l.command)).toContain("904")
      expect(last.at(-1)?.raw).toBe("ERROR :Too many failed sign-ins; try again later")
    }), 60_000)
})

/** One connection that tries SASL PLAIN again and again (a client may retry after 904, IRCv3 sasl-3.1). */
const retryingSasl = (port: number) =>
  Effect.gen(function*() {
    const client = yield* connectClient(port)
    yield* client.send("CAP LS 302", "NICK someone", "USER alice/fake 0 * :Real", "CAP REQ :sasl")
    yield* client.next((l) => l.command === "CAP" && l.params[1] === "ACK")
    const attempt = (password: string) =>
      Effect.gen(function*() {
        yield* client.send("AUTHENTICATE PLAIN")
        yield* client.next("AUTHENTICATE")
        yield* client.send(`AUTHENTICATE ${saslPlain("alice/fake", password)}`)
      })
    return { client, attempt }
  })
