/**
 * Memory owns reading what a process tree holds in memory, from Linux's /proc: the tree under a pid (Belay and the
 * embedded PostgreSQL it spawned: the postmaster and its backends), and each process's proportional set size from
 * /proc/<pid>/smaps_rollup, split into anonymous memory (heaps), file-backed pages (code and libraries) and shared
 * memory (PostgreSQL's shared buffers and other shared state). PSS divides every shared page among the processes that
 * map it, so the PSS of a tree adds up without counting a shared page twice. Reads only; Linux only (undefined
 * elsewhere).
 *
 * PSS counts only the pages a live process has mapped. PostgreSQL's main shared memory segment (shared buffers, WAL
 * buffers, the lock table) is one shared anonymous mapping: a page a backend touched stays resident in it after that
 * backend has exited, in no process's PSS. `sharedSegmentResident` reads the whole segment's resident size
 * (fincore(1) on the postmaster's /proc/<pid>/map_files entry, which needs root), so a section can show what PSS
 * leaves out.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import type { RunningBelay } from "./Belay.js"
import { sleep } from "./Env.js"

export interface ProcessMemory {
  readonly pid: number
  /** The command line as the process shows it (PostgreSQL backends rewrite theirs, e.g. "postgres: checkpointer"). */
  readonly name: string
  readonly rss: number
  readonly pss: number
  readonly pssAnon: number
  readonly pssFile: number
  readonly pssShmem: number
}

const read = (path: string): string | undefined => {
  try {
    return Fs.readFileSync(path, "utf8")
  } catch {
    return undefined
  }
}

const parentOf = (pid: number): number | undefined => {
  const stat = read(`/proc/${pid}/stat`)
  if (stat === undefined) return undefined
  // Field 4, after the parenthesised command name (which may contain spaces).
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
}

/** `root` and every process descending from it, root first. */
export const processTree = (root: number): Array<number> => {
  const children = new Map<number, Array<number>>()
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const pid = Number(entry)
    const parent = parentOf(pid)
    if (parent === undefined) continue
    children.set(parent, [...(children.get(parent) ?? []), pid])
  }
  const out: Array<number> = []
  const visit = (pid: number) => {
    out.push(pid)
    for (const child of children.get(pid) ?? []) visit(child)
  }
  visit(root)
  return out
}

/** Bytes of the `field:` line (in kB) of smaps_rollup. */
const field = (rollup: string, name: string) => {
  const match = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(rollup)
  return match ? Number(match[1]) * 1024 : 0
}

export const processMemory = (pid: number): ProcessMemory | undefined => {
  const rollup = read(`/proc/${pid}/smaps_rollup`)
  if (rollup === undefined) return undefined
  const name = (read(`/proc/${pid}/cmdline`) ?? "").split("\0").filter((s) => s !== "").join(" ")
  return {
    pid,
    name,
    rss: field(rollup, "Rss"),
    pss: field(rollup, "Pss"),
    pssAnon: field(rollup, "Pss_Anon"),
    pssFile: field(rollup, "Pss_File"),
    pssShmem: field(rollup, "Pss_Shmem")
  }
}

export interface ServiceMemory {
  readonly belay: ProcessMemory
  /** Every other process of the tree: the embedded PostgreSQL's postmaster and its children. */
  readonly postgres: ReadonlyArray<ProcessMemory>
}

/** Belay (`pid`) and the processes it spawned; undefined off Linux. */
export const serviceMemory = (pid: number): ServiceMemory | undefined => {
  if (!Fs.existsSync(`/proc/${pid}/smaps_rollup`)) return undefined
  const [self, ...rest] = processTree(pid).map(processMemory)
  if (self === undefined) return undefined
  return { belay: self, postgres: rest.filter((p): p is ProcessMemory => p !== undefined) }
}

/**
 * Resident bytes of the shared anonymous mappings (`/dev/zero (deleted)`: PostgreSQL's main shared memory segment) of
 * `pid`, counted in the segment itself rather than in `pid`'s page tables; undefined when they cannot be read (not
 * Linux, not root, no fincore).
 */
export const sharedSegmentResident = (pid: number): number | undefined => {
  const maps = read(`/proc/${pid}/maps`)
  if (maps === undefined) return undefined
  let total = 0
  for (const line of maps.split("\n")) {
    const match = /^([0-9a-f]+-[0-9a-f]+) rw-s .*\/dev\/zero \(deleted\)$/.exec(line)
    if (match === null) continue
    try {
      const out = execFileSync("fincore", ["--bytes", "--noheadings", "--output", "RES", `/proc/${pid}/map_files/${match[1]}`], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"]
      })
      total += Number(out.trim())
    } catch {
      return undefined
    }
  }
  return total
}

export const sum = (processes: ReadonlyArray<ProcessMemory>, key: keyof Omit<ProcessMemory, "pid" | "name">) =>
  processes.reduce((total, p) => total + p[key], 0)

/** Heap and RSS after full collections (SIGUSR2 → gc-on-signal.ts), the second of two readings; and the service. */
export const belayMemory = async (belay: RunningBelay) => {
  let heap = NaN
  let rss = NaN
  for (let i = 0; i < 2; i++) {
    belay.signal("SIGUSR2")
    await sleep(500)
    const m = await belay.metrics()
    heap = m.get("nodejs_heap_size_used_bytes") ?? NaN
    rss = m.get("process_resident_memory_bytes") ?? NaN
  }
  const service = serviceMemory(belay.pid)
  return {
    heap,
    rss,
    belayPss: service?.belay.pss ?? NaN,
    postgresPss: service === undefined ? NaN : sum(service.postgres, "pss")
  }
}
