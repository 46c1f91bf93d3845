// MessageLine: one message in the log — time, speaker (a button that opens the nick's note), and what happened.
// Drawn again only when its own record, its reactions or its quote change, so a long log costs nothing per new line. A
// message with a link gets its preview card under it (Previews.ts decides which do); a reply gets the quote of what it
// answers above it, a message with reactions their chips under it, and one with an upstream msgid its actions
// (LineActions). A redacted message (draft/message-redaction) shows as "message removed", without its reactions.
import { Component } from "preact"
import { nickColorClass } from "../NickColor.js"
import { linkPreviewsEnabled } from "../Preferences.js"
import { previewUrlOf } from "../Previews.js"
import type { MessageRecord } from "../Protocol.js"
import { type ReactionGroup, sameReactions } from "../Reactions.js"
import { type Quote, sameQuote } from "../Replies.js"
import { clockOf } from "../Times.js"
import { type LineAction, LineActions } from "./LineActions.js"
import { LinkPreview } from "./LinkPreview.js"
import { ReactionChips } from "./ReactionChips.js"
import { ReplyQuote } from "./ReplyQuote.js"
import { Text } from "./Text.js"

export interface MessageLineProps {
  readonly message: MessageRecord
  readonly highlight: boolean
  readonly onNick: (nick: string) => void
  /** The reactions given to it, when it has any. */
  readonly reactions?: ReadonlyArray<ReactionGroup> | undefined
  /** What it answers, when it is a reply. */
  readonly quote?: Quote | undefined
  /** It may be reacted and replied to (an upstream msgid, and message-tags upstream). */
  readonly canTag?: boolean
  /** It may be deleted (the member's own, with a msgid, and draft/message-redaction upstream). */
  readonly canDelete?: boolean
  readonly ownNick?: string | null
  readonly onAction?: (action: LineAction) => void
}

const Nick = ({ nick, onNick }: { readonly nick: string; readonly onNick: (nick: string) => void }) => (
  <button type="button" class={`nick ${nickColorClass(nick)}`} onClick={() => onNick(nick)}>
    {nick}
  </button>
)

export class MessageLine extends Component<MessageLineProps> {
  /** Whether link previews were on when the line was drawn: turning them off or on draws it again. */
  private drawnWithPreviews = linkPreviewsEnabled()

  override shouldComponentUpdate(next: MessageLineProps): boolean {
    const now = this.props
    return next.message !== now.message || next.highlight !== now.highlight || next.canTag !== now.canTag ||
      next.canDelete !== now.canDelete || next.ownNick !== now.ownNick || !sameReactions(next.reactions, now.reactions) ||
      !sameQuote(next.quote, now.quote) || linkPreviewsEnabled() !== this.drawnWithPreviews
  }

  override render() {
    const { message: m, highlight, onNick, reactions, quote, canTag = false, canDelete = false, ownNick = null } = this.props
    this.drawnWithPreviews = linkPreviewsEnabled()
    const who = m.nick === null ? null : <Nick nick={m.nick} onNick={onNick} />
    const act = (action: LineAction) => this.props.onAction?.(action)
    let body
    switch (m.redacted === true ? "removed" : m.kind) {
      case "removed":
        body = <>{who}<span class="text removed">message removed</span></>
        break
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
    const link = m.redacted === true ? undefined : previewUrlOf(m, this.drawnWithPreviews)
    const actions = (canTag || canDelete) && m.redacted !== true
      ? <LineActions message={m} canTag={canTag} canDelete={canDelete} onAction={act} />
      : null
    const line = (
      <div class={classes} data-id={m.id}>
        <time dateTime={m.time} title={new Date(m.time).toLocaleString()}>{clockOf(m.time)}</time>
        {body}
        {m.relayBot === undefined ? null : <span class="via">via {m.relayBot}</span>}
        {m.encrypted === undefined ? null : <span class="via">{m.encrypted ? "encrypted" : "could not decrypt"}</span>}
        {actions}
      </div>
    )
    // Always a fragment, so that a first reaction or a preview adds beside the line and never draws it anew.
    return (
      <>
        {quote === undefined ? null : <ReplyQuote quote={quote} />}
        {line}
        {reactions === undefined || reactions.length === 0 || m.redacted === true ? null : (
          <ReactionChips
            groups={reactions}
            ownNick={ownNick}
            onReact={canTag ? (reaction) => act({ kind: "react", message: m, reaction }) : null}
          />
        )}
        {link === undefined ? null : <LinkPreview key={link} url={link} />}
      </>
    )
  }
}
