/**
 * ModeLines: checks a list of channel mode changes against what the network advertises and packs them into the
 * fewest `MODE` lines its MODES limit and the 512-byte line limit allow (the `set_channel_modes` tool).
 * Pure functions; safe to call from any fiber.
 *
 * Errors are data: one `Data.TaggedError` class, `InvalidModeChange`, whose `reason` says which rule failed and
 * whose `message` is ready for the caller (the tool layer answers `invalid-arguments` with it). Results are
 * `Either`s, which can be `yield*`ed inside `Effect.gen`.
 */
import { Brand, Data, Either } from "effect"
import { formatLine, MAX_LINE_BYTES, utf8ByteLength } from "./IrcLine.js"
import { isChannel, type ISupport, type ModeKind, modeKind } from "./ISupport.js"
import { isMiddleParam } from "./Safety.js"

export interface ModeChange {
  readonly sign: "+" | "-"
  readonly letter: string
  readonly param?: string
}

/** A change that passed `validateModeChanges`: the letter is known and `param` is present exactly when needed. */
export type ValidModeChange = ModeChange & Brand.Brand<"ValidModeChange">
const ValidModeChange = Brand.nominal<ValidModeChange>()

export type InvalidModeChangeReason =
  /** The list is empty. */
  | "no-changes"
  /** The letter is in neither CHANMODES nor PREFIX. */
  | "unknown-letter"
  /** The mode takes a param for this sign and none was given. */
  | "missing-param"
  /** The mode takes no param for this sign and one was given. */
  | "unexpected-param"
  /** A list mode (`+b`) without a mask would list the entries, which is `get_mode_list`'s job. */
  | "list-query"
  /** The param cannot be sent (empty, space, leading ":", CR/LF/NUL) or is not a limit where one is needed. */
  | "invalid-param"
  /** The target is not a channel name that can be sent. */
  | "invalid-channel"
  /** One change alone does not fit in a line. */
  | "too-long"

export class InvalidModeChange extends Data.TaggedError("InvalidModeChange")<{
  readonly reason: InvalidModeChangeReason
  /** Position of the offending change in the input list; -1 when the list or the channel is at fault. */
  readonly index: number
  readonly message: string
}> {}

/** The key sent with `-k` when the caller gives none and no key is stored; servers ignore `-k`'s param. */
export const UNKNOWN_KEY = "*"

const fail = (reason: InvalidModeChangeReason, index: number, message: string) =>
  Either.left(new InvalidModeChange({ reason, index, message }))

// Whether a change of this kind and sign carries a param on the wire (RFC 2811 §4; CHANMODES in ISUPPORT).
const takesParam = (kind: ModeKind, sign: "+" | "-"): boolean =>
  kind === "list" || kind === "prefix" || kind === "always-param" || (kind === "set-param" && sign === "+")

/**
 * Checks each change against `isupport` and fills in `-k`'s param: the caller's `storedKey` (the key Belay
 * remembers for the channel) when it can be sent, else `*` (interface.md, set_channel_modes). The list keeps
 * its order; duplicates are passed through for the server to judge.
 */
export const validateModeChanges = (
  changes: ReadonlyArray<ModeChange>,
  isupport: ISupport,
  storedKey?: string
): Either.Either<ReadonlyArray<ValidModeChange>, InvalidModeChange> => {
  if (changes.length === 0) return fail("no-changes", -1, "no mode changes given")
  const valid: Array<ValidModeChange> = []
  for (const [index, change] of changes.entries()) {
    const { sign, letter } = change
    const mode = `${sign}${letter}`
    const kind = modeKind(isupport, letter)
    if (kind === undefined) {
      return fail("unknown-letter", index, `mode letter ${JSON.stringify(letter)} is not advertised by this network`)
    }
    let param = change.param
    if (param === undefined && sign === "-" && letter === "k") {
      param = storedKey !== undefined && isMiddleParam(storedKey) ? storedKey : UNKNOWN_KEY
    }
    if (takesParam(kind, sign)) {
      if (param === undefined) {
        return kind === "list" && sign === "+"
          ? fail("list-query", index, `${mode} needs a mask; use get_mode_list to list ${letter} entries`)
          : fail("missing-param", index, `${mode} needs a parameter`)
      }
      if (!isMiddleParam(param)) {
        return fail("invalid-param", index, `the parameter of ${mode} is empty, starts with ":" or contains a space, CR, LF or NUL`)
      }
      // RFC 2811 §4.3.1: the user limit is a number; anything else is refused or misread by servers.
      if (letter === "l" && kind === "set-param" && !/^[1-9][0-9]{0,9}$/.test(param)) {
        return fail("invalid-param", index, `the parameter of ${mode} must be a positive integer`)
      }
      valid.push(ValidModeChange({ sign, letter, param }))
    } else {
      if (param !== undefined) return fail("unexpected-param", index, `${mode} takes no parameter`)
      valid.push(ValidModeChange({ sign, letter }))
    }
  }
  return Either.right(valid)
}

/**
 * Packs validated changes for `channel` into the fewest `MODE` lines (without CR-LF), in the given order:
 * - at most MODES 'variable' changes per line. modern.ircdocs.horse defines MODES over 'variable' modes, types A,
 *   B, C and PREFIX, whatever the sign; RFC 2812 §3.2.3 says "modes that take a parameter". The two differ only
 *   for a type C unset (`-l`), which we count too: the stricter reading never gets a line refused and costs at
 *   most one extra line. Type D changes do not count;
 * - each line, CR-LF included, within `maxLineBytes` (RFC 1459 §2.3.1: 512). The server re-prefixes what it
 *   relays and splits it itself, so only our own line is measured.
 * Greedy filling in order is optimal for an order-preserving split (both limits only grow with the line), and
 * order matters: `-b mask +b mask` is not `+b mask -b mask`.
 */
export const packModeLines = (
  channel: string,
  changes: ReadonlyArray<ValidModeChange>,
  isupport: ISupport,
  maxLineBytes: number = MAX_LINE_BYTES
): Either.Either<ReadonlyArray<string>, InvalidModeChange> => {
  if (!isMiddleParam(channel) || !isChannel(isupport, channel)) {
    return fail("invalid-channel", -1, `${JSON.stringify(channel)} is not a channel name on this network`)
  }
  if (changes.length === 0) return fail("no-changes", -1, "no mode changes given")
  const maxVariable = isupport.modes === "unlimited" ? Infinity : isupport.modes
  // "MODE " + channel + " " + modestring [+ " " + param]... + CR-LF
  const fixedBytes = utf8ByteLength(`MODE ${channel} `) + 2

  const lines: Array<string> = []
  let modeString = ""
  let params: Array<string> = []
  let sign: string | undefined
  let bytes = fixedBytes
  let variable = 0

  const flush = () => {
    if (modeString !== "") lines.push(formatLine({ command: "MODE", params: [channel, modeString, ...params] }))
    modeString = ""
    params = []
    sign = undefined
    bytes = fixedBytes
    variable = 0
  }

  for (const [index, change] of changes.entries()) {
    const isVariable = modeKind(isupport, change.letter) !== "no-param"
    const cost = (candidateSign: string | undefined) =>
      (candidateSign === change.sign ? 0 : 1) +
      utf8ByteLength(change.letter) +
      (change.param !== undefined ? 1 + utf8ByteLength(change.param) : 0)
    if (
      modeString !== "" &&
      (bytes + cost(sign) > maxLineBytes || (isVariable && variable + 1 > maxVariable))
    ) {
      flush()
    }
    const added = cost(sign)
    if (bytes + added > maxLineBytes) {
      return fail("too-long", index, `${change.sign}${change.letter} with its parameter does not fit in one ${maxLineBytes}-byte line`)
    }
    if (sign !== change.sign) modeString += change.sign
    modeString += change.letter
    if (change.param !== undefined) params.push(change.param)
    sign = change.sign
    bytes += added
    if (isVariable) variable++
  }
  flush()
  return Either.right(lines)
}

/** Validates then packs: what `set_channel_modes` sends. */
export const modeLines = (
  channel: string,
  changes: ReadonlyArray<ModeChange>,
  isupport: ISupport,
  options: { readonly storedKey?: string; readonly maxLineBytes?: number } = {}
): Either.Either<ReadonlyArray<string>, InvalidModeChange> =>
  Either.flatMap(validateModeChanges(changes, isupport, options.storedKey), (valid) =>
    packModeLines(channel, valid, isupport, options.maxLineBytes)
  )
