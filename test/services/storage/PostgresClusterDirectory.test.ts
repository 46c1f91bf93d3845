/**
 * Where the embedded PostgreSQL's cluster goes (PostgresClusterDirectory.ts), rule by rule, on real directories: as root for
 * the server's OS user, the relocated clusters under a scratch root instead of /var/lib/belay/pg; as any other user,
 * always `<data dir>/pg`. What is asserted is what an operator finds on disk: where the directory is, who owns it,
 * its mode, and that no directory Belay did not create changed mode.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { placeCluster } from "../../../src/services/storage/PostgresClusterDirectory.js"
import { ensureServerOsUser } from "../../../src/services/storage/ServerOsUser.js"
import { tempDir } from "../../support/TestDatabase.js"

const isRoot = process.getuid?.() === 0
const modeOf = (path: string) => Fs.statSync(path).mode & 0o777

/** A scratch dir the server's user may pass through (the test's own, so the test sets its mode), and a relocation root in it. */
const scratch = Effect.gen(function*() {
  const base = yield* tempDir("belay-cluster-dir-")
  Fs.chmodSync(base, 0o755)
  return { base, relocatedRoot: Path.join(base, "lib", "pg") }
})

describe.skipIf(!isRoot)("PostgresClusterDirectory as root", () => {
  const user = isRoot ? ensureServerOsUser()! : { uid: -1, gid: -1 }

  it.scoped("a reachable data directory Belay creates gets 0711 and the cluster in <data dir>/pg, owned by the server's user", () =>
    Effect.gen(function*() {
      const { base, relocatedRoot } = yield* scratch
      const dataDir = Path.join(base, "made", "data")
      const place = placeCluster(dataDir, user, relocatedRoot)
      expect(place).toEqual({ dir: Path.join(dataDir, "pg"), relocatedBecause: undefined })
      expect([modeOf(Path.join(base, "made")), modeOf(dataDir), modeOf(base)]).toEqual([0o711, 0o711, 0o755])
      expect([Fs.statSync(place.dir).uid, modeOf(place.dir)]).toEqual([user.uid, 0o700])
      expect(Fs.existsSync(relocatedRoot)).toBe(false)
    }))

  it.scoped("a data directory the user made 0700 is left 0700, and the cluster goes to the relocated directory", () =>
    Effect.gen(function*() {
      const { base, relocatedRoot } = yield* scratch
      const dataDir = Path.join(base, "data")
      Fs.mkdirSync(dataDir, { mode: 0o700 })
      const first = placeCluster(dataDir, user, relocatedRoot)
      expect(Path.dirname(first.dir)).toBe(relocatedRoot)
      expect(Path.basename(first.dir)).toMatch(/^[0-9a-f]{16}$/)
      expect(first.relocatedBecause).toContain(`cannot enter ${dataDir}`)
      expect(modeOf(dataDir)).toBe(0o700)
      expect(Fs.existsSync(Path.join(dataDir, "pg"))).toBe(false)
      expect([Fs.statSync(first.dir).uid, modeOf(first.dir)]).toEqual([user.uid, 0o700])
      expect([Fs.statSync(relocatedRoot).uid, modeOf(relocatedRoot)]).toEqual([0, 0o711])
      // Deterministic: the next start finds the same place; another data directory gets another.
      expect(placeCluster(dataDir, user, relocatedRoot).dir).toBe(first.dir)
      const other = Path.join(base, "other")
      Fs.mkdirSync(other, { mode: 0o700 })
      expect(placeCluster(other, user, relocatedRoot).dir).not.toBe(first.dir)
    }))

  it.scoped("a relocated cluster stays where it is when the data directory later becomes reachable", () =>
    Effect.gen(function*() {
      const { base, relocatedRoot } = yield* scratch
      const dataDir = Path.join(base, "data")
      Fs.mkdirSync(dataDir, { mode: 0o700 })
      const { dir } = placeCluster(dataDir, user, relocatedRoot)
      Fs.writeFileSync(Path.join(dir, "PG_VERSION"), "18\n")
      Fs.chmodSync(dataDir, 0o755)
      const again = placeCluster(dataDir, user, relocatedRoot)
      expect(again.dir).toBe(dir)
      expect(again.relocatedBecause).toContain("was made there")
      expect(Fs.existsSync(Path.join(dataDir, "pg"))).toBe(false)
    }))

  it.scoped("a cluster already in <data dir>/pg stays there, given back to the server's user", () =>
    Effect.gen(function*() {
      const { base, relocatedRoot } = yield* scratch
      const dataDir = Path.join(base, "data")
      Fs.mkdirSync(Path.join(dataDir, "pg", "base"), { recursive: true, mode: 0o700 })
      Fs.chmodSync(dataDir, 0o711)
      Fs.writeFileSync(Path.join(dataDir, "pg", "PG_VERSION"), "18\n")
      expect(placeCluster(dataDir, user, relocatedRoot)).toEqual({ dir: Path.join(dataDir, "pg"), relocatedBecause: undefined })
      expect(Fs.statSync(Path.join(dataDir, "pg", "base")).uid).toBe(user.uid)
      expect(Fs.existsSync(relocatedRoot)).toBe(false)
    }))

  it.scoped("a cluster in <data dir>/pg behind a directory the user cannot enter is refused, naming it, and nothing changes", () =>
    Effect.gen(function*() {
      const { base, relocatedRoot } = yield* scratch
      const closed = Path.join(base, "closed")
      const dataDir = Path.join(closed, "data")
      Fs.mkdirSync(Path.join(dataDir, "pg"), { recursive: true, mode: 0o700 })
      Fs.writeFileSync(Path.join(dataDir, "pg", "PG_VERSION"), "18\n")
      Fs.chmodSync(closed, 0o700)
      expect(() => placeCluster(dataDir, user, relocatedRoot)).toThrow(`chmod o+x ${closed}`)
      expect([modeOf(closed), modeOf(dataDir), Fs.statSync(Path.join(dataDir, "pg")).uid]).toEqual([0o700, 0o700, 0])
      expect(Fs.existsSync(relocatedRoot)).toBe(false)
    }))

  it.scoped("a relocation root that someone else may write to is refused", () =>
    Effect.gen(function*() {
      const { base, relocatedRoot } = yield* scratch
      Fs.mkdirSync(relocatedRoot, { recursive: true })
      Fs.chmodSync(relocatedRoot, 0o777)
      const dataDir = Path.join(base, "data")
      Fs.mkdirSync(dataDir, { mode: 0o700 })
      expect(() => placeCluster(dataDir, user, relocatedRoot)).toThrow("only root may write to")
      expect(Fs.readdirSync(relocatedRoot)).toEqual([])
    }))
})

describe.skipIf(isRoot)("PostgresClusterDirectory as another user", () => {
  it.scoped("the cluster is always <data dir>/pg, 0700, and the data directory keeps its mode", () =>
    Effect.gen(function*() {
      const { base, relocatedRoot } = yield* scratch
      const dataDir = Path.join(base, "data")
      const place = placeCluster(dataDir, undefined, relocatedRoot)
      expect(place).toEqual({ dir: Path.join(dataDir, "pg"), relocatedBecause: undefined })
      expect([modeOf(dataDir), modeOf(place.dir)]).toEqual([0o700, 0o700])
    }))
})
