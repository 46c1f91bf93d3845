/**
 * What makes the web client installable (src/http/pages/AppManifest.ts, AppIcons.ts): the manifest at
 * `/app.webmanifest` as `application/manifest+json` with a name, `/` as start URL, standalone display, theme colours
 * and icons of 192 and 512 pixels, ordinary and maskable, each a PNG of its stated size that decodes (every chunk's
 * CRC right); served without a session; linked from the client's shell. The icons as drawn: the ordinary one's
 * corners transparent (rounded), the maskable one opaque to the edge, the ring inside its safe zone.
 */
import * as Zlib from "node:zlib"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { crc32, drawIcon } from "../../../src/http/pages/AppIcons.js"
import { shellHtml } from "../../../src/http/pages/ClientAssets.js"
import { describeMode } from "../../support/TestDatabase.js"
import { fetchP, fixtureLayer, jsonOf, OAuthFixture } from "../oauth/OAuthHarness.js"

/** The PNG's chunks, each checked against its CRC, and its pixels (RGBA, filter type None on every row). */
const decodePng = (png: Buffer) => {
  expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
  const chunks: Array<{ type: string; data: Buffer }> = []
  for (let at = 8; at < png.length;) {
    const length = png.readUInt32BE(at)
    const type = png.toString("latin1", at + 4, at + 8)
    const data = png.subarray(at + 8, at + 8 + length)
    expect(png.readUInt32BE(at + 8 + length)).toBe(crc32(png.subarray(at + 4, at + 8 + length)))
    chunks.push({ type, data })
    at += 12 + length
  }
  expect(chunks.map((c) => c.type)).toEqual(["IHDR", "IDAT", "IEND"])
  const header = chunks[0]!.data
  const width = header.readUInt32BE(0)
  const height = header.readUInt32BE(4)
  expect([header[8], header[9]]).toEqual([8, 6])
  const rows = Zlib.inflateSync(chunks[1]!.data)
  expect(rows.length).toBe(height * (width * 4 + 1))
  const pixel = (x: number, y: number) => {
    const i = y * (width * 4 + 1) + 1 + x * 4
    return [rows[i], rows[i + 1], rows[i + 2], rows[i + 3]]
  }
  return { width, height, pixel }
}

describe("the icons as drawn", () => {
  it("CRC-32 of PNG (its check value for '123456789')", () => {
    expect(crc32(Buffer.from("123456789"))).toBe(0xcbf43926)
  })

  it("ordinary: rounded (transparent corners), blue, a white ring; maskable: opaque to the edge, ring in the safe zone", () => {
    const any = decodePng(drawIcon(192, false))
    expect([any.width, any.height]).toEqual([192, 192])
    expect(any.pixel(0, 0)[3]).toBe(0)
    expect(any.pixel(96, 10)).toEqual([0x0b, 0x5c, 0xad, 255])
    // On the ring, above the centre (radius between 0.19 and 0.30 of the size).
    expect(any.pixel(96, Math.round(192 * 0.255))).toEqual([255, 255, 255, 255])
    const mask = decodePng(drawIcon(512, true))
    expect(mask.pixel(0, 0)).toEqual([0x0b, 0x5c, 0xad, 255])
    // Nothing white outside the safe zone's circle (40 % of the size around the centre).
    for (let x = 0; x < 512; x += 4) {
      for (let y = 0; y < 512; y += 4) {
        if (Math.hypot(x - 256, y - 256) > 0.4 * 512) expect(mask.pixel(x, y)).toEqual([0x0b, 0x5c, 0xad, 255])
      }
    }
  })
})

layer(fixtureLayer(), { excludeTestServices: true, timeout: "120 seconds" })(`the web app manifest on ${describeMode}`, (it) => {
  it.effect("the manifest: its type, name, start URL, standalone display, colours and four icons; no session needed", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const res = yield* fetchP(`${url}/app.webmanifest`)
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type")).toBe("application/manifest+json")
      expect(res.headers.get("x-content-type-options")).toBe("nosniff")
      const manifest = yield* jsonOf(res)
      expect(manifest).toMatchObject({ name: "Belay", short_name: "Belay", start_url: "/", scope: "/", display: "standalone" })
      expect(manifest.theme_color).toMatch(/^#[0-9a-f]{6}$/)
      expect(manifest.background_color).toMatch(/^#[0-9a-f]{6}$/)
      const icons = manifest.icons as ReadonlyArray<{ src: string; sizes: string; type: string; purpose: string }>
      expect(icons.map((i) => `${i.sizes} ${i.purpose}`).sort()).toEqual(["192x192 any", "192x192 maskable", "512x512 any", "512x512 maskable"])
      for (const icon of icons) {
        const got = yield* fetchP(`${url}${icon.src}`)
        expect(got.status).toBe(200)
        expect(got.headers.get("content-type")).toBe("image/png")
        const png = decodePng(Buffer.from(yield* Effect.promise(() => got.arrayBuffer())))
        expect(`${png.width}x${png.height}`).toBe(icon.sizes)
      }
      expect((yield* fetchP(`${url}/icons/%2e%2e%2fapp.webmanifest`)).status).toBe(404)
      expect((yield* fetchP(`${url}/icons/icon-1024.png`)).status).toBe(404)
    }))

  it.effect("the shell links the manifest, an icon and the theme colours", () =>
    Effect.sync(() => {
      const html = shellHtml({ script: "app-X.js", style: "app-X.css" })
      expect(html).toContain(`<link rel="manifest" href="/app.webmanifest">`)
      expect(html).toContain(`<link rel="apple-touch-icon" href="/icons/icon-192.png">`)
      expect(html).toMatch(/<meta name="theme-color" content="#[0-9a-f]{6}" media="\(prefers-color-scheme: dark\)">/)
    }))
})
