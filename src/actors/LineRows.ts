/**
 * LineRows: for each upstream line a network publishes to NetworkFeed, where it stands among the history rows, in
 * MessageWriter's append order (docs/decisions/irc-listener.md "Live lines in the upstream's order"):
 * - `after`, the newest conversation row (PRIVMSG, NOTICE, ACTION) the network appended before the line's own rows:
 *   the listener sends the line after that row;
 * - `rows`, the first and last of the channel-event rows the line itself became (EventStamps.CHANNEL_EVENT_KINDS),
 *   when they carry no upstream msgid: the listener sends the line with the first one's msgid and time, as
 *   CHATHISTORY shows it (EventStamps.ts).
 * The actor appends a line's rows, then publishes the line (network/Inbound.ts), each network on its one dispatcher
 * fiber; so the rows a network appended since its last published line are its own sends (stored locally, each under
 * the raw line it wrote) and then the line's own rows, which all carry the line as their raw text. That raw text
 * tells them apart.
 *
 * Concurrency rule: synchronous steps only; LocalActors calls `appended` right after each MessageWriter.append and
 * `published` as a line is published, from the network's dispatcher fiber.
 */
import type { NewMessage } from "../services/history/MessageRow.js"
import { CHANNEL_EVENT_KINDS } from "../services/events/EventStamps.js"

const CONVERSATION: ReadonlySet<string> = new Set(["privmsg", "notice", "action"])

/** The rows a network appended since its last published line that share one raw line (the latest such run). */
interface Run {
  readonly raw: string | null
  /** The newest conversation row before the run. */
  readonly before: number
  /** Its first and last channel events without an upstream msgid; 0 for none. */
  first: number
  last: number
}

export const makeLineRows = () => {
  /** Per network, the newest conversation row it appended. */
  const lastConversation = new Map<number, number>()
  /** Per network, the run appended since its last published line; none once the line is published. */
  const runs = new Map<number, Run>()
  return {
    /** `message` was appended as row number `seq`. */
    appended: (message: NewMessage, seq: number): void => {
      const networkId = message.networkId
      const raw = message.raw ?? null
      let run = runs.get(networkId)
      if (run === undefined || run.raw !== raw) {
        runs.set(networkId, (run = { raw, before: lastConversation.get(networkId) ?? 0, first: 0, last: 0 }))
      }
      if (CONVERSATION.has(message.kind)) lastConversation.set(networkId, seq)
      else if (CHANNEL_EVENT_KINDS.has(message.kind) && message.msgid == null) {
        if (run.first === 0) run.first = seq
        run.last = seq
      }
    },
    /** The line `raw` of the network is published now: where it stands. */
    published: (networkId: number, raw: string): { readonly after: number; readonly rows?: readonly [number, number] } => {
      const run = runs.get(networkId)
      runs.delete(networkId)
      if (run === undefined || run.raw !== raw) return { after: lastConversation.get(networkId) ?? 0 }
      return run.first === 0 ? { after: run.before } : { after: run.before, rows: [run.first, run.last] }
    }
  }
}

export type LineRows = ReturnType<typeof makeLineRows>
