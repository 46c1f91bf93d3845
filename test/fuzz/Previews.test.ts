/**
 * Hostile input against link previews (docs/decisions/previews.md): generated HTML — tag soup built from the tokens
 * the reader looks for, unterminated comments, scripts and SVG, entities, text-direction controls, every charset
 * label — through PreviewHtml; generated URLs and redirect locations through PreviewUrl; random bytes through
 * ImageBytes; and generated `url` parameters against `GET /api/previews` of an app in process. Judged: nothing
 * throws, every value a preview holds is within its bound and free of control and text-direction characters, an
 * image or a normalised URL is always an http(s) URL that normalises to itself, and the route answers 200, 204,
 * 400 or 429, never a server error.
 *
 * Reproducible: the cases come from fast-check with a fixed seed, printed at the start; FUZZ_SEED overrides it and
 * FUZZ_RUNS the number of cases.
 */
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import fc from "fast-check"
import { judgeImage } from "../../src/services/previews/ImageBytes.js"
import { decodeHtml, parsePreviewHtml, PreviewTextLimits } from "../../src/services/previews/PreviewHtml.js"
import { MAX_URL_LENGTH, normalizePreviewUrl, redirectTarget } from "../../src/services/previews/PreviewUrl.js"
import { signedIn } from "../http/auth/MemberHarness.js"
import { fetchP, startOAuthApp } from "../http/oauth/OAuthHarness.js"
import { EDGE_TEXT, edgeString } from "./support/HostileValues.js"

const SEED = process.env.FUZZ_SEED !== undefined && process.env.FUZZ_SEED !== "" ? Number(process.env.FUZZ_SEED) : 363636
const RUNS = process.env.FUZZ_RUNS !== undefined && process.env.FUZZ_RUNS !== "" ? Number(process.env.FUZZ_RUNS) : 10_000

const TOKENS: ReadonlyArray<string> = [
  "<html>", "<head>", "</head>", "<body>", "<title>", "</title>", "<TITLE >", "<svg>", "</svg>", "<math>", "<script>",
  "</script>", "<style>", "<!--", "-->", "<![CDATA[", "]]>", "<!doctype html>", "<base href=\"", "<meta property=\"og:title\" content=\"",
  "<meta name=\"twitter:image\" content=\"", "<meta property=og:image content=", "<meta name=description content='",
  "<meta charset=\"", "\">", "'>", ">", "<", "\"", "&amp;", "&#0;", "&#x202E;", "&#xD800;", "&#1114112;", "&nbsp;",
  "&notanentity;", "javascript:alert(1)", "//evil.example/x.png", "http://[::1]/", "https://a.example/i.png",
  "data:image/png;base64,AAAA", "windows-1252", "utf-16le", "x-nonsense", "\u0000", "\r\n"
]

/** A page that says something, its values hostile, with tokens around them that may swallow it. */
const filled: fc.Arbitrary<string> = fc.tuple(
  fc.constantFrom("title", "og:title", "twitter:title", "og:description", "description", "og:image", "twitter:image", "og:site_name"),
  edgeString,
  fc.array(fc.constantFrom(...TOKENS), { maxLength: 3 }),
  fc.array(fc.constantFrom(...TOKENS), { maxLength: 3 })
).map(([key, value, before, after]) =>
  key === "title"
    ? `<head>${before.join("")}<title>${value}x</title>${after.join("")}`
    : `${before.join("")}<meta name="${key}" content="${value.replaceAll("\"", "&quot;")}x">${after.join("")}`
)

const html: fc.Arbitrary<string> = fc.oneof(
  filled,
  fc.array(fc.oneof(fc.constantFrom(...TOKENS), fc.constantFrom(...EDGE_TEXT), edgeString), { maxLength: 60 }).map((parts) => parts.join("")),
  edgeString,
  fc.string({ unit: "binary", maxLength: 400 })
)

const HOSTS = ["a.example", "127.0.0.1", "[::1]", "0x7f.1", "2130706433", "[::ffff:10.0.0.1]", "xn--nxasmq6b.example", "ex ample", "", "例え.jp", "a..b", "%00"]
const url: fc.Arbitrary<string> = fc.oneof(
  fc.webUrl({ withFragments: true, withQueryParameters: true }),
  fc.tuple(
    fc.constantFrom("http://", "https://", "HTTP://", "ftp://", "javascript:", "//", "http:/", "https:\\\\", ""),
    fc.option(fc.constantFrom("user@", "u:p@", "@"), { nil: "" }),
    fc.constantFrom(...HOSTS),
    fc.option(fc.constantFrom(":80", ":0", ":65536", ":-1", ":443"), { nil: "" }),
    fc.array(fc.oneof(fc.constantFrom("/", "/..", "/%2e%2e", "?", "#", "&", "%", "%zz"), edgeString), { maxLength: 6 }).map((p) => p.join(""))
  ).map((parts) => parts.join("")),
  edgeString,
  fc.string({ minLength: MAX_URL_LENGTH - 10, maxLength: MAX_URL_LENGTH + 10 }).map((s) => `https://a.example/${s}`)
)

const CONTROLS = /[\p{Cc}\p{Bidi_Control}]/u

const checkText = (label: string, value: string | undefined, max: number): string | undefined => {
  if (value === undefined) return undefined
  if (Array.from(value).length > max) return `${label} longer than ${max}`
  if (CONTROLS.test(value)) return `${label} holds a control or text-direction character`
  return undefined
}

const checkUrl = (label: string, value: string | undefined): string | undefined => {
  if (value === undefined) return undefined
  if (!/^https?:\/\//.test(value)) return `${label} is not http(s): ${value.slice(0, 60)}`
  if (value.length > MAX_URL_LENGTH || value.includes("#")) return `${label} too long or has a fragment`
  if (normalizePreviewUrl(value) !== value) return `${label} does not normalise to itself`
  return undefined
}

it(`link previews: ${RUNS} hostile pages, URLs and images (seed ${SEED})`, () => {
  console.log(`previews fuzz: seed ${SEED}, ${RUNS} cases`)
  const failures: Array<string> = []
  const pages = fc.sample(fc.tuple(html, fc.constantFrom(undefined, "text/html", "text/html; charset=windows-1252", "text/html; charset=\"x\"")), {
    seed: SEED,
    numRuns: RUNS
  })
  let said = 0
  for (const [page, contentType] of pages) {
    try {
      const decoded = decodeHtml(Buffer.from(page, "latin1"), contentType)
      const found = parsePreviewHtml(decoded, "https://page.example/a/b")
      if (found.title !== undefined || found.description !== undefined || found.image !== undefined) said++
      const wrong = checkText("title", found.title, PreviewTextLimits.title) ??
        checkText("description", found.description, PreviewTextLimits.description) ??
        checkText("siteName", found.siteName, PreviewTextLimits.siteName) ??
        checkUrl("image", found.image)
      if (wrong !== undefined) failures.push(`${JSON.stringify(page.slice(0, 80))}: ${wrong}`)
    } catch (e) {
      failures.push(`${JSON.stringify(page.slice(0, 80))}: threw ${String(e)}`)
    }
  }
  // The generator reaches the reader's paths, or the cases say less than they seem to.
  expect(said).toBeGreaterThan(RUNS / 10)

  let kept = 0
  for (const [raw, location] of fc.sample(fc.tuple(url, url), { seed: SEED + 1, numRuns: RUNS })) {
    try {
      const normal = normalizePreviewUrl(raw)
      if (normal !== undefined) kept++
      const wrong = checkUrl("normalised", normal) ??
        (normal === undefined ? undefined : checkUrl("redirect", redirectTarget(normal, location)))
      if (wrong !== undefined) failures.push(`${JSON.stringify(raw.slice(0, 80))}: ${wrong}`)
    } catch (e) {
      failures.push(`${JSON.stringify(raw.slice(0, 80))}: threw ${String(e)}`)
    }
  }
  expect(kept).toBeGreaterThan(RUNS / 10)

  const signatures = [[0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], [0xff, 0xd8, 0xff], [0x47, 0x49, 0x46, 0x38, 0x39, 0x61], [0x52, 0x49, 0x46, 0x46]]
  for (const [prefix, rest] of fc.sample(fc.tuple(fc.constantFrom([], ...signatures), fc.uint8Array({ maxLength: 64 })), { seed: SEED + 2, numRuns: RUNS })) {
    try {
      judgeImage(Uint8Array.from([...prefix, ...rest]))
    } catch (e) {
      failures.push(`image bytes ${Buffer.from(rest).toString("hex").slice(0, 40)}: threw ${String(e)}`)
    }
  }
  expect(failures.slice(0, 10), `seed ${SEED}: ${failures.length} failures`).toEqual([])
})

it.scopedLive(`GET /api/previews: hostile url parameters (seed ${SEED})`, () =>
  Effect.gen(function*() {
    // No exception opens anything: every URL that passes is refused by the guard or never resolves, so nothing leaves.
    const app = yield* startOAuthApp({ BELAY_PRIVATE_DESTINATIONS: "deny" })
    const jar = yield* signedIn(app.url)
    const literals = fc.tuple(
      fc.constantFrom("http://", "https://"),
      fc.constantFrom("127.0.0.1", "[::1]", "10.1.2.3", "0x7f.1", "[::ffff:192.168.0.1]", "localhost", "169.254.169.254"),
      fc.array(edgeString, { maxLength: 3 }).map((p) => `/${p.join("/")}`)
    ).map((parts) => parts.join(""))
    const cases = fc.sample(fc.oneof(literals, edgeString, url.filter((u) => normalizePreviewUrl(u) === undefined)), { seed: SEED + 3, numRuns: 100 })
    const statuses = new Map<number, number>()
    yield* Effect.forEach(cases, (raw) =>
      Effect.map(
        Effect.flatMap(
          fetchP(`${app.url}/api/previews?${new URLSearchParams({ url: raw }).toString()}`, { headers: jar.header() }),
          (res) => Effect.as(Effect.promise(() => res.arrayBuffer()), res.status)
        ),
        (status) => statuses.set(status, (statuses.get(status) ?? 0) + 1)
      ), { concurrency: 8, discard: true })
    console.log(`previews fuzz: statuses ${JSON.stringify(Object.fromEntries(statuses))}`)
    expect([...statuses.keys()].filter((s) => ![200, 204, 400, 429].includes(s))).toEqual([])
    expect(statuses.get(400) ?? 0).toBeGreaterThan(0)
    expect(statuses.get(204) ?? 0).toBeGreaterThan(0)
  }))
