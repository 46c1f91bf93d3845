// Route: the view in the URL's fragment, so that a buffer can be bookmarked, opened in another tab, and reached with
// the browser's Back button: `#/b/<networkId>/<target>`, `#/networks`, `#/networks/<id>` (editing one), `#/search`,
// `#/mentions`.
// Pure.
import { fold } from "./Casemap.js"

export type Route =
  | { readonly view: "buffer"; readonly networkId: number; readonly target: string }
  | { readonly view: "networks"; readonly editing?: number }
  | { readonly view: "search" }
  | { readonly view: "mentions" }

export const bufferHash = (networkId: number, target: string) => `#/b/${networkId}/${encodeURIComponent(target)}`

export const parseHash = (hash: string): Route | null => {
  const buffer = /^#\/b\/(\d+)\/(.+)$/.exec(hash)
  if (buffer !== null) {
    try {
      return { view: "buffer", networkId: Number(buffer[1]), target: decodeURIComponent(buffer[2]!) }
    } catch {
      return null
    }
  }
  const networks = /^#\/networks(?:\/(\d+))?$/.exec(hash)
  if (networks !== null) return networks[1] === undefined ? { view: "networks" } : { view: "networks", editing: Number(networks[1]) }
  if (hash === "#/search") return { view: "search" }
  if (hash === "#/mentions") return { view: "mentions" }
  return null
}

/** Whether two fragments name the same view (a buffer's target compared folded). */
export const sameRoute = (a: string, b: string) => {
  const x = parseHash(a)
  const y = parseHash(b)
  if (x === null || y === null || x.view !== y.view) return false
  return x.view !== "buffer" || y.view !== "buffer" || x.networkId === y.networkId && fold(x.target) === fold(y.target)
}
