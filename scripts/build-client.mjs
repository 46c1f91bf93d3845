// Builds the web client (client/) into dist/client: one bundle and one stylesheet with their content's hash in the
// name (so the server may cache them for a year, `immutable`), the service worker under a fixed name (a worker's
// URL must stay the same for the browser to update it), each precompressed as .gz and .br (so the server never
// compresses on a request), and manifest.json naming what the HTML shell loads. src/http/pages/ClientAssets.ts
// serves the folder; docs/architecture.md "The web client".
import { build } from "esbuild"
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { basename, join } from "node:path"
import { brotliCompressSync, constants, gzipSync } from "node:zlib"

const OUT = "dist/client"
const production = process.env.BELAY_CLIENT_DEV !== "1"

rmSync(OUT, { recursive: true, force: true })
mkdirSync(OUT, { recursive: true })

const common = {
  bundle: true,
  minify: production,
  sourcemap: false,
  target: ["es2022", "chrome100", "firefox100", "safari15"],
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "none",
  logLevel: "warning",
  define: { "process.env.NODE_ENV": production ? "\"production\"" : "\"development\"" }
}

const app = await build({
  ...common,
  entryPoints: { app: "client/src/main.tsx" },
  outdir: OUT,
  entryNames: "[name]-[hash]",
  assetNames: "[name]-[hash]",
  format: "esm",
  metafile: true,
  tsconfig: "client/tsconfig.json"
})

await build({
  ...common,
  entryPoints: { sw: "client/src/sw/ServiceWorker.ts" },
  outdir: OUT,
  entryNames: "[name]",
  format: "iife",
  tsconfig: "client/src/sw/tsconfig.json"
})

const outputs = Object.keys(app.metafile.outputs).map((p) => basename(p))
const script = outputs.find((f) => f.startsWith("app-") && f.endsWith(".js"))
const style = outputs.find((f) => f.startsWith("app-") && f.endsWith(".css"))
if (script === undefined || style === undefined) throw new Error(`the client build made no app script or stylesheet: ${outputs}`)

const files = readdirSync(OUT)
for (const file of files) {
  const body = readFileSync(join(OUT, file))
  writeFileSync(join(OUT, `${file}.gz`), gzipSync(body, { level: 9 }))
  writeFileSync(join(OUT, `${file}.br`), brotliCompressSync(body, {
    params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length }
  }))
}
// Written last: the server and scripts/ensure-built.mjs take its presence as "the build finished".
writeFileSync(join(OUT, "manifest.json"), JSON.stringify({ script, style, serviceWorker: "sw.js", files }, null, 2) + "\n")
process.stderr.write(`belay: web client built into ${OUT} (${script}, ${style})\n`)
