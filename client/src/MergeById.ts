// MergeById: a buffer's lines as one list sorted by id, whatever order pages of history and live frames arrive in,
// each id once (so a page that overlaps live lines never shows a line twice). Pure.

/** Merges `more` into `sorted` (both sorted by id): one entry per id. */
export const mergeById = <M extends { readonly id: number }>(sorted: ReadonlyArray<M>, more: ReadonlyArray<M>): ReadonlyArray<M> => {
  if (more.length === 0) return sorted
  const last = sorted[sorted.length - 1]
  if (last === undefined) return [...more].sort((a, b) => a.id - b.id)
  if (more.length === 1 && more[0]!.id > last.id) return [...sorted, more[0]!]
  const byId = new Map<number, M>()
  for (const m of sorted) byId.set(m.id, m)
  for (const m of more) byId.set(m.id, m)
  return [...byId.values()].sort((a, b) => a.id - b.id)
}
