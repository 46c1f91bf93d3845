/**
 * LinkPreviews and ImageProxy against local web servers (PageServer), on a real database, under
 * BELAY_PRIVATE_DESTINATIONS=deny with BELAY_DESTINATION_EXCEPTIONS opening only the servers standing for public
 * sites (docs/decisions/previews.md): what a page says, the bounds (too large, too slow, the wrong type), the guard
 * refusing a private destination directly and behind a redirect, one fetch for 20 concurrent requests, one fetch for
 * two service instances (two nodes) over one database, the prune; the proxy's signature and what it serves.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Either, Layer, Option } from "effect"
import { EgressTrust } from "../../../src/services/egress/GuardedFetch.js"
import { ImageProxy } from "../../../src/services/previews/ImageProxy.js"
import { LinkPreviewLimits, LinkPreviews } from "../../../src/services/previews/LinkPreviews.js"
import { describeMode, TestDatabaseLive } from "../../support/TestDatabase.js"
import { ogPage, PAGE_CA, startPageServer, TINY_PNG } from "./PageServer.js"

const makeFixture = Effect.gen(function*() {
  const pages = yield* startPageServer()
  const secure = yield* startPageServer({ tls: true })
  // Listening on loopback like the others, but not opened by the exceptions: a private destination.
  const inside = yield* startPageServer()
  const base = yield* Layer.build(TestDatabaseLive({
    BELAY_PRIVATE_DESTINATIONS: "deny",
    BELAY_DESTINATION_EXCEPTIONS: `127.0.0.1:${pages.port},127.0.0.1:${secure.port}`
  }))
  const node = () => Effect.provide(Layer.build(Layer.merge(LinkPreviews.Default, ImageProxy.Default)), base)
  const one = yield* node()
  const two = yield* node()
  return {
    pages,
    secure,
    inside,
    one: Context.get(one, LinkPreviews),
    two: Context.get(two, LinkPreviews),
    proxy: Context.get(one, ImageProxy),
    otherProxy: Context.get(two, ImageProxy),
    sql: Context.get(base, SqlClient.SqlClient)
  } as const
}).pipe(Effect.provideService(EgressTrust, { ca: [PAGE_CA] }))
class Fixture extends Context.Tag("test/PreviewFixture")<Fixture, Effect.Effect.Success<typeof makeFixture>>() {}

let serial = 0
const fresh = (name: string) => `/${name}/${++serial}`

layer(Layer.scoped(Fixture, makeFixture), { excludeTestServices: true, timeout: "120 seconds" })(`link previews on ${describeMode}`, (it) => {
  it.effect("reads a page's Open Graph, keeps it, and answers again without a fetch", () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      const path = fresh("og")
      const url = f.pages.serve(path, { kind: "body", body: ogPage({ title: "Hello &amp; welcome", description: "A page", image: "/i.png" }) })
      const first = yield* f.one.preview(url)
      expect(first).toEqual(Option.some({
        url,
        title: "Hello & welcome",
        description: "A page",
        image: `${f.pages.origin}/i.png`,
        siteName: "127.0.0.1"
      }))
      expect(yield* f.one.preview(`${url}#another-fragment`)).toEqual(first)
      expect(f.pages.hits(path)).toBe(1)
    }))

  it.effect("20 concurrent requests for one URL: one fetch, one answer for all", () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      const path = fresh("slow")
      const url = f.pages.serve(path, { kind: "body", delayMs: 300, body: ogPage({ title: "Once" }) })
      const answers = yield* Effect.all(Array.from({ length: 20 }, () => f.one.preview(url)), { concurrency: "unbounded" })
      expect(f.pages.hits(path)).toBe(1)
      expect(answers.every((a) => Option.isSome(a) && a.value.title === "Once")).toBe(true)
    }))

  it.effect("a second instance (another node) on the same database answers from the row the first stored", () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      const path = fresh("shared")
      const url = f.pages.serve(path, { kind: "body", body: ogPage({ title: "Shared" }) })
      yield* f.one.preview(url)
      const other = yield* f.two.preview(url)
      expect(Option.map(other, (p) => p.title)).toEqual(Option.some("Shared"))
      expect(f.pages.hits(path)).toBe(1)
    }))

  it.effect("https with the site's own CA, and redirects followed (relative, then absolute)", () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      const target = f.secure.serve(fresh("final"), { kind: "body", body: ogPage({ title: "Arrived" }) })
      const hop = f.pages.serve(fresh("hop"), { kind: "redirect", status: 301, location: target })
      const start = f.pages.serve(fresh("start"), { kind: "redirect", location: new URL(hop).pathname })
      const found = yield* f.one.preview(start)
      expect(Option.map(found, (p) => [p.title, p.url])).toEqual(Option.some(["Arrived", target]))
    }))

  it.effect("more than 3 redirects: no preview", () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      const paths = [fresh("r"), fresh("r"), fresh("r"), fresh("r"), fresh("r")]
      paths.forEach((p, i) => f.pages.serve(p, i === 4
        ? { kind: "body", body: ogPage({ title: "too far" }) }
        : { kind: "redirect", location: paths[i + 1]! }))
      expect(yield* f.one.preview(`${f.pages.origin}${paths[0]}`)).toEqual(Option.none())
      expect(f.pages.hits(paths[4]!)).toBe(0)
    }))

  it.effect("a private destination is never fetched: directly, or behind a redirect from a public one", () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      const path = fresh("private")
      const url = f.inside.serve(path, { kind: "body", body: ogPage({ title: "Secret" }) })
      expect(yield* f.one.preview(url)).toEqual(Option.none())
      const via = f.pages.serve(fresh("to-private"), { kind: "redirect", location: url })
      expect(yield* f.one.preview(via)).toEqual(Option.none())
      expect(yield* f.one.preview(`http://localhost:${f.inside.port}${path}`)).toEqual(Option.none())
      expect(f.inside.hits(path)).toBe(0)
    }))

  it.effect("too large: the first 512 KiB are read and the connection cut; a head past them gives no preview", () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      const bigPath = fresh("big")
      const head = "<html><head><title>Big page</title></head><body>"
      f.pages.serve(bigPath, { kind: "stream", chunk: head + "x".repeat(64 * 1024 - head.length), total: 64 * 1024 * 1024 })
      const big = yield* f.one.preview(`${f.pages.origin}${bigPath}`)
      expect(Option.map(big, (p) => p.title)).toEqual(Option.some("Big page"))
      // Cut long before the 64 MiB: what left the server is what the sockets' buffers held past the 512 KiB.
      yield* Effect.sleep("200 millis")
      expect(f.pages.sent(bigPath)).toBeLessThan(32 * 1024 * 1024)

      const latePath = fresh("late")
      f.pages.serve(latePath, {
        kind: "body",
        body: `<html><head><!--${" ".repeat(LinkPreviewLimits.maxHtmlBytes)}--><title>Too late</title></head></html>`
      })
      expect(yield* f.one.preview(`${f.pages.origin}${latePath}`)).toEqual(Option.none())
    }))

  it.effect("too slow: no preview after the time bound, and the failure is kept (no second fetch)", () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      const path = fresh("hang")
      const url = f.pages.serve(path, { kind: "hang" })
      const started = Date.now()
      expect(yield* f.one.preview(url)).toEqual(Option.none())
      const took = Date.now() - started
      expect(took).toBeGreaterThanOrEqual(4_500)
      expect(took).toBeLessThan(8_000)
      expect(yield* f.two.preview(url)).toEqual(Option.none())
      expect(f.pages.hits(path)).toBe(1)
      const [row] = yield* f.sql<{ outcome: string }>`SELECT outcome FROM link_previews WHERE url = ${url}`
      expect(row?.outcome).toBe("failed")
    }))

  it.effect("the wrong type: a PDF has no preview, a link to an image is previewed as that image", () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      const pdf = f.pages.serve(fresh("doc.pdf"), { kind: "body", headers: { "content-type": "application/pdf" }, body: "%PDF-1.7" })
      expect(yield* f.one.preview(pdf)).toEqual(Option.none())
      const png = f.pages.serve(fresh("pic.png"), { kind: "body", headers: { "content-type": "image/png" }, body: TINY_PNG })
      expect(Option.map(yield* f.one.preview(png), (p) => [p.image, p.title])).toEqual(Option.some([png, null]))
    }))

  it.effect("a URL Belay does not fetch is refused without a fetch", () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      for (const bad of ["ftp://example.com/", "javascript:alert(1)", `http://user:pw@127.0.0.1:${f.pages.port}/`, "not a url"]) {
        const result = yield* Effect.either(f.one.preview(bad))
        expect(Either.isLeft(result) && result.left._tag === "InvalidPreviewUrl", bad).toBe(true)
      }
    }))

  it.effect("the prune deletes expired rows", () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      yield* f.sql`INSERT INTO link_previews (url, outcome, fetched_at, expires_at)
        VALUES ('https://old.example/', 'none', now() - interval '2 days', now() - interval '1 day')`
      yield* f.one.prune
      const rows = yield* f.sql`SELECT 1 FROM link_previews WHERE url = 'https://old.example/'`
      expect(rows).toHaveLength(0)
    }))

  it.effect(`the prune keeps at most ${LinkPreviewLimits.maxRows} rows, dropping the oldest`, () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      const extra = 10
      yield* f.sql`INSERT INTO link_previews (url, outcome, fetched_at, expires_at)
        SELECT 'https://many.example/' || n, 'none', now() - interval '1 hour' - n * interval '1 second', now() + interval '1 hour'
        FROM generate_series(1, ${LinkPreviewLimits.maxRows + extra}) AS n`
      yield* f.one.prune
      const [counted] = yield* f.sql<{ total: number; oldestLeft: number }>`
        SELECT count(*)::int AS total,
               count(*) FILTER (WHERE url = 'https://many.example/' || ${LinkPreviewLimits.maxRows + extra})::int AS "oldestLeft"
        FROM link_previews`
      expect(counted?.total).toBeLessThanOrEqual(LinkPreviewLimits.maxRows)
      expect(counted?.oldestLeft).toBe(0)
      // The newest rows (the other tests' own lookups) stay.
      expect(yield* f.sql`SELECT 1 FROM link_previews WHERE url = 'https://many.example/1'`).toHaveLength(1)
    }))

  it.effect("image proxy: a signature is Belay's own, the same on every instance of one key, and bound to its URL", () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      const url = "https://cdn.example/a.png"
      const sig = f.proxy.signature(url)
      expect(f.proxy.verify(url, sig)).toBe(true)
      expect(f.otherProxy.verify(url, sig)).toBe(true)
      expect(f.proxy.verify("https://cdn.example/b.png", sig)).toBe(false)
      expect(f.proxy.verify(url, sig.slice(0, -1))).toBe(false)
      expect(f.proxy.verify(url, "")).toBe(false)
    }))

  it.effect("image proxy: serves a PNG once per URL; refuses SVG, HTML called PNG, too large, and a private host", () =>
    Effect.gen(function*() {
      const f = yield* Fixture
      const pngPath = fresh("logo.png")
      const png = f.pages.serve(pngPath, { kind: "body", headers: { "content-type": "image/png" }, body: TINY_PNG })
      const served = yield* Effect.all([f.proxy.fetch(png), f.proxy.fetch(png)], { concurrency: "unbounded" })
      expect(served.map((s) => s.contentType)).toEqual(["image/png", "image/png"])
      expect(served[0]!.body.equals(TINY_PNG)).toBe(true)
      expect(f.pages.hits(pngPath)).toBe(1)

      const refusals = {
        svg: f.pages.serve(fresh("x.svg"), { kind: "body", headers: { "content-type": "image/svg+xml" }, body: "<svg xmlns='http://www.w3.org/2000/svg'/>" }),
        html: f.pages.serve(fresh("fake.png"), { kind: "body", headers: { "content-type": "image/png" }, body: "<html><script>1</script></html>" }),
        large: f.pages.serve(fresh("huge.png"), { kind: "body", headers: { "content-type": "image/png" }, body: Buffer.concat([TINY_PNG, Buffer.alloc(6 * 1024 * 1024)]) }),
        missing: `${f.pages.origin}${fresh("nothing.png")}`,
        inside: f.inside.serve(fresh("in.png"), { kind: "body", headers: { "content-type": "image/png" }, body: TINY_PNG })
      }
      for (const [name, url] of Object.entries(refusals)) {
        const result = yield* Effect.either(f.proxy.fetch(url))
        expect(Either.isLeft(result), name).toBe(true)
      }
    }))
})
