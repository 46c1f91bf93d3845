// MessageLog: the active buffer's messages (a `log` region), with day separators, the "new messages" line and folded
// joins and parts (Rows). It stays at the newest line while the member is there, keeps the lines under the eye still
// when older history is put above them, and asks for older history when scrolled near the top (or with the button).
import { Component, createRef } from "preact"
import type { Buffer } from "../Buffer.js"
import { mentions } from "../Highlight.js"
import type { MessageRecord } from "../Protocol.js"
import { rows } from "../Rows.js"
import { MessageLine } from "./MessageLine.js"

export interface MessageLogProps {
  readonly buffer: Buffer
  readonly messages: ReadonlyArray<MessageRecord>
  readonly ownNick: string | null
  readonly readMarker: number | null
  readonly loadOlder: () => Promise<boolean>
  readonly onNick: (nick: string) => void
  readonly onAtBottom: (atBottom: boolean) => void
}

interface Snapshot {
  readonly fromBottom: number
  readonly atBottom: boolean
  readonly firstId: number | undefined
}

const NEAR_TOP = 400
const AT_BOTTOM = 48

export class MessageLog extends Component<MessageLogProps> {
  private readonly scroller = createRef<HTMLDivElement>()
  private stuck = true

  override componentDidMount() {
    this.toBottom()
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
    if (snapshot === null) return
    if (snapshot.atBottom) return this.toBottom()
    if (snapshot.firstId !== this.props.messages[0]?.id) el.scrollTop = el.scrollHeight - snapshot.fromBottom
  }

  private toBottom() {
    const el = this.scroller.current
    if (el !== null) el.scrollTop = el.scrollHeight
  }

  private readonly onScroll = () => {
    const el = this.scroller.current
    if (el === null) return
    const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < AT_BOTTOM
    if (atBottom !== this.stuck) {
      this.stuck = atBottom
      this.props.onAtBottom(atBottom)
    }
    this.checkTop()
  }

  /** Near the top with more history: load a page. */
  private checkTop() {
    const el = this.scroller.current
    if (el !== null && el.scrollTop < NEAR_TOP && this.props.buffer.hasOlder && !this.props.buffer.loadingOlder) void this.loadOlder()
  }

  /** A page more; if the member is still near the top once it is drawn (a short page, a fast fling), another. */
  private readonly loadOlder = async () => {
    if (await this.props.loadOlder()) requestAnimationFrame(() => requestAnimationFrame(() => this.checkTop()))
  }

  override render() {
    const { buffer, messages, ownNick, readMarker, onNick } = this.props
    const highlight = (m: MessageRecord) =>
      !m.self && (m.kind === "privmsg" || m.kind === "action" || m.kind === "notice") &&
      (buffer.kind === "query" || mentions(m.text, ownNick))
    return (
      <div class="log-scroll" ref={this.scroller} onScroll={this.onScroll}>
        <div class="history-edge">
          {!buffer.loaded
            ? <p>Loading…</p>
            : buffer.hasOlder
            ? (
              <button type="button" onClick={() => void this.loadOlder()} disabled={buffer.loadingOlder}>
                {buffer.loadingOlder ? "Loading older messages…" : "Load older messages"}
              </button>
            )
            : <p>{messages.length === 0 ? "No messages yet." : "Start of history."}</p>}
        </div>
        <div role="log" aria-label={`Messages in ${buffer.target}`} class="log">
          {rows(messages, readMarker).map((row) => {
            switch (row.kind) {
              case "day":
                return <h2 key={row.key} class="day">{row.label}</h2>
              case "unread":
                return <div key={row.key} class="unread-line" role="separator">New messages</div>
              case "line":
                return <MessageLine key={row.key} message={row.message} highlight={highlight(row.message)} onNick={onNick} />
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
      </div>
    )
  }
}
