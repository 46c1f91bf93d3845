/**
 * ISupport: what the server advertised in RPL_ISUPPORT (005), as an immutable record, and the questions the
 * bouncer asks of it (is this a channel? does this mode letter take a parameter? is there a quiet list?).
 * Pure functions; `applyISupport` returns a new value, so the network actor's dispatcher owns the only copy.
 *
 * Token semantics and defaults follow modern.ircdocs.horse "RPL_ISUPPORT Parameters" (draft-brocklesby-irc-isupport
 * before it) unless a comment says otherwise. Tokens may arrive over several 005 lines; `-TOKEN` withdraws one
 * and puts its default back.
 */
import { type CaseMapping, DEFAULT_CASE_MAPPING, parseCaseMapping } from "./CaseMapping.js"

/** One membership prefix, e.g. `{mode: "o", symbol: "@"}`. */
export interface PrefixMode {
  readonly mode: string
  readonly symbol: string
}

/** CHANMODES' four comma-separated groups, each a string of mode letters. */
export interface ChanModes {
  /** Type A: list modes (`b`, `e`, `I`, `q` on some networks); a mask on + and on −, no param queries the list. */
  readonly a: string
  /** Type B: always take a param (`k`). */
  readonly b: string
  /** Type C: take a param only when set (`l`). */
  readonly c: string
  /** Type D: never take a param (`imnpst`…). */
  readonly d: string
}

export interface ISupport {
  /** Every token as last advertised (values with `\xHH` decoded; a bare token is `true`), for passthrough/logging. */
  readonly tokens: ReadonlyMap<string, string | true>
  /** CHANTYPES: the characters a channel name may start with. */
  readonly chanTypes: string
  /** PREFIX, highest rank first (`~&@%+`). */
  readonly prefix: ReadonlyArray<PrefixMode>
  readonly chanModes: ChanModes
  /** MODES: how many 'variable' modes one MODE command may carry; bare `MODES` means no limit. */
  readonly modes: number | "unlimited"
  readonly caseMapping: CaseMapping
  readonly nickLen: number | undefined
  readonly network: string | undefined
  /** STATUSMSG: prefixes that target only members of that rank (`@#chan`). */
  readonly statusMsg: string
  /** MONITOR: undefined when unsupported; a bare token means no limit. */
  readonly monitor: number | "unlimited" | undefined
  /** EXCEPTS: the ban-exception mode letter, if supported (bare token means `e`). */
  readonly excepts: string | undefined
  /** INVEX: the invite-exception mode letter, if supported (bare token means `I`). */
  readonly invex: string | undefined
}

// RFC 1459 §1.3: channels start with '&' or '#'.
const DEFAULT_CHANTYPES = "#&"
// ISUPPORT draft §3.14 and modern.ircdocs.horse: "PREFIX=(ov)@+" is assumed when the token is absent.
const DEFAULT_PREFIX: ReadonlyArray<PrefixMode> = [
  { mode: "o", symbol: "@" },
  { mode: "v", symbol: "+" }
]
// The channel modes of RFC 1459 §4.2.3.1 (o and v are the prefixes above). Every current server sends CHANMODES,
// so this only matters before 005 arrives.
const DEFAULT_CHANMODES: ChanModes = { a: "b", b: "k", c: "l", d: "imnpst" }
// RFC 1459 §4.2.3 and RFC 2812 §3.2.3: "a maximum limit of three (3) changes per command for modes that take a
// parameter". soju and irc-framework have no default of their own (they pass MODES through or send one line);
// WeeChat assumes 4. We take the RFC's 3.
const DEFAULT_MODES = 3

export const defaultISupport: ISupport = {
  tokens: new Map(),
  chanTypes: DEFAULT_CHANTYPES,
  prefix: DEFAULT_PREFIX,
  chanModes: DEFAULT_CHANMODES,
  modes: DEFAULT_MODES,
  caseMapping: DEFAULT_CASE_MAPPING,
  nickLen: undefined,
  network: undefined,
  statusMsg: "",
  monitor: undefined,
  excepts: undefined,
  invex: undefined
}

// modern.ircdocs.horse: token names are upper-case letters and digits; values escape bytes as `\xHH`.
const TOKEN = /^(-?)([A-Z0-9]+)(?:=(.*))?$/
const unescapeValue = (value: string): string =>
  value.replace(/\\x([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))

/**
 * A copy of `s` that shares no memory with the line it was cut from. V8 makes a substring of 13 characters or more a
 * view of its parent, so one kept token (`CHANMODES=beI,k,l,imnpst`) keeps the whole 005 line, up to 512 bytes, for
 * as long as the network is connected; a network sends several (bench/results/memory-breakdown.md, "What each idle
 * network holds"). Shorter ones are copied already. Paid once per token per connection.
 */
const own = (s: string): string => (s.length < 13 ? s : JSON.parse(JSON.stringify(s)) as string)

const positiveInt = (value: string): number | undefined => {
  if (!/^[0-9]+$/.test(value)) return undefined
  const n = Number(value)
  return n > 0 && Number.isSafeInteger(n) ? n : undefined
}

const parsePrefixToken = (value: string): ReadonlyArray<PrefixMode> | undefined => {
  // `PREFIX=` (empty) means the network has no membership prefixes.
  if (value === "") return []
  const m = /^\(([^)]*)\)(.*)$/.exec(value)
  if (m === null) return undefined
  const modes = [...(m[1] ?? "")]
  const symbols = [...(m[2] ?? "")]
  if (modes.length !== symbols.length) return undefined
  return modes.map((mode, i) => ({ mode, symbol: symbols[i] ?? "" }))
}

const parseChanModes = (value: string): ChanModes => {
  // Groups beyond the fourth are reserved for future types and must be ignored; missing ones are empty.
  const [a = "", b = "", c = "", d = ""] = value.split(",")
  return { a, b, c, d }
}

type Fields = Omit<ISupport, "tokens">

/** The parsed effect of one token, or of its withdrawal when `value` is undefined. */
const applyToken = (fields: Fields, name: string, value: string | true | undefined): Fields => {
  const str = typeof value === "string" ? value : undefined
  switch (name) {
    case "CHANTYPES":
      // A bare or empty CHANTYPES means the server has no channels at all.
      return { ...fields, chanTypes: value === undefined ? DEFAULT_CHANTYPES : (str ?? "") }
    case "PREFIX":
      return { ...fields, prefix: value === undefined ? DEFAULT_PREFIX : (parsePrefixToken(str ?? "") ?? fields.prefix) }
    case "CHANMODES":
      return { ...fields, chanModes: str === undefined ? DEFAULT_CHANMODES : parseChanModes(str) }
    case "MODES":
      if (value === undefined) return { ...fields, modes: DEFAULT_MODES }
      if (value === true || value === "") return { ...fields, modes: "unlimited" }
      return { ...fields, modes: positiveInt(value) ?? fields.modes }
    case "CASEMAPPING":
      return { ...fields, caseMapping: str === undefined ? DEFAULT_CASE_MAPPING : parseCaseMapping(str) }
    case "NICKLEN":
      return { ...fields, nickLen: str === undefined ? undefined : (positiveInt(str) ?? fields.nickLen) }
    case "NETWORK":
      return { ...fields, network: str === undefined || str === "" ? undefined : str }
    case "STATUSMSG":
      return { ...fields, statusMsg: str ?? "" }
    case "MONITOR":
      if (value === undefined) return { ...fields, monitor: undefined }
      if (value === true || value === "") return { ...fields, monitor: "unlimited" }
      return { ...fields, monitor: positiveInt(value) ?? fields.monitor }
    case "EXCEPTS":
      return { ...fields, excepts: value === undefined ? undefined : str || "e" }
    case "INVEX":
      return { ...fields, invex: value === undefined ? undefined : str || "I" }
    default:
      return fields
  }
}

/**
 * Applies the parameters of one RPL_ISUPPORT line. `params` is the line's params as received: the client's nick
 * first and the human-readable "are supported by this server" last; anything that is not token-shaped (the nick
 * never is once it is the first param, the text has spaces) is skipped, so callers may pass `line.params` as is.
 */
export const applyISupport = (current: ISupport, params: ReadonlyArray<string>): ISupport => {
  const tokens = new Map(current.tokens)
  const { tokens: _previous, ...initial } = current
  let fields: Fields = initial
  for (const param of params.slice(1)) {
    const m = TOKEN.exec(param)
    if (m === null) continue
    const [, minus, longName = "", rawValue] = m
    const name = own(longName)
    if (minus === "-") {
      tokens.delete(name)
      fields = applyToken(fields, name, undefined)
    } else {
      const value = rawValue === undefined ? true : own(unescapeValue(rawValue))
      tokens.set(name, value)
      fields = applyToken(fields, name, value)
    }
  }
  return { tokens, ...fields }
}

/** True when `target` names a channel (starts with a CHANTYPES character). `@#chan` is not: see `splitStatusMsg`. */
export const isChannel = (isupport: ISupport, target: string): boolean =>
  target.length > 0 && isupport.chanTypes.includes(target.charAt(0))

/**
 * Splits a STATUSMSG target (`@#chan` → `{status: "@", channel: "#chan"}`); undefined when `target` is not one.
 */
export const splitStatusMsg = (
  isupport: ISupport,
  target: string
): { readonly status: string; readonly channel: string } | undefined => {
  let i = 0
  while (i < target.length && isupport.statusMsg.includes(target.charAt(i))) i++
  return i > 0 && isChannel(isupport, target.slice(i)) ? { status: target.slice(0, i), channel: target.slice(i) } : undefined
}

/**
 * How a channel mode letter takes its parameter:
 * - `list`: type A, a mask on + and −; without one it queries the list.
 * - `prefix`: a PREFIX mode (o, v…), a nick on + and −.
 * - `always-param`: type B (k).
 * - `set-param`: type C (l), a param on + only.
 * - `no-param`: type D.
 */
export type ModeKind = "list" | "prefix" | "always-param" | "set-param" | "no-param"

/**
 * The kind of `letter` on this network, or undefined when the network does not advertise it. Prefix modes are
 * checked first: a letter both in PREFIX and in CHANMODES (never seen, not forbidden) behaves as a prefix.
 */
export const modeKind = (isupport: ISupport, letter: string): ModeKind | undefined => {
  if (letter.length !== 1) return undefined
  if (isupport.prefix.some((p) => p.mode === letter)) return "prefix"
  const { a, b, c, d } = isupport.chanModes
  if (a.includes(letter)) return "list"
  if (b.includes(letter)) return "always-param"
  if (c.includes(letter)) return "set-param"
  if (d.includes(letter)) return "no-param"
  return undefined
}

/** True when `+q` is a quiet list here (type A `q`, as on Solanum/Libera), not an owner prefix (InspIRCd, ngircd). */
export const hasQuietList = (isupport: ISupport): boolean => isupport.chanModes.a.includes("q")

/** Orders prefix mode letters highest rank first and drops letters that are not prefixes (`["v","o"]` → `["o","v"]`). */
export const rankPrefixModes = (isupport: ISupport, letters: Iterable<string>): ReadonlyArray<string> => {
  const set = new Set(letters)
  return isupport.prefix.filter((p) => set.has(p.mode)).map((p) => p.mode)
}

/** The symbols for prefix mode letters, highest first (`["v","o"]` → `"@+"`); `""` for none. */
export const prefixSymbols = (isupport: ISupport, letters: Iterable<string>): string => {
  const set = new Set(letters)
  return isupport.prefix
    .filter((p) => set.has(p.mode))
    .map((p) => p.symbol)
    .join("")
}

/**
 * Splits one RPL_NAMREPLY (353) entry into its prefix mode letters and the rest. With multi-prefix an entry may
 * carry several symbols (`@+nick`); with userhost-in-names the rest is `nick!user@host` (parse it with
 * `parsePrefix`).
 */
export const splitNamesEntry = (
  isupport: ISupport,
  entry: string
): { readonly modes: ReadonlyArray<string>; readonly rest: string } => {
  const modes: Array<string> = []
  let i = 0
  for (; i < entry.length; i++) {
    const symbol = entry.charAt(i)
    const prefix = isupport.prefix.find((p) => p.symbol === symbol)
    if (prefix === undefined) break
    modes.push(prefix.mode)
  }
  return { modes: rankPrefixModes(isupport, modes), rest: entry.slice(i) }
}

/** One token in wire form, as a server sends it in RPL_ISUPPORT: `KEY`, or `KEY=value` with space, `\\` and `=` escaped `\xHH`. */
export const formatISupportToken = (key: string, value: string | true): string =>
  value === true
    ? key
    : `${key}=${value.replace(/[\\ =\x00-\x1f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`)}`
