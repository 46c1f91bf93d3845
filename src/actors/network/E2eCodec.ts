/**
 * E2eCodec: what end-to-end encryption (FiSH) does to the messages of one network — which key a target
 * uses, the encrypted lines send_message/send_action/send_notice write, how an inbound `+OK` line is opened before it
 * is stored, and which targets of a raw line send_raw must refuse. Pure functions over an immutable key table; the
 * network actor's dispatcher and the supervisor call them. No I/O beyond the CSPRNG that Fish.ts draws CBC IVs from.
 *
 * Key identity: E2eKeys stores a key under its target folded with rfc1459 (the database does not know the network's
 * CASEMAPPING), while the server compares names with its own CASEMAPPING. A target matches a key when the two are
 * equal under *either* mapping, so a key is never missed because of folding (a miss would send plaintext): the table
 * compares `rfc1459(networkFold(name))`, a fold at least as coarse as both (RFC 1459 §2.2; ascii and strict-rfc1459
 * fold a subset of rfc1459's characters, and rfc7613's Unicode lowering leaves `[]\^` alone for rfc1459 to fold).
 * On an ascii network `#a[` and `#a{` therefore share a key: over-encrypting is the safe side.
 *
 * Wire forms (interop with HexChat's FiSHLiM, WeeChat's fish.py and FiSH-irssi):
 * - PRIVMSG/NOTICE: `<command> <target> :+OK <ciphertext>` (Fish.ts for the two ciphertext encodings).
 * - ACTION: `PRIVMSG <target> :\x01ACTION +OK <ciphertext>\x01`, the CTCP framing outside the ciphertext, as
 *   FiSHLiM's /me does (hexchat/hexchat plugins/fishlim/plugin_hexchat.c handle_crypt_me) and FiSH 10 reads it.
 * - The key of a channel message is the channel's (a STATUSMSG `@#chan` uses `#chan`'s); of a private message, the
 *   other party's nick: the sender's, or the recipient's for our own echoed message (FiSHLiM, fish.py: one key per
 *   channel or per nick).
 */
import type { E2eKeyChange, E2eKeyEntry } from "../../services/networks/E2eKeys.js"
import type { Encryption, NewMessage } from "../../services/history/MessageRow.js"
import {
  CTCP_ACTION_OVERHEAD_BYTES,
  type FishKey,
  fishDecrypt,
  fishEncrypt,
  isFishPayload,
  splitForFish
} from "../../services/crypto/Fish.js"
import { channelOfTarget } from "./History.js"
import { type CaseMapping, equalsFolded, foldCase } from "../../irc/CaseMapping.js"
import { decodeCtcp, encodeAction } from "../../irc/Ctcp.js"
import { formatLine, type IrcLine, MAX_LINE_BYTES } from "../../irc/IrcLine.js"
import type { ISupport } from "../../irc/ISupport.js"
import { messageTargetsOfRawLine } from "../../irc/RawGuard.js"
import type { SayKind } from "../NetworkApi.js"

const tableFold = (mapping: CaseMapping, name: string): string => foldCase("rfc1459", foldCase(mapping, name))

/**
 * The keys of one network. Immutable: updates return a new table. Entries are kept under their rfc1459 fold (the
 * store's identity, so a set or clear replaces exactly what the store replaced); lookups go through an index per
 * CASEMAPPING, built on first use and cached (the mapping changes only when ISUPPORT does).
 */
export class E2eKeyTable {
  private index: { readonly mapping: CaseMapping; readonly byFold: ReadonlyMap<string, FishKey> } | undefined

  private constructor(private readonly entries: ReadonlyMap<string, E2eKeyEntry>) {}

  static readonly empty: E2eKeyTable = new E2eKeyTable(new Map())

  /**
   * The keys read at an actor's start; with none (nearly every network), the shared `empty`, so an idle network holds
   * no table of its own (docs/architecture.md "Memory").
   */
  static fromEntries(entries: Iterable<E2eKeyEntry>): E2eKeyTable {
    const map = new Map<string, E2eKeyEntry>()
    for (const entry of entries) map.set(foldCase("rfc1459", entry.target), entry)
    return map.size === 0 ? E2eKeyTable.empty : new E2eKeyTable(map)
  }

  get size(): number {
    return this.entries.size
  }

  /** The table after a change from E2eKeys. */
  apply(change: E2eKeyChange): E2eKeyTable {
    const map = new Map(this.entries)
    const folded = foldCase("rfc1459", change.target)
    if (change.key === undefined) map.delete(folded)
    else map.set(folded, { target: change.target, key: change.key })
    return new E2eKeyTable(map)
  }

  /** The key of exactly this name (a channel or a nick), compared as described in the module comment. */
  get(mapping: CaseMapping, name: string): FishKey | undefined {
    if (this.entries.size === 0) return undefined
    if (this.index === undefined || this.index.mapping !== mapping) {
      const byFold = new Map<string, FishKey>()
      for (const entry of this.entries.values()) byFold.set(tableFold(mapping, entry.target), entry.key)
      this.index = { mapping, byFold }
    }
    return this.index.byFold.get(tableFold(mapping, name))
  }

  has(mapping: CaseMapping, name: string): boolean {
    return this.get(mapping, name) !== undefined
  }
}

/** The key a message to `target` is sent with: the channel's (behind a STATUSMSG prefix too), else the nick's. */
export const keyForTarget = (table: E2eKeyTable, isupport: ISupport, target: string): FishKey | undefined =>
  table.get(isupport.caseMapping, channelOfTarget(isupport, target) ?? target)

// ---------------------------------------------------------------------------------------------------------------
// Sending.

/** One line to write and the same message as plaintext, which is what history stores. */
export interface SealedLine {
  /** The encrypted line for the server. */
  readonly wire: string
  /** The same line with the plaintext piece, for the local copy (History.ownMessages). */
  readonly plain: string
}

export interface SealOptions {
  readonly kind: SayKind
  readonly target: string
  readonly text: string
  /** Bytes of the relayed `:nick!user@host ` (TextSplit.prefixAllowance). */
  readonly prefixAllowance: number
  readonly maxLineBytes?: number
  /** CBC IV source; tests pass a fixed one. */
  readonly randomIv?: () => Uint8Array
}

/**
 * The encrypted lines for a message: the text split so that every encrypted line, as the server relays it, fits
 * the IRC line limit (Fish.splitForFish; an ACTION also budgets its CTCP framing). Left with a reason when the
 * target is so long that nothing fits (the caller answers InvalidArguments). `text` must be non-empty and free of
 * CR, LF and NUL (the caller has refused those).
 */
export const sealMessage = (key: FishKey, options: SealOptions): { readonly ok: true; readonly lines: ReadonlyArray<SealedLine> } | { readonly ok: false; readonly reason: string } => {
  const { kind, target, text } = options
  const command = kind === "notice" ? "NOTICE" : "PRIVMSG"
  const allowance = options.prefixAllowance + (kind === "action" ? CTCP_ACTION_OVERHEAD_BYTES : 0)
  let pieces: ReadonlyArray<string>
  try {
    // The budget counts `PRIVMSG`, one byte longer than `NOTICE`: a notice piece is never too long.
    pieces = splitForFish(text, target, options.maxLineBytes ?? MAX_LINE_BYTES, allowance, key.mode)
  } catch (e) {
    return { ok: false, reason: e instanceof RangeError ? e.message : String(e) }
  }
  const frame = (payload: string) => (kind === "action" ? encodeAction(payload) : payload)
  return {
    ok: true,
    lines: pieces.map((piece) => ({
      wire: formatLine({ command, params: [target, frame(fishEncrypt(key, piece, options.randomIv))] }),
      plain: formatLine({ command, params: [target, frame(piece)] })
    }))
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Receiving.

/** An inbound line as it should be stored: decrypted when it could be, and how it travelled. */
export interface OpenedLine {
  readonly line: IrcLine
  readonly encryption: Encryption
}

/**
 * The key an inbound PRIVMSG/NOTICE was encrypted with: the channel's when sent to a channel (STATUSMSG too), else
 * the other party's — the sender, or the recipient when we sent it (echo-message).
 */
const keyForInbound = (table: E2eKeyTable, isupport: ISupport, selfNick: string, line: IrcLine): FishKey | undefined => {
  const target = line.params[0] ?? ""
  const channel = channelOfTarget(isupport, target)
  if (channel !== undefined) return table.get(isupport.caseMapping, channel)
  const sender = line.source?.nick
  if (sender === undefined) return undefined
  return table.get(isupport.caseMapping, equalsFolded(isupport.caseMapping, sender, selfNick) ? target : sender)
}

/**
 * Opens a FiSH PRIVMSG/NOTICE (`+OK …`, `mcps …`, or either inside a CTCP ACTION) from a conversation that has a key.
 * Decrypted: the line with the plaintext in place of the ciphertext (the ACTION framing kept), `decrypted`. Not
 * decryptable with the key (wrong key, garbled): the line unchanged, `undecryptable`. Undefined for everything else —
 * other commands, plaintext, and ciphertext from a conversation without a key — which is stored as it came, `plain`.
 */
export const openInbound = (
  table: E2eKeyTable,
  isupport: ISupport,
  selfNick: string,
  line: IrcLine
): OpenedLine | undefined => {
  if ((line.command !== "PRIVMSG" && line.command !== "NOTICE") || line.params.length < 2 || table.size === 0) {
    return undefined
  }
  const text = line.params[1] ?? ""
  const ctcp = decodeCtcp(text)
  const action = ctcp?.command === "ACTION" && line.command === "PRIVMSG"
  const payload = action ? (ctcp?.params ?? "") : text
  if (!isFishPayload(payload)) return undefined
  const key = keyForInbound(table, isupport, selfNick, line)
  if (key === undefined) return undefined
  const opened = fishDecrypt(key, payload)
  if (!opened.ok) return { line, encryption: "undecryptable" }
  const plain = action ? encodeAction(opened.text) : opened.text
  return { line: { ...line, params: [line.params[0] ?? "", plain, ...line.params.slice(2)] }, encryption: "decrypted" }
}

/**
 * The history of an inbound line, opened first: `toMessages` (History.messagesFor, bound to the actor's context)
 * runs on the decrypted line, and each message it gives is marked with how the line travelled. Lines that need no
 * opening are passed through untouched.
 */
export const historyOfInbound = (
  table: E2eKeyTable,
  isupport: ISupport,
  selfNick: string,
  line: IrcLine,
  toMessages: (line: IrcLine) => ReadonlyArray<NewMessage>
): ReadonlyArray<NewMessage> => {
  const opened = openInbound(table, isupport, selfNick, line)
  if (opened === undefined) return toMessages(line)
  return toMessages(opened.line).map((m) => ({ ...m, encryption: opened.encryption }))
}

// ---------------------------------------------------------------------------------------------------------------
// The send_raw guard.

/**
 * The first target of a PRIVMSG or NOTICE in `raw` that has a key, if any (the interface, send_raw: such a line is
 * refused with `e2e-channel-use-send-message`, since it would carry plaintext). Targets are read by RawGuard both
 * with the network's STATUSMSG prefixes removed (`@#chan` → `#chan`) and as typed (a STATUSMSG character may also
 * begin a channel or nick name), so neither reading lets a keyed target through.
 */
export const encryptedTargetOfRaw = (
  table: E2eKeyTable,
  isupport: Pick<ISupport, "caseMapping" | "statusMsg">,
  raw: string
): string | undefined => {
  if (table.size === 0) return undefined
  const targets = [...messageTargetsOfRawLine(raw, isupport.statusMsg), ...messageTargetsOfRawLine(raw)]
  return targets.find((target) => table.has(isupport.caseMapping, target))
}
