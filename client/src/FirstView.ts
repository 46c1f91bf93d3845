// FirstView: the buffer the tab will open first, named to the socket at its first opening (`?first=`,
// src/http/ws/FirstView.ts) so that the hello carries that buffer's newest page: the one in the URL's fragment, else the
// one shown last in this browser (Store.show keeps it), else "" — the server then picks as Store.chooseInitialView does
// without either (the most recently active channel, else a server buffer). Pure but for reading the URL and
// localStorage.
import { parseHash } from "./Route.js"

export const firstWish = (): string => {
  const route = parseHash(location.hash)
  if (route !== null) return route.view === "buffer" ? `${route.networkId}:${route.target}` : ""
  // A buffer's key is `<networkId>\n<folded target>` (Casemap.bufferKey).
  const remembered = localStorage.getItem("belay.lastBuffer")
  const cut = remembered === null ? -1 : remembered.indexOf("\n")
  return remembered !== null && cut > 0 ? `${remembered.slice(0, cut)}:${remembered.slice(cut + 1)}` : ""
}
