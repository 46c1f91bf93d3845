// LineActions: what the member can do to one message, behind one "Message actions" button at the end of its line
// (shown on hover and on focus, always there for the keyboard: one Tab stop per line). It opens a small panel over the
// line: the quick reactions, Reply, and Delete for the member's own messages (asked twice: a redaction cannot be taken
// back). Escape closes it and gives the focus back to the button. Offered only where it can work: the message has an
// upstream msgid and the network's upstream has message-tags (react, reply) or draft/message-redaction (delete).
import { useEffect, useRef, useState } from "preact/hooks"
import { QUICK_REACTIONS } from "../MessageActions.js"
import type { MessageRecord } from "../Protocol.js"

export type LineAction =
  | { readonly kind: "react"; readonly message: MessageRecord; readonly reaction: string }
  | { readonly kind: "reply"; readonly message: MessageRecord }
  | { readonly kind: "delete"; readonly message: MessageRecord }

export interface LineActionsProps {
  readonly message: MessageRecord
  readonly canTag: boolean
  readonly canDelete: boolean
  readonly onAction: (action: LineAction) => void
}

export const LineActions = ({ message, canTag, canDelete, onAction }: LineActionsProps) => {
  const [open, setOpen] = useState(false)
  const [confirming, setConfirming] = useState(false)
  const toggle = useRef<HTMLButtonElement>(null)
  const panel = useRef<HTMLSpanElement>(null)
  // Opened, or Delete asked to confirm: the focus goes to the panel's first button (the confirmation, then).
  useEffect(() => {
    if (open) panel.current?.querySelector<HTMLButtonElement>(confirming ? "button.danger" : "button")?.focus()
  }, [open, confirming])
  const id = `actions-${message.id}`
  const close = (refocus: boolean) => {
    setOpen(false)
    setConfirming(false)
    if (refocus) toggle.current?.focus()
  }
  const act = (action: LineAction) => {
    close(action.kind !== "reply")
    onAction(action)
  }
  return (
    <span
      class="line-actions"
      onKeyDown={(e) => {
        if (e.key !== "Escape" || !open) return
        e.stopPropagation()
        close(true)
      }}
    >
      <button
        type="button"
        ref={toggle}
        class="line-menu"
        aria-label="Message actions"
        title="React, reply…"
        aria-expanded={open}
        aria-controls={id}
        onClick={() => (open ? close(false) : setOpen(true))}
      >
        ⋯
      </button>
      {!open ? null : (
        <span id={id} ref={panel} class="line-actions-panel" role="group" aria-label={message.nick === null ? "Message actions" : `Actions on ${message.nick}'s message`}>
          {!canTag ? null : QUICK_REACTIONS.map(([emoji, name]) => (
            <button
              key={emoji}
              type="button"
              class="quick-reaction"
              aria-label={`React with ${name}`}
              title={`React with ${name}`}
              onClick={() => act({ kind: "react", message, reaction: emoji })}
            >
              {emoji}
            </button>
          ))}
          {!canTag ? null : <button type="button" class="small" onClick={() => act({ kind: "reply", message })}>Reply</button>}
          {!canDelete ? null : confirming
            ? (
              <button type="button" class="small danger" onClick={() => act({ kind: "delete", message })}>
                Delete for everyone
              </button>
            )
            : (
              <button type="button" class="small" onClick={() => setConfirming(true)}>
                Delete
              </button>
            )}
        </span>
      )}
    </span>
  )
}
