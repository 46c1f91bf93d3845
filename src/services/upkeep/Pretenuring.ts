/**
 * Pretenuring: `belay serve` turns off V8's allocation-site pretenuring before it starts (docs/architecture.md
 * "Memory").
 *
 * V8 counts, per allocation site, how many of its objects survive their scavenges, and past a threshold allocates that
 * site's objects straight in the old generation. A boot of thousands of networks makes the sites of every Effect
 * fiber's own objects (the fiber, its stack and queues, made by the same few lines of Effect for an actor that lives
 * as long as the process and for a request that ends in microseconds) look long-lived, and the decision held under
 * load afterwards. Each request's fiber was then born in the old generation, kept the young objects it pointed to
 * alive through every scavenge until the next full collection, and filled the old generation by megabytes a second:
 * at 10,000 networks a full collection every few seconds, each marking some 250 MB, and more pages for every scavenge
 * to walk, so a call answered from memory (tools/list) slowed with the number of networks
 * (bench/results/memory-breakdown.md "Request garbage in the old generation"). Without it, objects that do live long
 * reach the old generation as before V8 decided, copied by two scavenges.
 *
 * V8 reads the flag at every collection and every allocation decision, so setting it from JavaScript at start-up
 * holds for the process (as HeapTrim's flags do). Node 24's V8 makes the same decision in the test's workload
 * (test/services/upkeep/Pretenuring.test.ts).
 *
 * Concurrency rule: call once, before the layers start; it touches only V8's flags.
 */
import * as V8 from "node:v8"

const PRETENURING_FLAG = "--no-allocation-site-pretenuring"

/** Turns allocation-site pretenuring off for the rest of the process. */
export const disablePretenuring = (): void => V8.setFlagsFromString(PRETENURING_FLAG)
