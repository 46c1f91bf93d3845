// MentionsView: the messages that highlighted the member, across every network, newest first (`GET /api/mentions`,
// the rule of the unread highlights and Web Push); each opens its buffer at that message with the lines around it
// (Jump.ts). Read when the view opens and on "Refresh"; live highlights also show in the sidebar's counts.
import { useEffect, useState } from "preact/hooks"
import { api } from "../Api.js"
import type { MessageRecord } from "../Protocol.js"
import type { Store } from "../Store.js"
import { FoundMessage } from "./SearchPage.js"

export const MentionsView = ({ store }: { readonly store: Store }) => {
  const [mentions, setMentions] = useState<ReadonlyArray<MessageRecord> | null>(null)
  const [status, setStatus] = useState("Loading mentions…")
  const load = async () => {
    setStatus("Loading mentions…")
    const answer = await api<{ messages: ReadonlyArray<MessageRecord> }>("GET", "/api/mentions?limit=100")
    if (!answer.ok) return setStatus(`Could not load mentions: ${answer.error}`)
    setMentions(answer.body.messages)
    const n = answer.body.messages.length
    setStatus(n === 0 ? "No one has mentioned you yet." : `${n} ${n === 1 ? "mention" : "mentions"}, newest first.`)
  }
  useEffect(() => {
    void load()
  }, [])
  return (
    <section class="page" aria-labelledby="mentions-title">
      <h1 id="mentions-title">Mentions</h1>
      <p class="actions">
        <span role="status">{status}</span>
        <button type="button" class="small" onClick={() => void load()}>Refresh</button>
      </p>
      {mentions === null || mentions.length === 0 ? null : (
        <ol class="results" aria-label="Mentions">
          {mentions.map((m) => <FoundMessage key={m.id} store={store} message={m} />)}
        </ol>
      )}
    </section>
  )
}
