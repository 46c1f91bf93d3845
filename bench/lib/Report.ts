/**
 * Report owns the shape of a bench result and its two renderings: bench/results/latest.json (machine-readable, every
 * figure) and bench/results/latest.md (the human table, also printed). Targets are reported, never asserted: a missed
 * target is a row marked "no", not a failed run. Pure apart from `write`.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { ProfileSummary } from "./Profile.js"

export interface Figure {
  readonly name: string
  readonly value: number | string
  readonly unit?: string
}

export interface Target {
  readonly name: string
  readonly measured: number
  readonly comparator: ">=" | "<=" | "=="
  readonly target: number
  readonly unit?: string
}

export interface SectionResult {
  readonly key: string
  readonly title: string
  readonly seconds: number
  readonly figures: ReadonlyArray<Figure>
  readonly targets: ReadonlyArray<Target>
  /** How each figure was obtained, one sentence a line. */
  readonly method: ReadonlyArray<string>
  readonly profile?: ProfileSummary
  readonly error?: string
}

export interface RunResult {
  readonly startedAt: string
  readonly seconds: number
  readonly machine: {
    readonly cpus: number
    readonly cpuModel: string
    readonly node: string
    readonly pinned: boolean
    readonly database: string
    /** 1-minute load average at the start and the end: anything near or above the core count means noisy figures. */
    readonly loadAverage: { readonly start: number; readonly end: number }
  }
  readonly sections: ReadonlyArray<SectionResult>
}

export const isMet = (t: Target) =>
  t.comparator === ">=" ? t.measured >= t.target : t.comparator === "<=" ? t.measured <= t.target : t.measured === t.target

const fmt = (v: number | string, unit?: string) => {
  if (typeof v === "string") return v
  const s = Number.isInteger(v) ? v.toLocaleString("en-US") : Math.abs(v) >= 100
    ? Math.round(v).toLocaleString("en-US")
    : v.toFixed(Math.abs(v) >= 10 ? 1 : Math.abs(v) >= 1 ? 2 : 3)
  return unit ? `${s} ${unit}` : s
}

export const toMarkdown = (run: RunResult): string => {
  const lines: Array<string> = []
  lines.push(`# Belay benchmark results`, "")
  lines.push(
    `Run ${run.startedAt}, ${Math.round(run.seconds)} s. ${run.machine.cpus} × ${run.machine.cpuModel}; Node ${run.machine.node}; ` +
      `database: ${run.machine.database}; ${run.machine.pinned ? "Belay pinned to core 0, load to core 1 (taskset)" : "no CPU pinning"}; ` +
      `1-minute load average ${run.machine.loadAverage.start.toFixed(2)} at the start, ${run.machine.loadAverage.end.toFixed(2)} at the end` +
      `${Math.max(run.machine.loadAverage.start, run.machine.loadAverage.end) >= run.machine.cpus ? " (other work was running: expect noise)" : ""}.`,
    "",
    "Ratios compare against a baseline measured in the same run. Targets are reported here, never asserted in tests.",
    ""
  )
  lines.push("| Section | Check | Measured | Target | Met |", "|---|---|---|---|---|")
  for (const s of run.sections) {
    if (s.error) lines.push(`| ${s.title} | (section failed) | ${s.error.split("\n")[0]!.slice(0, 160)} | | no |`)
    for (const t of s.targets) {
      lines.push(`| ${s.title} | ${t.name} | ${fmt(t.measured, t.unit)} | ${t.comparator} ${fmt(t.target, t.unit)} | ${isMet(t) ? "yes" : "**no**"} |`)
    }
  }
  for (const s of run.sections) {
    lines.push("", `## ${s.title} (${Math.round(s.seconds)} s)`, "")
    if (s.error) lines.push("```", s.error.slice(0, 4000), "```", "")
    if (s.figures.length > 0) {
      lines.push("| Figure | Value |", "|---|---|")
      for (const f of s.figures) lines.push(`| ${f.name} | ${fmt(f.value, f.unit)} |`)
      lines.push("")
    }
    for (const m of s.method) lines.push(`- ${m}`)
    if (s.profile) {
      const p = s.profile
      lines.push(
        "",
        `CPU profile of Belay under the same load (\`node --cpu-prof\`, ${p.windowed ? "load window only" : "whole process"}: ${p.busyMs} ms busy, ${p.idleMs} ms idle; ` +
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

export const write = (dir: string, run: RunResult) => {
  Fs.mkdirSync(dir, { recursive: true })
  const markdown = toMarkdown(run)
  // Written to .tmp then renamed, so an interrupted run never leaves half a file (bench/results/*.tmp is ignored).
  for (const [name, content] of [["latest.json", JSON.stringify(run, null, 2) + "\n"], ["latest.md", markdown]] as const) {
    const target = Path.join(dir, name)
    Fs.writeFileSync(`${target}.tmp`, content)
    Fs.renameSync(`${target}.tmp`, target)
  }
  return markdown
}

export const machine = (database: string, pinned: boolean, loadAtStart: number) => ({
  cpus: Os.cpus().length,
  cpuModel: Os.cpus()[0]?.model.trim() ?? "unknown",
  node: process.version,
  pinned,
  database,
  loadAverage: { start: loadAtStart, end: Os.loadavg()[0]! }
})
