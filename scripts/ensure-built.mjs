// Builds dist/ with tsc when it is missing or older than any file under src/, so that
// `npm start` works on a fresh clone and stays fast once built.
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

const stamp = "dist/cli/main.js"
if (!existsSync(stamp) || statSync(stamp).mtimeMs < Math.max(newest("src"), statSync("tsconfig.build.json").mtimeMs)) {
  process.stderr.write("belay: building (tsc)…\n")
  execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.build.json"], { stdio: "inherit" })
}
