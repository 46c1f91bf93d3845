/**
 * FiSH: the Blowfish message encryption that HexChat's FiSHLiM, WeeChat's fish.py and
 * FiSH-irssi speak on IRC. Owns the key syntax, the two wire formats, and the arithmetic that
 * lets a sender split text so every encrypted line fits the 512-byte IRC limit.
 *
 * Pure code, no I/O (the default CBC IV comes from the CSPRNG). The only module state is a
 * WeakMap memoising the key schedule of each immutable FishKey; JavaScript runs it to
 * completion, so every function here may be called from any fiber.
 *
 * Wire formats (a message is the text of a PRIVMSG, NOTICE or TOPIC):
 * - ECB: `+OK ` + FiSH-base64 of Blowfish-ECB(zero-padded UTF-8 text). FiSH-base64 turns each
 *   8-byte block into 12 characters of `./0-9a-zA-Z`: the block is read as two big-endian
 *   words L and R, and R then L are written 6 bits at a time, least significant first
 *   (hexchat/hexchat plugins/fishlim/fish.c fish_base64_encode; weechat/scripts
 *   python/fish.py blowcrypt_b64encode).
 * - CBC: `+OK *` + standard base64 of (8-byte random IV ‖ Blowfish-CBC(zero-padded text)),
 *   as FiSHLiM fish_cipher and fish.py blowcrypt_pack write it.
 * - Receivers also accept the Mircryption prefix `mcps ` for either (FiSHLiM
 *   decrypt_raw_message, fish.py blowcrypt_unpack, FiSH-irssi FiSH_decrypt).
 *
 * Keys: `cbc:` or `ecb:` in front of the key (any case) picks the mode, as in FiSHLiM's
 * /setkey and fish.py's /blowkey set. A bare key means ECB (DEFAULT_FISH_MODE), because that
 * is what a bare key means in the tools Belay must talk to: FiSHLiM handle_setkey
 * (hexchat/hexchat plugins/fishlim/plugin_hexchat.c) starts from FISH_ECB_MODE, fish.py
 * fish_key_get sets cbc only for a `cbc:` prefix, and FiSHLiM fish_decrypt_from_nick decrypts
 * only in the key's stored mode, so a CBC line sent to a HexChat user whose key is bare would
 * be unreadable. CBC is the better cipher mode; members who can should give `cbc:` keys.
 * Decryption here detects the mode from the message (`*`), whatever the key's mode, as
 * fish.py does.
 */
import { randomBytes } from "node:crypto"
import { Data, Either, Redacted } from "effect"
import { BLOCK_BYTES, Blowfish, readWord, writeWord } from "./Blowfish.js"

/** The two FiSH cipher modes. */
export type FishMode = "cbc" | "ecb"

/** Mode of a key given without a `cbc:`/`ecb:` prefix; see the module comment for why. */
export const DEFAULT_FISH_MODE: FishMode = "ecb"

/** A parsed FiSH key: the mode used when sending, and the key text (UTF-8 on the wire). */
export interface FishKey {
  readonly mode: FishMode
  readonly secret: Redacted.Redacted<string>
}

/** Why a raw key was refused. */
export class InvalidFishKey extends Data.TaggedError("InvalidFishKey")<{
  readonly reason: "empty" | "control-character"
  readonly message: string
}> {}

/** Why a message could not be decrypted. FiSH has no MAC: a wrong key shows up as garbage. */
export type FishDecryptFailure =
  /** Does not start with `+OK ` or `mcps `. */
  | "not-fish"
  /** Bad characters for its encoding, or shorter than one block (CBC: IV and one block). */
  | "malformed"
  /** Decrypts to nothing before the zero padding (usually a wrong key). */
  | "empty"
  /** Decrypts to bytes no FiSH sender writes: CR or LF in the text, or anything but zeros
   * after it (usually a wrong key; a CR or LF could also be an attempt to smuggle a line). */
  | "garbled"
  /** Decrypts to bytes that are not UTF-8 (usually a wrong key). */
  | "not-utf8"

export type FishDecryptResult =
  | {
    readonly ok: true
    readonly text: string
    /** Mode the message was sent in, which may differ from the key's. */
    readonly mode: FishMode
    /** The ciphertext did not end on a block boundary (the server cut the line); the
     * text is what the whole blocks held. */
    readonly truncated: boolean
  }
  | { readonly ok: false; readonly reason: FishDecryptFailure }

/** RFC 1459 §2.3 / RFC 2812 §2.3: at most 512 bytes per line, counting the CR-LF. */
export const IRC_MAX_LINE_BYTES = 512

/** `\x01ACTION ` and the closing `\x01` around an encrypted CTCP ACTION. */
export const CTCP_ACTION_OVERHEAD_BYTES = 9

const FISH_BASE64 = "./0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
const FISH_BASE64_RE = /^[./0-9a-zA-Z]+$/
const STD_BASE64_RE = /^[A-Za-z0-9+/]+={0,2}$/
const KEY_PREFIX_RE = /^(cbc|ecb):/i
// IRC text cannot carry these (RFC 1459 §2.3.1), FiSH-irssi FiSH_decrypt cuts decrypted text
// at the first of them, and the C tools end a key at NUL; so neither keys nor messages hold them.
const FORBIDDEN_RE = /[\0\r\n]/
const ENCODED_BLOCK_CHARS = 12
const OK_PREFIX = "+OK "
const MCPS_PREFIX = "mcps "
const CBC_MARK = "*"

const utf8 = new TextEncoder()
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/**
 * Parses a key as a member gives it: optional `cbc:`/`ecb:` prefix (any case), then the key.
 * The key is kept byte for byte (no trimming); Blowfish uses only its first 72 UTF-8 bytes,
 * as OpenSSL's BF_set_key does in FiSHLiM and FiSH-irssi. fish.py hands the key to
 * pycryptodome, which refuses keys over 56 bytes (and under 4 or 5, by version), so such
 * keys work with HexChat and irssi users but not with WeeChat ones.
 */
export const parseFishKey = (raw: string): Either.Either<FishKey, InvalidFishKey> => {
  const prefix = KEY_PREFIX_RE.exec(raw)
  const mode: FishMode = prefix === null ? DEFAULT_FISH_MODE : prefix[1]?.toLowerCase() === "cbc" ? "cbc" : "ecb"
  const secret = prefix === null ? raw : raw.slice(prefix[0].length)
  if (secret.length === 0) {
    return Either.left(new InvalidFishKey({ reason: "empty", message: "the FiSH key is empty" }))
  }
  if (FORBIDDEN_RE.test(secret)) {
    return Either.left(
      new InvalidFishKey({ reason: "control-character", message: "the FiSH key contains NUL, CR or LF" })
    )
  }
  return Either.right({ mode, secret: Redacted.make(secret) })
}

/** The key with its mode always spelled out (`cbc:…`/`ecb:…`), for storage; parses back. */
export const formatFishKey = (key: FishKey): string => `${key.mode}:${Redacted.value(key.secret)}`

/** True when the message text is FiSH ciphertext (`+OK ` or Mircryption's `mcps `). */
export const isFishPayload = (text: string): boolean => text.startsWith(OK_PREFIX) || text.startsWith(MCPS_PREFIX)

/**
 * Encrypts one message to its `+OK …` form in the key's mode. `plaintext` must be non-empty
 * and free of NUL, CR and LF (RangeError otherwise); split long text first with splitForFish.
 * `randomIv` supplies the 8-byte CBC IV (tests pass a fixed one).
 */
export const fishEncrypt = (
  key: FishKey,
  plaintext: string,
  randomIv: () => Uint8Array = () => randomBytes(BLOCK_BYTES)
): string => {
  if (plaintext.length === 0) throw new RangeError("FiSH cannot encrypt an empty message")
  if (FORBIDDEN_RE.test(plaintext)) throw new RangeError("FiSH plaintext cannot contain NUL, CR or LF")
  const padded = zeroPad(utf8.encode(plaintext))
  const cipher = cipherFor(key)
  if (key.mode === "ecb") return OK_PREFIX + fishBase64Encode(cipher.encryptEcb(padded))
  const iv = randomIv()
  if (iv.length !== BLOCK_BYTES) throw new RangeError(`FiSH CBC IV must be ${BLOCK_BYTES} bytes`)
  const body = cipher.encryptCbc(iv, padded)
  return OK_PREFIX + CBC_MARK + Buffer.concat([iv, body]).toString("base64")
}

/**
 * Decrypts the text of a message (`+OK …` or `mcps …`; unwrap a CTCP ACTION first). The mode
 * comes from the message. Only the first space-separated word after the prefix is read, as
 * FiSHLiM does. A line the server cut short still yields its whole blocks (FiSH-irssi
 * FiSH_decrypt, fish.py blowcrypt_unpack). Senders write the UTF-8 text and zero padding
 * only, so anything else after decryption (CR, LF, bytes after the padding, invalid UTF-8)
 * is refused rather than shown: with no MAC in FiSH, that is how a wrong key shows.
 */
export const fishDecrypt = (key: FishKey, payload: string): FishDecryptResult => {
  const body = payload.startsWith(OK_PREFIX)
    ? payload.slice(OK_PREFIX.length)
    : payload.startsWith(MCPS_PREFIX)
    ? payload.slice(MCPS_PREFIX.length)
    : undefined
  if (body === undefined) return { ok: false, reason: "not-fish" }
  const word = body.split(" ", 1)[0] ?? ""
  const opened = word.startsWith(CBC_MARK) ? openCbc(key, word.slice(1)) : openEcb(key, word)
  if (opened === undefined) return { ok: false, reason: "malformed" }
  return toText(opened.plain, opened.mode, opened.truncated)
}

/** Length in bytes of fishEncrypt's output for a plaintext of `plaintextBytes` UTF-8 bytes. */
export const fishPayloadBytes = (mode: FishMode, plaintextBytes: number): number => {
  const blocks = Math.ceil(plaintextBytes / BLOCK_BYTES)
  return mode === "ecb"
    ? OK_PREFIX.length + ENCODED_BLOCK_CHARS * blocks
    : OK_PREFIX.length + CBC_MARK.length + 4 * Math.ceil((BLOCK_BYTES * (blocks + 1)) / 3)
}

/**
 * The most plaintext bytes whose encrypted form fits in an IRC line of `maxLineBytes` (512,
 * with CR-LF) when `overheadBytes` of the line are taken by everything else: the relay prefix
 * recipients see (`:nick!user@host `), `PRIVMSG <target> :`, and the CR-LF. Always a multiple
 * of 8, since padding makes every byte of a block cost the same; 0 when nothing fits.
 * IRCv3 message tags do not count here: they have their own budget (message-tags spec).
 */
export const maxPlaintextBytesForLine = (
  mode: FishMode,
  overheadBytes: number,
  maxLineBytes: number = IRC_MAX_LINE_BYTES
): number => {
  const budget = maxLineBytes - overheadBytes
  // Every block costs more than 10 characters in either mode (12 in ECB, 32/3 in CBC), so
  // this starts above the answer.
  let blocks = Math.max(0, Math.floor(budget / 10))
  while (blocks > 0 && fishPayloadBytes(mode, blocks * BLOCK_BYTES) > budget) blocks--
  return blocks * BLOCK_BYTES
}

/**
 * Bytes of a line that are not the encrypted payload when sending `PRIVMSG <target> :<payload>`:
 * `prefixAllowance` for the relay prefix the server adds for recipients (`:nick!user@host `;
 * add CTCP_ACTION_OVERHEAD_BYTES when the payload goes inside a CTCP ACTION), the command and
 * target, and the CR-LF.
 */
export const privmsgOverheadBytes = (target: string, prefixAllowance: number): number =>
  prefixAllowance + utf8.encode(`PRIVMSG ${target} :`).length + 2

/**
 * Splits `text` into pieces that each encrypt (in `mode`) to a PRIVMSG line for `target` of at
 * most `maxLineBytes` bytes, given `prefixAllowance` bytes for the relay prefix (see
 * privmsgOverheadBytes). Cuts only between grapheme clusters (between code points inside a
 * cluster too large for one line), and after a space when one falls in the second half of the
 * piece; no character is dropped, so the pieces join back to `text`. Empty text gives no
 * pieces. RangeError when not even one 4-byte character would fit.
 */
export const splitForFish = (
  text: string,
  target: string,
  maxLineBytes: number,
  prefixAllowance: number,
  mode: FishMode
): ReadonlyArray<string> => {
  if (text.length === 0) return []
  const limit = maxPlaintextBytesForLine(mode, privmsgOverheadBytes(target, prefixAllowance), maxLineBytes)
  if (limit < 4) {
    throw new RangeError(`an encrypted line to ${target} has room for only ${limit} plaintext bytes`)
  }
  const pieces: Array<string> = []
  let current = ""
  let currentBytes = 0
  // End of the last space in `current` (UTF-16 index and UTF-8 byte count), or -1.
  let spaceEnd = -1
  let spaceEndBytes = 0
  for (const unit of splitUnits(text, limit)) {
    const unitBytes = utf8.encode(unit).length
    while (currentBytes > 0 && currentBytes + unitBytes > limit) {
      if (spaceEnd > 0 && spaceEnd < current.length && spaceEndBytes * 2 >= limit) {
        pieces.push(current.slice(0, spaceEnd))
        current = current.slice(spaceEnd)
        currentBytes -= spaceEndBytes
      } else {
        pieces.push(current)
        current = ""
        currentBytes = 0
      }
      spaceEnd = -1
    }
    current += unit
    currentBytes += unitBytes
    if (unit === " ") {
      spaceEnd = current.length
      spaceEndBytes = currentBytes
    }
  }
  if (current.length > 0) pieces.push(current)
  return pieces
}

/** FiSH-base64 of `data`, zero-padded to whole 8-byte blocks: 12 characters per block. */
export const fishBase64Encode = (data: Uint8Array): string => {
  const padded = zeroPad(data)
  let out = ""
  for (let o = 0; o < padded.length; o += BLOCK_BYTES) {
    const left = readWord(padded, o)
    const right = readWord(padded, o + 4)
    out += sixBitChars(right) + sixBitChars(left)
  }
  return out
}

/** Inverse of fishBase64Encode; undefined unless `text` is whole 12-character groups of the
 * FiSH alphabet. */
export const fishBase64Decode = (text: string): Uint8Array | undefined => {
  if (text.length % ENCODED_BLOCK_CHARS !== 0 || (text.length > 0 && !FISH_BASE64_RE.test(text))) return undefined
  const out = new Uint8Array((text.length / ENCODED_BLOCK_CHARS) * BLOCK_BYTES)
  for (let i = 0, o = 0; i < text.length; i += ENCODED_BLOCK_CHARS, o += BLOCK_BYTES) {
    writeWord(out, o + 4, fromSixBitChars(text, i))
    writeWord(out, o, fromSixBitChars(text, i + 6))
  }
  return out
}

const ciphers = new WeakMap<FishKey, Blowfish>()

const cipherFor = (key: FishKey): Blowfish => {
  const known = ciphers.get(key)
  if (known !== undefined) return known
  const made = new Blowfish(utf8.encode(Redacted.value(key.secret)))
  ciphers.set(key, made)
  return made
}

interface Opened {
  readonly plain: Uint8Array
  readonly mode: FishMode
  readonly truncated: boolean
}

const openEcb = (key: FishKey, word: string): Opened | undefined => {
  if (!FISH_BASE64_RE.test(word)) return undefined
  const whole = word.length - (word.length % ENCODED_BLOCK_CHARS)
  if (whole === 0) return undefined
  const data = fishBase64Decode(word.slice(0, whole))
  if (data === undefined) return undefined
  return { plain: cipherFor(key).decryptEcb(data), mode: "ecb", truncated: whole !== word.length }
}

const openCbc = (key: FishKey, word: string): Opened | undefined => {
  // Some clients leave out the `=` padding (fish.py blowcrypt_unpack puts it back); Buffer
  // decodes either way.
  if (!STD_BASE64_RE.test(word)) return undefined
  const raw = Buffer.from(word, "base64")
  const whole = raw.length - (raw.length % BLOCK_BYTES)
  if (whole < 2 * BLOCK_BYTES) return undefined
  const iv = raw.subarray(0, BLOCK_BYTES)
  const plain = cipherFor(key).decryptCbc(iv, raw.subarray(BLOCK_BYTES, whole))
  // Whole base64 never leaves one character over, with or without its `=` padding.
  const dangling = word.replace(/=+$/, "").length % 4 === 1
  return { plain, mode: "cbc", truncated: whole !== raw.length || dangling }
}

const toText = (plain: Uint8Array, mode: FishMode, truncated: boolean): FishDecryptResult => {
  const nul = plain.indexOf(0x00)
  if (nul !== -1 && plain.subarray(nul).some((b) => b !== 0x00)) return { ok: false, reason: "garbled" }
  const end = nul !== -1 ? nul : truncated ? completeUtf8Prefix(plain) : plain.length
  if (end === 0) return { ok: false, reason: "empty" }
  const text = plain.subarray(0, end)
  if (text.includes(0x0a) || text.includes(0x0d)) return { ok: false, reason: "garbled" }
  try {
    return { ok: true, text: strictUtf8.decode(text), mode, truncated }
  } catch {
    return { ok: false, reason: "not-utf8" }
  }
}

// Length of `bytes` without a trailing UTF-8 sequence that a cut line left unfinished.
const completeUtf8Prefix = (bytes: Uint8Array): number => {
  let start = bytes.length - 1
  // Step back over at most three continuation bytes (10xxxxxx) to the lead byte.
  while (start >= 0 && bytes.length - start <= 4 && ((bytes[start] ?? 0) & 0xc0) === 0x80) start--
  if (start < 0) return bytes.length
  const lead = bytes[start] ?? 0
  const needed = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1
  return bytes.length - start < needed ? start : bytes.length
}

// Made at the first use, not when the module loads: a segmenter loads ICU's break rules, memory an idle process
// never needs (bench/results/memory-breakdown.md "Idle on Node 24").
let graphemes: Intl.Segmenter | undefined

// Units splitForFish may not cut inside: grapheme clusters, or the code points of a cluster
// larger than a whole line (a long run of combining marks).
function* splitUnits(text: string, limit: number): Generator<string> {
  graphemes ??= new Intl.Segmenter(undefined, { granularity: "grapheme" })
  for (const { segment } of graphemes.segment(text)) {
    if (utf8.encode(segment).length <= limit) yield segment
    else yield* Array.from(segment)
  }
}

const zeroPad = (data: Uint8Array): Uint8Array => {
  const rest = data.length % BLOCK_BYTES
  if (rest === 0) return data
  const out = new Uint8Array(data.length + BLOCK_BYTES - rest)
  out.set(data)
  return out
}

const sixBitChars = (word: number): string => {
  let out = ""
  let w = word
  for (let i = 0; i < 6; i++) {
    out += FISH_BASE64.charAt(w & 0x3f)
    w >>>= 6
  }
  return out
}

const fromSixBitChars = (text: string, at: number): number => {
  let word = 0
  for (let i = 0; i < 6; i++) word |= FISH_BASE64.indexOf(text.charAt(at + i)) << (6 * i)
  return word >>> 0
}

