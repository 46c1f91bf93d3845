// App: the page — the top bar (menu on phones, connection status, and the account's actions: notifications, settings,
// sign-out), the "Buffers" sidebar, and the active view. It is the one subscriber of the Store and draws again after
// each change. On a phone the top bar stays one row: the account's actions fold into the "Account" menu (⋮), as chat
// apps keep settings and sign-out one tap away in an overflow menu rather than wrapping the bar above the channel.
import { useEffect, useState } from "preact/hooks"
import { api, signInAgain } from "../Api.js"
import { disablePush, enableNotifications, notificationsSupported, permission, pushEnabled } from "../Notifications.js"
import type { Store } from "../Store.js"
import { BufferView } from "./BufferView.js"
import { NetworksPage } from "./NetworksPage.js"
import { MentionsView } from "./MentionsView.js"
import { SearchPage } from "./SearchPage.js"
import { Sidebar } from "./Sidebar.js"
import { KeyboardLayer } from "./Switcher.js"

const useStore = (store: Store) => {
  const [, setVersion] = useState(0)
  useEffect(() => store.subscribe(() => setVersion((v) => v + 1)), [store])
}

const ConnectionStatus = ({ store }: { readonly store: Store }) => {
  const [, tick] = useState(0)
  const p = store.phase
  useEffect(() => {
    if (p.phase !== "waiting") return
    const timer = setInterval(() => tick((t) => t + 1), 1000)
    return () => clearInterval(timer)
  }, [p])
  let text = ""
  if (p.phase === "connecting") text = p.attempt === 0 && store.account === null ? "Connecting…" : "Reconnecting…"
  else if (p.phase === "waiting") {
    text = `Disconnected. Reconnecting in ${Math.max(1, Math.ceil((p.retryAt - Date.now()) / 1000))} s…`
  } else if (p.phase === "signed-out") text = "Signed out."
  return (
    <div class={`connection ${p.phase}`}>
      <span role="status" aria-live="polite">{text}</span>
      {p.phase === "waiting" ? <button type="button" class="small" onClick={() => store.connection.reconnectNow()}>Reconnect now</button> : null}
      {p.phase === "signed-out" ? <button type="button" class="small" onClick={signInAgain}>Sign in again</button> : null}
    </div>
  )
}

const NotificationsButton = ({ store }: { readonly store: Store }) => {
  // Read once a mount, not at each draw: every read of Notification.permission asks the browser's permission service.
  const [on, setOn] = useState(() => permission() === "granted")
  if (!notificationsSupported()) return null
  if (on) {
    return pushEnabled()
      ? <button type="button" class="small" onClick={() => void disablePush().then(() => setOn(false))}>Turn off push</button>
      : null
  }
  return (
    <button type="button" class="small" onClick={() => void enableNotifications().then((message) => {
      store.notify(message)
      setOn(permission() === "granted")
    })}>
      Enable notifications
    </button>
  )
}

/**
 * The account's actions. Wide screens show them in the bar; on a phone (styles.css) they fold behind the "Account"
 * button into a menu that closes on Escape, on a click outside it, and once an action is chosen.
 */
const AccountActions = ({ store, onSignOut }: { readonly store: Store; readonly onSignOut: () => void }) => {
  const [open, setOpen] = useState(false)
  useEffect(() => {
    if (!open) return
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") setOpen(false)
    }
    const onClick = (e: MouseEvent) => {
      if (!(e.target instanceof Element) || e.target.closest(".account-actions, .account-toggle") === null) setOpen(false)
    }
    document.addEventListener("keydown", onKey)
    document.addEventListener("click", onClick)
    return () => {
      document.removeEventListener("keydown", onKey)
      document.removeEventListener("click", onClick)
    }
  }, [open])
  return (
    <>
      <button
        type="button"
        class="account-toggle small"
        aria-label="Account"
        aria-expanded={open}
        aria-controls="account-actions"
        onClick={() => setOpen(!open)}
      >
        <span aria-hidden="true">⋮</span>
      </button>
      <div id="account-actions" class={open ? "account-actions open" : "account-actions"}>
        {store.account === null ? null : <span class="account muted">{store.account.name}{store.account.paused ? " (paused: read only)" : ""}</span>}
        <NotificationsButton store={store} />
        <a class="small" href="/settings">Settings</a>
        <button type="button" class="small" onClick={() => {
          setOpen(false)
          onSignOut()
        }}>Sign out</button>
      </div>
    </>
  )
}

export const App = ({ store }: { readonly store: Store }) => {
  useStore(store)
  const [menuOpen, setMenuOpen] = useState(false)
  const view = store.view
  const active = store.activeBuffer
  const signOut = async () => {
    await api("POST", "/api/auth/logout")
    signInAgain()
  }
  let main
  if (view.view === "buffer" && active !== undefined) main = <BufferView store={store} buffer={active} />
  else if (view.view === "networks") main = <NetworksPage store={store} editing={view.editing} />
  else if (view.view === "search") main = <SearchPage store={store} />
  else if (view.view === "mentions") main = <MentionsView store={store} />
  else main = <p class="page">{store.phase.phase === "open" ? "Loading…" : "Connecting to Belay…"}</p>
  return (
    <div class={menuOpen ? "app menu-open" : "app"}>
      <header class="topbar">
        <button type="button" class="menu" aria-expanded={menuOpen} aria-controls="sidebar" onClick={() => setMenuOpen(!menuOpen)}>
          Buffers
        </button>
        <span class="brand">Belay</span>
        <ConnectionStatus store={store} />
        <span class="spacer" />
        <AccountActions store={store} onSignOut={() => void signOut()} />
      </header>
      <Sidebar store={store} open={menuOpen} onNavigate={() => setMenuOpen(false)} />
      <main class="main">{main}</main>
      <KeyboardLayer store={store} />
      <div class="notices" role="alert">
        {store.notices.map((n) => <p key={n.id}>{n.text}</p>)}
      </div>
    </div>
  )
}
