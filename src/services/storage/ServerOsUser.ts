/**
 * ServerOsUser owns the operating-system user the embedded PostgreSQL runs as when Belay runs as root (PostgreSQL
 * refuses to run as root): `belay-postgres`, created on first use, and the questions Belay asks about it before
 * starting the server — may it pass through every directory on a path, and does it own the cluster's files.
 *
 * Concurrency: plain synchronous calls at start-up; `useradd` is the system's own, serialised by its lock on
 * /etc/passwd.
 */
import * as Child from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"

/** The OS user the server runs as when Belay runs as root. */
export const SERVER_OS_USER = "belay-postgres"

export interface OsUser {
  readonly uid: number
  readonly gid: number
}

const idOf = (name: string): OsUser | undefined => {
  try {
    const uid = Number(Child.execFileSync("id", ["-u", name], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }))
    const gid = Number(Child.execFileSync("id", ["-g", name], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }))
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : undefined
  } catch {
    return undefined
  }
}

/**
 * As root: the unprivileged system user the server runs as, created with `useradd` on first use. Otherwise
 * undefined: the server runs as Belay's own user. Throws when the user cannot be created.
 */
export const ensureServerOsUser = (): OsUser | undefined => {
  if (process.getuid?.() !== 0) return undefined
  const existing = idOf(SERVER_OS_USER)
  if (existing !== undefined) return existing
  Child.execFileSync(
    "useradd",
    ["--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", SERVER_OS_USER],
    { stdio: ["ignore", "ignore", "pipe"] }
  )
  const created = idOf(SERVER_OS_USER)
  if (created === undefined) throw new Error(`useradd succeeded but 'id ${SERVER_OS_USER}' does not know the user`)
  return created
}

/** The first directory from `/` down to `dir` (included) that `user` may not pass through (no execute bit), if any. */
export const closedAncestor = (dir: string, user: OsUser): string | undefined => {
  const chain: Array<string> = []
  for (let d = Path.resolve(dir); ; d = Path.dirname(d)) {
    chain.unshift(d)
    if (Path.dirname(d) === d) break
  }
  return chain.find((d) => {
    const { mode, uid, gid } = Fs.statSync(d)
    return !(uid === user.uid ? mode & 0o100 : gid === user.gid ? mode & 0o010 : mode & 0o001)
  })
}

/** Gives `path` and everything under it to `user` (the cluster may come from a run whose user had another uid). */
export const chownTree = (path: string, user: OsUser): void => {
  Fs.lchownSync(path, user.uid, user.gid)
  if (Fs.lstatSync(path).isDirectory()) {
    for (const entry of Fs.readdirSync(path)) chownTree(Path.join(path, entry), user)
  }
}
