/**
 * Ratios owns how a throughput round compares Belay with its baseline: by requests per second, and by requests per
 * second of the server process's own CPU, and which of the two is the harder; and how the slices of an alternating
 * load (Load.ts `alternatingLoad`) compare its variants. Pure.
 *
 * Concurrency rule: none; functions of finished measurements.
 */
import type { LoadResult, Slice } from "./Load.js"

type Measured = LoadResult & { readonly serverCores?: number }

/** Belay's requests/s over the baseline's, per round. */
export const rawRatios = (belay: ReadonlyArray<Measured>, bare: ReadonlyArray<Measured>): Array<number> =>
  belay.map((b, i) => b.requestsPerSecond / bare[i]!.requestsPerSecond)

/** Requests per second of the server process's own CPU, Belay's over the baseline's, per round (NaN without CPU). */
export const cpuRatios = (belay: ReadonlyArray<Measured>, bare: ReadonlyArray<Measured>): Array<number> =>
  belay.map((b, i) =>
    (b.requestsPerSecond / (b.serverCores ?? Number.NaN)) / (bare[i]!.requestsPerSecond / (bare[i]!.serverCores ?? Number.NaN))
  )

/**
 * What the second of two measurements of a round costs a request beyond the first, in µs of the server process's own
 * CPU, per round (NaN without CPU): for two eras of one call, what the revision's own work and bytes add.
 */
export const extraCpuMicros = (second: ReadonlyArray<Measured>, first: ReadonlyArray<Measured>): Array<number> =>
  second.map((s, i) =>
    1e6 * ((s.serverCores ?? Number.NaN) / s.requestsPerSecond - (first[i]!.serverCores ?? Number.NaN) / first[i]!.requestsPerSecond)
  )

/**
 * Per round, the lower of two ratios: the harder baseline. A bare `node:http` server that the load did not keep busy
 * (autocannon on one core left it at about half a core: bench/results/mcp-baseline.md) answers fewer requests per
 * second than it could; per second of its CPU it does not. LeanLoad now keeps it busy; this stays so that a load
 * generator or a machine that starves the baseline again cannot flatter Belay.
 */
export const harder = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): Array<number> =>
  a.map((x, i) => (Number.isNaN(b[i]!) ? x : Math.min(x, b[i]!)))

/**
 * The slices of an alternating load of two variants, taken in its passes (one slice of each, side by side in time):
 * per pass, variant 1's rate ÷ variant 0's, by requests per second or by requests per second of the server's CPU
 * (NaN without CPU). Their spread is what the machine moved between neighbouring slices, not the variants.
 */
export const pairRatios = (slices: ReadonlyArray<Slice>, by: "seconds" | "cpu"): Array<number> => {
  const rate = (s: Slice) => s.requests / (by === "seconds" ? s.seconds : (s.serverCpu ?? Number.NaN))
  const out: Array<number> = []
  for (let i = 0; i + 1 < slices.length; i += 2) {
    const [a, b] = slices[i]!.variant === 0 ? [slices[i]!, slices[i + 1]!] : [slices[i + 1]!, slices[i]!]
    out.push(rate(b) / rate(a))
  }
  return out
}

/** What else ran beside the server in one variant's slices: CPU of the database and of the core's other processes, in cores, and the core's stolen share. */
export const surroundings = (slices: ReadonlyArray<Slice>, variant: number) => {
  const own = slices.filter((s) => s.variant === variant)
  const sum = (f: (s: Slice) => number | undefined) => own.reduce((a, s) => a + (f(s) ?? Number.NaN), 0)
  const seconds = sum((s) => s.seconds)
  return {
    databaseCores: sum((s) => s.databaseCpu) / seconds,
    otherCores: (sum((s) => s.coreBusy) - sum((s) => s.serverCpu) - sum((s) => s.databaseCpu ?? 0)) / seconds,
    stolenShare: sum((s) => s.coreSteal) / sum((s) => s.coreTotal)
  }
}
