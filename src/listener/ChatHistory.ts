/**
 * ChatHistory: answers IRCv3 draft/chathistory from the stored history (MessageHistory.range, targetsBetween), in a
 * `chathistory` batch (or `draft/chathistory-targets` for TARGETS) of PRIVMSG and NOTICE lines with `time` and
 * `msgid` tags, oldest first. With draft/event-playback the channel's stored JOIN, PART, QUIT, KICK, NICK, MODE and
 * TOPIC lines come in their places (MessageLines.storedEventLine), and count towards the limit; without it only
 * messages are sent, as the extension requires.
 * Ordering within a buffer is by message id, the order history stored them in, so messages sharing a timestamp keep
 * a total order. AROUND gives half the limit before the reference and the rest from it on; BETWEEN reads either way.
 * A server buffer, a control connection or an unknown target answer an empty batch or `INVALID_TARGET`.
 *
 * Concurrency rule: runs on the connection's session fiber only.
 */
import { Effect, Option } from "effect"
import { foldCase } from "../irc/CaseMapping.js"
import type { Bound, StoredMessage } from "../services/history/MessageHistory.js"
import { type ChatHistoryRequest, parseChatHistory } from "./ChatHistoryRequest.js"
import { type Downstream, fail, nextBatchId, reply, replyLine } from "./Downstream.js"
import type { ListenerDeps } from "./ListenerDeps.js"
import { EVENT_KINDS, storedEventLine, storedLine, timeTag } from "./MessageLines.js"

const boundBefore = (a: Bound, b: Bound, timeOfA: Date | undefined, timeOfB: Date | undefined): boolean => {
  if (a._tag === "Id" && b._tag === "Id") return a.id < b.id
  const ta = a._tag === "Time" ? a.time : timeOfA
  const tb = b._tag === "Time" ? b.time : timeOfB
  return ta !== undefined && tb !== undefined && ta.getTime() <= tb.getTime()
}

const rowsFor = (deps: ListenerDeps, networkId: number, folded: string, request: ChatHistoryRequest, events: boolean) =>
  Effect.gen(function*() {
    const range = (window: Parameters<ListenerDeps["history"]["range"]>[2]) =>
      deps.history.range(networkId, folded, { ...window, events })
    switch (request._tag) {
      case "Before":
        return yield* range({ before: request.ref, newest: true, limit: request.limit })
      case "After":
        return yield* range({ after: request.ref, newest: false, limit: request.limit })
      case "Latest":
        return yield* range({ after: request.ref === "*" ? undefined : request.ref, newest: true, limit: request.limit })
      case "Around": {
        const half = Math.floor(request.limit / 2)
        const before = yield* range({ before: request.ref, newest: true, limit: half })
        const from = yield* range({ after: request.ref, afterInclusive: true, newest: false, limit: request.limit - half })
        return [...before, ...from]
      }
      case "Between": {
        const timeOf = (b: Bound) =>
          b._tag === "Id" ? Effect.map(deps.history.timeOf(networkId, b.id), Option.getOrUndefined) : Effect.succeed(undefined)
        const forward = boundBefore(request.from, request.to, yield* timeOf(request.from), yield* timeOf(request.to))
        return forward
          ? yield* range({ after: request.from, before: request.to, newest: false, limit: request.limit })
          : yield* range({ after: request.to, before: request.from, newest: true, limit: request.limit })
      }
      case "Targets":
        return [] as ReadonlyArray<StoredMessage>
    }
  })

export const onChatHistory = (deps: ListenerDeps, d: Downstream, params: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const request = parseChatHistory(params)
    if (!("_tag" in request)) return fail(d, "CHATHISTORY", request.code, request.context, request.description)
    const network = d.network
    if (network === undefined) {
      return fail(d, "CHATHISTORY", "INVALID_TARGET", [params[0] ?? "*", params[1] ?? "*"], "No network bound")
    }
    const batch = d.caps.enabled.has("batch") ? nextBatchId(d) : undefined
    const open = (type: string, ...args: ReadonlyArray<string>) => {
      if (batch !== undefined) replyLine(d, { command: "BATCH", params: [`+${batch}`, type, ...args] })
    }
    const close = () => {
      if (batch !== undefined) replyLine(d, { command: "BATCH", params: [`-${batch}`] })
    }
    if (request._tag === "Targets") {
      const targets = yield* deps.history.targetsBetween(network.id, request.from, request.to, request.limit)
      open("draft/chathistory-targets")
      for (const t of targets) {
        replyLine(d, { command: "CHATHISTORY", params: ["TARGETS", t.target, timeTag(t.lastMessageAt)] }, batch !== undefined ? { batch } : {})
      }
      return close()
    }
    if (request.target.startsWith(":server:") || request.target.includes(",")) {
      return fail(d, "CHATHISTORY", "INVALID_TARGET", [params[0]!, request.target], "No such target")
    }
    const status = yield* deps.control.status(network.id)
    const events = d.caps.enabled.has("draft/event-playback")
    const rows = yield* rowsFor(deps, network.id, foldCase(status.caseMapping, request.target), request, events)
    open("chathistory", request.target)
    const extra = { ...(batch !== undefined ? { batch } : {}), ...(d.selfSource !== undefined ? { selfSource: d.selfSource } : {}) }
    for (const row of rows) {
      const line = EVENT_KINDS.has(row.kind) ? storedEventLine(row, d.view, extra) : storedLine(row, d.view, extra)
      if (line !== undefined) reply(d, line)
    }
    close()
  })
