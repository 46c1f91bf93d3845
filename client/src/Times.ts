// Times: how the log writes a message's time and a day's heading, each with one Intl.DateTimeFormat made once.
// `toLocaleTimeString` and `toLocaleDateString` with options make a new formatter at every call (V8 keeps only the
// option-less one): 0.1–0.4 ms each, per line of the log. And the first formatter a page makes loads the locale's data
// (tens of milliseconds): `prepareTimes` makes both while the socket opens, so the first draw does not wait for it.
// Pure but for the formatters it keeps.

let clockFormat: Intl.DateTimeFormat | undefined
let dayFormat: Intl.DateTimeFormat | undefined

/** A message's time of day, as the member's locale writes hours and minutes. */
export const clockOf = (time: string): string =>
  (clockFormat ??= new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" })).format(new Date(time))

/** The heading of a day in the log: weekday, day, month and year. */
export const dayLabelOf = (time: string): string =>
  (dayFormat ??= new Intl.DateTimeFormat(undefined, { weekday: "long", year: "numeric", month: "long", day: "numeric" }))
    .format(new Date(time))

export const prepareTimes = (): void => {
  const now = new Date().toISOString()
  clockOf(now)
  dayLabelOf(now)
}
