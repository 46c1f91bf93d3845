// Sidebar: the "Buffers" navigation — each network (its server buffer, named by the network, with its connection
// state) and its channels and conversations, named by their target, with unread and highlight counts beside them.
// What the member chose per buffer (Preferences.ts; docs/contract.md "Preferences") shapes it: pinned buffers come
// first, a muted one is dimmed and counts only its highlights, a detached one leaves the list (it stays joined and
// stored) until a highlight brings it back, and the closed "Detached" group below reaches it meanwhile. At the foot,
// the client settings that follow the member to another browser (ClientSettings.tsx).
import type { Buffer } from "../Buffer.js"
import { preferences } from "../Preferences.js"
import type { Network, Store } from "../Store.js"
import { bufferHash } from "../Route.js"
import { ClientSettings } from "./ClientSettings.js"

const STATE_LABEL: Readonly<Record<string, string>> = {
  connected: "connected",
  connecting: "connecting…",
  backoff: "waiting to reconnect",
  offline: "offline"
}

const byName = (a: Buffer, b: Buffer) => a.target.localeCompare(b.target, undefined, { sensitivity: "base" })

const choiceOf = (b: Buffer) => preferences.choice(b.networkId, b.target)

/** Whether a buffer is in the list now: not detached, or detached but with a highlight waiting, or open. */
const listed = (b: Buffer, active: string | null) => !choiceOf(b).detached || b.highlights > 0 || active === b.key

/**
 * A network's channels and conversations in the order the sidebar shows them: pinned first, then channels, then
 * conversations, each by name; detached ones left out (see `listed`). Keyboard shortcuts walk the same order.
 */
export const buffersInOrder = (store: Store, network: Network): ReadonlyArray<Buffer> => {
  const active = store.view.view === "buffer" ? store.view.key : null
  const all = [...store.buffers.values()].filter((b) => b.networkId === network.id && b.kind !== "server" && listed(b, active))
  const pinned = all.filter((b) => choiceOf(b).pinned).sort(byName)
  const rest = all.filter((b) => !choiceOf(b).pinned)
  return [...pinned, ...rest.filter((b) => b.kind === "channel").sort(byName), ...rest.filter((b) => b.kind === "query").sort(byName)]
}

const Count = ({ buffer }: { readonly buffer: Buffer }) => {
  // A muted buffer counts only what is for the member.
  const shown = choiceOf(buffer).muted ? buffer.highlights : buffer.unread
  if (shown === 0) return null
  const label = choiceOf(buffer).muted
    ? `${buffer.highlights} for you`
    : `${buffer.unread} unread${buffer.highlights > 0 ? `, ${buffer.highlights} for you` : ""}`
  return (
    <span id={`count-${buffer.key.replace(/\W/g, "_")}`} class={buffer.highlights > 0 ? "count highlight" : "count"} aria-label={label} title={label}>
      {shown}
    </span>
  )
}

const BufferLink = ({ buffer, label, active, onOpen }: { readonly buffer: Buffer; readonly label: string; readonly active: boolean; readonly onOpen: () => void }) => {
  const choice = choiceOf(buffer)
  const counted = choice.muted ? buffer.highlights > 0 : buffer.unread > 0
  return (
    <a
      href={bufferHash(buffer.networkId, buffer.target)}
      aria-current={active ? "page" : undefined}
      aria-describedby={counted ? `count-${buffer.key.replace(/\W/g, "_")}` : undefined}
      title={[choice.pinned ? "pinned" : "", choice.muted ? "muted" : ""].filter((s) => s !== "").join(", ") || undefined}
      class={[
        counted ? "unread" : "",
        buffer.kind === "channel" && !buffer.joined ? "parted" : "",
        choice.pinned ? "pinned" : "",
        choice.muted ? "muted-buffer" : ""
      ].join(" ")}
      onClick={onOpen}
    >
      {label}
    </a>
  )
}

export const Sidebar = ({ store, open, onNavigate }: { readonly store: Store; readonly open: boolean; readonly onNavigate: () => void }) => {
  const active = store.view.view === "buffer" ? store.view.key : null
  const networks = [...store.networks.values()].sort((a, b) => a.name.localeCompare(b.name))
  const detached = [...store.buffers.values()].filter((b) => b.kind !== "server" && !listed(b, active)).sort(byName)
  return (
    <nav id="sidebar" class={open ? "sidebar open" : "sidebar"} aria-label="Buffers">
      <ul class="networks">
        {networks.map((network) => {
          const server = [...store.buffers.values()].find((b) => b.networkId === network.id && b.kind === "server")
          return (
            <li key={network.id} class="network">
              <div class="network-row">
                {server === undefined ? <span>{network.name}</span> : (
                  <BufferLink buffer={server} label={network.name} active={active === server.key} onOpen={onNavigate} />
                )}
                <span class={`state state-${network.state}`}>{STATE_LABEL[network.state] ?? network.state}{network.away ? ", away" : ""}</span>
                {server === undefined ? null : <Count buffer={server} />}
              </div>
              <ul class="buffers">
                {buffersInOrder(store, network).map((b) => (
                  <li key={b.key}>
                    <BufferLink buffer={b} label={b.target} active={active === b.key} onOpen={onNavigate} />
                    <Count buffer={b} />
                  </li>
                ))}
              </ul>
            </li>
          )
        })}
      </ul>
      {detached.length === 0 ? null : (
        <details class="detached">
          <summary>Detached ({detached.length})</summary>
          <ul class="buffers">
            {detached.map((b) => (
              <li key={b.key}>
                <a href={bufferHash(b.networkId, b.target)} onClick={onNavigate}>
                  {b.target}
                  <span class="muted"> · {store.networks.get(b.networkId)?.name ?? ""}</span>
                </a>
              </li>
            ))}
          </ul>
        </details>
      )}
      <p class="sidebar-links">
        <a href="#/networks" aria-current={store.view.view === "networks" ? "page" : undefined} onClick={onNavigate}>Networks</a>
        {" · "}
        <a href="#/search" aria-current={store.view.view === "search" ? "page" : undefined} onClick={onNavigate}>Search</a>
        {" · "}
        <a href="#/mentions" aria-current={store.view.view === "mentions" ? "page" : undefined} onClick={onNavigate}>Mentions</a>
      </p>
      <ClientSettings />
    </nav>
  )
}
