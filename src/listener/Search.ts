/**
 * Search: soju's `soju.im/search` extension (its doc/ext/search.md) — `SEARCH <attributes>`, the attributes in
 * message-tag syntax (`in`, `from`, `after`, `before`, `text`, `limit`; others ignored, as soju does) — answered from
 * the same full-text search as the MCP tool search_messages (MessageHistory.search), in a `soju.im/search` batch of
 * PRIVMSG and NOTICE lines with `time` and `msgid`, oldest first. Scope: the bound network, narrowed to `in` when
 * given; a control connection has none and is refused. `text` is required: Belay's search is over terms, and finds
 * nothing without one (docs/decisions/irc-listener.md "SEARCH answers from search_messages"). Bounds: `limit` at most
 * SEARCH_LIMIT (clamped, the MCP tool's maximum and soju's), `text` at most SEARCH_TEXT_CHARS, `in` and `from` at most
 * SEARCH_WORD_CHARS, at most SEARCH_ATTRIBUTES attributes. `parseSearch` is pure.
 *
 * Concurrency rule: runs on the connection's session fiber only.
 */
import { Effect, Option } from "effect"
import { foldCase } from "../irc/CaseMapping.js"
import { unescapeTagValue } from "../irc/IrcLine.js"
import { parseReference } from "./ChatHistoryRequest.js"
import { type Downstream, fail, nextBatchId, reply, replyLine } from "./Downstream.js"
import type { ListenerDeps } from "./ListenerDeps.js"
import { storedLine } from "./MessageLines.js"

/** The most messages one SEARCH answers (a larger `limit` is clamped to it). */
export const SEARCH_LIMIT = 100
/** The longest `text` accepted, in UTF-16 code units. */
export const SEARCH_TEXT_CHARS = 512
/** The longest `in` (a channel or nick) and `from` (a nick) accepted. */
export const SEARCH_WORD_CHARS = 200
/** Attributes in one SEARCH at most (six are known; repeats and unknown ones count too). */
export const SEARCH_ATTRIBUTES = 16

export interface SearchRequest {
  readonly text: string
  readonly target: string | undefined
  readonly from: string | undefined
  /** Inclusive bounds on the message's time, at millisecond precision. */
  readonly after: Date | undefined
  readonly before: Date | undefined
  readonly limit: number
}

/** `FAIL SEARCH <code> <context> :<description>`. */
export interface SearchFail {
  readonly code: "INVALID_PARAMS" | "NEED_MORE_PARAMS"
  readonly context: ReadonlyArray<string>
  readonly description: string
}

const WORD = /^[^\s,:\0][^\s,\0]*$/

/** SEARCH's one parameter into a request, or the FAIL that answers it. */
export const parseSearch = (params: ReadonlyArray<string>): SearchRequest | SearchFail => {
  const raw = params[0]
  if (raw === undefined || raw === "") return { code: "NEED_MORE_PARAMS", context: [], description: "Missing search attributes" }
  const items = raw.split(";").filter((i) => i !== "")
  if (items.length > SEARCH_ATTRIBUTES) {
    return { code: "INVALID_PARAMS", context: ["*"], description: `At most ${SEARCH_ATTRIBUTES} attributes` }
  }
  const attrs = new Map<string, string>()
  for (const item of items) {
    const eq = item.indexOf("=")
    attrs.set(eq === -1 ? item : item.slice(0, eq), eq === -1 ? "" : unescapeTagValue(item.slice(eq + 1)))
  }
  const invalid = (name: string, description: string): SearchFail => ({ code: "INVALID_PARAMS", context: [name], description })
  const time = (name: "after" | "before"): Date | SearchFail | undefined => {
    const value = attrs.get(name)
    if (value === undefined) return undefined
    const ref = parseReference(`timestamp=${value}`)
    return ref?._tag === "Time" ? ref.time : invalid(name, "Invalid criteria")
  }
  const word = (name: "in" | "from"): string | SearchFail | undefined => {
    const value = attrs.get(name)
    if (value === undefined) return undefined
    return value.length <= SEARCH_WORD_CHARS && WORD.test(value) ? value : invalid(name, "Invalid criteria")
  }
  const after = time("after")
  if (after !== undefined && !(after instanceof Date)) return after
  const before = time("before")
  if (before !== undefined && !(before instanceof Date)) return before
  const target = word("in")
  if (target !== undefined && typeof target !== "string") return target
  const from = word("from")
  if (from !== undefined && typeof from !== "string") return from
  let limit = SEARCH_LIMIT
  const rawLimit = attrs.get("limit")
  if (rawLimit !== undefined) {
    if (!/^\d{1,9}$/.test(rawLimit) || Number(rawLimit) === 0) return invalid("limit", "Invalid limit")
    limit = Math.min(Number(rawLimit), SEARCH_LIMIT)
  }
  const text = attrs.get("text")
  if (text === undefined || text.trim() === "") return invalid("text", "The text attribute is required")
  if (text.length > SEARCH_TEXT_CHARS || /[\r\n\0]/.test(text)) return invalid("text", "Invalid criteria")
  return { text, target, from, after, before, limit }
}

const CONVERSATION: ReadonlySet<string> = new Set(["privmsg", "notice", "action"])

export const onSearch = (deps: ListenerDeps, d: Downstream, params: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const request = parseSearch(params)
    if (!("limit" in request)) return fail(d, "SEARCH", request.code, request.context, request.description)
    const network = d.network
    const accountId = d.signedIn?.accountId
    if (network === undefined || accountId === undefined) {
      return fail(d, "SEARCH", "INVALID_PARAMS", ["in"], "Cannot search on a control connection")
    }
    const status = yield* deps.control.status(network.id)
    const found = yield* deps.history.search({
      accountId,
      query: request.text,
      networkId: Option.some(network.id),
      targetFolded: Option.fromNullable(request.target).pipe(Option.map((t) => foldCase(status.caseMapping, t))),
      nick: Option.fromNullable(request.from),
      limit: request.limit,
      ...(request.after !== undefined ? { after: request.after } : {}),
      ...(request.before !== undefined ? { before: request.before } : {})
    })
    const rows = found.filter((row) => CONVERSATION.has(row.kind)).reverse()
    const batch = d.caps.enabled.has("batch") ? nextBatchId(d) : undefined
    if (batch !== undefined) replyLine(d, { command: "BATCH", params: [`+${batch}`, "soju.im/search"] })
    const extra = { ...(batch !== undefined ? { batch } : {}), ...(d.selfSource !== undefined ? { selfSource: d.selfSource } : {}) }
    for (const row of rows) reply(d, storedLine(row, d.view, extra))
    if (batch !== undefined) replyLine(d, { command: "BATCH", params: [`-${batch}`] })
  })
