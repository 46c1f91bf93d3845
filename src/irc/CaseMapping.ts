/**
 * CaseMapping: how a network compares nicks and channel names (ISUPPORT CASEMAPPING), and a map keyed by the
 * folded name. Pure functions and immutable values; a `CaseMappedMap` is a persistent value that the network
 * actor's dispatcher replaces, never shares for mutation.
 *
 * Mappings (modern.ircdocs.horse, "CASEMAPPING"; RFC 1459 §2.2):
 * - `ascii`: A-Z ↔ a-z only.
 * - `rfc1459`: ascii plus `[]\^` ↔ `{}|~` (the Scandinavian heritage of RFC 1459 §2.2). The default when the
 *   server says nothing, as in soju (`xirc/casemapping.go`) and irc-framework (`networkinfo.js`).
 * - `strict-rfc1459`: ascii plus `[]\` ↔ `{}|`; `^` and `~` stay distinct.
 * - `rfc7613`: Unicode-aware (PRECIS UsernameCaseMapped, RFC 8265 §3.4 which obsoletes RFC 7613), approximated
 *   by its three mapping steps: full-width → half-width, `toLowerCase` (for Unicode Default Case Folding), NFC.
 *   Servers may add more (confusable skeletons); an approximate fold only risks treating two names as distinct.
 */
import { HashMap, Option } from "effect"

export type CaseMapping = "ascii" | "rfc1459" | "strict-rfc1459" | "rfc7613"

export const DEFAULT_CASE_MAPPING: CaseMapping = "rfc1459"

/**
 * The mapping a CASEMAPPING value names. `rfc1459-strict` is the spelling soju and some servers use for
 * `strict-rfc1459`. An unknown value falls back to rfc1459, as soju does.
 */
export const parseCaseMapping = (value: string | undefined): CaseMapping => {
  switch (value?.toLowerCase()) {
    case "ascii":
      return "ascii"
    case "strict-rfc1459":
    case "rfc1459-strict":
      return "strict-rfc1459"
    case "rfc7613":
    case "rfc8265":
    case "precis":
      return "rfc7613"
    default:
      return "rfc1459"
  }
}

// Each mapping folds a contiguous range upwards by 0x20, from 'A' (0x41) to: 'Z' (0x5a) for ascii, ']' (0x5d)
// for strict-rfc1459 (adding `[\]` → `{|}`), '^' (0x5e) for rfc1459 (adding `^` → `~`). The lower-case side
// is canonical: a folded name contains `{|}~`, never `[\]^`.
const foldAscii = (s: string, upper: number): string => {
  let out = ""
  let start = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0x41 && c <= upper) {
      out += s.slice(start, i) + String.fromCharCode(c + 0x20)
      start = i + 1
    }
  }
  return start === 0 ? s : out + s.slice(start)
}

const foldPrecis = (s: string): string =>
  // Width mapping (RFC 8265 §3.4.4.1 rule 1) touches only the Halfwidth and Fullwidth Forms block.
  s
    .replace(/[\uff00-\uffef]/g, (c) => c.normalize("NFKC"))
    .toLowerCase()
    .normalize("NFC")

/** The canonical (folded) form of `s` under `mapping`: two names are equal exactly when their folds are. */
export const foldCase = (mapping: CaseMapping, s: string): string => {
  switch (mapping) {
    case "ascii":
      return foldAscii(s, 0x5a)
    case "strict-rfc1459":
      return foldAscii(s, 0x5d)
    case "rfc1459":
      return foldAscii(s, 0x5e)
    case "rfc7613":
      return foldPrecis(s)
  }
}

export const equalsFolded = (mapping: CaseMapping, a: string, b: string): boolean =>
  a === b || foldCase(mapping, a) === foldCase(mapping, b)

interface Entry<V> {
  readonly name: string
  readonly value: V
}

/** The empty CaseMappedMap of each casemapping (`CaseMappedMap.empty`). */
const emptyMaps = new Map<CaseMapping, CaseMappedMap<never>>()

/**
 * An immutable map from IRC names (nicks, channels) to values, keyed by the folded name and remembering the
 * casing it was last set with. Updates return a new map sharing structure with the old one (Effect `HashMap`),
 * so a channel with thousands of members costs O(log n) per JOIN/PART.
 */
export class CaseMappedMap<V> implements Iterable<readonly [string, V]> {
  private constructor(
    readonly mapping: CaseMapping,
    private readonly entries: HashMap.HashMap<string, Entry<V>>
  ) {}

  /** One instance per casemapping, shared (the map is immutable): every network starts several empty ones. */
  static empty<V>(mapping: CaseMapping): CaseMappedMap<V> {
    let empty = emptyMaps.get(mapping)
    if (empty === undefined) {
      empty = new CaseMappedMap<never>(mapping, HashMap.empty())
      emptyMaps.set(mapping, empty)
    }
    return empty
  }

  static fromEntries<V>(mapping: CaseMapping, entries: Iterable<readonly [string, V]>): CaseMappedMap<V> {
    let map = CaseMappedMap.empty<V>(mapping)
    for (const [name, value] of entries) map = map.set(name, value)
    return map
  }

  get size(): number {
    return HashMap.size(this.entries)
  }

  get(name: string): V | undefined {
    return Option.getOrUndefined(HashMap.get(this.entries, foldCase(this.mapping, name)))?.value
  }

  has(name: string): boolean {
    return HashMap.has(this.entries, foldCase(this.mapping, name))
  }

  /** The casing `name` was stored with, e.g. `#Belay` for a lookup of `#belay`. */
  originalName(name: string): string | undefined {
    return Option.getOrUndefined(HashMap.get(this.entries, foldCase(this.mapping, name)))?.name
  }

  /** Sets the value; the stored casing becomes `name`'s (a NICK change from `bob` to `Bob` shows up). */
  set(name: string, value: V): CaseMappedMap<V> {
    return new CaseMappedMap(this.mapping, HashMap.set(this.entries, foldCase(this.mapping, name), { name, value }))
  }

  /** Applies `f` to the value under `name`; unchanged when absent. Keeps the stored casing. */
  modify(name: string, f: (value: V) => V): CaseMappedMap<V> {
    const key = foldCase(this.mapping, name)
    return Option.match(HashMap.get(this.entries, key), {
      onNone: () => this,
      onSome: (entry) =>
        new CaseMappedMap(this.mapping, HashMap.set(this.entries, key, { name: entry.name, value: f(entry.value) }))
    })
  }

  remove(name: string): CaseMappedMap<V> {
    const key = foldCase(this.mapping, name)
    return HashMap.has(this.entries, key) ? new CaseMappedMap(this.mapping, HashMap.remove(this.entries, key)) : this
  }

  /** Moves the value under `from` to `to` (a NICK change); unchanged when `from` is absent. */
  rename(from: string, to: string): CaseMappedMap<V> {
    const entry = Option.getOrUndefined(HashMap.get(this.entries, foldCase(this.mapping, from)))
    return entry === undefined ? this : this.remove(from).set(to, entry.value)
  }

  /**
   * The same entries under another mapping (CASEMAPPING arrived or changed). When two names collide under the
   * new mapping, the one iterated last wins; servers never hold two such names at once.
   */
  withMapping(mapping: CaseMapping): CaseMappedMap<V> {
    return mapping === this.mapping ? this : CaseMappedMap.fromEntries(mapping, this)
  }

  /** Original names in no particular order. */
  *names(): IterableIterator<string> {
    for (const entry of HashMap.values(this.entries)) yield entry.name
  }

  *values(): IterableIterator<V> {
    for (const entry of HashMap.values(this.entries)) yield entry.value
  }

  /** `[originalName, value]` pairs in no particular order. */
  *[Symbol.iterator](): Iterator<readonly [string, V]> {
    for (const entry of HashMap.values(this.entries)) yield [entry.name, entry.value] as const
  }
}
