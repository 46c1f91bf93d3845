/**
 * ChatHistoryRequest: the CHATHISTORY command of IRCv3 draft/chathistory read into a request, or the FAIL that
 * answers it. All six subcommands; references `msgid=` and `timestamp=` (MSGREFTYPES=msgid,timestamp); a limit above
 * CHATHISTORY_LIMIT is clamped to it, as the contract says. A msgid is the one the client was shown (MessageLines.ts):
 * the upstream's, or Belay's own id; which one is ChatHistory's to find out, in the target's buffer. Pure.
 */
import type { Bound } from "../services/history/MessageHistory.js"
import { upstreamMsgid } from "../services/history/MessageRow.js"

/** A reference as the client gave it: a time, or a msgid still to be found in the target's buffer. */
export type Reference = Bound | { readonly _tag: "Msgid"; readonly msgid: string }

/** The ISUPPORT `CHATHISTORY` value: the most messages one request returns. */
export const CHATHISTORY_LIMIT = 1000

export type ChatHistoryRequest =
  | { readonly _tag: "Before" | "After" | "Around"; readonly target: string; readonly ref: Reference; readonly limit: number }
  | { readonly _tag: "Latest"; readonly target: string; readonly ref: Reference | "*"; readonly limit: number }
  | { readonly _tag: "Between"; readonly target: string; readonly from: Reference; readonly to: Reference; readonly limit: number }
  | { readonly _tag: "Targets"; readonly from: Date; readonly to: Date; readonly limit: number }

/** A standard reply `FAIL CHATHISTORY <code> <context…> :<description>`. */
export interface ChatHistoryFail {
  readonly code: "INVALID_PARAMS" | "UNKNOWN_COMMAND" | "NEED_MORE_PARAMS"
  readonly context: ReadonlyArray<string>
  readonly description: string
}

/** A nick that is no valid name (RFC 2812 §2.3.1; the characters masks and prefixes use), or any control character. */
const NOT_A_NICK = /^[:$\-0-9]|[\s,*?!@\p{Cc}]/u
/** A channel name's forbidden characters (RFC 2812 §1.3: space, comma, BELL), and the other control characters. */
const NOT_A_CHANNEL = /[\s,\p{Cc}]/u

/**
 * Whether `target` may name a buffer at all: a channel (CHANTYPES `channelTypes`) or a nick. A name that may but has
 * no history answers an empty batch; one that may not is `INVALID_TARGET`, as soju answers (docs/contract.md "The IRC
 * client listener").
 */
export const isHistoryTarget = (channelTypes: string, target: string): boolean =>
  target !== "" && target.length <= 200 &&
  (channelTypes.includes(target.charAt(0)) ? !NOT_A_CHANNEL.test(target) : !NOT_A_NICK.test(target))

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:?\d{2})$/

const parseTime = (value: string): Date | undefined => {
  if (!ISO.test(value)) return undefined
  const time = new Date(value)
  return Number.isNaN(time.getTime()) ? undefined : time
}

/** `msgid=<id>` (any msgid Belay could have shown) or `timestamp=<ISO 8601>`; undefined when it is neither. */
export const parseReference = (raw: string): Reference | undefined => {
  const eq = raw.indexOf("=")
  if (eq === -1) return undefined
  const kind = raw.slice(0, eq)
  const value = raw.slice(eq + 1)
  if (kind === "msgid") {
    const msgid = upstreamMsgid(value)
    return msgid === null ? undefined : { _tag: "Msgid", msgid }
  }
  if (kind === "timestamp") {
    const time = parseTime(value)
    return time === undefined ? undefined : { _tag: "Time", time }
  }
  return undefined
}

const parseLimit = (raw: string | undefined): number | undefined =>
  raw !== undefined && /^\d{1,9}$/.test(raw) ? Math.min(Number(raw), CHATHISTORY_LIMIT) : undefined

/** `params` are CHATHISTORY's, the subcommand first. */
export const parseChatHistory = (params: ReadonlyArray<string>): ChatHistoryRequest | ChatHistoryFail => {
  const sub = (params[0] ?? "").toUpperCase()
  const invalid = (description: string, ...context: Array<string>): ChatHistoryFail => ({
    code: "INVALID_PARAMS",
    context: [sub, ...context],
    description
  })
  const expect = (n: number) => params.length < n ? { code: "NEED_MORE_PARAMS" as const, context: [sub], description: "Missing parameters" } : undefined
  switch (sub) {
    case "BEFORE":
    case "AFTER":
    case "AROUND":
    case "LATEST": {
      const short = expect(4)
      if (short !== undefined) return short
      const target = params[1]!
      const limit = parseLimit(params[3])
      if (limit === undefined) return invalid("Invalid limit", params[3]!)
      if (sub === "LATEST" && params[2] === "*") return { _tag: "Latest", target, ref: "*", limit }
      const ref = parseReference(params[2]!)
      if (ref === undefined) return invalid("Invalid message reference", params[2]!)
      const tag = sub === "BEFORE" ? "Before" : sub === "AFTER" ? "After" : sub === "AROUND" ? "Around" : "Latest"
      return { _tag: tag, target, ref, limit }
    }
    case "BETWEEN": {
      const short = expect(5)
      if (short !== undefined) return short
      const from = parseReference(params[2]!)
      const to = parseReference(params[3]!)
      if (from === undefined) return invalid("Invalid message reference", params[2]!)
      if (to === undefined) return invalid("Invalid message reference", params[3]!)
      const limit = parseLimit(params[4])
      if (limit === undefined) return invalid("Invalid limit", params[4]!)
      return { _tag: "Between", target: params[1]!, from, to, limit }
    }
    case "TARGETS": {
      const short = expect(4)
      if (short !== undefined) return short
      const from = parseReference(params[1]!)
      const to = parseReference(params[2]!)
      if (from?._tag !== "Time") return invalid("TARGETS takes timestamps", params[1]!)
      if (to?._tag !== "Time") return invalid("TARGETS takes timestamps", params[2]!)
      const limit = parseLimit(params[3])
      if (limit === undefined) return invalid("Invalid limit", params[3]!)
      return { _tag: "Targets", from: from.time, to: to.time, limit }
    }
    default:
      return { code: "UNKNOWN_COMMAND", context: [params[0] ?? "*"], description: "Unknown subcommand" }
  }
}
