/**
 * MultilineEcho: the echo of a draft/multiline message to the client that sent it with echo-message (IRCv3
 * multiline §"Client-initiated batches" with echo-message; labeled-response: the echo, carrying the label of the
 * opening BATCH, is the response). The message is stored as the upstream delivers it, a line at a time (Multiline.ts),
 * so the session gathers its stored lines here — matched in order to the parts the client sent, blank parts allowed
 * to be missing — and, once the last has come, gives the batch back as the client composed it: `BATCH +<id>
 * draft/multiline <target>` with the label, the first line's msgid and time and the client tags, the lines with their
 * `draft/multiline-concat`, then `BATCH -<id>`. A client without batch or draft/multiline gets the non-blank lines,
 * the first labelled. A stored line of the member's to that target that is not the next part (the upstream changed
 * it) ends the gathering: the echo goes as it is, and the line is delivered as any other. The member's other clients
 * with draft/multiline gather another client's message the same way, unlabelled (ClientTagMemo.ts notes it for them,
 * LiveEvents.ts expects it).
 *
 * Concurrency rule: runs on the connection's session fiber only (Multiline.ts expects, LiveEvents.ts delivers).
 */
import { foldCase } from "../irc/CaseMapping.js"
import { formatLine, parsePrefix } from "../irc/IrcLine.js"
import { CONCAT_TAG, MULTILINE_BATCH, MULTILINE_CAP } from "../irc/TaggedMessages.js"
import type { StoredRow } from "../services/history/MessageRow.js"
import { type Downstream, MULTILINE_ECHOES, nextBatchId, SERVER_NAME, write } from "./Downstream.js"
import { shownMsgid, timeTag } from "./MessageLines.js"
import type { PendingMultilineEcho } from "./MultilineState.js"

/** A sent multiline message whose echo this client awaits; the oldest is given up past MULTILINE_ECHOES. */
export const expectMultilineEcho = (d: Downstream, echo: Omit<PendingMultilineEcho, "next" | "first">): void => {
  if (d.multilineEchoes.length >= MULTILINE_ECHOES) d.multilineEchoes.shift()
  d.multilineEchoes.push({ ...echo, next: 0, first: undefined })
}

/** True when `row` is a line of a multiline message this client awaits the echo of: held, and echoed when complete. */
export const takeMultilineRow = (d: Downstream, row: StoredRow): boolean => {
  if (!row.self || d.multilineEchoes.length === 0 || (row.kind !== "privmsg" && row.kind !== "notice")) return false
  const folded = foldCase(d.caseMapping, row.target)
  const i = d.multilineEchoes.findIndex((e) => e.targetFolded === folded)
  if (i === -1) return false
  const echo = d.multilineEchoes[i]!
  let next = echo.next
  while (next < echo.parts.length && echo.parts[next]!.text === "" && row.text !== "") next++
  if (next >= echo.parts.length || echo.parts[next]!.text !== row.text || (row.kind === "notice") !== (echo.command === "NOTICE")) {
    d.multilineEchoes.splice(i, 1)
    writeEcho(d, echo)
    return false
  }
  echo.next = next + 1
  echo.first ??= row
  if (echo.parts.slice(echo.next).every((p) => p.text === "")) {
    d.multilineEchoes.splice(i, 1)
    writeEcho(d, echo)
  }
  return true
}

const writeEcho = (d: Downstream, echo: PendingMultilineEcho) => {
  const caps = d.caps.enabled
  const first: Record<string, string> = {}
  if (echo.label !== undefined && caps.has("labeled-response")) first.label = echo.label
  if (echo.first !== undefined && caps.has("server-time")) first.time = timeTag(echo.first.time)
  if (echo.first !== undefined && caps.has("message-tags")) first.msgid = shownMsgid(echo.first)
  if (caps.has("message-tags")) for (const [key, value] of echo.tags) first[key] = value
  const source = parsePrefix(d.selfSource ?? d.nick)
  const line = (tags: Record<string, string>, text: string) =>
    formatLine({ tags, source, command: echo.command, params: [echo.target, text] })
  if (caps.has("batch") && caps.has(MULTILINE_CAP)) {
    const id = nextBatchId(d)
    write(d, formatLine({ tags: first, source: { nick: SERVER_NAME }, command: "BATCH", params: [`+${id}`, MULTILINE_BATCH, echo.target] }))
    for (const part of echo.parts) write(d, line(part.concat ? { batch: id, [CONCAT_TAG]: "" } : { batch: id }, part.text))
    write(d, formatLine({ source: { nick: SERVER_NAME }, command: "BATCH", params: [`-${id}`] }))
    return
  }
  // multiline §"Fallback": the non-blank lines, each a message; the first carries the message's tags.
  let tags = first
  for (const part of echo.parts) {
    if (part.text === "") continue
    write(d, line(tags, part.text))
    tags = {}
  }
}
