/**
 * `POST /api/oauth/revoke` (RFC 7009): 200 for whatever a known
 * client sends, revoking only its own live token, at once; refusals before that; an
 * authorization code sent as `token` is left as it was.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { describeMode } from "../../support/TestDatabase.js"
import {
  fetchP,
  fixtureLayer,
  jsonOf,
  mcpStatus,
  OAuthFixture,
  obtainCode,
  postForm,
  postJson,
  redeem,
  registerClient
} from "./OAuthHarness.js"

const revokeUrl = (url: string) => `${url}/api/oauth/revoke`

/** A live token of a fresh app. */
const liveToken = Effect.gen(function*() {
  const app = yield* OAuthFixture
  const grant = yield* obtainCode(app, { jar: app.jar })
  const token = (yield* jsonOf(yield* redeem(app.url, grant))).access_token as string
  return { app, clientId: grant.clientId, token }
})

layer(fixtureLayer(), { excludeTestServices: true, timeout: "120 seconds" })(`revocation on ${describeMode}`, (it) => {
  it.effect("its own token: 200 with no-store, and the token fails at /mcp at once; again: 200", () =>
    Effect.gen(function*() {
      const { app, clientId, token } = yield* liveToken
      const res = yield* postForm(revokeUrl(app.url), { client_id: clientId, token })
      expect(res.status).toBe(200)
      expect(res.headers.get("cache-control")).toBe("no-store")
      expect(yield* mcpStatus(app.url, token)).toBe(401)
      expect((yield* postForm(revokeUrl(app.url), { client_id: clientId, token })).status).toBe(200)
    }))

  it.effect("JSON body and any token_type_hint work", () =>
    Effect.gen(function*() {
      const { app, clientId, token } = yield* liveToken
      const res = yield* postJson(revokeUrl(app.url), { client_id: clientId, token, token_type_hint: "refresh_token" })
      expect(res.status).toBe(200)
      expect(yield* mcpStatus(app.url, token)).toBe(401)
    }))

  it.effect("an unknown token: 200; another app's token: 200 and left working", () =>
    Effect.gen(function*() {
      const { app, token } = yield* liveToken
      const other = yield* registerClient(app.url)
      expect((yield* postForm(revokeUrl(app.url), { client_id: other.client_id, token: "nonexistent" })).status).toBe(200)
      expect((yield* postForm(revokeUrl(app.url), { client_id: other.client_id, token })).status).toBe(200)
      expect(yield* mcpStatus(app.url, token)).toBe(200)
    }))

  it.effect("refusals: unknown client 401 invalid_client, missing parameters 400 invalid_request, malformed 400, 413, foreign Origin 403 — the token keeps working", () =>
    Effect.gen(function*() {
      const { app, clientId, token } = yield* liveToken
      const cases: ReadonlyArray<readonly [Effect.Effect<Response>, number, string | null]> = [
        [postForm(revokeUrl(app.url), { client_id: "nobody", token }), 401, "invalid_client"],
        [postForm(revokeUrl(app.url), { client_id: `${clientId}\u0000`, token }), 401, "invalid_client"],
        [postJson(revokeUrl(app.url), { client_id: "\u0000", token }), 401, "invalid_client"],
        [postForm(revokeUrl(app.url), { token }), 400, "invalid_request"],
        [postForm(revokeUrl(app.url), { client_id: clientId }), 400, "invalid_request"],
        [postForm(revokeUrl(app.url), `client_id=${clientId}&token=${token}&token=${token}`), 400, "invalid_request"],
        [fetchP(revokeUrl(app.url), { method: "POST", headers: { "content-type": "application/json" }, body: "{" }), 400, null],
        [postForm(revokeUrl(app.url), { client_id: clientId, token, pad: "x".repeat(17 * 1024) }), 413, null],
        [postForm(revokeUrl(app.url), { client_id: clientId, token }, { origin: "https://evil.example" }), 403, "invalid_request"]
      ]
      for (const [send, status, error] of cases) {
        const res = yield* send
        expect(res.status).toBe(status)
        const body = yield* jsonOf(res)
        if (error === null) expect(body).toStrictEqual({ error: "invalid_request" })
        else expect(body.error).toBe(error)
        expect(yield* mcpStatus(app.url, token)).toBe(200)
      }
      expect(yield* mcpStatus(app.url, token)).toBe(200)
    }))

  it.effect("an authorization code sent as token: 200, and the code still redeems", () =>
    Effect.gen(function*() {
      const app = yield* OAuthFixture
      const grant = yield* obtainCode(app, { jar: app.jar })
      expect((yield* postForm(revokeUrl(app.url), { client_id: grant.clientId, token: grant.code })).status).toBe(200)
      expect((yield* redeem(app.url, grant)).status).toBe(200)
    }))
})
