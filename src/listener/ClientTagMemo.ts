/**
 * ClientTagMemo: the client-only tags (`+name`) of the PRIVMSGs and NOTICEs the member's IRC clients send, kept until
 * the stored rows of those messages come back, so that every client of the member with message-tags — the sender's
 * echo included — gets the message with them (message-tags §"Client-only tags": the server relays them; soju does).
 * History keeps only `+draft/reply` (MessageLines.ts), so the tags are live only. A send is matched to its rows as
 * the echo rules match own sends (LiveEvents.ts): by network, folded target and text, a long text by its pieces in
 * order; the first session to see a row binds it, the others find it by its id.
 *
 * Bounds: at most MEMO_SENDS sends await their rows and MEMO_ROWS rows are remembered, the oldest dropped; a client's
 * tags were already bounded at CLIENT_TAGS_MAX_BYTES by the session (DownstreamSession.ts).
 *
 * Concurrency rule: one per listener; its methods are synchronous, called from the sessions' fibers (JavaScript runs
 * one step at a time).
 */
import type { StoredRow } from "../services/history/MessageRow.js"

export const MEMO_SENDS = 256
export const MEMO_ROWS = 1024

interface Send {
  readonly networkId: number
  readonly targetFolded: string
  remaining: string
  readonly tags: Readonly<Record<string, string>>
}

export const makeClientTagMemo = () => {
  const sends: Array<Send> = []
  const rows = new Map<number, Readonly<Record<string, string>>>()
  return {
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
