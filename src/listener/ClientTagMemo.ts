/**
 * ClientTagMemo: the client-only tags (`+name`) of the PRIVMSGs and NOTICEs the member's IRC clients send, kept until
 * the stored rows of those messages come back, so that every client of the member with message-tags — the sender's
 * echo included — gets the message with them (message-tags §"Client-only tags": the server relays them; soju does).
 * History keeps only `+draft/reply` (MessageLines.ts), so the tags are live only. A send is matched to its rows as
 * the echo rules match own sends (LiveEvents.ts): by network, folded target and text, a long text by its pieces in
 * order; the first session to see a row binds it, the others find it by its id.
 *
 *
 * It also keeps the draft/multiline messages the member's clients send (`rememberMultiline`), so that the member's
 * other clients with draft/multiline get each as the one batch it was (MultilineEcho.ts gathers its stored lines for
 * them as for the sender's echo), as soju relays a client's batch to its other clients. Only the sessions bound to the
 * network when it was sent take it, each once; it is forgotten once all have.
 *
 * Bounds: at most MEMO_SENDS sends await their rows, MEMO_MULTILINE multiline messages their other clients, and
 * MEMO_ROWS rows are remembered, the oldest dropped; a client's tags were already bounded at CLIENT_TAGS_MAX_BYTES by
 * the session (DownstreamSession.ts), a multiline message by its max-bytes and max-lines (Multiline.ts).
 *
 * Concurrency rule: one per listener; its methods are synchronous, called from the sessions' fibers (JavaScript runs
 * one step at a time).
 */
import type { StoredRow } from "../services/history/MessageRow.js"
import type { PendingMultilineEcho } from "./MultilineState.js"

export const MEMO_SENDS = 256
export const MEMO_ROWS = 1024
export const MEMO_MULTILINE = 64

/** A multiline message as its other clients gather it: what MultilineEcho.ts expects, without a label. */
export type SentMultiline = Omit<PendingMultilineEcho, "next" | "first" | "label">

interface Multiline {
  readonly networkId: number
  readonly message: SentMultiline
  /** The sessions still to take it (bound to the network when it was sent, the sender's excepted). */
  readonly awaiting: Set<number>
}

interface Send {
  readonly networkId: number
  readonly targetFolded: string
  remaining: string
  readonly tags: Readonly<Record<string, string>>
}

export const makeClientTagMemo = () => {
  const sends: Array<Send> = []
  const rows = new Map<number, Readonly<Record<string, string>>>()
  const multilines: Array<Multiline> = []
  return {
    /** A client sent `message` as a multiline batch; `others` are the other sessions bound to its network. */
    rememberMultiline: (networkId: number, message: SentMultiline, others: Iterable<number>): void => {
      const awaiting = new Set(others)
      if (awaiting.size === 0) return
      if (multilines.length >= MEMO_MULTILINE) multilines.shift()
      multilines.push({ networkId, message, awaiting })
    },
    /** A multiline message that was not sent after all. */
    forgetMultiline: (message: SentMultiline): void => {
      const i = multilines.findIndex((m) => m.message === message)
      if (i !== -1) multilines.splice(i, 1)
    },
    /**
     * The multiline message whose first stored line `row` is, for `session` to gather, taken; undefined when none.
     * `targetFolded` is the row's target folded.
     */
    takeMultiline: (row: StoredRow, targetFolded: string, session: number): SentMultiline | undefined => {
      if (!row.self || multilines.length === 0) return undefined
      const i = multilines.findIndex((m) =>
        m.networkId === row.networkId && m.awaiting.has(session) && m.message.targetFolded === targetFolded &&
        m.message.parts.find((p) => p.text !== "")?.text === row.text
      )
      if (i === -1) return undefined
      const m = multilines[i]!
      m.awaiting.delete(session)
      if (m.awaiting.size === 0) multilines.splice(i, 1)
      return m.message
    },
    /** A message with client-only tags went upstream. */
    remember: (networkId: number, targetFolded: string, text: string, tags: ReadonlyMap<string, string>): void => {
      if (tags.size === 0 || text === "") return
      if (sends.length >= MEMO_SENDS) sends.shift()
      sends.push({ networkId, targetFolded, remaining: text, tags: Object.fromEntries(tags) })
    },
    /** The client-only tags a stored row of the member's was sent with; `targetFolded` is its target folded. */
    tagsOf: (row: StoredRow, targetFolded: string): Readonly<Record<string, string>> | undefined => {
      const known = rows.get(row.id)
      if (known !== undefined || !row.self || row.text === "" || sends.length === 0) return known
      const i = sends.findIndex((s) => s.networkId === row.networkId && s.targetFolded === targetFolded && s.remaining.startsWith(row.text))
      if (i === -1) return undefined
      const send = sends[i]!
      send.remaining = send.remaining.slice(row.text.length).trimStart()
      if (send.remaining === "") sends.splice(i, 1)
      if (rows.size >= MEMO_ROWS) rows.delete(rows.keys().next().value!)
      rows.set(row.id, send.tags)
      return send.tags
    }
  }
}

export type ClientTagMemo = ReturnType<typeof makeClientTagMemo>
