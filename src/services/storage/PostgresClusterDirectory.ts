/**
 * PostgresClusterDirectory owns where the embedded PostgreSQL's cluster lives for a data directory: `<data dir>/pg`, or —
 * when Belay runs as root and the server's unprivileged user (ServerOsUser.ts) cannot pass through some directory
 * on the way there (a clone in a 0700 `/root` or `mktemp -d` directory) — `RELOCATED_CLUSTERS_DIR/<id>`, where `<id>`
 * is the first 16 hex digits of the SHA-256 of the data directory's real path, so every start for that data
 * directory finds the same cluster. Belay changes the mode of no directory it did not create itself. The rules, in
 * order (README "The embedded PostgreSQL", docs/decisions/storage.md):
 * 1. `<data dir>/pg` holds a cluster: it is used there (refused, with the directory to open, if unreachable);
 * 2. the relocated directory holds one: it is used there;
 * 3. the server's user can reach the data directory: a new cluster goes to `<data dir>/pg`;
 * 4. otherwise a new one goes to the relocated directory.
 *
 * Concurrency: called once per start, before the server runs; two Belays on one data directory are told apart
 * later, by the cluster's postmaster.pid (EmbeddedPostgres.ts).
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { ensureRootDirectory, RELOCATED_CLUSTERS_DIR } from "./RootDirectories.js"
import { chownTree, closedAncestor, type OsUser, SERVER_OS_USER } from "./ServerOsUser.js"

export interface ClusterPlace {
  /** The cluster's directory (PGDATA), created with mode 0700 and owned by the server's OS user. */
  readonly dir: string
  /** Set when the cluster is not in `<data dir>/pg`: why, in words for the start-up log. */
  readonly relocatedBecause: string | undefined
}

const hasCluster = (dir: string) => Fs.existsSync(Path.join(dir, "PG_VERSION"))

/** The directory the cluster of `dataDir` goes to when the server's user cannot reach `dataDir`. */
export const relocatedClusterDir = (dataDir: string, root = RELOCATED_CLUSTERS_DIR) =>
  Path.join(root, Crypto.createHash("sha256").update(Fs.realpathSync(dataDir)).digest("hex").slice(0, 16))

const ensureOwnedDir = (dir: string, user: OsUser | undefined) => {
  Fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
  if (user !== undefined && Fs.statSync(dir).uid !== user.uid) chownTree(dir, user)
}

/**
 * Creates `dataDir` if needed and returns where its cluster lives, that directory created for the server's OS user
 * (`user`, set when Belay runs as root). Throws with the reason when no place is usable.
 */
export const placeCluster = (dataDir: string, user: OsUser | undefined, relocatedRoot = RELOCATED_CLUSTERS_DIR): ClusterPlace => {
  const created = Fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const inPlace = Path.join(dataDir, "pg")
  if (user === undefined) {
    ensureOwnedDir(inPlace, user)
    return { dir: inPlace, relocatedBecause: undefined }
  }
  if (created !== undefined && closedAncestor(Path.dirname(created), user) === undefined) {
    // The directories Belay has just made on the way to the data directory get the execute bit for others, so the
    // server's user may pass through them to `pg`; it still cannot list them, and Belay's own files there are 0600.
    for (let dir = dataDir; dir === created || dir.startsWith(created + Path.sep); dir = Path.dirname(dir)) {
      Fs.chmodSync(dir, 0o711)
    }
  }
  const closed = closedAncestor(dataDir, user)
  if (hasCluster(inPlace)) {
    if (closed !== undefined) {
      throw new Error(`${inPlace} holds the cluster, but ${SERVER_OS_USER}, the user PostgreSQL runs as, cannot enter ` +
        `${closed} on the way to it; allow it (chmod o+x ${closed}) or move the data directory where it can`)
    }
    ensureOwnedDir(inPlace, user)
    return { dir: inPlace, relocatedBecause: undefined }
  }
  const relocated = relocatedClusterDir(dataDir, relocatedRoot)
  const madeThere = hasCluster(relocated)
  if (closed === undefined && !madeThere) {
    ensureOwnedDir(inPlace, user)
    return { dir: inPlace, relocatedBecause: undefined }
  }
  // 0711: the server's user passes through to its own cluster but cannot list the others.
  ensureRootDirectory(relocatedRoot, 0o711)
  ensureOwnedDir(relocated, user)
  const closedOnTheWay = closedAncestor(relocated, user)
  if (closedOnTheWay !== undefined) {
    throw new Error(`${SERVER_OS_USER}, the user PostgreSQL runs as, cannot enter ${closedOnTheWay} on the way to ${relocated}, ` +
      `where the cluster of ${dataDir} goes${closed === undefined ? "" : ` since it cannot enter ${closed} either`}; ` +
      `choose a BELAY_DATA_DIR it can reach, or set DATABASE_URL`)
  }
  return {
    dir: relocated,
    relocatedBecause: closed !== undefined
      ? `${SERVER_OS_USER}, the user PostgreSQL runs as, cannot enter ${closed}`
      : `it was made there when ${SERVER_OS_USER} could not reach ${dataDir}`
  }
}
