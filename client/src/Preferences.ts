// Preferences: what the member chose per buffer (pinned, muted, detached, the notification level) and the client's
// settings that follow the member to another browser (the theme, link previews), kept on the server
// (docs/contract.md "Preferences"): read with `GET /api/preferences` when the tab starts and after a reconnect,
// changed with PUT, and kept in step by the socket's `buffer-preference` and `client-preferences` frames, so every tab
// and browser of the member shows the same. IRC clients see pinned and muted as draft/metadata-2's soju.im keys.
//
// Concurrency rule: the browser's one event loop; the state changes only here, and `changed` (the Store's) redraws.
import { api } from "./Api.js"
import { bufferKey } from "./Casemap.js"
import type { BufferChoice, BufferPreference, ClientDocument, NotifyLevel, Theme } from "../../src/schema/Preferences.js"

export type { BufferChoice, NotifyLevel, Theme }

const DEFAULT_CHOICE: BufferChoice = { pinned: false, muted: false, detached: false, notify: "highlights" }
const DEFAULT_CLIENT: ClientDocument = { theme: "system", linkPreviews: true }

type Frame =
  | ({ readonly type: "buffer-preference" } & BufferPreference)
  | { readonly type: "client-preferences"; readonly preferences: ClientDocument }

/** The theme on the page: `light` and `dark` are set on the root element (styles.css), `system` follows the OS. */
export const applyTheme = (theme: Theme): void => {
  const root = document.documentElement
  if (theme === "system") delete root.dataset.theme
  else root.dataset.theme = theme
}

class PreferenceState {
  client: ClientDocument = DEFAULT_CLIENT
  private readonly choices = new Map<string, BufferChoice>()
  private changed: () => void = () => undefined

  /** Who redraws after a change (the Store). */
  bind(changed: () => void): void {
    this.changed = changed
  }

  /** Everything from the server, replacing what the tab held (a frame may have been missed while it was away). */
  async load(): Promise<void> {
    const answer = await api<{ client: ClientDocument; buffers: ReadonlyArray<BufferPreference> }>("GET", "/api/preferences")
    if (!answer.ok) return
    this.choices.clear()
    for (const b of answer.body.buffers) this.remember(b)
    this.setClient(answer.body.client)
    this.changed()
  }

  choice(networkId: number, target: string): BufferChoice {
    return this.choices.get(bufferKey(networkId, target)) ?? DEFAULT_CHOICE
  }

  /** A frame of the socket; true when it was one of these. */
  onFrame(frame: { readonly type: string }): boolean {
    const f = frame as Frame
    if (f.type === "buffer-preference") this.remember(f)
    else if (f.type === "client-preferences") this.setClient(f.preferences)
    else return false
    this.changed()
    return true
  }

  /**
   * Changes a buffer's choice, shown at once and put back if the server refuses it; the error's text, or null once
   * stored (the answer is the choice as stored).
   */
  async setBuffer(networkId: number, target: string, patch: Partial<BufferChoice>): Promise<string | null> {
    const before = this.choice(networkId, target)
    this.remember({ networkId, target, ...before, ...patch })
    this.changed()
    const path = `/api/buffers/${networkId}/${encodeURIComponent(target)}/preferences`
    const answer = await api<BufferPreference>("PUT", path, patch)
    this.remember(answer.ok ? answer.body : { networkId, target, ...before })
    this.changed()
    return answer.ok ? null : answer.error
  }

  /** Changes client settings (merged over the stored ones), shown at once; the error's text, or null once stored. */
  async setClientSettings(patch: Partial<ClientDocument>): Promise<string | null> {
    const before = this.client
    // Shown as asked (the server's answer replaces it): what `patch` leaves out, or sets to undefined, stays.
    const shown: Record<string, boolean | number | string | null> = { ...before }
    for (const [key, value] of Object.entries(patch)) if (value !== undefined) shown[key] = value
    this.setClient(shown as ClientDocument)
    this.changed()
    const answer = await api<{ client: ClientDocument }>("PUT", "/api/preferences/client", patch)
    this.setClient(answer.ok ? answer.body.client : before)
    this.changed()
    return answer.ok ? null : answer.error
  }

  /**
   * Whether a live message of the buffer notifies this tab, as the member chose: muted or `none` never, `all` every
   * message, `highlights` (the default) a highlight only — every message of a direct conversation is one.
   */
  notifies(networkId: number, target: string, highlight: boolean): boolean {
    const c = this.choice(networkId, target)
    if (c.muted || c.notify === "none") return false
    return c.notify === "all" || highlight
  }

  private remember(b: BufferPreference) {
    const { networkId, target, ...choice } = b
    const key = bufferKey(networkId, target)
    if (!choice.pinned && !choice.muted && !choice.detached && choice.notify === "highlights") this.choices.delete(key)
    else this.choices.set(key, { pinned: choice.pinned, muted: choice.muted, detached: choice.detached, notify: choice.notify })
  }

  private setClient(document: ClientDocument) {
    this.client = { ...DEFAULT_CLIENT, ...document }
    applyTheme(this.client.theme)
  }
}

export const preferences = new PreferenceState()

/** Whether the member wants link previews (on unless turned off; follows the member to other browsers). */
export const linkPreviewsEnabled = (): boolean => preferences.client.linkPreviews !== false
