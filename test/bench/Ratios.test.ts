/**
 * bench/lib/Ratios.ts: how the slices of an alternating load (bench/lib/LeanLoad.ts) compare two variants — per pass of
 * neighbouring slices whichever came first in it, by requests per second or per CPU-second — and what ran beside the
 * server in one variant's slices; and what the second of two measurements costs a request beyond the first.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Slice } from "../../bench/lib/Load.js"
import { extraCpuMicros, pairRatios, surroundings } from "../../bench/lib/Ratios.js"

const slice = (variant: number, requests: number, seconds: number, serverCpu: number, extra: Partial<Slice> = {}): Slice => ({
  variant,
  requests,
  seconds,
  serverCpu,
  ...extra
})

describe("Ratios of an alternating load", () => {
  it("divides variant 1 by variant 0 in each pass, whichever of the two came first in it", () => {
    // Passes A B, B A, A B: variant 1 at half, then at twice, then at the rate of variant 0.
    const slices = [
      slice(0, 1000, 1, 1),
      slice(1, 500, 1, 1),
      slice(1, 2000, 1, 1),
      slice(0, 1000, 1, 1),
      slice(0, 800, 1, 1),
      slice(1, 800, 1, 1)
    ]
    expect(pairRatios(slices, "seconds")).toEqual([0.5, 2, 1])
  })

  it("by CPU-second, a variant that answered as many requests on more of the server's CPU is the dearer", () => {
    const slices = [slice(0, 1000, 1, 0.5), slice(1, 1000, 1, 1), slice(1, 500, 0.5, 0.4), slice(0, 1000, 1, 0.5)]
    const [bySeconds, byCpu] = [pairRatios(slices, "seconds"), pairRatios(slices, "cpu")]
    expect(bySeconds).toHaveLength(2)
    expect(byCpu).toHaveLength(2)
    expect(bySeconds[0]).toBeCloseTo(1, 10)
    expect(bySeconds[1]).toBeCloseTo(1, 10)
    expect(byCpu[0]).toBeCloseTo(0.5, 10)
    expect(byCpu[1]).toBeCloseTo(0.625, 10)
  })

  it("says NaN by CPU-second for slices read without the server's CPU", () => {
    const slices: Array<Slice> = [{ variant: 0, requests: 10, seconds: 1 }, { variant: 1, requests: 10, seconds: 1 }]
    expect(pairRatios(slices, "seconds")).toEqual([1])
    expect(pairRatios(slices, "cpu")).toEqual([Number.NaN])
  })

  it("puts beside each variant only its own slices: its database's CPU, the core's other processes, the stolen share", () => {
    const core = (busy: number, steal: number) => ({ coreBusy: busy, coreSteal: steal, coreTotal: 1 })
    const slices = [
      slice(0, 1000, 1, 0.9, { databaseCpu: 0, ...core(0.95, 0) }),
      slice(1, 1000, 1, 0.6, { databaseCpu: 0.3, ...core(0.95, 0.02) }),
      slice(1, 1000, 1, 0.6, { databaseCpu: 0.3, ...core(0.95, 0.02) }),
      slice(0, 1000, 1, 0.9, { databaseCpu: 0, ...core(0.95, 0) })
    ]
    const [a, b] = [surroundings(slices, 0), surroundings(slices, 1)]
    expect(a.databaseCores).toBe(0)
    expect(a.otherCores).toBeCloseTo(0.05, 10)
    expect(a.stolenShare).toBe(0)
    expect(b.databaseCores).toBeCloseTo(0.3, 10)
    expect(b.otherCores).toBeCloseTo(0.05, 10)
    expect(b.stolenShare).toBeCloseTo(0.02, 10)
  })

  it("says per round what a request of the second measurement costs beyond the first, in µs of the server's CPU", () => {
    const measured = (requestsPerSecond: number, serverCores?: number) => ({
      requestsPerSecond,
      total: requestsPerSecond * 10,
      p50Ms: 1,
      p99Ms: 2,
      non2xx: 0,
      errors: 0,
      timeouts: 0,
      ...(serverCores === undefined ? {} : { serverCores })
    })
    // 50,000/s on one core is 20 µs a request; 40,000/s on one core 25 µs; 50,000/s on 0.9 cores 18 µs.
    const first = [measured(50_000, 1), measured(50_000, 1), measured(50_000, 1)]
    const second = [measured(40_000, 1), measured(50_000, 0.9), measured(50_000)]
    const extra = extraCpuMicros(second, first)
    expect(extra[0]).toBeCloseTo(5, 10)
    expect(extra[1]).toBeCloseTo(-2, 10)
    expect(extra[2]).toBeNaN()
  })
})
