/**
 * `POST /api/oauth/token`: every rejection of RFC 6749 §5.2 and RFC 7636 §4.6 that applies,
 * each asserting the status, the `error`, and whether the code is still usable afterwards —
 * refusals before the code is examined (invalid_request, unsupported_grant_type,
 * invalid_client, a foreign Origin, 413) leave it usable; any refusal after the claim
 * (invalid_grant) spends it (interface "States and transitions"). Requests that break two
 * rules at once pin the check order of docs/contract.md: the earlier check answers.
 */
import { expect, layer } from "@effect/vitest"
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
  // body and parameters: invalid_request, the code untouched
  ...["grant_type", "client_id", "code", "redirect_uri", "code_verifier"].map((name): Case => ({
    name: `missing ${name}`,
    send: form((g) => without(params(g), name)),
    status: 400,
    error: "invalid_request",
    codeUsable: true
  })),
  { name: "empty code (RFC 6749 §3.1: empty = omitted)", send: form((g) => ({ ...params(g), code: "" })), status: 400, error: "invalid_request", codeUsable: true },
  { name: "repeated code", send: form((g) => `${formOf(params(g))}&code=${encodeURIComponent(g.code)}`), status: 400, error: "invalid_request", codeUsable: true },
  {
    name: "JSON with an array value",
    send: (url, g) => postJson(`${url}/api/oauth/token`, { ...params(g), code: [g.code] }),
    status: 400,
    error: "invalid_request",
    codeUsable: true
  },
  { name: "verifier of 42 characters", send: form((g) => ({ ...params(g), code_verifier: "a".repeat(42) })), status: 400, error: "invalid_request", codeUsable: true },
  { name: "verifier of 129 characters", send: form((g) => ({ ...params(g), code_verifier: "a".repeat(129) })), status: 400, error: "invalid_request", codeUsable: true },
  { name: "verifier containing +", send: form((g) => ({ ...params(g), code_verifier: "+" + g.verifier.slice(1) })), status: 400, error: "invalid_request", codeUsable: true },
  { name: "malformed JSON", send: (url) => fetchP(`${url}/api/oauth/token`, { method: "POST", headers: { "content-type": "application/json" }, body: "{" }), status: 400, error: null, codeUsable: true },
  { name: "JSON that is not an object", send: (url) => postJson(`${url}/api/oauth/token`, [1]), status: 400, error: null, codeUsable: true },
  { name: "form with a broken escape %zz", send: form((g) => `${formOf(params(g))}&x=%zz`), status: 400, error: null, codeUsable: true },
  {
    name: "text/plain body",
    send: (url, g) => fetchP(`${url}/api/oauth/token`, { method: "POST", headers: { "content-type": "text/plain" }, body: formOf(params(g)) }),
    status: 400,
    error: null,
    codeUsable: true
  },
  {
    name: "body over 16 KiB → 413",
    send: form((g) => ({ ...params(g), padding: "x".repeat(17 * 1024) })),
    status: 413,
    error: null,
    codeUsable: true
  },
  // grant_type: unsupported_grant_type, the code untouched
  { name: "grant_type=refresh_token", send: form((g) => ({ ...params(g), grant_type: "refresh_token" })), status: 400, error: "unsupported_grant_type", codeUsable: true },
  { name: "grant_type=AUTHORIZATION_CODE", send: form((g) => ({ ...params(g), grant_type: "AUTHORIZATION_CODE" })), status: 400, error: "unsupported_grant_type", codeUsable: true },
  // check order: grant_type before the grant's parameters, parameters before the client
  {
    name: "grant_type=refresh_token without code: the grant is unsupported, not code missing",
    send: form((g) => ({ grant_type: "refresh_token", refresh_token: g.code, client_id: g.clientId })),
    status: 400,
    error: "unsupported_grant_type",
    codeUsable: true
  },
  {
    name: "grant_type=password with username and password",
    send: form((g) => ({ grant_type: "password", username: "alice", password: "x", client_id: g.clientId })),
    status: 400,
    error: "unsupported_grant_type",
    codeUsable: true
  },
  {
    name: "an unsupported grant_type and an unknown client_id: the grant answers",
    send: form((g) => ({ ...params(g), grant_type: "refresh_token", client_id: "no-such-client" })),
    status: 400,
    error: "unsupported_grant_type",
    codeUsable: true
  },
  {
    name: "a missing code_verifier and an unknown client_id: the parameters answer",
    send: form((g) => without({ ...params(g), client_id: "no-such-client" }, "code_verifier")),
    status: 400,
    error: "invalid_request",
    codeUsable: true
  },
  // client: invalid_client, the code untouched
  { name: "unknown client_id", send: form((g) => ({ ...params(g), client_id: "no-such-client" })), status: 401, error: "invalid_client", codeUsable: true },
  {
    name: "an unknown client_id and a wrong verifier: the client answers before the code is claimed",
    send: form((g) => ({ ...params(g), client_id: "no-such-client", code_verifier: "b".repeat(43) })),
    status: 401,
    error: "invalid_client",
    codeUsable: true
  },
  // a web page of another origin
  { name: "foreign Origin", send: form(params, { origin: "https://evil.example" }), status: 403, error: "invalid_request", codeUsable: true },
  // after the claim: invalid_grant, the code spent
  { name: "wrong verifier", send: form((g) => ({ ...params(g), code_verifier: "b".repeat(43) })), status: 400, error: "invalid_grant", codeUsable: false },
  { name: "verifier equal to the challenge: no plain fallback", send: form((g) => ({ ...params(g), code_verifier: g.challenge })), status: 400, error: "invalid_grant", codeUsable: false },
  { name: "redirect_uri on another loopback port", send: form((g) => ({ ...params(g), redirect_uri: "http://127.0.0.1:6666/cb" })), status: 400, error: "invalid_grant", codeUsable: false },
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
          // RFC 6749 §5.2: %x20-21 / %x23-5B / %x5D-7E, never an echo of input
          expect(body.error_description).toMatch(/^[\x20\x21\x23-\x5B\x5D-\x7E]*$/)
        }
        expect(res.headers.get("www-authenticate")).toBeNull()
        const after = yield* redeem(app.url, grant)
        expect(after.status).toBe(c.codeUsable ? 200 : 400)
        if (!c.codeUsable) expect((yield* jsonOf(after)).error).toBe("invalid_grant")
      }))
  }

  it.effect("a code issued to another registered client is invalid_grant and spent", () =>
    Effect.gen(function*() {
      const app = yield* OAuthFixture
      const grant = yield* obtainCode(app, { jar: app.jar })
      const other = yield* registerClient(app.url)
      const res = yield* tokenRequest(app.url, { ...params(grant), client_id: other.client_id })
      expect(res.status).toBe(400)
      expect((yield* jsonOf(res)).error).toBe("invalid_grant")
      expect((yield* redeem(app.url, grant)).status).toBe(400)
    }))

  it.effect("unknown, garbage and NUL codes are invalid_grant, never 500", () =>
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

  it.effect("a client_id holding NUL or a lone surrogate is invalid_client, never 500, and the code still redeems", () =>
    Effect.gen(function*() {
      const app = yield* OAuthFixture
      const grant = yield* obtainCode(app, { jar: app.jar })
      for (const clientId of ["\u0000", `${grant.clientId}\u0000`, "\uD800"]) {
        for (const res of [
          yield* tokenRequest(app.url, { ...params(grant), client_id: clientId }),
          yield* postJson(`${app.url}/api/oauth/token`, { ...params(grant), client_id: clientId })
        ]) {
          expect(res.status).toBe(401)
          expect((yield* jsonOf(res)).error).toBe("invalid_client")
        }
      }
      expect((yield* redeem(app.url, grant)).status).toBe(200)
    }))

  it.effect("form with and without charset and JSON all work; scope and resource are ignored", () =>
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

  it.effect("the RFC 7636 Appendix B pair redeems", () =>
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

  it.effect("a client that sent an Authorization header gets a Basic challenge with invalid_client", () =>
    Effect.gen(function*() {
      const app = yield* OAuthFixture
      const grant = yield* obtainCode(app, { jar: app.jar })
      const res = yield* tokenRequest(app.url, { ...params(grant), client_id: "nobody" }, { authorization: "Basic bm9ib2R5Og==" })
      expect(res.status).toBe(401)
      expect(res.headers.get("www-authenticate")).toMatch(/^Basic /)
      expect((yield* redeem(app.url, grant)).status).toBe(200)
    }))

  it.effect("GET is 405 with Allow: POST; chunked bodies over 16 KiB are 413", () =>
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

  it.effect("a body of exactly 16 KiB is read and redeems; one byte more is 413 and leaves the code usable", () =>
    Effect.gen(function*() {
      const app = yield* OAuthFixture
      const padded = (g: Grant, bytes: number) => {
        const body = `${formOf(params(g))}&pad=`
        return body + "x".repeat(bytes - body.length)
      }
      const over = yield* obtainCode(app, { jar: app.jar })
      const refused = yield* postForm(`${app.url}/api/oauth/token`, padded(over, 16 * 1024 + 1))
      expect(refused.status).toBe(413)
      expect((yield* redeem(app.url, over)).status).toBe(200)
      const at = yield* obtainCode(app, { jar: app.jar })
      const accepted = yield* postForm(`${app.url}/api/oauth/token`, padded(at, 16 * 1024))
      expect(accepted.status).toBe(200)
      expect((yield* jsonOf(accepted)).token_type).toBe("Bearer")
    }))
})
