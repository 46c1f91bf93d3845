// BufferView: the active buffer — its name and topic, the log, the member list of a channel, the note panel of a
// nick, and the composer. Opened at one message (Jump.ts), the log shows it: in the buffer's loaded lines when they
// hold it, else in the window around it, with the way back to the latest lines. Under the log, who is typing there
// (Typing.ts); a message's actions (react, reply, delete: LineActions) go to the server or to the composer's reply mode.
import { useRef, useState } from "preact/hooks"
import type { Buffer } from "../Buffer.js"
import { clearJump, extendJump, jumpOf } from "../Jump.js"
import { react, redact } from "../MessageActions.js"
import type { MessageRecord } from "../Protocol.js"
import type { Store } from "../Store.js"
import { typingText } from "../Typing.js"
import { BufferMenu } from "./BufferMenu.js"
import { Composer } from "./Composer.js"
import type { LineAction } from "./LineActions.js"
import { MemberList } from "./MemberList.js"
import { MessageLog } from "./MessageLog.js"
import { NickPanel } from "./NickPanel.js"
import { Text } from "./Text.js"

export const BufferView = ({ store, buffer }: { readonly store: Store; readonly buffer: Buffer }) => {
  const network = store.networks.get(buffer.networkId)
  const ownNick = network?.nick ?? null
  const [nick, setNick] = useState<string | null>(null)
  const [showMembers, setShowMembers] = useState(false)
  const replyTo = useRef<((message: MessageRecord) => void) | null>(null)
  const features = network?.features
  const onAction = (action: LineAction) => {
    if (action.kind === "react") void react(store, buffer, action.message, action.reaction)
    else if (action.kind === "delete") void redact(store, buffer, action.message)
    else replyTo.current?.(action.message)
  }
  const typing = typingText(store.typing.who(buffer.key))
  const title = buffer.kind === "server" ? (network?.name ?? buffer.target) : buffer.target
  const channel = buffer.kind === "channel"
  const jump = jumpOf(store, buffer.key)
  const held = jump !== undefined && buffer.messages.some((m) => m.id === jump.messageId)
  const windowed = jump !== undefined && !held ? jump.context : null
  const inWindow = windowed !== null
  const latest = () => {
    clearJump(store)
    store.setAtBottom(true)
  }
  return (
    <section class="buffer" aria-labelledby="buffer-title">
      <header class="buffer-header">
        <h1 id="buffer-title">{title}</h1>
        {channel && buffer.topic !== null && buffer.topic.topic !== ""
          ? <p class="topic" aria-label="Topic"><Text text={buffer.topic.topic} /></p>
          : null}
        {channel && !buffer.joined ? <p class="topic muted">You are not in this channel. /join {buffer.target} joins it.</p> : null}
        {buffer.kind === "server" ? <p class="topic muted">Server replies. /quote sends a raw line.</p> : <BufferMenu key={buffer.key} buffer={buffer} />}
        {channel && buffer.joined
          ? (
            <button type="button" class="members-toggle" aria-expanded={showMembers} aria-controls="members" onClick={() => setShowMembers(!showMembers)}>
              Members ({buffer.members.size})
            </button>
          )
          : null}
      </header>
      <div class={showMembers ? "buffer-body show-members" : "buffer-body"}>
        <MessageLog
          key={inWindow ? `${buffer.key}\nwindow` : buffer.key}
          buffer={buffer}
          messages={windowed ?? buffer.messages}
          ownNick={ownNick}
          readMarker={store.openedReadMarker}
          loadOlder={() => store.loadOlder(buffer)}
          onNick={setNick}
          onAtBottom={(b) => store.setAtBottom(b)}
          focusId={jump?.messageId ?? null}
          window={jump !== undefined && inWindow ? { hasOlder: jump.hasOlder, hasNewer: jump.hasNewer, onLatest: latest, extend: (end) => extendJump(store, end) } : null}
          {...(features === undefined ? {} : { features })}
          onAction={onAction}
        />
        {jump?.error == null ? null : <p class="jump-error" role="alert">Could not open that message: {jump.error}</p>}
        {channel && buffer.joined ? <MemberList members={buffer.members} onNick={setNick} /> : null}
        {nick === null ? null : (
          <NickPanel key={`${buffer.networkId} ${nick}`} store={store} networkId={buffer.networkId} nick={nick} onClose={() => setNick(null)} />
        )}
      </div>
      <p class="typing">{typing}</p>
      <Composer
        key={buffer.key}
        replyHandle={replyTo}
        store={store}
        buffer={buffer}
        ownNick={ownNick}
        disabled={store.phase.phase !== "open"}
        typing={features?.tags === true}
      />
    </section>
  )
}
