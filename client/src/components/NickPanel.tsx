// NickPanel: what the member knows about a nick — the note kept on the server (get_nick_note / set_nick_note, synced
// to every tab by the `nick-note` event) — and a way to start a conversation with it.
import { useEffect, useState } from "preact/hooks"
import type { Store } from "../Store.js"

export const NickPanel = ({ store, networkId, nick, onClose }: {
  readonly store: Store
  readonly networkId: number
  readonly nick: string
  readonly onClose: () => void
}) => {
  const known = store.note(networkId, nick)
  const [draft, setDraft] = useState<string | null>(null)
  const [status, setStatus] = useState("")
  // The panel is keyed by network and nick (BufferView), so another nick is a new panel with an empty draft. Clearing
  // the draft here instead, after the first render, erased what the member had already typed when the effect ran late.
  useEffect(() => {
    if (known === undefined) {
      store.callOk<{ note: string }>("get_nick_note", { networkId, nick }).then(
        (r) => store.setNote(networkId, nick, r.note),
        (e: Error) => setStatus(e.message)
      )
    }
  }, [networkId, nick])
  const value = draft ?? known ?? ""
  const save = async (e: Event) => {
    e.preventDefault()
    try {
      await store.callOk("set_nick_note", { networkId, nick, note: value })
      setDraft(null)
      setStatus("Saved.")
    } catch (error) {
      setStatus((error as Error).message)
    }
  }
  return (
    <aside class="nick-panel" role="complementary" aria-label={`About ${nick}`}>
      <h2>{nick}</h2>
      <form onSubmit={save}>
        <label for="nick-note">Note on {nick}</label>
        <textarea id="nick-note" rows={4} maxLength={4096} value={value} onInput={(e) => setDraft(e.currentTarget.value)} />
        <div class="actions">
          <button type="submit" class="primary">Save note</button>
          <button type="button" onClick={() => store.openBuffer(networkId, nick)}>Message {nick}</button>
          <button type="button" onClick={onClose}>Close</button>
        </div>
        <p role="status" class="muted">{status}</p>
      </form>
    </aside>
  )
}
