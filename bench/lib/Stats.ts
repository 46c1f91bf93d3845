/**
 * Stats owns the arithmetic of repeated measurements: the median and nearest-rank percentiles the report shows, and
 * the spread (min–max) of a figure over the runs of a section. Pure functions.
 */

const sorted = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)

/** Nearest-rank percentile (p in 0–100) of a non-empty sample. */
export const percentile = (values: ReadonlyArray<number>, p: number): number => {
  if (values.length === 0) throw new Error("percentile of an empty sample")
  const s = sorted(values)
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!
}

/** The middle value (the mean of the two middle ones for an even count). */
export const median = (values: ReadonlyArray<number>): number => {
  if (values.length === 0) throw new Error("median of an empty sample")
  const s = sorted(values)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

export const mean = (values: ReadonlyArray<number>): number => values.reduce((a, b) => a + b, 0) / values.length

/** Largest ÷ smallest − 1, as a percentage: how far apart the runs were. */
export const spreadPercent = (values: ReadonlyArray<number>): number => {
  const s = sorted(values)
  return s[0]! === 0 ? 0 : (100 * (s[s.length - 1]! - s[0]!)) / Math.abs(s[0]!)
}
