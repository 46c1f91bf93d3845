/**
 * Profile owns reading a V8 `.cpuprofile` (written by `node --cpu-prof`) into where the time went: self time by
 * category (Effect runtime, SQL driver, Node internals, Belay's own code, GC), the hottest functions by self
 * time, and Belay's own functions by inclusive time (every sample counts once for each distinct function on its
 * stack). Pure: a file in, a summary out.
 */
import * as Fs from "node:fs"

interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
  readonly columnNumber: number
}

interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}

interface CpuProfile {
  /** Microseconds on the monotonic clock (CLOCK_MONOTONIC on Linux, as `process.hrtime`). */
  readonly startTime: number
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

export interface ProfileShare {
  readonly name: string
  readonly ms: number
  /** Share of busy (non-idle) samples, in percent. */
  readonly percent: number
}

export interface ProfileSummary {
  readonly file: string
  /** Whether only the samples of the load window were counted (else the whole process lifetime). */
  readonly windowed: boolean
  readonly busyMs: number
  readonly idleMs: number
  readonly categories: ReadonlyArray<ProfileShare>
  readonly topSelf: ReadonlyArray<ProfileShare>
  readonly topBelayInclusive: ReadonlyArray<ProfileShare>
}

const category = (frame: CallFrame): string => {
  const { url, functionName } = frame
  if (functionName === "(garbage collector)") return "GC"
  if (functionName === "(program)") return "V8/native (program)"
  if (functionName === "(idle)") return "idle"
  if (url.includes("/node_modules/effect/")) return "effect runtime"
  if (url.includes("/node_modules/@effect/sql")) return "@effect/sql"
  if (/\/node_modules\/(pg|pg-protocol|pg-pool|pg-types|pgpass)\//.test(url)) return "pg driver"
  if (url.includes("/node_modules/@effect/platform")) return "@effect/platform"
  if (url.includes("/node_modules/")) return "other dependencies"
  if (url.startsWith("node:") || url === "") return "Node internals / native"
  if (url.includes("/dist/")) return "Belay (dist/)"
  return "other"
}

const shortUrl = (url: string) => url.replace(/^.*\/node_modules\//, "").replace(/^file:\/\/.*\/dist\//, "dist/")

const frameName = (frame: CallFrame) =>
  `${frame.functionName || "(anonymous)"} ${shortUrl(frame.url)}:${frame.lineNumber + 1}`

/** A window in `process.hrtime.bigint()` nanoseconds; samples outside it (start-up, shutdown) are left out. */
export interface Window {
  readonly fromNs: bigint
  readonly toNs: bigint
}

export const summarize = (file: string, window?: Window, top = 15): ProfileSummary => {
  const profile = JSON.parse(Fs.readFileSync(file, "utf8")) as CpuProfile
  const byId = new Map<number, ProfileNode>()
  const parent = new Map<number, number>()
  for (const node of profile.nodes) {
    byId.set(node.id, node)
    for (const child of node.children ?? []) parent.set(child, node.id)
  }
  const fromUs = window === undefined ? -Infinity : Number(window.fromNs / 1000n)
  const toUs = window === undefined ? Infinity : Number(window.toNs / 1000n)
  const collect = (from: number, to: number) => {
    const self = new Map<number, number>()
    let t = profile.startTime
    for (let i = 0; i < profile.samples.length; i++) {
      const delta = profile.timeDeltas[i] ?? 0
      t += delta
      if (t < from || t > to) continue
      const id = profile.samples[i]!
      self.set(id, (self.get(id) ?? 0) + delta / 1000)
    }
    return self
  }
  let selfMs = collect(fromUs, toUs)
  // Both clocks are CLOCK_MONOTONIC on Linux; elsewhere the window may miss, and the whole profile is better than none.
  const windowed = window !== undefined && selfMs.size > 0
  if (!windowed) selfMs = collect(-Infinity, Infinity)
  let idleMs = 0
  let busyMs = 0
  const categories = new Map<string, number>()
  const functions = new Map<string, number>()
  const belayInclusive = new Map<string, number>()
  for (const [id, ms] of selfMs) {
    const frame = byId.get(id)!.callFrame
    const cat = category(frame)
    if (cat === "idle") {
      idleMs += ms
      continue
    }
    busyMs += ms
    categories.set(cat, (categories.get(cat) ?? 0) + ms)
    const name = frameName(frame)
    functions.set(name, (functions.get(name) ?? 0) + ms)
    const seen = new Set<string>()
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const f = byId.get(at)!.callFrame
      if (category(f) !== "Belay (dist/)") continue
      const n = frameName(f)
      if (seen.has(n)) continue
      seen.add(n)
      belayInclusive.set(n, (belayInclusive.get(n) ?? 0) + ms)
    }
  }
  const shares = (m: Map<string, number>, n: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, ms]) => ({ name, ms: Math.round(ms), percent: Math.round((1000 * ms) / busyMs) / 10 }))
  return {
    file,
    windowed,
    busyMs: Math.round(busyMs),
    idleMs: Math.round(idleMs),
    categories: shares(categories, 20),
    topSelf: shares(functions, top),
    topBelayInclusive: shares(belayInclusive, top)
  }
}
