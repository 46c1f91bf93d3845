/**
 * MessageRecord: a stored message as the member sees it — the `message` record of the MCP
 * tools (docs/contract.md "MCP tool shapes") and of the browser WebSocket's `message` event, one
 * rendering for both. A marked relay bot's line is shown as its inner speaker's, with
 * `relayBot` naming the bot (the interface, set_relay_bot; RelayEnvelope.ts); the mark is
 * applied when the message is read, never stored. The upstream's msgid, the reply reference and the redaction
 * mark show only when there is one (docs/contract.md "Message ids, replies, reactions and redaction"). Pure.
 */
import { type CaseMapping, foldCase } from "../../irc/CaseMapping.js"
import { toIsoTime } from "../../schema/Ids.js"
import { type SerializedPart, serializedPart } from "../../schema/ToolCatalog.js"
import type { MessageRecord } from "../../schema/SocketFrame.js"
import type { StoredMessage } from "./MessageHistory.js"
import type { RelayBotMarks } from "../networks/NickNotes.js"
import { unwrapRelayed } from "./RelayEnvelope.js"

/** What rendering needs of a stored message: the message as MessageHistory reads it. */
export type RenderableMessage = StoredMessage

const RELAYABLE: ReadonlySet<string> = new Set(["privmsg", "notice", "action"])

/** The record of `m`, with the network's relay-bot marks (keyed by nick folded with `caseMapping`). */
export const toMessageRecord = (m: RenderableMessage, bots: RelayBotMarks, caseMapping: CaseMapping): MessageRecord => {
  const base = {
    id: m.id,
    networkId: m.networkId,
    target: m.target,
    time: toIsoTime(m.time),
    kind: m.kind,
    nick: m.nick,
    text: m.text,
    self: m.self,
    ...(m.numeric !== null ? { numeric: m.numeric } : {}),
    ...(m.encryption !== "plain" ? { encrypted: m.encryption === "decrypted" } : {}),
    ...(m.msgid != null ? { msgid: m.msgid } : {}),
    ...(m.replyTo != null ? { replyTo: m.replyTo } : {}),
    ...(m.redacted === true ? { redacted: true as const } : {})
  }
  // A redacted message has no text left to unwrap a relayed speaker from.
  const bot = m.nick !== null && bots.size > 0 && RELAYABLE.has(m.kind) && m.redacted !== true
    ? bots.get(foldCase(caseMapping, m.nick))
    : undefined
  if (!bot) return base
  const inner = unwrapRelayed(m.text, bot.pattern)
  return inner ? { ...base, nick: inner.nick, text: inner.message, relayBot: bot.nick } : base
}

interface SerializedEntry {
  readonly bots: RelayBotMarks
  readonly caseMapping: CaseMapping
  readonly part: SerializedPart
}

/**
 * Records serialized once per message object and rendering. The newest page of a buffer stays
 * in memory (RecentPages) and is what agents poll and tabs draw first; with this, answering it
 * again joins strings instead of rendering and serializing 100 records (and escaping them into
 * the MCP text item). Keyed by the message object, so an entry lives exactly as long as the
 * message is kept; an entry made with other relay-bot marks (NickNotes makes a new marks map
 * on every change) or another case mapping is rendered again.
 */
const serialized = new WeakMap<RenderableMessage, SerializedEntry>()

/** `toMessageRecord` of `m`, serialized: from memory when this message object was rendered alike before. */
export const serializedMessageRecord = (m: RenderableMessage, bots: RelayBotMarks, caseMapping: CaseMapping): SerializedPart => {
  const hit = serialized.get(m)
  if (hit !== undefined && hit.bots === bots && hit.caseMapping === caseMapping) return hit.part
  const part = serializedPart(JSON.stringify(toMessageRecord(m, bots, caseMapping)))
  serialized.set(m, { bots, caseMapping, part })
  return part
}
