// BufferMenu: what the member chooses for the open buffer (Preferences.ts; docs/contract.md "Preferences") — pinned
// (first in the sidebar), muted (dimmed, no notification, only highlights counted), detached (stays joined and stored,
// out of the sidebar until a highlight) and which messages notify: all, highlights (the default; every message of a
// conversation is one) or none. A disclosure button opens the panel; Escape closes it and gives the focus back.
// Stored on the server, so every tab, browser and IRC client of the member (draft/metadata-2) sees the same.
import { useRef, useState } from "preact/hooks"
import type { Buffer } from "../Buffer.js"
import { type NotifyLevel, preferences } from "../Preferences.js"

const LEVELS: ReadonlyArray<readonly [NotifyLevel, string]> = [["all", "Every message"], ["highlights", "Highlights"], ["none", "Nothing"]]

export const BufferMenu = ({ buffer }: { readonly buffer: Buffer }) => {
  const [open, setOpen] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const toggle = useRef<HTMLButtonElement>(null)
  const choice = preferences.choice(buffer.networkId, buffer.target)
  const set = (patch: Parameters<typeof preferences.setBuffer>[2]) =>
    void preferences.setBuffer(buffer.networkId, buffer.target, patch).then(setError)
  const id = `buffer-menu-${buffer.key.replace(/\W/g, "_")}`
  return (
    <div
      class="buffer-menu"
      onKeyDown={(e) => {
        if (e.key !== "Escape" || !open) return
        setOpen(false)
        toggle.current?.focus()
      }}
    >
      <button type="button" ref={toggle} aria-expanded={open} aria-controls={id} onClick={() => setOpen(!open)}>
        Buffer settings
      </button>
      {!open ? null : (
        <div
          id={id}
          class="buffer-menu-panel"
          role="group"
          aria-label={`Settings of ${buffer.target}`}
        >
          <label><input type="checkbox" checked={choice.pinned} onChange={(e) => set({ pinned: e.currentTarget.checked })} /> Pinned</label>
          <label><input type="checkbox" checked={choice.muted} onChange={(e) => set({ muted: e.currentTarget.checked })} /> Muted</label>
          <label><input type="checkbox" checked={choice.detached} onChange={(e) => set({ detached: e.currentTarget.checked })} /> Detached</label>
          <fieldset>
            <legend>Notify me of</legend>
            {LEVELS.map(([level, label]) => (
              <label key={level}>
                <input type="radio" name={`${id}-notify`} checked={choice.notify === level} onChange={() => set({ notify: level })} /> {label}
              </label>
            ))}
          </fieldset>
          {error === null ? null : <p role="alert" class="error">{error}</p>}
        </div>
      )}
    </div>
  )
}
