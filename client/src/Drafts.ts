// Drafts: what the member typed but did not send, per buffer, kept in localStorage so that it survives a reload and
// shows in every tab of the origin; another tab's change arrives as a `storage` event (HTML §12.2.1), which the
// composer of the same buffer takes over. An empty draft is removed.

const PREFIX = "belay.draft."

export const draftKey = (bufferKey: string) => PREFIX + bufferKey

export const readDraft = (bufferKey: string): string => localStorage.getItem(draftKey(bufferKey)) ?? ""

export const writeDraft = (bufferKey: string, text: string): void => {
  try {
    if (text === "") localStorage.removeItem(draftKey(bufferKey))
    else localStorage.setItem(draftKey(bufferKey), text)
  } catch {
    // Storage full or refused (private mode): the draft lives only in this tab.
  }
}

/** Calls `listener` with (bufferKey, text) when another tab changes a draft. */
export const onDraftChange = (listener: (bufferKey: string, text: string) => void): (() => void) => {
  const handler = (e: StorageEvent) => {
    if (e.storageArea !== localStorage || e.key === null || !e.key.startsWith(PREFIX)) return
    listener(e.key.slice(PREFIX.length), e.newValue ?? "")
  }
  addEventListener("storage", handler)
  return () => removeEventListener("storage", handler)
}
