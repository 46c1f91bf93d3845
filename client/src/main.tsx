// The web client's entry: one Store, its socket started, the App drawn into #app; the URL's fragment, the tab's
// focus and the service worker's clicks are fed to the Store. docs/architecture.md "The web client".
import { render } from "preact"
import { App } from "./components/App.js"
import { notifyLocally, onWorkerOpen, permission } from "./Notifications.js"
import { preferences } from "./Preferences.js"
import { parseHash } from "./Route.js"
import { Store } from "./Store.js"
import { prepareTimes } from "./Times.js"
import "./styles.css"

const store = new Store()

addEventListener("hashchange", () => {
  const route = parseHash(location.hash)
  if (route !== null) store.route(route)
})
const looking = () => document.visibilityState === "visible" && document.hasFocus()
addEventListener("focus", () => store.setFocused(looking()))
addEventListener("blur", () => store.setFocused(false))
document.addEventListener("visibilitychange", () => store.setFocused(looking()))

store.onLiveMessage = (buffer, message, highlight) => {
  // As the member chose for the buffer (Preferences.ts): muted or "none" never, "all" every message.
  if (!preferences.notifies(buffer.networkId, buffer.target, highlight) || permission() !== "granted") return
  notifyLocally(message, buffer.kind === "query", () => store.openBuffer(buffer.networkId, buffer.target))
}
onWorkerOpen((networkId, target) => store.openBuffer(networkId, target))

// The socket first: it opens while the page draws its frame and the time formats load (Times.ts).
store.start()
render(<App store={store} />, document.getElementById("app")!)
prepareTimes()
// The worker keeps the offline shell besides showing pushes (sw/ServiceWorker.ts): registered at every start, not only
// when push is turned on, so an installed Belay opens without a network. Not before the first view is chosen (or the
// socket failed): its install fetches the shell and the bundle again, which would compete with the first draw.
const registerWorker = () => {
  if ("serviceWorker" in navigator) void navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(() => undefined)
}
const untilFirstView = store.subscribe(() => {
  if (store.view.view === "none" && (store.phase.phase === "connecting" || store.phase.phase === "open")) return
  untilFirstView()
  setTimeout(registerWorker, 1000)
})
