/**
 * TokenBucket: the pace of one connection's outgoing lines (client-side flood control, RFC 1459 §8.10), as a pure
 * value: GCRA's one number, the theoretical arrival time (ConnectThrottle.ts keeps the same number for connects).
 * `burst` lines may go at once after a quiet moment, then one every `intervalMs`; so in any window of length L at
 * most burst + ⌊L ÷ interval⌋ lines go (FLOOD_BURST and FLOOD_INTERVAL in ReconnectPolicy.ts: 5, then one every
 * 2 s, so never more than 5 in any one second).
 *
 * Concurrency rule: immutable values and pure functions of (rate, bucket, now). Nothing here reads a clock: the
 * actor passes the time it read from Effect's Clock, so tests step it with TestClock, or with plain numbers.
 */

export interface TokenBucketRate {
  /** Lines that may go at once after a quiet moment. */
  readonly burst: number
  /** Milliseconds between two lines once the burst is spent. */
  readonly intervalMs: number
}

export interface TokenBucket {
  /** GCRA's theoretical arrival time (epoch ms): when the bucket would be full again were nothing sent meanwhile. */
  readonly arrival: number
}

/** A new connection's bucket: full. */
export const full: TokenBucket = { arrival: Number.NEGATIVE_INFINITY }

/** How many lines may go at `now`, from 0 to `burst`. */
export const available = (rate: TokenBucketRate, bucket: TokenBucket, now: number): number => {
  // A line may go while the arrival time is at most (burst − 1) intervals ahead; each line moves it one interval.
  const ahead = Math.ceil((bucket.arrival - now) / rate.intervalMs)
  return Math.max(0, Math.min(rate.burst, rate.burst - ahead))
}

/** When the next line may go: `now` when a token is there, else the moment the bucket holds one again. */
export const nextAt = (rate: TokenBucketRate, bucket: TokenBucket, now: number): number =>
  Math.max(now, bucket.arrival - (rate.burst - 1) * rate.intervalMs)

/**
 * The bucket after one line sent at `now`. Taking without a token is allowed, for the few lines that may not wait
 * (keepalive PING, a nick while registering): the bucket goes into debt, so the lines after them wait that much
 * longer and the rate the server sees stays the same.
 */
export const take = (rate: TokenBucketRate, bucket: TokenBucket, now: number): TokenBucket => ({
  arrival: Math.max(bucket.arrival, now) + rate.intervalMs
})
