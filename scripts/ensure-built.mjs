// Builds dist/ with tsc when it is missing or older than any file under src/, the server bundle (dist/bundle, by
// scripts/build-server.mjs) when it is missing or older than dist/cli/main.js, and the web client (dist/client, by
// scripts/build-client.mjs) when it is missing or older than any file under client/, so that `npm start` and
// `npm test` work on a fresh clone and stay fast once built.
import { execFileSync } from "node:child_process"
import { readdirSync, statSync, existsSync } from "node:fs"
import { join } from "node:path"

const newest = (dir) => {
  let t = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name)
    t = Math.max(t, entry.isDirectory() ? newest(p) : statSync(p).mtimeMs)
  }
  return t
}

const stale = (stamp, inputs) =>
  !existsSync(stamp) || statSync(stamp).mtimeMs < Math.max(...inputs.map((p) => (statSync(p).isDirectory() ? newest(p) : statSync(p).mtimeMs)))

if (stale("dist/cli/main.js", ["src", "tsconfig.build.json"])) {
  process.stderr.write("belay: building (tsc)…\n")
  execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.build.json"], { stdio: "inherit" })
}
if (stale("dist/bundle/cli/main.js", ["dist/cli/main.js", "scripts/build-server.mjs"])) {
  process.stderr.write("belay: bundling the server (esbuild)…\n")
  execFileSync(process.execPath, ["scripts/build-server.mjs"], { stdio: "inherit" })
}
if (stale("dist/client/manifest.json", ["client", "scripts/build-client.mjs"])) {
  process.stderr.write("belay: building the web client (esbuild)…\n")
  execFileSync(process.execPath, ["scripts/build-client.mjs"], { stdio: "inherit" })
}
