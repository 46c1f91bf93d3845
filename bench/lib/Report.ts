/**
 * Report owns the shape of a bench result and its two renderings: bench/results/latest.json (machine-readable, every
 * figure, every run) and bench/results/latest.md (the human table, also printed). Targets are reported, never
 * asserted: a missed target is a row marked "no", not a failed run. A figure measured several times (the runs of a
 * section, or the rounds inside one) carries every value; it is shown as the median with the range, and a target is
 * judged on the median. Pure apart from `write`.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { ProfileSummary } from "./Profile.js"
import { median } from "./Stats.js"

export interface Figure {
  readonly name: string
  /** The median when `runs` is given. */
  readonly value: number | string
  readonly unit?: string
  /** Every measured value, in run order. */
  readonly runs?: ReadonlyArray<number>
}

export interface Target {
  readonly name: string
  /** The median when `runs` is given. */
  readonly measured: number
  readonly comparator: ">=" | "<=" | "=="
  readonly target: number
  readonly unit?: string
  readonly runs?: ReadonlyArray<number>
}

export interface LoadAverage {
  /** 1-minute load average when the measurement started and ended. */
  readonly start: number
  readonly end: number
}

export interface SectionResult {
  readonly key: string
  readonly title: string
  readonly seconds: number
  readonly figures: ReadonlyArray<Figure>
  readonly targets: ReadonlyArray<Target>
  /** How each figure was obtained, one sentence a line. */
  readonly method: ReadonlyArray<string>
  /** The machine's load while the section (each of its runs) ran. */
  readonly load?: ReadonlyArray<LoadAverage>
  /** CPU profiles of Belay under a named load. */
  readonly profiles?: ReadonlyArray<{ readonly label: string; readonly summary: ProfileSummary }>
  readonly error?: string
  /** Set when the section was measured in a partial run merged into the report (BENCH_MERGE=1), not in its run. */
  readonly ownRun?: { readonly startedAt: string; readonly seconds: number; readonly machine: RunResult["machine"] }
}

export interface RunResult {
  readonly startedAt: string
  readonly seconds: number
  /** The sections that ran; a full run has them all (only a full run writes latest.*). */
  readonly sections: ReadonlyArray<SectionResult>
  readonly machine: {
    readonly cpus: number
    readonly cpuModel: string
    readonly node: string
    readonly pinned: boolean
    readonly database: string
    /** 1-minute load average at the start and the end: anything near or above the core count means noisy figures. */
    readonly loadAverage: LoadAverage
  }
}

/** A figure measured once per round: the median, with every round's value. */
export const perRound = (name: string, values: ReadonlyArray<number>, unit?: string): Figure => ({
  name,
  value: median(values),
  ...(unit ? { unit } : {}),
  runs: values
})

export const isMet = (t: Target) =>
  t.comparator === ">=" ? t.measured >= t.target : t.comparator === "<=" ? t.measured <= t.target : t.measured === t.target

const number = (v: number) =>
  Number.isInteger(v) ? v.toLocaleString("en-US") : Math.abs(v) >= 100
    ? Math.round(v).toLocaleString("en-US")
    : v.toFixed(Math.abs(v) >= 10 ? 1 : Math.abs(v) >= 1 ? 2 : 3)

const fmt = (v: number | string, unit?: string, runs?: ReadonlyArray<number>) => {
  if (typeof v === "string") return v
  const range = runs !== undefined && runs.length > 1
    ? ` (${number(Math.min(...runs))}–${number(Math.max(...runs))}, n=${runs.length})`
    : ""
  return `${number(v)}${unit ? ` ${unit}` : ""}${range}`
}

const loads = (l: ReadonlyArray<LoadAverage>) => l.map((x) => `${x.start.toFixed(2)}→${x.end.toFixed(2)}`).join(", ")

/**
 * One section result out of several runs of it: each figure and target by position (the runs of a section report
 * the same figures in the same order), numbers as their median with every value kept. A run that failed is reported
 * as the section's error, and the others still count.
 */
export const combineRuns = (runs: ReadonlyArray<SectionResult>): SectionResult => {
  const ok = runs.filter((r) => r.error === undefined)
  const failedRun = runs.find((r) => r.error !== undefined)
  const base = ok[0] ?? runs[0]!
  const figures = base.figures.map((f, i): Figure => {
    const values = ok.map((r) => r.figures[i]?.value)
    if (values.every((v): v is number => typeof v === "number")) {
      return { name: f.name, value: median(values), ...(f.unit ? { unit: f.unit } : {}), runs: values }
    }
    const distinct = [...new Set(values.map(String))]
    const value = distinct.length === 1 ? distinct[0]! : `${distinct[0]} (run 1 of ${values.length}; the others differ)`
    return { name: f.name, value, ...(f.unit ? { unit: f.unit } : {}) }
  })
  const targets = base.targets.map((t, i): Target => {
    const values = ok.map((r) => r.targets[i]!.measured)
    return { ...t, measured: median(values), runs: values }
  })
  return {
    key: base.key,
    title: base.title,
    seconds: runs.reduce((s, r) => s + r.seconds, 0),
    figures: ok.length > 0 ? figures : [],
    targets: ok.length > 0 ? targets : [],
    method: base.method,
    load: runs.flatMap((r) => r.load ?? []),
    ...(base.profiles ? { profiles: base.profiles } : {}),
    ...(failedRun ? { error: `${runs.length - ok.length} of ${runs.length} runs failed: ${failedRun.error}` } : {})
  }
}

export const toMarkdown = (run: RunResult): string => {
  const lines: Array<string> = []
  lines.push(`# Belay benchmark results`, "")
  lines.push(
    `Run ${run.startedAt}, ${Math.round(run.seconds)} s. ${run.machine.cpus} × ${run.machine.cpuModel}; Node ${run.machine.node}; ` +
      `database: ${run.machine.database}; ${run.machine.pinned ? "Belay (with its embedded PostgreSQL) pinned to core 0, load to core 1 (taskset)" : "no CPU pinning"}; ` +
      `1-minute load average ${run.machine.loadAverage.start.toFixed(2)} at the start, ${run.machine.loadAverage.end.toFixed(2)} at the end` +
      `${Math.max(run.machine.loadAverage.start, run.machine.loadAverage.end) >= run.machine.cpus ? " (other work was running: expect noise)" : ""}.`,
    "",
    "Ratios compare against a baseline measured in the same run. A figure measured several times shows its median, " +
      "then the lowest and highest value and how many there were; targets are judged on the median. Targets are " +
      "reported here, never asserted in tests.",
    ""
  )
  const own = run.sections.filter((s) => s.ownRun !== undefined)
  if (own.length > 0) {
    lines.push(
      `Measured in runs of their own and merged into this report (\`BENCH_MERGE=1 npm run bench -- <section>\`): ${
        own.map((s) => `${s.title} (${s.ownRun!.startedAt})`).join(", ")
      }; their headings say on what machine state. Every other section is from the run above.`,
      ""
    )
  }
  lines.push("| Section | Check | Measured | Target | Met |", "|---|---|---|---|---|")
  for (const s of run.sections) {
    if (s.error) lines.push(`| ${s.title} | (section failed) | ${s.error.split("\n")[0]!.slice(0, 160)} | | no |`)
    for (const t of s.targets) {
      lines.push(
        `| ${s.title} | ${t.name} | ${fmt(t.measured, t.unit, t.runs)} | ${t.comparator} ${fmt(t.target, t.unit)} | ${isMet(t) ? "yes" : "**no**"} |`
      )
    }
  }
  for (const s of run.sections) {
    lines.push("", `## ${s.title} (${Math.round(s.seconds)} s)`, "")
    if (s.ownRun) {
      const m = s.ownRun.machine
      lines.push(
        `Measured in a run of its own at ${s.ownRun.startedAt} (${Math.round(s.ownRun.seconds)} s), ${m.cpus} × ${m.cpuModel}, Node ${m.node}, ${m.database}; ` +
          `1-minute load average ${m.loadAverage.start.toFixed(2)} at its start, ${m.loadAverage.end.toFixed(2)} at its end.`,
        ""
      )
    }
    if (s.load && s.load.length > 0) lines.push(`1-minute load average while it ran (start→end of each run or round): ${loads(s.load)}.`, "")
    if (s.error) lines.push("```", s.error.slice(0, 4000), "```", "")
    if (s.figures.length > 0) {
      lines.push("| Figure | Value |", "|---|---|")
      for (const f of s.figures) lines.push(`| ${f.name} | ${fmt(f.value, f.unit, f.runs)} |`)
      lines.push("")
    }
    for (const m of s.method) lines.push(`- ${m}`)
    for (const { label, summary: p } of s.profiles ?? []) {
      lines.push(
        "",
        `CPU profile of Belay under ${label} (\`node --cpu-prof\`, ${p.windowed ? "load window only" : "whole process"}: ${p.busyMs} ms busy, ${p.idleMs} ms idle; ` +
          `file ${Path.relative(process.cwd(), p.file)}):`,
        "",
        "| Self time by category | ms | % of busy |",
        "|---|---|---|"
      )
      for (const c of p.categories) lines.push(`| ${c.name} | ${c.ms} | ${c.percent} |`)
      lines.push("", "| Hottest functions (self) | ms | % |", "|---|---|---|")
      for (const c of p.topSelf) lines.push(`| \`${c.name}\` | ${c.ms} | ${c.percent} |`)
      lines.push("", "| Belay functions (inclusive) | ms | % |", "|---|---|---|")
      for (const c of p.topBelayInclusive) lines.push(`| \`${c.name}\` | ${c.ms} | ${c.percent} |`)
    }
  }
  return lines.join("\n") + "\n"
}

/** Writes `<name>.json` and `<name>.md` in `dir` and returns the markdown. */
export const write = (dir: string, name: string, run: RunResult) => {
  Fs.mkdirSync(dir, { recursive: true })
  const markdown = toMarkdown(run)
  // Written to .tmp then renamed, so an interrupted run never leaves half a file (bench/results/*.tmp is ignored).
  for (const [file, content] of [[`${name}.json`, JSON.stringify(run, null, 2) + "\n"], [`${name}.md`, markdown]] as const) {
    const target = Path.join(dir, file)
    Fs.writeFileSync(`${target}.tmp`, content)
    Fs.renameSync(`${target}.tmp`, target)
  }
  return markdown
}

/**
 * `partial`'s sections merged into the run stored as `<dir>/<name>.json`: each replaces the section of the same key
 * (or is added), stamped with the partial run it came from; every other section and the stored run's own header
 * stay as they were. Sections are ordered as `order` lists their keys.
 */
export const merge = (dir: string, name: string, partial: RunResult, order: ReadonlyArray<string>): RunResult => {
  const stored = JSON.parse(Fs.readFileSync(Path.join(dir, `${name}.json`), "utf8")) as RunResult
  const ownRun = { startedAt: partial.startedAt, seconds: partial.seconds, machine: partial.machine }
  const replaced = new Set(partial.sections.map((s) => s.key))
  const rank = (key: string) => (order.includes(key) ? order.indexOf(key) : order.length)
  const sections = [
    ...stored.sections.filter((s) => !replaced.has(s.key)),
    ...partial.sections.map((s) => ({ ...s, ownRun }))
  ].sort((a, b) => rank(a.key) - rank(b.key))
  return { ...stored, sections }
}

export const loadNow = () => Os.loadavg()[0]!

export const machine = (database: string, pinned: boolean, loadAtStart: number) => ({
  cpus: Os.cpus().length,
  cpuModel: Os.cpus()[0]?.model.trim() ?? "unknown",
  node: process.version,
  pinned,
  database,
  loadAverage: { start: loadAtStart, end: Os.loadavg()[0]! }
})
