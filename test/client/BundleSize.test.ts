/**
 * The web client's first load stays small (docs/architecture.md "The web client"): the HTML shell names one script
 * and one stylesheet (dist/client/manifest.json), and together, gzip-compressed as the server sends them, they stay
 * at or under 60 KiB. Reads the build (`npm test` makes it through scripts/ensure-built.mjs).
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { CLIENT_DIR } from "../../src/http/pages/ClientAssets.js"

const FIRST_LOAD_GZIP_LIMIT = 60 * 1024

describe("the web client's first load", () => {
  it("script and stylesheet, gzip as served, at most 60 KiB together", () => {
    const manifest = JSON.parse(Fs.readFileSync(Path.join(CLIENT_DIR, "manifest.json"), "utf8")) as { script: string; style: string }
    const gzipped = [manifest.script, manifest.style].map((f) => Fs.statSync(Path.join(CLIENT_DIR, `${f}.gz`)).size)
    const total = gzipped[0]! + gzipped[1]!
    console.info(`belay: first load ${(total / 1024).toFixed(1)} KiB gzip (script ${gzipped[0]} B, style ${gzipped[1]} B)`)
    expect(total).toBeGreaterThan(5 * 1024)
    expect(total).toBeLessThanOrEqual(FIRST_LOAD_GZIP_LIMIT)
  })
})
