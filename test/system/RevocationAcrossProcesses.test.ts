/**
 * Two real `belay serve` processes on one PostgreSQL database, as an operator would run them behind one proxy: an
 * OAuth token revoked through process A's `/api/oauth/revoke` is refused by process B's `/mcp` at the very next
 * request (B had the answer cached), and the WebSocket B holds for that token closes with 4001 at once (the
 * interface, "Authentication" 6 and "Events" 3; docs/decisions/secrets.md, "Revocation is immediate across processes").
 */
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Option } from "effect"
import { jsonOf, mcpStatus, obtainCode, PASSWORD, postForm, redeem } from "../http/oauth/OAuthHarness.js"
import { connect } from "../http/ws/SocketClient.js"
import { runCli, startBelay } from "../support/BelayProcess.js"
import { describeMode, testEnvironment } from "../support/TestDatabase.js"

describe(`revocation across two belay processes on ${describeMode}`, () => {
  it.scopedLive("a token revoked at A is refused by B's next /mcp request, and B's socket of it closes with 4001", () =>
    Effect.gen(function*() {
      // One database and one data directory (so one secret key); each process its own admin socket.
      const env = yield* testEnvironment({ BELAY_TRUST_PROXY: "true" })
      const a = yield* startBelay({ ...env, BELAY_ADMIN_SOCKET: Path.join(env.BELAY_DATA_DIR!, "a.sock") })
      const b = yield* startBelay({ ...env, BELAY_ADMIN_SOCKET: Path.join(env.BELAY_DATA_DIR!, "b.sock") })
      expect((yield* runCli(a.env, ["account", "add", "alice"], `${PASSWORD}\n`)).code).toBe(0)

      // An app approved and its token issued at A; B accepts it (and caches the answer).
      const grant = yield* obtainCode({ url: a.url })
      const token = (yield* jsonOf(yield* redeem(a.url, grant))).access_token as string
      expect(yield* mcpStatus(b.url, token)).toBe(200)
      expect(yield* mcpStatus(b.url, token)).toBe(200)
      const socket = yield* connect(b.url, { headers: { authorization: `Bearer ${token}` } })
      expect((yield* socket.next()).type).toBe("hello")

      const revoked = yield* postForm(`${a.url}/api/oauth/revoke`, { client_id: grant.clientId, token })
      expect(revoked.status).toBe(200)
      expect(yield* mcpStatus(b.url, token)).toBe(401)
      // No poll and no cache lifetime is involved: the close follows the notice (bounded so that a lost notice fails
      // the test instead of waiting for the socket's own timeouts).
      const closed = yield* socket.closed.pipe(Effect.timeoutOption(Duration.seconds(1)))
      expect(closed).toEqual(Option.some({ code: 4001, reason: "credential revoked" }))
      expect(yield* mcpStatus(a.url, token)).toBe(401)
    }), { timeout: 120_000 })
})
