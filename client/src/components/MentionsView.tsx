// MentionsView: the messages that highlighted the member, across every network, newest first (`GET /api/mentions`,
// the rule of the unread highlights and Web Push); each opens its buffer at that message with the lines around it
// (Jump.ts). Read a page when the view opens and on "Refresh"; older pages (`before`, the answer's `nextBefore`,
// docs/contract.md) as the member scrolls to the end of the list or with the button, as the message log loads older
// history (MessageLog.tsx). Live highlights also show in the sidebar's counts.
import { useEffect, useRef, useState } from "preact/hooks"
import { api } from "../Api.js"
import { mergeById } from "../MergeById.js"
import type { MessageRecord } from "../Protocol.js"
import type { Store } from "../Store.js"
import { FoundMessage } from "./SearchPage.js"

/** Mentions a page: the route's largest. */
const PAGE = 100

interface Page {
  readonly messages: ReadonlyArray<MessageRecord>
  readonly nextBefore: number | null
}

const counted = (n: number) => `${n} ${n === 1 ? "mention" : "mentions"}, newest first.`

export const MentionsView = ({ store }: { readonly store: Store }) => {
  const [mentions, setMentions] = useState<ReadonlyArray<MessageRecord> | null>(null)
  const [older, setOlder] = useState<number | null>(null)
  const [loading, setLoading] = useState(false)
  // An older page that failed is asked for again only from the button, never in a loop of the observer.
  const [failed, setFailed] = useState(false)
  const [status, setStatus] = useState("Loading mentions…")
  // A refresh replaces the list: an older page asked for before it is dropped when it answers.
  const generation = useRef(0)
  const edge = useRef<HTMLButtonElement>(null)

  const load = async () => {
    const mine = ++generation.current
    setLoading(true)
    setStatus("Loading mentions…")
    const answer = await api<Page>("GET", `/api/mentions?limit=${PAGE}`)
    if (mine !== generation.current) return
    setLoading(false)
    setFailed(false)
    if (!answer.ok) return setStatus(`Could not load mentions: ${answer.error}`)
    setMentions(answer.body.messages)
    setOlder(answer.body.nextBefore)
    const n = answer.body.messages.length
    setStatus(n === 0 && answer.body.nextBefore === null ? "No one has mentioned you yet." : counted(n))
  }

  const loadOlder = async () => {
    if (loading || older === null || mentions === null) return
    const mine = generation.current
    setLoading(true)
    const answer = await api<Page>("GET", `/api/mentions?limit=${PAGE}&before=${older}`)
    if (mine !== generation.current) return
    setLoading(false)
    setFailed(!answer.ok)
    if (!answer.ok) return setStatus(`Could not load older mentions: ${answer.error}`)
    // Newest first on screen; mergeById keeps ids ascending.
    const all = [...mergeById([...mentions].reverse(), [...answer.body.messages].reverse())].reverse()
    setMentions(all)
    setOlder(answer.body.nextBefore)
    setStatus(counted(all.length))
  }

  useEffect(() => {
    void load()
  }, [])

  // The end of the list in sight (scrolled to, or a page too short to fill the screen): the next older page.
  useEffect(() => {
    const el = edge.current
    if (el === null || loading || failed || typeof IntersectionObserver === "undefined") return
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) void loadOlder()
    })
    observer.observe(el)
    return () => observer.disconnect()
  }, [older, loading, failed, mentions])

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
      {mentions === null ? null : older !== null ? (
        <p class="actions">
          <button type="button" ref={edge} onClick={() => void loadOlder()} disabled={loading}>
            {loading ? "Loading older mentions…" : "Load older mentions"}
          </button>
        </p>
      ) : mentions.length > 0 ? <p class="history-start">Start of mentions.</p> : null}
    </section>
  )
}
