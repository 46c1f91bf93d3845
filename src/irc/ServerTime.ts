// ServerTime: the times an upstream server states — the IRCv3 `time` tag (server-time) and the Unix times of
// RPL_TOPICWHOTIME and ban, exception and invite lists — read into Dates Belay can put on the wire. Every time Belay
// sends is an ISO-8601 UTC string (docs/contract.md; an RFC 3339 `date-time`), which Date#toISOString gives only for the
// years 0000 to 9999: a server's `time=+033658-01-01T00:00:00Z` or a topic set at 999999999999 would otherwise be
// stored and sent as `+033658-…`, which no client parses and the events' Schemas refuse. Such a time counts as absent
// (the line's receive time stands in for a `time` tag). Pure; no state.

/** The last second whose ISO-8601 form has a four-digit year. */
const LATEST_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999)
/** The first such second (year 0000); Date.UTC maps a year below 100 into the 1900s, hence setUTCFullYear. */
const EARLIEST_MS = new Date(0).setUTCFullYear(0, 0, 1)

const inRange = (ms: number): boolean => !Number.isNaN(ms) && ms >= EARLIEST_MS && ms <= LATEST_MS

/** IRCv3 server-time (`time=2024-01-01T00:00:00.000Z`): undefined when absent, unparsable or outside the years 0–9999. */
export const tagTime = (tag: string | undefined): Date | undefined => {
  if (tag === undefined) return undefined
  const ms = Date.parse(tag)
  return inRange(ms) ? new Date(ms) : undefined
}

/** A Unix time in seconds as servers state it (RPL_TOPICWHOTIME, list entries): null when absent, 0 or out of range. */
export const unixTime = (value: string | undefined): Date | null => {
  if (value === undefined || !/^[0-9]{1,12}$/.test(value)) return null
  const ms = Number(value) * 1000
  return ms === 0 || !inRange(ms) ? null : new Date(ms)
}
