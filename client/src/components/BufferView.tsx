// BufferView: the active buffer — its name and topic, the log, the member list of a channel, the note panel of a
// nick, and the composer.
import { useState } from "preact/hooks"
import type { Buffer } from "../Buffer.js"
import type { Store } from "../Store.js"
import { Composer } from "./Composer.js"
import { MemberList } from "./MemberList.js"
import { MessageLog } from "./MessageLog.js"
import { NickPanel } from "./NickPanel.js"
import { Text } from "./Text.js"

export const BufferView = ({ store, buffer }: { readonly store: Store; readonly buffer: Buffer }) => {
  const network = store.networks.get(buffer.networkId)
  const ownNick = network?.nick ?? null
  const [nick, setNick] = useState<string | null>(null)
  const [showMembers, setShowMembers] = useState(false)
  const title = buffer.kind === "server" ? (network?.name ?? buffer.target) : buffer.target
  const channel = buffer.kind === "channel"
  return (
    <section class="buffer" aria-labelledby="buffer-title">
      <header class="buffer-header">
        <h1 id="buffer-title">{title}</h1>
        {channel && buffer.topic !== null && buffer.topic.topic !== ""
          ? <p class="topic" aria-label="Topic"><Text text={buffer.topic.topic} /></p>
          : null}
        {channel && !buffer.joined ? <p class="topic muted">You are not in this channel. /join {buffer.target} joins it.</p> : null}
        {buffer.kind === "server" ? <p class="topic muted">Server replies. /quote sends a raw line.</p> : null}
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
          key={buffer.key}
          buffer={buffer}
          messages={buffer.messages}
          ownNick={ownNick}
          readMarker={store.openedReadMarker}
          loadOlder={() => store.loadOlder(buffer)}
          onNick={setNick}
          onAtBottom={(b) => store.setAtBottom(b)}
        />
        {channel && buffer.joined ? <MemberList members={buffer.members} onNick={setNick} /> : null}
        {nick === null ? null : (
          <NickPanel key={`${buffer.networkId} ${nick}`} store={store} networkId={buffer.networkId} nick={nick} onClose={() => setNick(null)} />
        )}
      </div>
      <Composer key={buffer.key} store={store} buffer={buffer} ownNick={ownNick} disabled={store.phase.phase !== "open"} />
    </section>
  )
}
