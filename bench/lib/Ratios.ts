/**
 * Ratios owns how a throughput round compares Belay with its baseline: by requests per second, and by requests per
 * second of the server process's own CPU, and which of the two is the harder. Pure.
 *
 * Concurrency rule: none; functions of finished measurements.
 */
import type { LoadResult } from "./Load.js"

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
 * Per round, the lower of two ratios: the harder baseline. A bare `node:http` server that the load did not keep busy
 * (autocannon on one core left it at about half a core: bench/results/mcp-baseline.md) answers fewer requests per
 * second than it could; per second of its CPU it does not. LeanLoad now keeps it busy; this stays so that a load
 * generator or a machine that starves the baseline again cannot flatter Belay.
 */
export const harder = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): Array<number> =>
  a.map((x, i) => (Number.isNaN(b[i]!) ? x : Math.min(x, b[i]!)))
