/**
 * PushChoice: whether a message may become a Web Push notification, as the member chose for its buffer
 * (docs/contract.md "Preferences"): a muted buffer, or notification level `none`, sends nothing; `highlights` (the
 * default) only a highlight — a message naming the member's nick, and every message of a direct conversation, which
 * is addressed to the member; `all` every message of the buffer someone else sent. What counts as a message (a
 * PRIVMSG or ACTION from someone else) and as a highlight is the caller's (push/WebPush.ts). Pure; no state.
 */
import type { BufferChoice } from "../../schema/Preferences.js"

export const pushAllowed = (
  choice: BufferChoice,
  message: { readonly conversational: boolean; readonly highlight: boolean; readonly direct: boolean }
): boolean => {
  if (!message.conversational || choice.muted || choice.notify === "none") return false
  if (choice.notify === "all") return true
  return message.highlight || message.direct
}
