// Keyboard: the page's shortcuts between buffers, as chat clients have them — Alt+1…9 opens the sidebar's first nine
// buffers, Alt+↑/↓ the one above or below the open one, Ctrl+K (⌘K on a Mac) the switcher (components/Switcher.tsx),
// which finds any buffer by name. This module is the pure part: which key press asks for what, the ring Alt+↑/↓
// walks, and the switcher's matching and order. Switcher.tsx listens for the keys and counts the buffers in the order
// the sidebar draws them (its links); docs/decisions/web.md "Keyboard: the sidebar's order, a switcher that is a
// combobox". Pure.
import { fold } from "./Casemap.js"

export type KeyAction =
  | { readonly kind: "nth"; readonly index: number }
  | { readonly kind: "step"; readonly delta: 1 | -1 }
  | { readonly kind: "switcher" }

export interface KeyLike {
  readonly key: string
  readonly code: string
  readonly altKey: boolean
  readonly ctrlKey: boolean
  readonly metaKey: boolean
  readonly shiftKey: boolean
}

/** What a key press asks for, or null. By `code` for the digits: on a Mac, Option+1 types "¡". */
export const keyAction = (e: KeyLike): KeyAction | null => {
  if (e.altKey && !e.ctrlKey && !e.metaKey && !e.shiftKey) {
    const digit = /^Digit([1-9])$/.exec(e.code)
    if (digit !== null) return { kind: "nth", index: Number(digit[1]) - 1 }
    if (e.key === "ArrowUp") return { kind: "step", delta: -1 }
    if (e.key === "ArrowDown") return { kind: "step", delta: 1 }
    return null
  }
  if ((e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && (e.key === "k" || e.key === "K")) return { kind: "switcher" }
  return null
}

/** The index `delta` away from `current` in a ring of `count`; from none (-1), the first or the last. */
export const stepIndex = (current: number, count: number, delta: 1 | -1): number => {
  if (count === 0) return -1
  if (current < 0) return delta > 0 ? 0 : count - 1
  return (current + delta + count) % count
}

export interface SwitchItem {
  readonly key: string
  readonly networkId: number
  readonly target: string
  /** What the member sees: the target, or the network's name for its server buffer. */
  readonly label: string
  readonly network: string
  readonly unread: number
  readonly highlights: number
}

/** A channel's name without its prefix ("#belay" → "belay"), so "bel" finds "#belay" as a prefix. */
const bare = (s: string) => s.replace(/^[#&!+]+/, "")

/**
 * How well `query` names `label`, higher is better, null when it does not: a prefix (of the name or of the name
 * without its channel prefix) beats a word inside it, which beats the query's letters in order with gaps (fuzzy).
 * Case is folded as IRC folds it.
 */
export const matchScore = (query: string, label: string): number | null => {
  const q = fold(query.trim())
  if (q === "") return 0
  const l = fold(label)
  if (l.startsWith(q) || (bare(q) !== "" && bare(l).startsWith(bare(q)))) return 3000 - l.length
  const at = l.indexOf(q)
  if (at >= 0) return 2000 - at * 10 - l.length
  // Fuzzy: every letter of the query in order; fewer and shorter gaps score higher.
  let from = 0
  let gaps = 0
  for (const c of q) {
    const i = l.indexOf(c, from)
    if (i < 0) return null
    if (i > from) gaps += i - from + 1
    from = i + 1
  }
  return 1000 - gaps * 10 - l.length
}

/** The items `query` names, best first; ties: highlights, then unread, then by name. At most `limit`. */
export const rankItems = (query: string, items: ReadonlyArray<SwitchItem>, limit = 50): ReadonlyArray<SwitchItem> => {
  const scored: Array<{ readonly item: SwitchItem; readonly score: number }> = []
  for (const item of items) {
    const score = Math.max(matchScore(query, item.label) ?? -Infinity, (matchScore(query, `${item.network} ${item.label}`) ?? -Infinity) - 500)
    if (score !== -Infinity) scored.push({ item, score })
  }
  scored.sort((a, b) =>
    b.score - a.score || b.item.highlights - a.item.highlights || b.item.unread - a.item.unread ||
    a.item.label.localeCompare(b.item.label)
  )
  return scored.slice(0, limit).map((s) => s.item)
}
