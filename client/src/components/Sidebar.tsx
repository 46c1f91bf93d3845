// Sidebar: the "Buffers" navigation — each network (its server buffer, named by the network, with its connection
// state) and its channels and conversations, named by their target, with unread and highlight counts beside them.
import type { Buffer } from "../Buffer.js"
import type { Network, Store } from "../Store.js"
import { bufferHash } from "../Route.js"

const STATE_LABEL: Readonly<Record<string, string>> = {
  connected: "connected",
  connecting: "connecting…",
  backoff: "waiting to reconnect",
  offline: "offline"
}

const byName = (a: Buffer, b: Buffer) => a.target.localeCompare(b.target, undefined, { sensitivity: "base" })

const Count = ({ buffer }: { readonly buffer: Buffer }) => {
  if (buffer.unread === 0) return null
  const label = `${buffer.unread} unread${buffer.highlights > 0 ? `, ${buffer.highlights} for you` : ""}`
  return (
    <span id={`count-${buffer.key.replace(/\W/g, "_")}`} class={buffer.highlights > 0 ? "count highlight" : "count"} aria-label={label} title={label}>
      {buffer.unread}
    </span>
  )
}

const BufferLink = ({ buffer, label, active, onOpen }: { readonly buffer: Buffer; readonly label: string; readonly active: boolean; readonly onOpen: () => void }) => (
  <a
    href={bufferHash(buffer.networkId, buffer.target)}
    aria-current={active ? "page" : undefined}
    aria-describedby={buffer.unread > 0 ? `count-${buffer.key.replace(/\W/g, "_")}` : undefined}
    class={[buffer.unread > 0 ? "unread" : "", buffer.kind === "channel" && !buffer.joined ? "parted" : ""].join(" ")}
    onClick={onOpen}
  >
    {label}
  </a>
)

export const Sidebar = ({ store, open, onNavigate }: { readonly store: Store; readonly open: boolean; readonly onNavigate: () => void }) => {
  const active = store.view.view === "buffer" ? store.view.key : null
  const networks = [...store.networks.values()].sort((a, b) => a.name.localeCompare(b.name))
  const buffersOf = (n: Network) => [...store.buffers.values()].filter((b) => b.networkId === n.id)
  return (
    <nav id="sidebar" class={open ? "sidebar open" : "sidebar"} aria-label="Buffers">
      <ul class="networks">
        {networks.map((network) => {
          const all = buffersOf(network)
          const server = all.find((b) => b.kind === "server")
          const channels = all.filter((b) => b.kind === "channel").sort(byName)
          const queries = all.filter((b) => b.kind === "query").sort(byName)
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
                {[...channels, ...queries].map((b) => (
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
      <p class="sidebar-links">
        <a href="#/networks" aria-current={store.view.view === "networks" ? "page" : undefined} onClick={onNavigate}>Networks</a>
        {" · "}
        <a href="#/search" aria-current={store.view.view === "search" ? "page" : undefined} onClick={onNavigate}>Search</a>
      </p>
    </nav>
  )
}
