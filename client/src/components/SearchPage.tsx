// SearchPage: search_messages across every buffer (or one network), newest first. The box takes the filters
// `in:<buffer>` and `from:<nick>` (SearchFilters.ts); a result opens its buffer at that message, with the lines around
// it (Jump.ts).
import { useState } from "preact/hooks"
import { jumpTo } from "../Jump.js"
import type { MessageRecord } from "../Protocol.js"
import { bufferHash } from "../Route.js"
import { searchArguments } from "../SearchFilters.js"
import type { Store } from "../Store.js"
import { Text } from "./Text.js"

export const SEARCH_LIMIT = 100

/** A found message or a mention: its buffer and time, a link that opens the buffer at it. */
export const FoundMessage = ({ store, message: m }: { readonly store: Store; readonly message: MessageRecord }) => {
  const network = store.networks.get(m.networkId)?.name
  return (
    <li>
      <a
        href={bufferHash(m.networkId, m.target)}
        onClick={(e) => {
          e.preventDefault()
          void jumpTo(store, m.networkId, m.target, m.id)
        }}
      >
        {m.target}
        {network === undefined || store.networks.size < 2 ? null : <span class="muted"> ({network})</span>}
      </a>{" "}
      <time dateTime={m.time}>{new Date(m.time).toLocaleString()}</time>{" "}
      <strong>{m.nick ?? ""}</strong> <Text text={m.text} />
    </li>
  )
}

export const SearchPage = ({ store }: { readonly store: Store }) => {
  const [query, setQuery] = useState("")
  const [networkId, setNetworkId] = useState("")
  const [results, setResults] = useState<ReadonlyArray<MessageRecord> | null>(null)
  const [status, setStatus] = useState("")
  const search = async (e: Event) => {
    e.preventDefault()
    if (query.trim() === "") return
    const asked = searchArguments(query, networkId === "" ? null : Number(networkId), SEARCH_LIMIT)
    if (!asked.ok) return setStatus(asked.error)
    setStatus("Searching…")
    try {
      const r = await store.callOk<{ messages: ReadonlyArray<MessageRecord> }>("search_messages", asked.args)
      setResults(r.messages)
      setStatus(`${r.messages.length} ${r.messages.length === 1 ? "message" : "messages"} found.`)
    } catch (error) {
      setStatus((error as Error).message)
    }
  }
  const networks = [...store.networks.values()]
  return (
    <section class="page" aria-labelledby="search-title">
      <h1 id="search-title">Search</h1>
      <form role="search" class="search-form" onSubmit={search}>
        <label for="search-query">Search messages</label>
        <input
          id="search-query"
          type="search"
          value={query}
          aria-describedby="search-help"
          onInput={(e) => setQuery(e.currentTarget.value)}
        />
        <label for="search-network">In</label>
        <select id="search-network" value={networkId} onChange={(e) => setNetworkId(e.currentTarget.value)}>
          <option value="">every network</option>
          {networks.map((n) => <option key={n.id} value={String(n.id)}>{n.name}</option>)}
        </select>
        <button type="submit" class="primary">Search</button>
      </form>
      <p id="search-help" class="muted">
        Narrow with <code>in:#channel</code> (or <code>in:nick</code> for a conversation) and <code>from:nick</code>. A
        result opens its buffer at that message.
      </p>
      <p role="status">{status}</p>
      {results === null ? null : (
        <ol class="results" aria-label="Search results">
          {results.map((m) => <FoundMessage key={m.id} store={store} message={m} />)}
        </ol>
      )}
    </section>
  )
}
