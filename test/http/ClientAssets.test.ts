/**
 * The web client's files over HTTP (src/http/pages/ClientAssets.ts): `/` is the HTML shell for a signed-in member
 * (no-cache, the pages' headers with the client's policy) and 303 to sign-in for anyone else; the hashed bundle is
 * cached for a year and answered brotli, gzip or plain as Accept-Encoding asks, the bytes being the build's own;
 * `/sw.js` is the worker, no-cache. Needs the build (`npm test` makes it through scripts/ensure-built.mjs).
 */
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import * as Zlib from "node:zlib"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { chooseEncoding, CLIENT_CSP, CLIENT_DIR, clientPreloadLink } from "../../src/http/pages/ClientAssets.js"
import { securityHeaders } from "../../src/http/pages/Pages.js"
import { describeMode } from "../support/TestDatabase.js"
import { fetchP, fixtureLayer, OAuthFixture, textOf } from "./oauth/OAuthHarness.js"
import { getPage, signedIn } from "./auth/MemberHarness.js"

/** A GET whose body is left as sent (fetch would decode it). */
const raw = (url: string, headers: Record<string, string>) =>
  Effect.async<{ status: number; headers: Http.IncomingHttpHeaders; body: Buffer }>((resume) => {
    Http.get(url, { headers }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) })))
    })
  })

const manifest = JSON.parse(Fs.readFileSync(Path.join(CLIENT_DIR, "manifest.json"), "utf8")) as { script: string; style: string }

describe("chooseEncoding (RFC 9110 §12.5.3)", () => {
  it.each([
    [undefined, "identity"],
    ["", "identity"],
    ["gzip, deflate, br", "br"],
    ["gzip", "gzip"],
    ["br;q=0, gzip", "gzip"],
    ["BR;Q=0.5", "br"],
    ["*", "br"],
    ["*;q=0", "identity"],
    ["gzip;q=0, identity", "identity"],
    ["deflate", "identity"]
  ] as const)("%j → %s", (header, expected) => {
    expect(chooseEncoding(header)).toBe(expected)
  })
})

describe("clientPreloadLink", () => {
  it("names the built script; nothing without a build", () => {
    expect(clientPreloadLink({ script: "app-ABC.js" })).toBe("</client/app-ABC.js>; rel=modulepreload")
    expect(clientPreloadLink(null)).toBe("")
  })
})

layer(fixtureLayer(), { excludeTestServices: true, timeout: "120 seconds" })(`the web client's files on ${describeMode}`, (it) => {
  it.effect("/: 303 to sign-in without a session; the shell with no-cache and the client's policy with one", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const anonymous = yield* fetchP(`${url}/`, { redirect: "manual" })
      expect(anonymous.status).toBe(303)
      expect(anonymous.headers.get("location")).toBe("/login?next=%2F")
      const jar = yield* signedIn(url)
      const { res, html } = yield* getPage(url, jar, "/")
      expect(res.status).toBe(200)
      expect(res.headers.get("cache-control")).toBe("no-cache")
      expect(res.headers.get("content-security-policy")).toBe(CLIENT_CSP)
      expect(res.headers.get("x-frame-options")).toBe("DENY")
      expect(html).toContain(`<script type="module" src="/client/${manifest.script}"></script>`)
      expect(html).toContain(`<link rel="stylesheet" href="/client/${manifest.style}">`)
      expect(html).not.toMatch(/<script>|<style>| style=/)
    }))

  it.effect("the bundle: immutable, and brotli, gzip or plain by Accept-Encoding, each the built file", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const file = `${url}/client/${manifest.script}`
      const built = Fs.readFileSync(Path.join(CLIENT_DIR, manifest.script))
      const br = yield* raw(file, { "accept-encoding": "gzip, br" })
      expect(br.status).toBe(200)
      expect(br.headers["content-encoding"]).toBe("br")
      expect(br.headers["cache-control"]).toBe("public, max-age=31536000, immutable")
      expect(br.headers["vary"]).toBe("Accept-Encoding")
      expect(br.headers["content-type"]).toBe("text/javascript; charset=utf-8")
      expect(Zlib.brotliDecompressSync(br.body).equals(built)).toBe(true)
      const gz = yield* raw(file, { "accept-encoding": "gzip" })
      expect(gz.headers["content-encoding"]).toBe("gzip")
      expect(Zlib.gunzipSync(gz.body).equals(built)).toBe(true)
      const plain = yield* raw(file, {})
      expect(plain.headers["content-encoding"]).toBeUndefined()
      expect(plain.body.equals(built)).toBe(true)
      const css = yield* raw(`${url}/client/${manifest.style}`, { "accept-encoding": "gzip" })
      expect(css.headers["content-type"]).toBe("text/css; charset=utf-8")
      expect((yield* fetchP(`${url}/client/app-0000.js`)).status).toBe(404)
      expect((yield* fetchP(`${url}/client/sw.js`)).status).toBe(404)
    }))

  it.effect("/login preloads the very bundle the shell loads (Link: modulepreload), cacheable, under the page's own policy", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const login = yield* fetchP(`${url}/login?next=/`)
      expect(login.status).toBe(200)
      expect(login.headers.get("link")).toBe(`</client/${manifest.script}>; rel=modulepreload`)
      // A module script is checked against script-src: the page's policy allows same-origin scripts as it was.
      expect(login.headers.get("content-security-policy")).toBe(securityHeaders["Content-Security-Policy"])
      const jar = yield* signedIn(url)
      const { html } = yield* getPage(url, jar, "/")
      const linked = /^<([^>]+)>/.exec(login.headers.get("link") ?? "")?.[1]
      expect(html).toContain(`<script type="module" src="${linked}"></script>`)
      const bundle = yield* raw(`${url}${linked}`, { "accept-encoding": "br" })
      expect(bundle.status).toBe(200)
      expect(bundle.headers["cache-control"]).toBe("public, max-age=31536000, immutable")
    }))

  it.effect("/sw.js: the service worker at the root, no-cache", () =>
    Effect.gen(function*() {
      const { url } = yield* OAuthFixture
      const res = yield* fetchP(`${url}/sw.js`)
      expect(res.status).toBe(200)
      expect(res.headers.get("cache-control")).toBe("no-cache")
      expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
      expect(yield* textOf(res)).toContain("notificationclick")
    }))
})
