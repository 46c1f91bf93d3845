// SearchPage: search_messages across every buffer (or one network), newest first; a result opens its buffer.
import { useState } from "preact/hooks"
import type { MessageRecord } from "../Protocol.js"
import { bufferHash } from "../Route.js"
import type { Store } from "../Store.js"
import { Text } from "./Text.js"

export const SearchPage = ({ store }: { readonly store: Store }) => {
  const [query, setQuery] = useState("")
  const [networkId, setNetworkId] = useState("")
  const [results, setResults] = useState<ReadonlyArray<MessageRecord> | null>(null)
  const [status, setStatus] = useState("")
  const search = async (e: Event) => {
    e.preventDefault()
    if (query.trim() === "") return
    setStatus("Searching…")
    try {
      const args = networkId === "" ? { query, limit: 100 } : { query, networkId: Number(networkId), limit: 100 }
      const r = await store.callOk<{ messages: ReadonlyArray<MessageRecord> }>("search_messages", args)
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
        <input id="search-query" type="search" value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
        <label for="search-network">In</label>
        <select id="search-network" value={networkId} onChange={(e) => setNetworkId(e.currentTarget.value)}>
          <option value="">every network</option>
          {networks.map((n) => <option key={n.id} value={String(n.id)}>{n.name}</option>)}
        </select>
        <button type="submit" class="primary">Search</button>
      </form>
      <p role="status">{status}</p>
      {results === null ? null : (
        <ol class="results" aria-label="Search results">
          {results.map((m) => (
            <li key={m.id}>
              <a href={bufferHash(m.networkId, m.target)}>{m.target}</a>{" "}
              <time dateTime={m.time}>{new Date(m.time).toLocaleString()}</time>{" "}
              <strong>{m.nick ?? ""}</strong> <Text text={m.text} />
            </li>
          ))}
        </ol>
      )}
    </section>
  )
}
