// MessageLine: one message in the log — time, speaker (a button that opens the nick's note), and what happened.
// Drawn again only when its own record changes, so a long log costs nothing per new line. A message with a link gets
// its preview card under it (Previews.ts decides which do).
import { Component } from "preact"
import { nickColorClass } from "../NickColor.js"
import { linkPreviewsEnabled } from "../Preferences.js"
import { previewUrlOf } from "../Previews.js"
import type { MessageRecord } from "../Protocol.js"
import { LinkPreview } from "./LinkPreview.js"
import { Text } from "./Text.js"

export interface MessageLineProps {
  readonly message: MessageRecord
  readonly highlight: boolean
  readonly onNick: (nick: string) => void
}

const clock = (time: string) => new Date(time).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" })

const Nick = ({ nick, onNick }: { readonly nick: string; readonly onNick: (nick: string) => void }) => (
  <button type="button" class={`nick ${nickColorClass(nick)}`} onClick={() => onNick(nick)}>
    {nick}
  </button>
)

export class MessageLine extends Component<MessageLineProps> {
  /** Whether link previews were on when the line was drawn: turning them off or on draws it again. */
  private drawnWithPreviews = linkPreviewsEnabled()

  override shouldComponentUpdate(next: MessageLineProps): boolean {
    return next.message !== this.props.message || next.highlight !== this.props.highlight ||
      linkPreviewsEnabled() !== this.drawnWithPreviews
  }

  override render() {
    const { message: m, highlight, onNick } = this.props
    this.drawnWithPreviews = linkPreviewsEnabled()
    const who = m.nick === null ? null : <Nick nick={m.nick} onNick={onNick} />
    let body
    switch (m.kind) {
      case "privmsg":
        body = <>{who}<span class="text"><Text text={m.text} /></span></>
        break
      case "action":
        body = <><span class="mark" aria-hidden="true">*</span>{who}<span class="text"><Text text={m.text} /></span></>
        break
      case "notice":
        body = <><span class="mark">notice</span>{who}<span class="text"><Text text={m.text} /></span></>
        break
      case "join":
        body = <span class="event">{who} joined</span>
        break
      case "part":
        body = <span class="event">{who} left{m.text === "" ? "" : ` (${m.text})`}</span>
        break
      case "quit":
        body = <span class="event">{who} quit{m.text === "" ? "" : ` (${m.text})`}</span>
        break
      case "nick":
        body = <span class="event">{who} is now known as {m.text}</span>
        break
      case "kick":
        body = <span class="event">{who} kick: <Text text={m.text} /></span>
        break
      case "mode":
        body = <span class="event">{who ?? "The server"} set mode {m.text}</span>
        break
      case "topic":
        body = <span class="event">{who ?? "The server"} changed the topic to: <Text text={m.text} /></span>
        break
      case "numeric":
        body = <span class="event"><span class="mark">{m.numeric ?? ""}</span><Text text={m.text} /></span>
        break
      default:
        body = <span class="event error"><Text text={m.text} /></span>
    }
    const classes = ["line", `kind-${m.kind}`, m.self ? "self" : "", highlight ? "highlight" : ""].filter((c) => c !== "").join(" ")
    const link = previewUrlOf(m, this.drawnWithPreviews)
    const line = (
      <div class={classes} data-id={m.id}>
        <time dateTime={m.time} title={new Date(m.time).toLocaleString()}>{clock(m.time)}</time>
        {body}
        {m.relayBot === undefined ? null : <span class="via">via {m.relayBot}</span>}
        {m.encrypted === undefined ? null : <span class="via">{m.encrypted ? "encrypted" : "could not decrypt"}</span>}
      </div>
    )
    return link === undefined ? line : <>{line}<LinkPreview key={link} url={link} /></>
  }
}
