// NetworksPage: the member's networks — add one, edit it (a change of server, nick or password reconnects it),
// connect or disconnect it (connect_network / disconnect_network), remove it with its history after a confirmation.
// REST: `/api/networks` (docs/architecture.md "The web client").
import { useState } from "preact/hooks"
import { api } from "../Api.js"
import type { NetworkDetails, NetworkInput } from "../Protocol.js"
import type { Network, Store } from "../Store.js"

interface FormValues {
  name: string
  host: string
  port: string
  tls: boolean
  nick: string
  username: string
  realname: string
  password: string
  clearPassword: boolean
  channels: string
}

const empty: FormValues = {
  name: "",
  host: "",
  port: "6697",
  tls: true,
  nick: "",
  username: "",
  realname: "",
  password: "",
  clearPassword: false,
  channels: ""
}

const valuesOf = (d: NetworkDetails): FormValues => ({
  name: d.name,
  host: d.host,
  port: String(d.port),
  tls: d.tls,
  nick: d.nick,
  username: d.username ?? "",
  realname: d.realname ?? "",
  password: "",
  clearPassword: false,
  channels: d.channels.join(", ")
})

const channelList = (text: string) => text.split(/[\s,]+/).filter((c) => c !== "")

const NetworkForm = ({ store, editing, onDone }: { readonly store: Store; readonly editing: Network | null; readonly onDone: () => void }) => {
  const [values, setValues] = useState<FormValues>(editing?.details ? valuesOf(editing.details) : empty)
  const [status, setStatus] = useState("")
  const [busy, setBusy] = useState(false)
  const set = <K extends keyof FormValues>(key: K, value: FormValues[K]) => setValues({ ...values, [key]: value })
  const text = (key: "name" | "host" | "port" | "nick" | "username" | "realname" | "password" | "channels", label: string, extra: Record<string, unknown> = {}) => (
    <p class="field">
      <label for={`network-${key}`}>{label}</label>
      {key === "password"
        ? <input id={`network-${key}`} type="password" value={values[key]} onInput={(e) => set(key, e.currentTarget.value)} {...extra} />
        : <input id={`network-${key}`} type="text" value={values[key]} onInput={(e) => set(key, e.currentTarget.value)} {...extra} />}
    </p>
  )
  const submit = async (e: Event) => {
    e.preventDefault()
    const port = Number(values.port)
    if (!Number.isInteger(port) || port < 1 || port > 65535) return setStatus("The port is a number from 1 to 65535.")
    const body: NetworkInput = {
      name: values.name.trim(),
      host: values.host.trim(),
      port,
      tls: values.tls,
      nick: values.nick.trim(),
      // Empty: nothing for a new network; on an edit, null clears what was set.
      ...(values.username.trim() !== "" ? { username: values.username.trim() } : editing === null ? {} : { username: null }),
      ...(values.realname.trim() !== "" ? { realname: values.realname.trim() } : editing === null ? {} : { realname: null }),
      ...(values.password !== "" ? { password: values.password } : values.clearPassword ? { password: null } : {}),
      channels: channelList(values.channels)
    }
    setBusy(true)
    setStatus(editing === null ? "Adding…" : "Saving…")
    const answer = editing === null
      ? await api<NetworkDetails>("POST", "/api/networks", body)
      : await api<NetworkDetails>("PATCH", `/api/networks/${editing.id}`, body)
    setBusy(false)
    if (!answer.ok) return setStatus(answer.status === 409 ? "A network with that name exists already." : answer.error)
    setStatus(editing === null ? "Added." : "Saved.")
    await store.refreshNetworks()
    if (editing === null) store.openBuffer(answer.body.id, `:server:${answer.body.id}`)
    else onDone()
  }
  return (
    <form class="network-form" onSubmit={submit} aria-label={editing === null ? "Add a network" : `Edit ${editing.name}`}>
      <h2>{editing === null ? "Add a network" : `Edit ${editing.name}`}</h2>
      {text("name", "Name", { required: true, placeholder: "libera" })}
      {text("host", "Server", { required: true, placeholder: "irc.libera.chat", autoCapitalize: "none", spellcheck: false })}
      {text("port", "Port", { required: true, inputMode: "numeric" })}
      <p class="field check">
        <input id="network-tls" type="checkbox" checked={values.tls} onChange={(e) => set("tls", e.currentTarget.checked)} />
        <label for="network-tls">Use TLS</label>
      </p>
      {text("nick", "Nick", { required: true, autoCapitalize: "none", spellcheck: false })}
      {text("username", "Username (optional)", { autoCapitalize: "none", spellcheck: false })}
      {text("realname", "Real name (optional)")}
      {text("password", editing?.details?.hasPassword ? "Server password (set; type to change)" : "Server password (optional)", { autoComplete: "new-password" })}
      {editing?.details?.hasPassword
        ? (
          <p class="field check">
            <input id="network-clear-password" type="checkbox" checked={values.clearPassword} onChange={(e) => set("clearPassword", e.currentTarget.checked)} />
            <label for="network-clear-password">Remove the server password</label>
          </p>
        )
        : null}
      {text("channels", "Channels to join", { placeholder: "#belay, #irc", autoCapitalize: "none", spellcheck: false })}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>{editing === null ? "Add network" : "Save"}</button>
        {editing === null ? null : <button type="button" onClick={onDone}>Cancel</button>}
      </div>
      <p role="status">{status}</p>
    </form>
  )
}

const NetworkRow = ({ store, network }: { readonly store: Store; readonly network: Network }) => {
  const [confirming, setConfirming] = useState(false)
  const [status, setStatus] = useState("")
  const run = async (what: () => Promise<unknown>, done: string) => {
    try {
      await what()
      setStatus(done)
    } catch (error) {
      setStatus((error as Error).message)
    }
  }
  const remove = async () => {
    const answer = await api("DELETE", `/api/networks/${network.id}`)
    if (!answer.ok) return setStatus(answer.error)
    store.removeNetworkLocally(network.id)
  }
  const d = network.details
  return (
    <li class="network-card">
      <h2>{network.name}</h2>
      <p>
        {d === null ? null : <>{d.host}:{d.port}{d.tls ? " (TLS)" : ""} · </>}
        <span class={`state state-${network.state}`}>{network.state}</span>
        {network.nick === null ? null : <> as {network.nick}</>}
        {d?.lastError ? <span class="warn"> · {d.lastError}</span> : null}
      </p>
      <div class="actions">
        {network.state === "offline"
          ? <button type="button" onClick={() => void run(() => store.callOk("connect_network", { networkId: network.id }), "Connecting…")}>Connect {network.name}</button>
          : <button type="button" onClick={() => void run(() => store.callOk("disconnect_network", { networkId: network.id }), "Disconnected.")}>Disconnect {network.name}</button>}
        <a class="button" href={`#/networks/${network.id}`}>Edit {network.name}</a>
        {confirming
          ? (
            <>
              <button type="button" class="danger" onClick={() => void remove()}>Remove {network.name} and its history</button>
              <button type="button" onClick={() => setConfirming(false)}>Keep it</button>
            </>
          )
          : <button type="button" onClick={() => setConfirming(true)}>Remove {network.name}…</button>}
      </div>
      <p role="status">{status}</p>
    </li>
  )
}

export const NetworksPage = ({ store, editing }: { readonly store: Store; readonly editing: number | undefined }) => {
  const networks = [...store.networks.values()].sort((a, b) => a.name.localeCompare(b.name))
  const edited = editing === undefined ? null : store.networks.get(editing) ?? null
  return (
    <section class="page" aria-labelledby="networks-title">
      <h1 id="networks-title">Networks</h1>
      {networks.length === 0 ? <p>No network yet: add one below and Belay keeps it connected.</p> : null}
      <ul class="network-list">{networks.map((n) => <NetworkRow key={n.id} store={store} network={n} />)}</ul>
      <NetworkForm key={edited?.id ?? "new"} store={store} editing={edited} onDone={() => store.show({ view: "networks" })} />
    </section>
  )
}
