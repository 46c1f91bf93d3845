/**
 * TextSplit: cuts message text into pieces that each fit one PRIVMSG/NOTICE line *as the server relays it*,
 * and builds those lines (send_message, send_action, send_notice). Pure functions; safe to call from any fiber.
 *
 * RFC 1459 §2.3.1: a line is at most 512 bytes with its CR-LF. We send `PRIVMSG <target> :<text>`, but every
 * recipient gets `:<nick>!<user>@<host> PRIVMSG <target> :<text>`; a server truncates what does not fit, so the
 * relayed prefix must be budgeted too (message tags have their own budget, message-tags §Size, and don't count).
 * soju relays client lines unsplit and irc-framework cuts text at a flat 350 bytes whatever the target;
 * we compute the budget from the target and the prefix instead.
 *
 * Cuts fall between grapheme clusters (`Intl.Segmenter`), so a code point, a surrogate pair, a combining accent or
 * a ZWJ emoji sequence is never split, unless one cluster alone exceeds the budget, when it is cut between code
 * points. A cut prefers the last space within the word window; that space is dropped, as IRC clients do.
 */
import { ctcpOverhead, encodeAction } from "./Ctcp.js"
import { formatLine, type IrcSource, MAX_LINE_BYTES, utf8ByteLength } from "./IrcLine.js"

// Upper bounds for the parts of `:nick!user@host ` we may not know yet. NICKLEN is 30-32 on most networks
// (InspIRCd, UnrealIRCd, OFTC; Libera 16); USERLEN is 10 on Solanum and InspIRCd, plus the `~` of an unverified
// ident; HOSTLEN is 63 on Solanum and 64 on InspIRCd. Hosts longer than that are cloaked or truncated by servers.
const ASSUMED_NICK_BYTES = 32
const ASSUMED_USER_BYTES = 11
const ASSUMED_HOST_BYTES = 64

/** Bytes of `:nick!user@host ` as relayed, for the parts of our own source that are known; worst case for others. */
export const prefixAllowance = (source: Partial<IrcSource> = {}): number =>
  1 +
  (source.nick !== undefined ? utf8ByteLength(source.nick) : ASSUMED_NICK_BYTES) +
  1 +
  (source.user !== undefined ? utf8ByteLength(source.user) : ASSUMED_USER_BYTES) +
  1 +
  (source.host !== undefined ? utf8ByteLength(source.host) : ASSUMED_HOST_BYTES) +
  1

/** 111 bytes: the allowance when nothing about our own source is known. */
export const DEFAULT_PREFIX_ALLOWANCE = prefixAllowance()

// The smallest budget that still fits any code point; only reached with absurd targets or allowances.
const MIN_BUDGET = 4

export interface SplitOptions {
  /** Defaults to PRIVMSG. */
  readonly command?: "PRIVMSG" | "NOTICE"
  /** A CTCP command each chunk will be wrapped in (`ACTION`), whose framing is budgeted. */
  readonly ctcp?: string
  /** Bytes reserved for the relayed `:nick!user@host `; see `prefixAllowance`. */
  readonly prefixAllowance?: number
  readonly maxLineBytes?: number
  /** How far back from a hard cut (bytes) a space may be to cut there instead; default a third of the budget. */
  readonly wordWindow?: number
}

/** Bytes of text one line may carry for `target` (at least 4, so every code point fits). */
export const textBudget = (target: string, options: SplitOptions = {}): number => {
  const command = options.command ?? "PRIVMSG"
  const budget =
    (options.maxLineBytes ?? MAX_LINE_BYTES) -
    2 - // CR-LF
    (options.prefixAllowance ?? DEFAULT_PREFIX_ALLOWANCE) -
    utf8ByteLength(`${command} ${target} :`) -
    (options.ctcp !== undefined ? ctcpOverhead(options.ctcp) : 0)
  return Math.max(MIN_BUDGET, budget)
}

interface Piece {
  readonly text: string
  readonly bytes: number
}

// Made at the first split, not when the module loads: a segmenter loads ICU's break rules (2.5 MB in a bare Node
// process; bench/results/memory-breakdown.md "Idle on Node 24"), which a Belay that sends nothing never needs.
let graphemes: Intl.Segmenter | undefined

// The text as indivisible pieces: grapheme clusters, or the code points of a cluster too big for one line.
const toPieces = (text: string, budget: number): Array<Piece> => {
  const pieces: Array<Piece> = []
  graphemes ??= new Intl.Segmenter(undefined, { granularity: "grapheme" })
  for (const { segment } of graphemes.segment(text)) {
    const bytes = utf8ByteLength(segment)
    if (bytes <= budget) pieces.push({ text: segment, bytes })
    else for (const codePoint of segment) pieces.push({ text: codePoint, bytes: utf8ByteLength(codePoint) })
  }
  return pieces
}

/**
 * Splits `text` into chunks that each fit one line to `target`. Always at least one chunk (`[""]` for empty
 * text, which the server answers with 412 ERR_NOTEXTTOSEND for PRIVMSG). `text` must hold no CR, LF or NUL:
 * callers refuse those first (`Safety.hasLineBreakingChars`).
 */
export const splitText = (target: string, text: string, options: SplitOptions = {}): ReadonlyArray<string> => {
  const budget = textBudget(target, options)
  const window = options.wordWindow ?? Math.floor(budget / 3)
  const pieces = toPieces(text, budget)
  const join = (from: number, to: number) =>
    pieces
      .slice(from, to)
      .map((p) => p.text)
      .join("")

  const chunks: Array<string> = []
  let i = 0
  while (i < pieces.length) {
    const start = i
    let used = 0
    let lastSpace = -1
    let usedThroughSpace = 0
    for (let piece = pieces[i]; piece !== undefined && used + piece.bytes <= budget; piece = pieces[++i]) {
      used += piece.bytes
      if (piece.text === " ") {
        lastSpace = i
        usedThroughSpace = used
      }
    }
    if (i === pieces.length) {
      chunks.push(join(start, i))
    } else if (pieces[i]?.text === " ") {
      // The cut lands exactly on a space: the best place there is.
      chunks.push(join(start, i))
      i++
    } else if (lastSpace > start && used - usedThroughSpace <= window) {
      chunks.push(join(start, lastSpace))
      i = lastSpace + 1
    } else {
      chunks.push(join(start, i))
    }
  }
  return chunks.length === 0 ? [""] : chunks
}

export type MessageKind = "privmsg" | "notice" | "action"

/**
 * The complete lines (without CR-LF) that send `text` to `target`: PRIVMSG, NOTICE, or PRIVMSG wrapping each
 * chunk in `\x01ACTION …\x01`. `target` must be a valid middle param and `text` free of CR/LF/NUL (checked by
 * the caller; `formatLine` throws otherwise).
 */
export const messageLines = (
  kind: MessageKind,
  target: string,
  text: string,
  options: Omit<SplitOptions, "command" | "ctcp"> = {}
): ReadonlyArray<string> => {
  const command = kind === "notice" ? "NOTICE" : "PRIVMSG"
  const chunks = splitText(target, text, { ...options, command, ...(kind === "action" ? { ctcp: "ACTION" } : {}) })
  return chunks.map((chunk) =>
    formatLine({ command, params: [target, kind === "action" ? encodeAction(chunk) : chunk] })
  )
}
