/**
 * ChatHistory: answers IRCv3 draft/chathistory from the stored history (MessageHistory.range, targetsBetween), in a
 * `chathistory` batch (or `draft/chathistory-targets` for TARGETS) of PRIVMSG and NOTICE lines with `time` and
 * `msgid` tags, oldest first. With draft/event-playback the channel's stored JOIN, PART, QUIT, KICK, NICK, MODE and
 * TOPIC lines come in their places (MessageLines.storedEventLine), and count towards the limit; without it only
 * messages are sent, as the extension requires.
 * Ordering within a buffer is by message id, the order history stored them in, so messages sharing a timestamp keep
 * a total order. AROUND gives half the limit before the reference and the rest from it on; BETWEEN reads either way.
 * A server buffer, a control connection or a target that is no channel or nick name answer `INVALID_TARGET`; a name
 * without history (a channel never joined, a nick never written to) an empty batch, as soju answers.
 * A `msgid=` reference is the msgid the client was shown (MessageLines.shownMsgid): the upstream's, looked up in the
 * target's buffer first, else Belay's own id; one that names neither answers an empty batch, as soju does. With
 * message-tags the stored reactions come as TAGMSG in their places (and count towards the limit); redacted messages
 * are left out (docs/contract.md "Message ids, replies, reactions and redaction").
 *
 * Concurrency rule: runs on the connection's session fiber only.
 */
import { Effect, Option } from "effect"
import { foldCase } from "../irc/CaseMapping.js"
import type { Bound, StoredMessage } from "../services/history/MessageHistory.js"
import { type ChatHistoryRequest, isHistoryTarget, parseChatHistory, type Reference } from "./ChatHistoryRequest.js"
import { type Downstream, fail, nextBatchId, reply, replyLine } from "./Downstream.js"
import type { ListenerDeps } from "./ListenerDeps.js"
import { messageIdOf, storedRowLine, timeTag } from "./MessageLines.js"

const boundBefore = (a: Bound, b: Bound, timeOfA: Date | undefined, timeOfB: Date | undefined): boolean => {
  if (a._tag === "Id" && b._tag === "Id") return a.id < b.id
  const ta = a._tag === "Time" ? a.time : timeOfA
  const tb = b._tag === "Time" ? b.time : timeOfB
  return ta !== undefined && tb !== undefined && ta.getTime() <= tb.getTime()
}

/** A reference as a bound of the buffer: a msgid the upstream's first, else Belay's id; undefined when neither. */
const boundOf = (deps: ListenerDeps, networkId: number, folded: string, ref: Reference) =>
  Effect.gen(function*() {
    if (ref._tag !== "Msgid") return ref
    const upstream = yield* deps.history.idOfMsgid(networkId, folded, ref.msgid)
    const id = Option.getOrUndefined(upstream) ?? messageIdOf(ref.msgid)
    return id === undefined ? undefined : { _tag: "Id" as const, id }
  })

const rowsFor = (
  deps: ListenerDeps,
  networkId: number,
  folded: string,
  request: ChatHistoryRequest,
  kinds: { readonly events: boolean; readonly reactions: boolean }
) =>
  Effect.gen(function*() {
    const range = (window: Parameters<ListenerDeps["history"]["range"]>[2]) =>
      deps.history.range(networkId, folded, { ...window, ...kinds })
    const none: ReadonlyArray<StoredMessage> = []
    const bound = (ref: Reference) => boundOf(deps, networkId, folded, ref)
    switch (request._tag) {
      case "Before": {
        const ref = yield* bound(request.ref)
        return ref === undefined ? none : yield* range({ before: ref, newest: true, limit: request.limit })
      }
      case "After": {
        const ref = yield* bound(request.ref)
        return ref === undefined ? none : yield* range({ after: ref, newest: false, limit: request.limit })
      }
      case "Latest": {
        const ref = request.ref === "*" ? undefined : yield* bound(request.ref)
        if (request.ref !== "*" && ref === undefined) return none
        return yield* range({ after: ref, newest: true, limit: request.limit })
      }
      case "Around": {
        const ref = yield* bound(request.ref)
        if (ref === undefined) return none
        const half = Math.floor(request.limit / 2)
        const before = yield* range({ before: ref, newest: true, limit: half })
        const from = yield* range({ after: ref, afterInclusive: true, newest: false, limit: request.limit - half })
        return [...before, ...from]
      }
      case "Between": {
        const from = yield* bound(request.from)
        const to = yield* bound(request.to)
        if (from === undefined || to === undefined) return none
        const timeOf = (b: Bound) =>
          b._tag === "Id" ? Effect.map(deps.history.timeOf(networkId, b.id), Option.getOrUndefined) : Effect.succeed(undefined)
        const forward = boundBefore(from, to, yield* timeOf(from), yield* timeOf(to))
        return forward
          ? yield* range({ after: from, before: to, newest: false, limit: request.limit })
          : yield* range({ after: to, before: from, newest: true, limit: request.limit })
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
    if (request.target.startsWith(":server:") || !isHistoryTarget(d.view.channelTypes, request.target)) {
      return fail(d, "CHATHISTORY", "INVALID_TARGET", [params[0]!, request.target], "No such target")
    }
    const status = yield* deps.control.status(network.id)
    const kinds = { events: d.caps.enabled.has("draft/event-playback"), reactions: d.caps.enabled.has("message-tags") }
    const rows = yield* rowsFor(deps, network.id, foldCase(status.caseMapping, request.target), request, kinds)
    open("chathistory", request.target)
    const extra = { ...(batch !== undefined ? { batch } : {}), ...(d.selfSource !== undefined ? { selfSource: d.selfSource } : {}) }
    for (const row of rows) {
      const line = storedRowLine(row, d.view, extra)
      if (line !== undefined) reply(d, line)
    }
    close()
  })
