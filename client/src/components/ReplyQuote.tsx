// ReplyQuote: the line above a reply that says what it answers (Replies.ts finds it): the quoted nick and the start of
// its text, a button that brings that line into view, or "a message not loaded" when the loaded history does not hold
// it (scrolling back may load it, and the quote then fills in).
import type { Quote } from "../Replies.js"

/** Scrolls the log to its line `id` and gives it the focus, so a screen reader reads it and Tab goes on from there. */
const showLine = (from: HTMLElement, id: number) => {
  const line = from.closest(".log")?.querySelector<HTMLElement>(`.line[data-id="${id}"]`)
  if (line === null || line === undefined) return
  line.tabIndex = -1
  line.scrollIntoView({ block: "center" })
  line.focus({ preventScroll: true })
}

export const ReplyQuote = ({ quote }: { readonly quote: Quote }) => {
  if (!quote.found) {
    return <div class="reply-quote"><span class="reply-mark" aria-hidden="true">↪</span> <span class="muted">In reply to a message not loaded</span></div>
  }
  const text = quote.redacted ? "message removed" : quote.excerpt
  return (
    <div class="reply-quote">
      <button
        type="button"
        class="quote"
        aria-label={`In reply to ${quote.nick === null ? "" : `${quote.nick}: `}${text}`}
        onClick={(e) => showLine(e.currentTarget, quote.id)}
      >
        <span class="reply-mark" aria-hidden="true">↪</span>
        {quote.nick === null ? null : <><span class="quote-nick">{quote.nick}</span>: </>}
        <span class={quote.redacted ? "quote-text removed" : "quote-text"}>{text}</span>
      </button>
    </div>
  )
}
