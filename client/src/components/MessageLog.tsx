// MessageLog: the active buffer's messages (a `log` region), with day separators, the "new messages" line and folded
// joins and parts (Rows). It stays at the newest line while the member is there, keeps the lines under the eye still
// when older history is put above them, and asks for older history when scrolled near the top (or with the button),
// page after page until the start of history, which it marks. While the "new messages" line is above the view (or not
// loaded yet), a bar offers to jump to the first unread line, loading the pages up to it. Opened at one message (a
// search result or a mention, Jump.ts), it scrolls to that line and marks it and the lines around it; a `window` is
// such a message's surroundings shown apart from the buffer's latest lines, grown a page at either end as the member
// scrolls, with the way back to the latest lines. Reactions are drawn under the message they name and replies with the
// quote of what they answer, both found among the lines given (Reactions.ts, Replies.ts).
import { Component, createRef } from "preact"
import type { Buffer } from "../Buffer.js"
import { mentions } from "../Highlight.js"
import type { MessageRecord } from "../Protocol.js"
import { type ReactionGroup, reactions } from "../Reactions.js"
import { msgidIndex, quoteOf } from "../Replies.js"
import { rows } from "../Rows.js"
import type { LineAction } from "./LineActions.js"
import { MessageLine } from "./MessageLine.js"

export interface LogWindow {
  readonly hasOlder: boolean
  readonly hasNewer: boolean
  readonly onLatest: () => void
  /** A page more at that end of the window; false when there was none. */
  readonly extend: (end: "older" | "newer") => Promise<boolean>
}

export interface MessageLogProps {
  readonly buffer: Buffer
  readonly messages: ReadonlyArray<MessageRecord>
  readonly ownNick: string | null
  readonly readMarker: number | null
  readonly loadOlder: () => Promise<boolean>
  readonly onNick: (nick: string) => void
  readonly onAtBottom: (atBottom: boolean) => void
  /** The message the log was opened at: scrolled to and marked, with the lines around it. */
  readonly focusId?: number | null
  /** `messages` are a window around `focusId`, not the buffer's latest lines. */
  readonly window?: LogWindow | null
  /** The network's upstream has message-tags (react, reply) and draft/message-redaction (delete). */
  readonly features?: { readonly tags: boolean; readonly redaction: boolean }
  readonly onAction?: (action: LineAction) => void
}

/** Kinds a member may react or reply to: what someone said. */
const SAID = new Set(["privmsg", "action", "notice"])

interface Annotations {
  readonly of: ReadonlyArray<MessageRecord>
  readonly reactions: ReadonlyMap<string, ReadonlyArray<ReactionGroup>>
  readonly index: ReadonlyMap<string, MessageRecord>
}

interface Snapshot {
  readonly fromBottom: number
  readonly atBottom: boolean
  readonly firstId: number | undefined
}

type UnreadPlace = "none" | "above" | "unloaded"

const NEAR_TOP = 400
const AT_BOTTOM = 48
/** The lines on each side of a found message marked as its context. */
const CONTEXT_MARKED = 3
/** Pages "jump to first unread" loads at most (PAGE each, Store.ts) before it stops at the oldest loaded line. */
const UNREAD_PAGES = 20

const frame = () => new Promise<void>((resolve) => requestAnimationFrame(() => resolve()))

export class MessageLog extends Component<MessageLogProps, { readonly unread: UnreadPlace; readonly jumping: boolean }> {
  private readonly scroller = createRef<HTMLDivElement>()
  private stuck = true
  /** The focus message already scrolled to (once per jump: then the member scrolls freely). */
  private shownFocus: number | null = null
  /** Reactions and msgids of the lines last drawn: made again only when the lines change. */
  private annotations: Annotations | null = null

  private annotate(messages: ReadonlyArray<MessageRecord>): Annotations {
    if (this.annotations?.of !== messages) this.annotations = { of: messages, reactions: reactions(messages), index: msgidIndex(messages) }
    return this.annotations
  }

  override state = { unread: "none" as UnreadPlace, jumping: false }

  override componentDidMount() {
    if (this.props.focusId != null) this.stuck = false
    if (!this.showFocus()) this.toBottom()
    this.placeUnread()
  }

  override getSnapshotBeforeUpdate(): Snapshot | null {
    const el = this.scroller.current
    if (el === null) return null
    return { fromBottom: el.scrollHeight - el.scrollTop, atBottom: this.stuck, firstId: this.props.messages[0]?.id }
  }

  override componentDidUpdate(previous: MessageLogProps, _state: unknown, snapshot: Snapshot | null) {
    const el = this.scroller.current
    if (el === null) return
    if (previous.buffer.key !== this.props.buffer.key) {
      this.stuck = true
      return this.toBottom()
    }
    if (this.props.focusId != null && this.props.focusId !== this.shownFocus) {
      this.stuck = false
      if (this.showFocus()) return this.placeUnread()
    }
    if (snapshot === null) return
    if (snapshot.atBottom) this.toBottom()
    else if (snapshot.firstId !== this.props.messages[0]?.id) el.scrollTop = el.scrollHeight - snapshot.fromBottom
    this.placeUnread()
  }

  private toBottom() {
    const el = this.scroller.current
    if (el !== null) el.scrollTop = el.scrollHeight
  }

  /** Scrolls to the focus message and marks it and its neighbours; false when it is not drawn (yet). */
  private showFocus(): boolean {
    const el = this.scroller.current
    const id = this.props.focusId
    if (el === null || id == null) return false
    const lines = [...el.querySelectorAll<HTMLElement>(".line[data-id]")]
    const at = lines.findIndex((line) => line.dataset["id"] === String(id))
    if (at < 0) return false
    for (const line of el.querySelectorAll(".jump-target, .jump-context")) line.classList.remove("jump-target", "jump-context")
    lines.forEach((line, i) => {
      if (i !== at && Math.abs(i - at) <= CONTEXT_MARKED) line.classList.add("jump-context")
    })
    const target = lines[at]!
    target.classList.add("jump-target")
    target.tabIndex = -1
    target.scrollIntoView({ block: "center" })
    // The found line takes the focus, so a screen reader reads it and Tab goes on from there.
    target.focus({ preventScroll: true })
    this.shownFocus = id
    return true
  }

  /** Where the first unread line is: above the view, not loaded yet, or nowhere to jump to. */
  private placeUnread() {
    const el = this.scroller.current
    const { readMarker, messages, buffer, window } = this.props
    let place: UnreadPlace = "none"
    const newest = messages[messages.length - 1]
    if (el !== null && window == null && readMarker !== null && newest !== undefined && newest.id > readMarker) {
      const line = el.querySelector(".unread-line")
      if (line !== null) {
        if (line.getBoundingClientRect().bottom < el.getBoundingClientRect().top + 4) place = "above"
      } else if (messages[0]!.id > readMarker + 1 && buffer.hasOlder) place = "unloaded"
    }
    if (place !== this.state.unread) this.setState({ unread: place })
  }

  /** Loads pages up to the read marker (at most UNREAD_PAGES), then puts the "new messages" line at the top. */
  private readonly jumpToUnread = async () => {
    this.setState({ jumping: true })
    try {
      const el = () => this.scroller.current
      for (let i = 0; i < UNREAD_PAGES && el()?.querySelector(".unread-line") == null && this.props.buffer.hasOlder; i++) {
        const marker = this.props.readMarker
        const oldest = this.props.messages[0]?.id
        if (marker === null || oldest === undefined || oldest <= marker + 1) break
        if (!(await this.props.loadOlder())) break
        await frame()
      }
      const scroller = el()
      if (scroller === null) return
      this.stuck = false
      const line = scroller.querySelector<HTMLElement>(".unread-line")
      if (line === null) scroller.scrollTop = 0
      else {
        line.scrollIntoView({ block: "start" })
        // The first unread message takes the focus (a separator that can be focused would be a splitter, WAI-ARIA
        // 1.2 "separator"), so a screen reader reads it and Tab goes on from there.
        const first = line.nextElementSibling
        if (first instanceof HTMLElement) {
          first.tabIndex = -1
          first.focus({ preventScroll: true })
        }
      }
    } finally {
      this.setState({ jumping: false })
      this.placeUnread()
    }
  }

  private readonly onScroll = () => {
    const el = this.scroller.current
    if (el === null) return
    const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < AT_BOTTOM
    // In a window the last line is not the buffer's newest: reaching it reads nothing.
    if (atBottom !== this.stuck && this.props.window == null) {
      this.stuck = atBottom
      this.props.onAtBottom(atBottom)
    }
    this.checkTop()
    this.placeUnread()
  }

  /** Near the top with more history: load a page (of the window, in one). Near a window's bottom: its next page. */
  private checkTop() {
    const el = this.scroller.current
    const window = this.props.window
    if (el === null) return
    if (window != null) {
      if (el.scrollTop < NEAR_TOP && window.hasOlder) void window.extend("older")
      else if (el.scrollHeight - el.scrollTop - el.clientHeight < NEAR_TOP && window.hasNewer) void window.extend("newer")
      return
    }
    if (el.scrollTop < NEAR_TOP && this.props.buffer.hasOlder && !this.props.buffer.loadingOlder) void this.loadOlder()
  }

  /** A page more; if the member is still near the top once it is drawn (a short page, a fast fling), another. */
  private readonly loadOlder = async () => {
    if (await this.props.loadOlder()) requestAnimationFrame(() => requestAnimationFrame(() => this.checkTop()))
  }

  private edge() {
    const { buffer, messages, window } = this.props
    if (window != null) {
      return (
        <>
          <p class={window.hasOlder ? undefined : "history-start"}>{window.hasOlder ? "Loading earlier lines as you scroll…" : "Start of history."}</p>
          <button type="button" onClick={window.onLatest}>Back to the latest messages</button>
        </>
      )
    }
    if (!buffer.loaded) return <p>Loading…</p>
    if (buffer.hasOlder) {
      return (
        <button type="button" onClick={() => void this.loadOlder()} disabled={buffer.loadingOlder}>
          {buffer.loadingOlder ? "Loading older messages…" : "Load older messages"}
        </button>
      )
    }
    return <p class="history-start">{messages.length === 0 ? "No messages yet." : "Start of history."}</p>
  }

  override render() {
    const { buffer, messages, ownNick, readMarker, onNick, window, features, onAction } = this.props
    const highlight = (m: MessageRecord) =>
      !m.self && (m.kind === "privmsg" || m.kind === "action" || m.kind === "notice") &&
      (buffer.kind === "query" || mentions(m.text, ownNick))
    const annotations = this.annotate(messages)
    const line = (m: MessageRecord) => {
      const said = m.msgid !== undefined && m.redacted !== true && SAID.has(m.kind)
      return (
        <MessageLine
          key={`m${m.id}`}
          message={m}
          highlight={highlight(m)}
          onNick={onNick}
          reactions={m.msgid === undefined ? undefined : annotations.reactions.get(m.msgid)}
          quote={m.replyTo === undefined ? undefined : quoteOf(annotations.index, m.replyTo)}
          canTag={said && features?.tags === true}
          canDelete={said && m.self && features?.redaction === true}
          ownNick={ownNick}
          {...(onAction === undefined ? {} : { onAction })}
        />
      )
    }
    return (
      <div class="log-scroll" ref={this.scroller} onScroll={this.onScroll}>
        {this.state.unread === "none" ? null : (
          <div class="unread-jump">
            <div class="unread-jump-bar">
              <span>New messages above</span>
              <button type="button" class="small" onClick={() => void this.jumpToUnread()} disabled={this.state.jumping}>
                {this.state.jumping ? "Loading…" : "Jump to first unread"}
              </button>
            </div>
          </div>
        )}
        <div class="history-edge">{this.edge()}</div>
        <div role="log" aria-label={`Messages in ${buffer.target}`} class="log">
          {rows(messages, window == null ? readMarker : null).map((row) => {
            switch (row.kind) {
              case "day":
                return <h2 key={row.key} class="day">{row.label}</h2>
              case "unread":
                return <div key={row.key} class="unread-line" role="separator">New messages</div>
              case "line":
                return line(row.message)
              case "fold":
                return (
                  <details key={row.key} class="fold">
                    <summary>{row.summary}</summary>
                    {row.messages.map((m) => <MessageLine key={`m${m.id}`} message={m} highlight={false} onNick={onNick} />)}
                  </details>
                )
            }
          })}
        </div>
        {window == null ? null : (
          <div class="history-edge">
            {window.hasNewer ? <p>Loading later lines as you scroll…</p> : null}
            <button type="button" onClick={window.onLatest}>Back to the latest messages</button>
          </div>
        )}
      </div>
    )
  }
}
