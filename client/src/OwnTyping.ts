// OwnTyping: when the composer tells the buffer that the member is typing (IRCv3 typing,
// https://ircv3.net/specs/client-tags/typing): `active` while text is being written, at most once every 3 s as the
// spec asks; `done` once the box is emptied or its text sent, and when the member leaves the buffer with `active`
// still standing. Text that is a command (`/join …`; not `/me`, which is said to the buffer) is not typing to anyone.
// Pure: the caller gives the time and sends what it is told.

/** IRCv3 typing: "clients SHOULD NOT send the active notification more than once every 3 seconds". */
export const ACTIVE_EVERY_MS = 3_000

const isMessage = (text: string) => text.trim() !== "" && (!text.startsWith("/") || text.startsWith("//") || /^\/me(\s|$)/i.test(text))

export class OwnTyping {
  /** When `active` was last sent; null when none stands (never sent, or `done` since). */
  private activeAt: number | null = null

  /** The composer's text is now `text`: the notice to send, if any. */
  input(text: string, now: number): "active" | "done" | null {
    if (!isMessage(text)) return this.stop()
    if (this.activeAt !== null && now - this.activeAt < ACTIVE_EVERY_MS) return null
    this.activeAt = now
    return "active"
  }

  /** The text was sent, or the member left the buffer: `done` if `active` stands. */
  stop(): "done" | null {
    if (this.activeAt === null) return null
    this.activeAt = null
    return "done"
  }
}
