// Completes package-lock.json for `npm ci` on this workplace's registry mirror.
//
// Why: the mirror serves only some platform-specific optional packages (e.g.
// @rollup/rollup-win32-x64-msvc answers 404), so `npm install` cannot resolve them
// and leaves them out of the lockfile, and `npm ci` then refuses the lockfile as
// "out of sync" ("Missing: … from lock file"). Each missing optional dependency gets
// an entry with its version and the os/cpu its name states; npm skips entries for
// other platforms, and a failed optional fetch is never fatal. Run after every
// `npm install` that changes the lockfile: `node scripts/complete-lockfile.mjs`.
import { readFileSync, writeFileSync } from "node:fs"

const file = "package-lock.json"
const lock = JSON.parse(readFileSync(file, "utf8"))
const packages = lock.packages
const PLATFORM = /-(darwin|linux|win32|freebsd|openbsd|netbsd|android|openharmony|sunos|aix)-([a-z0-9]+)(?:-(gnu|musl|msvc|gnueabihf|musleabihf|eabi))?$/

let added = 0
for (const [path, meta] of Object.entries(packages)) {
  for (const [name, range] of Object.entries(meta.optionalDependencies ?? {})) {
    const nested = `${path ? `${path}/` : ""}node_modules/${name}`
    if (packages[nested] || packages[`node_modules/${name}`]) continue
    const entry = { version: range.replace(/^[\^~=]/, ""), optional: true }
    if (meta.dev) entry.dev = true
    const platform = PLATFORM.exec(name)
    if (platform) {
      entry.os = [platform[1]]
      entry.cpu = [platform[2]]
      if (platform[3] === "gnu" || platform[3] === "musl") entry.libc = [platform[3] === "gnu" ? "glibc" : "musl"]
    }
    packages[`node_modules/${name}`] = entry
    added++
  }
}
writeFileSync(file, JSON.stringify(lock, null, 2) + "\n")
console.log(`complete-lockfile: ${added} optional platform entr${added === 1 ? "y" : "ies"} added`)
