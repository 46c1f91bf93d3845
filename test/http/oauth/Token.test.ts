/**
 * `POST /api/oauth/token`: every rejection of research/oauth.md §1.6–1.7 and §1.10 that
 * applies, each asserting the status, the `error`, and whether the code is still usable
 * afterwards — refusals before the code is examined (invalid_request,
 * unsupported_grant_type, invalid_client, a foreign Origin, 413) leave it usable; any
 * refusal after the claim (invalid_grant) spends it (interface "States and transitions").
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { describeMode } from "../../support/TestDatabase.js"
import {
  approveOverHttp,
  authorizeUrl,
  fetchP,
  fixtureLayer,
  jsonOf,
  OAuthFixture,
  obtainCode,
  postForm,
  postJson,
  redeem,
  registerClient,
  tokenRequest
} from "./OAuthHarness.js"

type Grant = Effect.Effect.Success<ReturnType<typeof obtainCode>>

const params = (grant: Grant): Record<string, string> => ({
  grant_type: "authorization_code",
  client_id: grant.clientId,
  code: grant.code,
  redirect_uri: grant.redirectUri,
  code_verifier: grant.verifier
})

const without = (record: Record<string, string>, name: string) => {
  const { [name]: _, ...rest } = record
  return rest
}

const formOf = (record: Record<string, string>) => new URLSearchParams(record).toString()

interface Case {
  readonly name: string
  /** Sends the rejected request for a fresh grant. */
  readonly send: (url: string, grant: Grant) => Effect.Effect<Response>
  readonly status: number
  /** The `error` of the JSON body; null when the body is exactly `{"error":"invalid_request"}`. */
  readonly error: string | null
  readonly codeUsable: boolean
}

const form = (body: (grant: Grant) => Record<string, string> | string, headers: Record<string, string> = {}) =>
  (url: string, grant: Grant) => postForm(`${url}/api/oauth/token`, typeof body === "function" ? body(grant) : body, headers)

const cases: ReadonlyArray<Case> = [
  // body and parameters: invalid_request, the code untouched (T-04)
  ...["grant_type", "client_id", "code", "redirect_uri", "code_verifier"].map((name): Case => ({
    name: `missing ${name}`,
    send: form((g) => without(params(g), name)),
    status: 400,
    error: "invalid_request",
    codeUsable: true
  })),
  { name: "empty code (RFC 6749 §3.1: empty = omitted)", send: form((g) => ({ ...params(g), code: "" })), status: 400, error: "invalid_request", codeUsable: true },
  { name: "repeated code (T-10)", send: form((g) => `${formOf(params(g))}&code=${encodeURIComponent(g.code)}`), status: 400, error: "invalid_request", codeUsable: true },
  {
    name: "JSON with an array value (T-10)",
    send: (url, g) => postJson(`${url}/api/oauth/token`, { ...params(g), code: [g.code] }),
    status: 400,
    error: "invalid_request",
    codeUsable: true
  },
  { name: "verifier of 42 characters (P-03, Q4)", send: form((g) => ({ ...params(g), code_verifier: "a".repeat(42) })), status: 400, error: "invalid_request", codeUsable: true },
  { name: "verifier of 129 characters", send: form((g) => ({ ...params(g), code_verifier: "a".repeat(129) })), status: 400, error: "invalid_request", codeUsable: true },
  { name: "verifier containing +", send: form((g) => ({ ...params(g), code_verifier: "+" + g.verifier.slice(1) })), status: 400, error: "invalid_request", codeUsable: true },
  { name: "malformed JSON (H-03)", send: (url) => fetchP(`${url}/api/oauth/token`, { method: "POST", headers: { "content-type": "application/json" }, body: "{" }), status: 400, error: null, codeUsable: true },
  { name: "JSON that is not an object", send: (url) => postJson(`${url}/api/oauth/token`, [1]), status: 400, error: null, codeUsable: true },
  { name: "form with a broken escape %zz (H-03)", send: form((g) => `${formOf(params(g))}&x=%zz`), status: 400, error: null, codeUsable: true },
  {
    name: "text/plain body",
    send: (url, g) => fetchP(`${url}/api/oauth/token`, { method: "POST", headers: { "content-type": "text/plain" }, body: formOf(params(g)) }),
    status: 400,
    error: null,
    codeUsable: true
  },
  {
    name: "body over 16 KiB → 413 (H-04)",
    send: form((g) => ({ ...params(g), padding: "x".repeat(17 * 1024) })),
    status: 413,
    error: null,
    codeUsable: true
  },
  // grant_type: unsupported_grant_type, the code untouched
  { name: "grant_type=refresh_token", send: form((g) => ({ ...params(g), grant_type: "refresh_token" })), status: 400, error: "unsupported_grant_type", codeUsable: true },
  { name: "grant_type=AUTHORIZATION_CODE", send: form((g) => ({ ...params(g), grant_type: "AUTHORIZATION_CODE" })), status: 400, error: "unsupported_grant_type", codeUsable: true },
  // client: invalid_client, the code untouched
  { name: "unknown client_id", send: form((g) => ({ ...params(g), client_id: "no-such-client" })), status: 401, error: "invalid_client", codeUsable: true },
  // a web page of another origin (H-08)
  { name: "foreign Origin", send: form(params, { origin: "https://evil.example" }), status: 403, error: "invalid_request", codeUsable: true },
  // after the claim: invalid_grant, the code spent
  { name: "wrong verifier (P-05)", send: form((g) => ({ ...params(g), code_verifier: "b".repeat(43) })), status: 400, error: "invalid_grant", codeUsable: false },
  { name: "verifier equal to the challenge: no plain fallback (P-06)", send: form((g) => ({ ...params(g), code_verifier: g.challenge })), status: 400, error: "invalid_grant", codeUsable: false },
  { name: "redirect_uri on another loopback port (T-06)", send: form((g) => ({ ...params(g), redirect_uri: "http://127.0.0.1:6666/cb" })), status: 400, error: "invalid_grant", codeUsable: false },
  { name: "redirect_uri with a trailing slash", send: form((g) => ({ ...params(g), redirect_uri: "http://127.0.0.1:5555/cb/" })), status: 400, error: "invalid_grant", codeUsable: false },
  { name: "redirect_uri as registered, without the port used", send: form((g) => ({ ...params(g), redirect_uri: "http://127.0.0.1/cb" })), status: 400, error: "invalid_grant", codeUsable: false }
]

layer(fixtureLayer(), { excludeTestServices: true, timeout: "120 seconds" })(`token endpoint on ${describeMode}`, (it) => {
  for (const c of cases) {
    it.effect(`${c.name} → ${c.status} ${c.error ?? "(no description)"}; code ${c.codeUsable ? "still usable" : "spent"}`, () =>
      Effect.gen(function*() {
        const app = yield* OAuthFixture
        const grant = yield* obtainCode(app, { jar: app.jar })
        const res = yield* c.send(app.url, grant)
        expect(res.status).toBe(c.status)
        expect(res.headers.get("content-type")).toBe("application/json")
        expect(res.headers.get("cache-control")).toBe("no-store")
        expect(res.headers.get("pragma")).toBe("no-cache")
        const body = yield* jsonOf(res)
        if (c.error === null) expect(body).toStrictEqual({ error: "invalid_request" })
        else expect(body.error).toBe(c.error)
        if (typeof body.error_description === "string") {
          // RFC 6749 §5.2: %x20-21 / %x23-5B / %x5D-7E, never an echo of input (H-02)
          expect(body.error_description).toMatch(/^[\x20\x21\x23-\x5B\x5D-\x7E]*$/)
        }
        expect(res.headers.get("www-authenticate")).toBeNull()
        const after = yield* redeem(app.url, grant)
        expect(after.status).toBe(c.codeUsable ? 200 : 400)
        if (!c.codeUsable) expect((yield* jsonOf(after)).error).toBe("invalid_grant")
      }))
  }

  it.effect("a code issued to another registered client is invalid_grant and spent (T-05)", () =>
    Effect.gen(function*() {
      const app = yield* OAuthFixture
      const grant = yield* obtainCode(app, { jar: app.jar })
      const other = yield* registerClient(app.url)
      const res = yield* tokenRequest(app.url, { ...params(grant), client_id: other.client_id })
      expect(res.status).toBe(400)
      expect((yield* jsonOf(res)).error).toBe("invalid_grant")
      expect((yield* redeem(app.url, grant)).status).toBe(400)
    }))

  it.effect("unknown, garbage and NUL codes are invalid_grant, never 500 (T-07)", () =>
    Effect.gen(function*() {
      const app = yield* OAuthFixture
      const grant = yield* obtainCode(app, { jar: app.jar })
      for (const code of ["x", "A".repeat(10_000), "\u0000", "srv1~nope"]) {
        const res = yield* tokenRequest(app.url, { ...params(grant), code })
        expect(res.status).toBe(400)
        expect((yield* jsonOf(res)).error).toBe("invalid_grant")
      }
      expect((yield* redeem(app.url, grant)).status).toBe(200)
    }))

  it.effect("form with and without charset and JSON all work; scope and resource are ignored (T-03, T-11)", () =>
    Effect.gen(function*() {
      const app = yield* OAuthFixture
      for (const send of [
        (g: Grant) => postForm(`${app.url}/api/oauth/token`, { ...params(g), scope: "x", resource: `${app.url}/mcp` }),
        (g: Grant) =>
          postForm(`${app.url}/api/oauth/token`, params(g), { "content-type": "application/x-www-form-urlencoded;charset=UTF-8" }),
        (g: Grant) => postJson(`${app.url}/api/oauth/token`, { ...params(g), token_type_hint: "ignored" })
      ]) {
        const grant = yield* obtainCode(app, { jar: app.jar })
        const res = yield* send(grant)
        expect(res.status).toBe(200)
        expect(Object.keys(yield* jsonOf(res)).sort()).toEqual(["access_token", "created_at", "token_type"])
      }
    }))

  it.effect("the RFC 7636 Appendix B pair redeems (P-04)", () =>
    Effect.gen(function*() {
      const app = yield* OAuthFixture
      const client = yield* registerClient(app.url)
      const redirectUri = "http://127.0.0.1:5555/cb"
      const decision = yield* approveOverHttp(
        app.url,
        authorizeUrl(app.url, {
          client_id: client.client_id,
          redirect_uri: redirectUri,
          code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        }),
        app.jar
      )
      const code = new URL(decision.headers.get("location")!).searchParams.get("code")!
      const res = yield* redeem(app.url, {
        clientId: client.client_id,
        code,
        redirectUri,
        verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
      })
      expect(res.status).toBe(200)
    }))

  it.effect("a client that sent an Authorization header gets a Basic challenge with invalid_client (T-13)", () =>
    Effect.gen(function*() {
      const app = yield* OAuthFixture
      const grant = yield* obtainCode(app, { jar: app.jar })
      const res = yield* tokenRequest(app.url, { ...params(grant), client_id: "nobody" }, { authorization: "Basic bm9ib2R5Og==" })
      expect(res.status).toBe(401)
      expect(res.headers.get("www-authenticate")).toMatch(/^Basic /)
      expect((yield* redeem(app.url, grant)).status).toBe(200)
    }))

  it.effect("GET is 405 with Allow: POST (T-14); chunked bodies over 16 KiB are 413", () =>
    Effect.gen(function*() {
      const app = yield* OAuthFixture
      const get = yield* fetchP(`${app.url}/api/oauth/token`)
      expect(get.status).toBe(405)
      expect(get.headers.get("allow")).toBe("POST")
      const chunks = new ReadableStream({
        start(controller) {
          for (let i = 0; i < 20; i++) controller.enqueue(new TextEncoder().encode("a".repeat(1024)))
          controller.close()
        }
      })
      const chunked = yield* Effect.promise(() =>
        fetch(`${app.url}/api/oauth/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: chunks,
          duplex: "half"
        } as RequestInit)
      )
      expect(chunked.status).toBe(413)
      expect(yield* jsonOf(chunked)).toStrictEqual({ error: "invalid_request" })
    }))
})

describe("token endpoint check order", () => {
  it("is pinned by the cases above: parameters, grant_type, client, then the code", () => {
    const firstSpending = cases.findIndex((c) => !c.codeUsable)
    expect(cases.slice(0, firstSpending).every((c) => c.codeUsable)).toBe(true)
    expect(cases.slice(firstSpending).every((c) => !c.codeUsable && c.error === "invalid_grant")).toBe(true)
  })
})
