/**
 * The upload endpoint and the stored files' URLs through the real HTTP stack (docs/contract.md "Uploads"): each way
 * in (session with a same-origin Origin, Bearer OAuth and API tokens, HTTP Basic with the listener's user name and a
 * password or token) answers 201 with `Location`; what cannot upload is refused and stores nothing; a file is served
 * with the headers of its type, in ranges, 304 on its ETag, 416 past its end, and 404 for any other id; its owner
 * alone deletes it.
 */
import { randomBytes } from "node:crypto"
import * as Http from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { AccountLimits } from "../../../src/services/identity/AccountLimits.js"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { describeMode } from "../../support/TestDatabase.js"
import { apiToken, bearer, passwordToken, signedIn } from "../auth/MemberHarness.js"
import { fetchP, type OAuthApp, PASSWORD, startOAuthApp, textOf } from "../oauth/OAuthHarness.js"

const MAX = 1024 * 1024

const basic = (user: string, secret: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${secret}`).toString("base64")}` })

const post = (app: OAuthApp, body: Uint8Array, headers: Record<string, string>) =>
  Effect.gen(function*() {
    const res = yield* fetchP(`${app.url}/api/uploads`, { method: "POST", headers, body })
    const text = yield* textOf(res)
    return { status: res.status, location: res.headers.get("location"), headers: res.headers, json: (text === "" ? {} : JSON.parse(text)) as Record<string, unknown> }
  })

const count = (app: OAuthApp) =>
  Effect.map(app.sql<{ n: number }>`SELECT (SELECT count(*) FROM uploads) + (SELECT count(*) FROM upload_chunks) AS n`.pipe(Effect.orDie), (r) => Number(r[0]!.n))

const get = (url: string, headers: Record<string, string> = {}, method = "GET") =>
  Effect.gen(function*() {
    const res = yield* fetchP(url, { method, headers })
    return { res, bytes: Buffer.from(yield* Effect.promise(() => res.arrayBuffer())) }
  })

describe(`POST /api/uploads and GET /uploads/… on ${describeMode}`, () => {
  it.scopedLive("every way in answers 201 with Location; what may not upload is refused and stores nothing", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({ BELAY_UPLOAD_MAX_BYTES: String(MAX) })
      const png = randomBytes(3000)
      const named = { "content-type": "image/png", "content-disposition": "attachment; filename=\"cat.png\"" }

      const oauth = yield* post(app, png, { ...named, ...bearer(yield* passwordToken(app.url)) })
      expect(oauth.status).toBe(201)
      expect(oauth.location).toMatch(new RegExp(`^${app.url}/uploads/[A-Za-z0-9_-]{22}/cat\\.png$`))
      expect(oauth.json).toMatchObject({ url: oauth.location, name: "cat.png", contentType: "image/png", size: 3000 })

      const api = yield* post(app, png, { ...named, ...bearer(yield* apiToken(app)) })
      expect(api.status).toBe(201)
      const jar = yield* signedIn(app.url)
      const session = yield* post(app, png, { ...named, ...jar.header(), origin: app.url })
      expect(session.status).toBe(201)
      const basicPassword = yield* post(app, png, { ...named, ...basic("alice/testnet@phone", PASSWORD) })
      expect(basicPassword.status).toBe(201)
      const basicToken = yield* post(app, png, { ...named, ...basic("alice", yield* apiToken(app, "irc")) })
      expect(basicToken.status).toBe(201)
      // RFC 8187: the exact name from filename*, over the ASCII fallback.
      const unicode = yield* post(app, png, {
        ...bearer(yield* apiToken(app, "u")),
        "content-disposition": "attachment; filename=\"_t_.png\"; filename*=UTF-8''%C3%A9t%C3%A9.png"
      })
      expect(unicode.json).toMatchObject({ name: "été.png", contentType: "image/png" })
      const ids = new Set([oauth, api, session, basicPassword, basicToken, unicode].map((r) => r.location))
      expect(ids.size).toBe(6)

      const stored = yield* count(app)
      const refusals = [
        yield* post(app, png, named),
        yield* post(app, png, { ...named, ...bearer("not-a-token-at-all-0123456789") }),
        yield* post(app, png, { ...named, ...basic("alice", "wrong password") }),
        yield* post(app, png, { ...named, ...basic("nobody", PASSWORD) }),
        yield* post(app, png, { ...named, ...bearer(yield* apiToken(app, "ro", "read")) }),
        // The session cookie without a same-origin Origin: a cross-site form could send it.
        yield* post(app, png, { ...named, ...jar.header() }),
        yield* post(app, png, { ...named, ...jar.header(), origin: "https://evil.example" })
      ]
      expect(refusals.map((r) => r.status)).toEqual([401, 401, 401, 401, 403, 403, 403])
      expect(refusals[0]!.headers.get("www-authenticate")).toContain("Basic")
      expect(refusals[4]!.json).toMatchObject({ error: "insufficient_scope" })
      expect(yield* count(app)).toBe(stored)

      // Too large (declared, and the JSON says the limit) and over the account's total: 413, nothing stored.
      const big = yield* post(app, randomBytes(MAX + 1), { ...named, ...bearer(yield* apiToken(app, "big")) })
      expect(big.status).toBe(413)
      expect(big.json).toMatchObject({ error: "too_large", max: MAX })
      yield* app.service(AccountLimits).set(app.accountId, { uploads: 0 })
      const full = yield* post(app, png, { ...named, ...bearer(yield* apiToken(app, "full")) })
      expect(full.status).toBe(413)
      expect(full.json).toMatchObject({ error: "quota_exceeded", limit: "uploads", max: 0 })
      expect(typeof full.json.error_description).toBe("string")
      expect(yield* count(app)).toBe(stored)
    }))

  it.scopedLive("a client that goes away mid-body, or sends more than it may without a length, leaves nothing", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({ BELAY_UPLOAD_MAX_BYTES: String(MAX) })
      const token = yield* apiToken(app)
      const before = yield* count(app)
      // Declares 900 KiB, sends 600 KiB (past two chunk rows, written already), then the connection is cut.
      yield* Effect.async<void>((resume) => {
        const url = new URL(`${app.url}/api/uploads`)
        const req = Http.request({
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "image/png", "content-length": String(900 * 1024) }
        })
        req.on("error", () => resume(Effect.void))
        req.write(randomBytes(600 * 1024), () => setTimeout(() => req.destroy(), 300))
        req.on("close", () => resume(Effect.void))
      })
      yield* Effect.sleep("500 millis")
      expect(yield* count(app)).toBe(before)
      // No Content-Length (chunked): refused once the body passes the limit, nothing stored.
      const chunked = yield* Effect.async<{ status: number; body: string }>((resume) => {
        const url = new URL(`${app.url}/api/uploads`)
        const req = Http.request({
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/octet-stream", "transfer-encoding": "chunked" }
        }, (res) => {
          let body = ""
          res.on("data", (c: Buffer) => (body += c.toString()))
          res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, body })))
        })
        req.on("error", () => resume(Effect.succeed({ status: 0, body: "" })))
        for (let i = 0; i < 5; i++) req.write(randomBytes(256 * 1024))
        req.end()
      })
      expect(chunked.status).toBe(413)
      expect(JSON.parse(chunked.body)).toMatchObject({ error: "too_large", max: MAX })
      expect(yield* count(app)).toBe(before)
    }))

  it.scopedLive("served by type, in ranges, cached by ETag; 416 past the end; 404 for any other id", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const auth = bearer(yield* passwordToken(app.url))
      const upload = (name: string, type: string, body: Buffer) =>
        Effect.map(post(app, body, { ...auth, "content-type": type, "content-disposition": `attachment; filename="${name}"` }), (r) => {
          expect(r.status).toBe(201)
          return r.location!
        })
      const bytes = randomBytes(300_000)
      const png = yield* upload("cat.png", "image/png", bytes)
      const svg = yield* upload("x.svg", "image/svg+xml", Buffer.from("<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>"))
      const html = yield* upload("page.html", "text/html", Buffer.from("<script>alert(1)</script>"))
      const webm = yield* upload("clip.webm", "video/webm", Buffer.from("webm"))

      const whole = yield* get(png)
      expect(whole.res.status).toBe(200)
      expect(whole.bytes.equals(bytes)).toBe(true)
      const h = whole.res.headers
      expect(h.get("content-type")).toBe("image/png")
      expect(h.get("content-length")).toBe("300000")
      expect(h.get("x-content-type-options")).toBe("nosniff")
      expect(h.get("content-security-policy")).toMatch(/^sandbox; default-src 'none'/)
      expect(h.get("content-disposition")).toBe("inline; filename=\"cat.png\"; filename*=UTF-8''cat.png")
      expect(h.get("accept-ranges")).toBe("bytes")
      expect(h.get("cache-control")).toContain("immutable")
      const etag = h.get("etag")!
      expect(etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/)

      for (const [url, type] of [[svg, "image/svg+xml"], [html, "text/html"]] as const) {
        const served = yield* get(url)
        expect(served.res.headers.get("content-type")).toBe(type)
        expect(served.res.headers.get("content-disposition")).toMatch(/^attachment; /)
        expect(served.res.headers.get("x-content-type-options")).toBe("nosniff")
        expect(served.res.headers.get("content-security-policy")).toContain("sandbox")
      }
      expect((yield* get(webm)).res.headers.get("content-disposition")).toMatch(/^inline; /)

      const part = yield* get(png, { range: "bytes=262140-262149" })
      expect(part.res.status).toBe(206)
      expect(part.res.headers.get("content-range")).toBe("bytes 262140-262149/300000")
      expect(part.bytes.equals(bytes.subarray(262_140, 262_150))).toBe(true)
      const suffix = yield* get(png, { range: "bytes=-5" })
      expect([suffix.res.status, suffix.bytes.equals(bytes.subarray(299_995))]).toEqual([206, true])
      const open = yield* get(png, { range: "bytes=299999-" })
      expect([open.res.status, open.bytes.length]).toEqual([206, 1])
      const past = yield* get(png, { range: "bytes=300000-" })
      expect(past.res.status).toBe(416)
      expect(past.res.headers.get("content-range")).toBe("bytes */300000")
      // Several ranges, or a validator that is not this file's: the whole file.
      expect((yield* get(png, { range: "bytes=0-1,5-6" })).res.status).toBe(200)
      expect((yield* get(png, { range: "bytes=0-1", "if-range": "\"other\"" })).res.status).toBe(200)

      const cached = yield* get(png, { "if-none-match": etag })
      expect([cached.res.status, cached.bytes.length]).toEqual([304, 0])
      const head = yield* get(png, {}, "HEAD")
      expect([head.res.status, head.res.headers.get("content-length"), head.bytes.length]).toEqual([200, "300000", 0])

      // Another id, a malformed one, another name for the right id (the name is not checked).
      const id = new URL(png).pathname.split("/")[2]!
      const other = id.startsWith("A") ? `B${id.slice(1)}` : `A${id.slice(1)}`
      expect((yield* get(`${app.url}/uploads/${other}/cat.png`)).res.status).toBe(404)
      expect((yield* get(`${app.url}/uploads/short/cat.png`)).res.status).toBe(404)
      expect((yield* get(`${app.url}/uploads/${id}/dog.png`)).res.status).toBe(200)

      // DELETE: only by the owner (another account's file is not found), then gone for everyone.
      yield* app.service(Accounts).create("mallory", PASSWORD).pipe(Effect.orDie)
      const del = (headers: Record<string, string>) =>
        Effect.map(fetchP(`${app.url}/api/uploads/${id}`, { method: "DELETE", headers }), (r) => r.status)
      expect(yield* del(basic("mallory", PASSWORD))).toBe(404)
      expect((yield* get(png)).res.status).toBe(200)
      expect(yield* del({})).toBe(401)
      expect(yield* del(auth)).toBe(204)
      expect((yield* get(png)).res.status).toBe(404)
      expect(yield* del(auth)).toBe(404)
      const [left] = yield* app.sql<{ n: number }>`SELECT count(*)::int AS n FROM upload_chunks WHERE upload_id = ${id}`.pipe(Effect.orDie)
      expect(left!.n).toBe(0)
    }))
})
