/**
 * The preview routes over HTTP, the app in process under BELAY_PRIVATE_DESTINATIONS=deny with the local web server
 * opened by BELAY_DESTINATION_EXCEPTIONS (docs/contract.md "Link previews"): member credentials (cookie or Bearer;
 * none, or an API token → 401), the preview's JSON with the image as a signed same-origin path, 204 for a page without
 * one, 400 for a URL Belay does not fetch; the image route's headers, its signature (403, nothing fetched), and the
 * per-account rate limit. Then the approval page of an app known by its metadata document shows its logo through
 * the proxy, and its CSP allows exactly that path.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { EgressTrust } from "../../../src/services/egress/GuardedFetch.js"
import { PreviewRateLimits } from "../../../src/http/previews/PreviewRoutes.js"
import { describeMode } from "../../support/TestDatabase.js"
import { apiToken, bearer, passwordToken, signedIn } from "../auth/MemberHarness.js"
import { authorizeUrl, fetchP, pkcePair, startOAuthApp, textOf } from "../oauth/OAuthHarness.js"
import { ogPage, PAGE_CA, startPageServer, TINY_PNG } from "../../services/previews/PageServer.js"

const makeFixture = Effect.gen(function*() {
  const pages = yield* startPageServer()
  const secure = yield* startPageServer({ tls: true })
  const app = yield* startOAuthApp({
    BELAY_TRUST_PROXY: "true",
    BELAY_PRIVATE_DESTINATIONS: "deny",
    BELAY_DESTINATION_EXCEPTIONS: `127.0.0.1:${pages.port},127.0.0.1:${secure.port}`
  }).pipe(Effect.provideService(EgressTrust, { ca: [PAGE_CA] }))
  const jar = yield* signedIn(app.url)
  return { pages, secure, app, jar } as const
})
class Fixture extends Context.Tag("test/PreviewRoutesFixture")<Fixture, Effect.Effect.Success<typeof makeFixture>>() {}

let serial = 0
const fresh = (name: string) => `/${name}/${++serial}`

const get = (url: string, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const res = yield* fetchP(url, { headers })
    const body = Buffer.from(yield* Effect.promise(() => res.arrayBuffer()))
    return { status: res.status, headers: res.headers, body }
  })

const previewOf = (f: Effect.Effect.Success<typeof makeFixture>, target: string, headers = f.jar.header()) =>
  get(`${f.app.url}/api/previews?${new URLSearchParams({ url: target }).toString()}`, headers)

layer(Layer.scoped(Fixture, makeFixture), { excludeTestServices: true, timeout: "120 seconds" })(`preview routes on ${describeMode}`, (it) => {
  it.effect("GET /api/previews: the preview as JSON, its image a signed path of the proxy that serves it with safe headers", () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      const imagePath = fresh("pic.png")
      const image = f.pages.serve(imagePath, { kind: "body", headers: { "content-type": "image/png" }, body: TINY_PNG })
      const page = f.pages.serve(fresh("page"), { kind: "body", body: ogPage({ title: "A title", description: "Words", image }) })
      const answer = yield* previewOf(f, page)
      expect(answer.status).toBe(200)
      expect(answer.headers.get("cache-control")).toBe("private, max-age=600")
      const preview = JSON.parse(answer.body.toString()) as Record<string, string>
      expect(preview).toMatchObject({ url: page, title: "A title", description: "Words", siteName: "127.0.0.1" })
      const proxied = new URL(preview.image!, f.app.url)
      expect(proxied.pathname).toBe("/api/previews/image")
      expect(proxied.searchParams.get("url")).toBe(image)

      const served = yield* get(proxied.toString(), f.jar.header())
      expect(served.status).toBe(200)
      expect(served.body.equals(TINY_PNG)).toBe(true)
      expect(Object.fromEntries(["content-type", "x-content-type-options", "content-security-policy", "cache-control", "cross-origin-resource-policy"]
        .map((h) => [h, served.headers.get(h)]))).toEqual({
          "content-type": "image/png",
          "x-content-type-options": "nosniff",
          "content-security-policy": "default-src 'none'; sandbox",
          "cache-control": "private, max-age=86400",
          "cross-origin-resource-policy": "same-origin"
        })
      expect(f.pages.hits(imagePath)).toBe(1)

      // A Bearer password-sign-in token works as the cookie does.
      expect((yield* get(proxied.toString(), bearer(yield* passwordToken(f.app.url)))).status).toBe(200)
    }))

  it.effect("the image route: 401 without a member, 403 for a signature not Belay's (nothing fetched), 502 for a non-image", () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      const path = fresh("other.png")
      const image = f.pages.serve(path, { kind: "body", headers: { "content-type": "image/png" }, body: TINY_PNG })
      const forged = `${f.app.url}/api/previews/image?${new URLSearchParams({ url: image, sig: "A".repeat(43) }).toString()}`
      expect((yield* get(forged, f.jar.header())).status).toBe(403)
      expect((yield* get(`${f.app.url}/api/previews/image?${new URLSearchParams({ url: image }).toString()}`, f.jar.header())).status).toBe(400)
      expect(f.pages.hits(path)).toBe(0)

      const svg = f.pages.serve(fresh("page-svg"), {
        kind: "body",
        body: ogPage({ title: "Vector", image: f.pages.serve(fresh("v.svg"), { kind: "body", headers: { "content-type": "image/svg+xml" }, body: "<svg/>" }) })
      })
      const signed = new URL((JSON.parse((yield* previewOf(f, svg)).body.toString()) as { image: string }).image, f.app.url).toString()
      expect((yield* get(signed)).status).toBe(401)
      const refused = yield* get(signed, f.jar.header())
      expect(refused.status).toBe(502)
      expect(JSON.parse(refused.body.toString())).toMatchObject({ error: "bad_gateway" })
    }))

  it.effect("204 for a page without a preview, 400 for a URL Belay does not fetch, 401 without a member or with an API token", () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      const bare = f.pages.serve(fresh("bare"), { kind: "body", body: "<html><body>nothing</body></html>" })
      const none = yield* previewOf(f, bare)
      expect(none.status).toBe(204)
      expect(none.body.length).toBe(0)
      for (const bad of ["ftp://x.example/", "javascript:alert(1)", "https://u:p@x.example/", ""]) {
        expect((yield* previewOf(f, bad)).status, bad).toBe(400)
      }
      expect((yield* get(`${f.app.url}/api/previews?url=a&url=b`, f.jar.header())).status).toBe(400)
      expect((yield* previewOf(f, bare, {})).status).toBe(401)
      expect((yield* previewOf(f, bare, bearer(yield* apiToken(f.app)))).status).toBe(401)
    }))

  it.effect("a private destination gives no preview, and the guard's refusal is kept (no fetch)", () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      const answer = yield* previewOf(f, "http://10.0.0.1/")
      expect(answer.status).toBe(204)
      expect((yield* previewOf(f, "http://[::1]/")).status).toBe(204)
    }))

  it.effect("the approval page shows a metadata document's logo through the proxy, and its CSP allows exactly that", () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      const logoPath = fresh("logo.png")
      const logo = f.secure.serve(logoPath, { kind: "body", headers: { "content-type": "image/png" }, body: TINY_PNG })
      const documentPath = fresh("client.json")
      const clientId = `${f.secure.origin}${documentPath}`
      f.secure.serve(documentPath, {
        kind: "body",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ client_id: clientId, client_name: "Logo App", redirect_uris: ["https://app.example/cb"], logo_uri: logo })
      })
      const jar = f.jar
      const { challenge } = pkcePair()
      const res = jar.take(yield* fetchP(authorizeUrl(f.app.url, { client_id: clientId, redirect_uri: "https://app.example/cb", code_challenge: challenge }), {
        headers: jar.header()
      }))
      const html = yield* textOf(res)
      expect(res.status).toBe(200)
      const src = /<img src="([^"]+)"/.exec(html)?.[1]?.replaceAll("&amp;", "&")
      expect(src?.startsWith("/api/previews/image?")).toBe(true)
      expect(html).toContain("(not verified)")
      expect(res.headers.get("content-security-policy")).toContain(`img-src ${f.app.url}/api/previews/image;`)
      expect(f.secure.hits(logoPath)).toBe(0)
      const image = yield* get(`${f.app.url}${src}`, jar.header())
      expect(image.status).toBe(200)
      expect(image.headers.get("content-type")).toBe("image/png")
      expect(f.secure.hits(logoPath)).toBe(1)
    }))

  it.effect(`past ${PreviewRateLimits.previews} previews a minute, 429 with Retry-After`, () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      const url = f.pages.serve(fresh("limit"), { kind: "body", body: ogPage({ title: "again" }) })
      const jar = yield* signedIn(f.app.url)
      const statuses = yield* Effect.forEach(
        Array.from({ length: PreviewRateLimits.previews + 1 }),
        () => Effect.map(previewOf(f, url, jar.header()), (a) => a.status),
        { concurrency: 8 }
      )
      expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(PreviewRateLimits.previews)
      const last = yield* previewOf(f, url, jar.header())
      expect(last.status).toBe(429)
      expect(Number(last.headers.get("retry-after"))).toBeGreaterThan(0)
    }))
})
