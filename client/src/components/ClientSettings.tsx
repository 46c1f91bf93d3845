// ClientSettings: the web client's settings that follow the member to another browser (Preferences.ts; docs/contract.md
// "Preferences"): the theme (light, dark, or the system's) and link previews. A change is stored on the server and
// reaches every tab of the member; a refusal is said here.
import { useState } from "preact/hooks"
import { preferences, type Theme } from "../Preferences.js"

const THEMES: ReadonlyArray<readonly [Theme, string]> = [["system", "System"], ["light", "Light"], ["dark", "Dark"]]

export const ClientSettings = () => {
  const [error, setError] = useState<string | null>(null)
  const client = preferences.client
  const save = (patch: Parameters<typeof preferences.setClientSettings>[0]) =>
    void preferences.setClientSettings(patch).then(setError)
  return (
    <div class="client-settings">
      <label>
        Theme{" "}
        <select value={client.theme} onChange={(e) => save({ theme: e.currentTarget.value as Theme })}>
          {THEMES.map(([value, label]) => <option key={value} value={value}>{label}</option>)}
        </select>
      </label>
      <label>
        <input type="checkbox" checked={client.linkPreviews !== false} onChange={(e) => save({ linkPreviews: e.currentTarget.checked })} />{" "}
        Link previews
      </label>
      {error === null ? null : <p role="alert" class="error">{error}</p>}
    </div>
  )
}
