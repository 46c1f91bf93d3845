/**
 * ClientAssets serves the web client (docs/architecture.md "The web client"): the HTML shell at `/` for a signed-in
 * member (others get 303 to `/login?next=/`), the bundle under `/client/<name>-<hash>.<ext>` and the service worker
 * at `/sw.js`, all built into dist/client by scripts/build-client.mjs, and the web app manifest (AppManifest.ts). The shell is `no-cache` (it names the current
 * bundle); a hashed file never changes, so it is cached for a year (`immutable`); the worker is `no-cache` because its
 * URL is fixed. Every file was compressed at build time: the answer is brotli, gzip or the file itself, as the
 * request's Accept-Encoding allows (RFC 9110 §12.5.3), with `Vary: Accept-Encoding`.
 *
 * The files are read once, when the routes are built, and held in memory; requests only pick a buffer. Without a
 * build (a test run straight from the sources) `/` says how to build it, with 503.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Effect, Option, Schema } from "effect"
import { MemberPaths } from "../../schema/MemberApi.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { type HttpRequest, type HttpResponse, json, type Route } from "../HttpServer.js"
import { page } from "../oauth/OAuthHttp.js"
import { manifestRoutes, MANIFEST_PATH, THEME_COLOR, THEME_COLOR_DARK } from "./AppManifest.js"
import { guarded, makeSettingsHttp } from "../settings/SettingsHttp.js"
import { errorPage, html, HTML_CONTENT_TYPE, securityHeaders } from "./Pages.js"

/** Where scripts/build-client.mjs writes: dist/client at the repository root, from src/http/pages or dist/http/pages. */
export const CLIENT_DIR = Path.resolve(import.meta.dirname, "../../../dist/client")
export const CLIENT_ASSET_PATH = "/client/:file"
export const SERVICE_WORKER_PATH = "/sw.js"

const IMMUTABLE = "public, max-age=31536000, immutable"

/**
 * The pages' policy (Pages.ts `securityHeaders`) with what a script-built page needs besides: its own stylesheet
 * file instead of a hashed inline one, and its service worker. Still nothing from another origin.
 */
export const CLIENT_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; worker-src 'self'; " +
  "manifest-src 'self'; base-uri 'none'; frame-ancestors 'none'"

/** dist/client/manifest.json as scripts/build-client.mjs writes it. */
const Manifest = Schema.Struct({
  script: Schema.String,
  style: Schema.String,
  serviceWorker: Schema.String,
  files: Schema.Array(Schema.String)
})
type Manifest = typeof Manifest.Type
const decodeManifest = Schema.decodeUnknownOption(Schema.parseJson(Manifest))

interface Encoded {
  readonly type: string
  readonly identity: Buffer
  readonly gzip: Buffer
  readonly br: Buffer
}

const types: Readonly<Record<string, string>> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".woff2": "font/woff2"
}

/** The qualities the request gives `coding` (RFC 9110 §12.5.3): 0 when refused or unnamed, `*` counting for any. */
const qualityOf = (acceptEncoding: string, coding: string): number => {
  let star = 0
  for (const part of acceptEncoding.split(",")) {
    const [name = "", ...params] = part.trim().toLowerCase().split(";")
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="))
    const quality = q === undefined ? 1 : Number(q.slice(2))
    if (!Number.isFinite(quality)) continue
    if (name.trim() === coding) return quality
    if (name.trim() === "*") star = quality
  }
  return star
}

/** brotli, else gzip, else the file itself; exported for its table test. */
export const chooseEncoding = (acceptEncoding: string | undefined): "br" | "gzip" | "identity" => {
  if (acceptEncoding === undefined) return "identity"
  if (qualityOf(acceptEncoding, "br") > 0) return "br"
  if (qualityOf(acceptEncoding, "gzip") > 0) return "gzip"
  return "identity"
}

const encodedAnswer = (request: HttpRequest, file: Encoded, cacheControl: string): HttpResponse => {
  const coding = chooseEncoding(request.header("accept-encoding"))
  return {
    status: 200,
    headers: {
      "content-type": file.type,
      "cache-control": cacheControl,
      "vary": "Accept-Encoding",
      "x-content-type-options": "nosniff",
      ...(coding === "identity" ? {} : { "content-encoding": coding })
    },
    body: coding === "br" ? file.br : coding === "gzip" ? file.gzip : file.identity
  }
}

const readManifest = (dir: string): Manifest | null => {
  try {
    // A build of another shape counts as no build, as a missing one does.
    return Option.getOrNull(decodeManifest(Fs.readFileSync(Path.join(dir, "manifest.json"), "utf8")))
  } catch {
    return null
  }
}

const readBuild = (dir: string): { readonly manifest: Manifest; readonly files: ReadonlyMap<string, Encoded> } | null => {
  const manifest = readManifest(dir)
  if (manifest === null) return null
  const files = new Map<string, Encoded>()
  for (const name of manifest.files) {
    const full = Path.join(dir, name)
    files.set(name, {
      type: types[Path.extname(name)] ?? "application/octet-stream",
      identity: Fs.readFileSync(full),
      gzip: Fs.readFileSync(`${full}.gz`),
      br: Fs.readFileSync(`${full}.br`)
    })
  }
  return { manifest, files }
}

/**
 * The sign-in page's `Link` header (RFC 8288; HTML "link type modulepreload"): the bundle the shell will load, fetched
 * while the member types, so that after the sign-in's 303 only the shell and the stylesheet come from the network (the
 * hashed file is `immutable`, a cache hit on the next page). Only the script: the sign-in page's policy (Pages.ts
 * `pageCsp`) allows same-origin scripts but no stylesheet file, and refuses a `rel=prefetch` (`default-src 'none'`);
 * the stylesheet is a few KiB. Empty without a build.
 */
export const clientPreloadLink = (manifest: Pick<Manifest, "script"> | null): string =>
  manifest === null ? "" : `</client/${manifest.script}>; rel=modulepreload`

/** The bundle's names as built (null without a build): LoginRoutes reads them once, when its routes are built. */
export const builtManifest = (): Manifest | null => readManifest(CLIENT_DIR)

/** The document the bundle draws into: no inline script or style, so the policy needs no hash. */
export const shellHtml = (manifest: Pick<Manifest, "script" | "style">): string =>
  html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1, interactive-widget=resizes-content">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<meta name="color-scheme" content="light dark">
<meta name="theme-color" content="${THEME_COLOR}" media="(prefers-color-scheme: light)">
<meta name="theme-color" content="${THEME_COLOR_DARK}" media="(prefers-color-scheme: dark)">
<title>Belay</title>
<link rel="manifest" href="${MANIFEST_PATH}">
<link rel="icon" type="image/png" sizes="192x192" href="/icons/icon-192.png">
<link rel="apple-touch-icon" href="/icons/icon-192.png">
<link rel="stylesheet" href="/client/${manifest.style}">
<script type="module" src="/client/${manifest.script}"></script>
</head>
<body>
<noscript>Belay's web client needs JavaScript. Settings work without it: <a href="/settings">Settings</a>.</noscript>
<div id="app"></div>
</body>
</html>
`.value

export const clientRoutes = Effect.gen(function*() {
  const http = makeSettingsHttp(yield* AppConfig, { sessions: yield* BrowserSessions, accounts: yield* Accounts })
  const build = readBuild(CLIENT_DIR)
  const shell = build === null ? null : Buffer.from(shellHtml(build.manifest))
  const notFound = () => json(404, { error: "not_found" })

  const home = (request: HttpRequest) =>
    guarded(http.visit(request), () =>
      Effect.succeed(
        shell === null
          ? page(503, errorPage({ title: "Web client not built", message: "Run npm run build, then reload." }))
          : {
            status: 200,
            headers: {
              "content-type": HTML_CONTENT_TYPE,
              ...securityHeaders,
              "Content-Security-Policy": CLIENT_CSP,
              "Cache-Control": "no-cache"
            },
            body: shell
          }
      ))

  return [
    { method: "GET", path: MemberPaths.home, name: "client", handler: home },
    {
      method: "GET",
      path: CLIENT_ASSET_PATH,
      name: "client-assets",
      handler: (request) => {
        const name = request.params["file"] ?? ""
        const file = build?.files.get(name)
        // The worker is served at the root only (its scope is the path it is served from, W3C Service Workers §4.1).
        if (file === undefined || name === build?.manifest.serviceWorker) return Effect.succeed(notFound())
        return Effect.succeed(encodedAnswer(request, file, IMMUTABLE))
      }
    },
    {
      method: "GET",
      path: SERVICE_WORKER_PATH,
      name: "service-worker",
      handler: (request) => {
        const file = build === null ? undefined : build.files.get(build.manifest.serviceWorker)
        return Effect.succeed(file === undefined ? notFound() : encodedAnswer(request, file, "no-cache"))
      }
    },
    ...(yield* manifestRoutes)
  ] satisfies ReadonlyArray<Route>
})
