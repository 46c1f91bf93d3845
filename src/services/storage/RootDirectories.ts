/**
 * RootDirectories owns the directories Belay keeps outside its data directory when it runs as root, for the
 * embedded PostgreSQL's unprivileged user (ServerOsUser.ts), which may not be able to reach the clone or the data
 * directory: the staged server binaries (PostgresBinaries.ts) and the clusters of data directories that user cannot
 * enter (PostgresClusterDirectory.ts). README "The embedded PostgreSQL"; docs/decisions/storage.md.
 *
 * Concurrency: creation is idempotent (EEXIST is success once the directory is checked), so processes starting at
 * once may all call it.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"

/** The FHS place for data a program can rebuild: a copy of the binaries, one directory per version and content. */
export const STAGED_BINARIES_DIR = "/var/cache/belay/postgres"
/** The FHS place for a program's state: the clusters that cannot live in their data directory, one per data directory. */
export const RELOCATED_CLUSTERS_DIR = "/var/lib/belay/pg"

const describe = (st: Fs.Stats) =>
  `${st.isSymbolicLink() ? "a symbolic link" : st.isDirectory() ? "a directory" : "not a directory"} owned by uid ${st.uid}, mode ${
    (st.mode & 0o7777).toString(8).padStart(4, "0")
  }`

/**
 * Makes `dir` (and its parent, which is then `/var/cache/belay` or `/var/lib/belay`) a directory owned by root that
 * only root may write to, with `mode` when Belay creates it. An existing one is taken as it is when it is such a
 * directory — Belay never changes the mode of a directory it did not create — and refused otherwise: whoever may
 * write to it could replace what the server executes or the cluster it serves. Throws with the reason.
 */
export const ensureRootDirectory = (dir: string, mode: number): void => {
  const parent = Path.dirname(dir)
  // `/var/cache` and `/var/lib` exist on any FHS system; a bare container may lack them.
  Fs.mkdirSync(Path.dirname(parent), { recursive: true, mode: 0o755 })
  for (const [d, m] of [[parent, 0o755], [dir, mode]] as const) {
    let created = false
    try {
      Fs.mkdirSync(d, { mode: m })
      created = true
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
    }
    // The umask must not narrow what the server's user may pass through.
    if (created) Fs.chmodSync(d, m)
    const st = Fs.lstatSync(d)
    if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0) {
      throw new Error(`${d} must be a directory owned by root that only root may write to, but it is ${describe(st)}`)
    }
  }
}
