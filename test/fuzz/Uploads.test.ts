/**
 * Hostile input against uploads (docs/contract.md "Uploads"): generated file names, `Content-Disposition` and
 * `Content-Type` headers and `Range` headers — first against the pure readers (thousands of cases, each judged against
 * a model), then against the running endpoint: every upload answers 201 or a 4xx with JSON, never 500; whatever name
 * was sent, the stored one is safe (no separator, control or format character, no leading dot, at most 100 code
 * points); every download carries `nosniff` and the sandbox and is `inline` only for images, audio and video that are
 * not SVG or XML; every Range is answered as the model says, with the model's bytes.
 *
 * Reproducible: fast-check with a fixed seed, printed at the start; FUZZ_SEED overrides it, FUZZ_RUNS scales the count.
 */
import { randomBytes } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import fc from "fast-check"
import { contentDisposition, fileNameOf, parseRange } from "../../src/http/uploads/UploadHeaders.js"
import { isInlineType, MAX_NAME_CHARS, normalizeContentType, sanitizeFileName } from "../../src/services/uploads/UploadNames.js"
import { bearer, passwordToken } from "../http/auth/MemberHarness.js"
import { fetchP, startOAuthApp, textOf } from "../http/oauth/OAuthHarness.js"

const SEED = process.env.FUZZ_SEED !== undefined && process.env.FUZZ_SEED !== "" ? Number(process.env.FUZZ_SEED) : 363636
const RUNS = process.env.FUZZ_RUNS !== undefined && process.env.FUZZ_RUNS !== "" ? Number(process.env.FUZZ_RUNS) : 10_000

/** Names people and attackers give: real ones, traversal, controls, bidi overrides, very long, empty. */
const hostileName = fc.oneof(
  fc.string({ maxLength: 300 }),
  fc.fullUnicodeString({ maxLength: 300 }),
  fc.constantFrom("../../etc/passwd", "..", ".", ".htaccess", "a\u0000b", "evil\u202egpj.exe", "CON", "a/b\\c", "x\r\nSet-Cookie: a=b", " ", "",
    "%2e%2e%2f", "name\".png", "日本語のファイル.png", "🙂".repeat(120) + ".gif"),
  fc.tuple(fc.string({ maxLength: 200 }), fc.constantFrom(".png", ".svg", ".html", ".exe", "")).map(([a, b]) => a + b)
)

/** A model of RFC 9110 §14.1.2 for one range over `size` bytes, as UploadHeaders promises to read it. */
const model = (header: string, size: number): { status: 200 | 206 | 416; start: number; end: number } => {
  const whole = { status: 200 as const, start: 0, end: size - 1 }
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header)
  if (m === null || header.length > 200 || m[1]!.length > 15 || m[2]!.length > 15 || (m[1] === "" && m[2] === "")) return whole
  if (m[1] === "") {
    const n = Number(m[2])
    return n === 0 || size === 0 ? { status: 416, start: 0, end: -1 } : { status: 206, start: Math.max(0, size - n), end: size - 1 }
  }
  const start = Number(m[1])
  if (m[2] !== "" && Number(m[2]) < start) return whole
  if (start >= size) return { status: 416, start: 0, end: -1 }
  return { status: 206, start, end: m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1) }
}

const rangeHeader = fc.oneof(
  fc.tuple(fc.option(fc.nat(2000), { nil: undefined }), fc.option(fc.nat(2000), { nil: undefined })).map(([a, b]) =>
    `bytes=${a ?? ""}-${b ?? ""}`
  ),
  fc.tuple(fc.constantFrom("bytes", "BYTES", "items", " bytes "), fc.string({ maxLength: 20 })).map(([u, r]) => `${u}=${r}`),
  fc.constantFrom("bytes=0-1,5-6", "bytes=-0", "bytes=99999999999999999999-", "bytes=1-0", "bytes=", "=", "bytes=--1", "bytes=0-0"),
  fc.string({ maxLength: 40 })
)

const safeName = (name: string) =>
  name !== "" &&
  !/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}/\\:*?"<>|%#]/u.test(name) &&
  !/^[\s.]/u.test(name) && !/[\s.]$/u.test(name) &&
  Array.from(name).length <= MAX_NAME_CHARS

describe("upload headers and names, pure", () => {
  it(`names, Content-Disposition and content types (${RUNS} cases each, seed ${SEED})`, () => {
    fc.assert(
      fc.property(hostileName, (raw) => {
        const name = sanitizeFileName(raw)
        expect(safeName(name)).toBe(true)
        expect(sanitizeFileName(name)).toBe(name)
        // A header written as the web client and the server write it (RFC 6266 §4.3) reads back exactly.
        expect(fileNameOf(contentDisposition(name, "application/octet-stream"))).toBe(name)
        expect(/^[\x20-\x7e]*$/.test(contentDisposition(name, "image/png"))).toBe(true)
      }),
      { seed: SEED, numRuns: RUNS }
    )
    fc.assert(
      fc.property(fc.string({ maxLength: 500 }), fc.fullUnicodeString({ maxLength: 100 }), (header, name) => {
        const read = fileNameOf(header)
        expect(read === undefined || read !== "").toBe(true)
        const type = normalizeContentType(header, name)
        expect(type).toMatch(/^[!#$%&'+.^_`|~0-9a-z-]+\/[!#$%&'+.^_`|~0-9a-z-]+$/)
        if (isInlineType(type)) expect(/^(image|audio|video)\//.test(type) && !/svg|xml/.test(type)).toBe(true)
      }),
      { seed: SEED, numRuns: RUNS }
    )
  })

  it(`Range against its model (${RUNS} cases, seed ${SEED})`, () => {
    fc.assert(
      fc.property(rangeHeader, fc.nat(3000), (header, size) => {
        const read = parseRange(header, size)
        const expected = model(header, size)
        const got = read._tag === "Whole" ? { status: 200, start: 0, end: size - 1 } : read._tag === "Unsatisfiable"
          ? { status: 416, start: 0, end: -1 }
          : { status: 206, start: read.start, end: read.end }
        expect(got).toEqual(expected)
        if (read._tag === "Part") expect(0 <= read.start && read.start <= read.end && read.end < size).toBe(true)
      }),
      { seed: SEED, numRuns: RUNS }
    )
  })
})

describe("the upload endpoint under hostile headers", () => {
  it.scopedLive(`uploads and downloads (${Math.ceil(RUNS / 50)} cases, seed ${SEED})`, () =>
    Effect.gen(function*() {
      console.log(`uploads fuzz: seed ${SEED}`)
      const app = yield* startOAuthApp()
      const auth = bearer(yield* passwordToken(app.url))
      const uploadCase = fc.record({
        disposition: fc.oneof(
          hostileName.map((n) => contentDisposition(n, "application/octet-stream")),
          hostileName.map((n) => `attachment; filename="${n.replace(/[^\x20-\x7e]/g, "?")}"`),
          fc.string({ maxLength: 300 }).map((s) => s.replace(/[^\x20-\x7e]/g, "")),
          fc.constant(undefined)
        ),
        type: fc.oneof(fc.constantFrom("image/png", "image/svg+xml", "text/html", "video/mp4", "application/xml", "IMAGE/GIF; x=1", "", "*/*", "image/"),
          fc.string({ maxLength: 60 }).map((s) => s.replace(/[^\x20-\x7e]/g, ""))),
        size: fc.nat(2000)
      })
      const cases = fc.sample(uploadCase, { seed: SEED, numRuns: Math.ceil(RUNS / 50) })
      const ranges = fc.sample(rangeHeader, { seed: SEED, numRuns: Math.ceil(RUNS / 50) })
      const failures: Array<string> = []
      let stored = 0
      for (const [i, c] of cases.entries()) {
        const bytes = randomBytes(c.size)
        const headers: Record<string, string> = { ...auth }
        if (c.disposition !== undefined) headers["content-disposition"] = c.disposition
        if (c.type !== "") headers["content-type"] = c.type
        const res = yield* fetchP(`${app.url}/api/uploads`, { method: "POST", headers, body: bytes })
        const text = yield* textOf(res)
        if (res.status !== 201) {
          failures.push(`case ${i}: ${res.status} ${text.slice(0, 200)} for ${JSON.stringify(c)}`)
          continue
        }
        stored++
        const body = JSON.parse(text) as { url: string; name: string; contentType: string }
        if (!safeName(body.name)) failures.push(`case ${i}: stored name ${JSON.stringify(body.name)}`)
        // "/uploads/" + 22 + "/" + at most 80: the link fits an IRC line.
        if (new URL(body.url).pathname.length > 112) failures.push(`case ${i}: a path of ${new URL(body.url).pathname.length}`)
        const range = ranges[i]!
        const got = yield* fetchP(body.url, { headers: { range } })
        const served = Buffer.from(yield* Effect.promise(() => got.arrayBuffer()))
        const expected = model(range, c.size)
        const h = got.headers
        if (got.status !== expected.status) failures.push(`case ${i}: range ${JSON.stringify(range)} over ${c.size}: ${got.status}, model ${expected.status} at ${body.url}`)
        else if (expected.status !== 416 && !served.equals(bytes.subarray(expected.start, expected.end + 1))) failures.push(`case ${i}: wrong bytes for ${range}`)
        if (h.get("x-content-type-options") !== "nosniff" || !h.get("content-security-policy")?.startsWith("sandbox")) failures.push(`case ${i}: headers`)
        const inline = h.get("content-disposition")?.startsWith("inline") ?? false
        if (inline && !(/^(image|audio|video)\//.test(body.contentType) && !/svg|xml/.test(body.contentType))) {
          failures.push(`case ${i}: ${body.contentType} served inline`)
        }
      }
      expect(failures.slice(0, 10)).toEqual([])
      expect(stored).toBe(cases.length)
    }))
})
