/**
 * TaggedMessages: the IRC lines of a message that carries IRCv3 client-only tags (`+draft/reply`, `+draft/react`,
 * `+typing`: message-tags §"Client-only tags"), and of an IRCv3 draft/multiline batch, as Belay sends them upstream
 * for the member's IRC clients (src/listener) and browser tabs (src/http/ws). Pure; no state.
 *
 * - A message's text is split at the server's line limit as send_message splits it (TextSplit.ts); the tags go on
 *   every piece (tags do not count against the 512 bytes: message-tags §"Size limit").
 * - A multiline batch (docs/contract.md "The IRC client listener", draft/multiline) goes out as one batch when it fits
 *   the upstream's `max-bytes` and `max-lines`, else as several batches cut where a line starts a new line of text
 *   (never before a `draft/multiline-concat` line), else as separate lines; client tags go on the opening BATCH
 *   (multiline §"Message tags"), or on the first line of the fallback (§"Fallback").
 */
import { encodeAction } from "./Ctcp.js"
import { formatLine, parseLine, utf8ByteLength } from "./IrcLine.js"
import { splitText } from "./TextSplit.js"

/**
 * message-tags §"Size limit": the tag data a client may send on one line — the bytes between the leading `@` and the
 * separator space, client-only tags or not (`<client_max> (4096) :: '@' <tag_data 4094> ' '`). Past it: 417.
 */
export const CLIENT_TAGS_MAX_BYTES = 4094

/** The client-only tags (`+name`) among a line's tags, in order. */
export const clientOnlyTags = (tags: ReadonlyMap<string, string>): Map<string, string> =>
  new Map([...tags].filter(([key]) => key.startsWith("+") && key.length > 1 && !/[\s;=\0]/.test(key)))

/** The tag data the tags make on a line (`a=b;c` with escapes, without `@` and the space); 0 for none. */
export const tagBytes = (tags: ReadonlyMap<string, string>): number =>
  tags.size === 0 ? 0 : utf8ByteLength(formatLine({ tags, command: "X" })) - 3

/**
 * The client-only tags of a line as the upstream delivered it, for Belay to relay as a server relays them
 * (message-tags §"Client-only tags"); undefined when it has none. Their tag data stays within CLIENT_TAGS_MAX_BYTES
 * (§"Size limit"): a tag that would pass it is dropped whole, never cut, since a cut value would say something else.
 * Read cheaply first: a line with no tag key starting with `+` is not parsed (a value cannot hold a raw `;`).
 */
export const relayedClientTags = (raw: string | null | undefined): Readonly<Record<string, string>> | undefined => {
  if (raw == null || raw.charCodeAt(0) !== 64) return undefined
  if (raw.charCodeAt(1) !== 43) {
    const end = raw.indexOf(" ")
    const next = raw.indexOf(";+")
    if (next === -1 || (end !== -1 && next > end)) return undefined
  }
  const line = parseLine(raw)
  if (line === undefined) return undefined
  const out: Record<string, string> = {}
  let bytes = 0
  let kept = 0
  for (const [key, value] of clientOnlyTags(line.tags)) {
    const own = tagBytes(new Map([[key, value]]))
    const next = bytes + own + (kept > 0 ? 1 : 0)
    if (next > CLIENT_TAGS_MAX_BYTES) continue
    out[key] = value
    bytes = next
    kept++
  }
  return kept === 0 ? undefined : out
}

/** The tag data of a line as received (between its leading `@` and the first space), in bytes; 0 without tags. */
export const rawTagDataBytes = (raw: string): number => {
  if (raw.charCodeAt(0) !== 64) return 0
  const end = raw.indexOf(" ")
  return utf8ByteLength(raw.slice(1, end === -1 ? undefined : end))
}

export type MessageCommand = "PRIVMSG" | "NOTICE"

/** A message as lines, each piece with the tags; an ACTION is framed as CTCP (`\x01ACTION …\x01`). */
export const messageLines = (
  command: MessageCommand,
  target: string,
  text: string,
  options: { readonly tags: ReadonlyMap<string, string>; readonly action?: boolean; readonly prefixAllowance: number }
): ReadonlyArray<string> =>
  splitText(target, text, {
    command,
    ...(options.action === true ? { ctcp: "ACTION" } : {}),
    prefixAllowance: options.prefixAllowance
  }).map((chunk) =>
    formatLine({ tags: options.tags, command, params: [target, options.action === true ? encodeAction(chunk) : chunk] })
  )

/** One line of a multiline batch: its text, and whether it continues the previous line (`draft/multiline-concat`). */
export interface MultilinePart {
  readonly text: string
  readonly concat: boolean
}

export const MULTILINE_CAP = "draft/multiline"
export const MULTILINE_BATCH = "draft/multiline"
export const CONCAT_TAG = "draft/multiline-concat"

export interface MultilineLimits {
  readonly maxBytes: number
  /** null: the server named none. */
  readonly maxLines: number | null
}

/** The value of a `draft/multiline` capability (`max-bytes=4096,max-lines=100`); undefined without a usable max-bytes. */
export const parseMultilineLimits = (value: string | undefined): MultilineLimits | undefined => {
  if (value === undefined) return undefined
  let maxBytes: number | undefined
  let maxLines: number | null = null
  for (const token of value.split(",")) {
    const [key, raw] = token.split("=", 2)
    const n = raw !== undefined && /^[1-9][0-9]{0,8}$/.test(raw) ? Number(raw) : undefined
    if (key === "max-bytes" && n !== undefined) maxBytes = n
    else if (key === "max-lines" && n !== undefined) maxLines = n
  }
  return maxBytes === undefined ? undefined : { maxBytes, maxLines }
}

/** The batch's content size as multiline counts it: each part's bytes, and one per line feed between them. */
export const multilineBytes = (parts: ReadonlyArray<MultilinePart>): number =>
  parts.reduce((sum, part, i) => sum + utf8ByteLength(part.text) + (i > 0 && !part.concat ? 1 : 0), 0)

/**
 * Parts cut to fit one line each upstream: a part longer than the line budget becomes several, the later ones
 * `concat`, so the text the recipient reads is the same.
 */
const fitted = (command: MessageCommand, target: string, parts: ReadonlyArray<MultilinePart>, prefixAllowance: number) =>
  parts.flatMap((part) => {
    if (part.text === "") return [part]
    const pieces = splitText(target, part.text, { command, prefixAllowance, wordWindow: 0 })
    return pieces.map((text, i) => ({ text, concat: i === 0 ? part.concat : true }))
  })

/**
 * The parts as batches within `limits`: cut only before a part that starts a new line of text (a batch may not begin
 * with a concat line); undefined when some run of concatenated parts alone exceeds them.
 */
export const chunkMultiline = (
  parts: ReadonlyArray<MultilinePart>,
  limits: MultilineLimits
): ReadonlyArray<ReadonlyArray<MultilinePart>> | undefined => {
  // Runs: a part that starts a line of text and the concat parts after it, which must stay in one batch.
  const runs: Array<Array<MultilinePart>> = []
  for (const part of parts) {
    const last = runs[runs.length - 1]
    if (part.concat && last !== undefined) last.push(part)
    else runs.push([part])
  }
  const fits = (batch: ReadonlyArray<MultilinePart>) =>
    multilineBytes(batch) <= limits.maxBytes && (limits.maxLines === null || batch.length <= limits.maxLines)
  const batches: Array<Array<MultilinePart>> = []
  for (const run of runs) {
    const head = { ...run[0]!, concat: false }
    const whole = [head, ...run.slice(1)]
    if (!fits(whole)) return undefined
    const current = batches[batches.length - 1]
    if (current !== undefined && fits([...current, ...run])) current.push(...run)
    else batches.push(whole)
  }
  return batches
}

export interface MultilineSend {
  readonly command: MessageCommand
  readonly target: string
  readonly parts: ReadonlyArray<MultilinePart>
  /** Client-only tags of the whole message. */
  readonly tags: ReadonlyMap<string, string>
  readonly prefixAllowance: number
}

/**
 * The lines that carry a multiline message upstream: batches when the upstream has draft/multiline (`limits`) and the
 * message fits them, else each part as a line of its own (blank parts dropped: multiline §"Fallback"), the client's
 * line composition kept. `ref` names batch `i`; it must be unique on the connection.
 */
export const multilineLines = (
  send: MultilineSend,
  limits: MultilineLimits | undefined,
  ref: (i: number) => string
): ReadonlyArray<string> => {
  const { command, target, tags } = send
  const parts = fitted(command, target, send.parts, send.prefixAllowance)
  const batches = limits === undefined ? undefined : chunkMultiline(parts, limits)
  if (batches === undefined) {
    return parts.filter((p) => p.text !== "").map((p, i) =>
      formatLine({ ...(i === 0 ? { tags } : {}), command, params: [target, p.text] })
    )
  }
  return batches.flatMap((batch, i) => {
    const name = ref(i)
    return [
      formatLine({ tags, command: "BATCH", params: [`+${name}`, MULTILINE_BATCH, target] }),
      ...batch.map((p) =>
        formatLine({
          tags: new Map(p.concat ? [["batch", name], [CONCAT_TAG, ""]] : [["batch", name]]),
          command,
          params: [target, p.text]
        })
      ),
      formatLine({ command: "BATCH", params: [`-${name}`] })
    ]
  })
}
