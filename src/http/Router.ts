/**
 * Router owns matching a request's method and path to one Route: a find-my-way radix tree
 * (Fastify's router) built once from `HttpRoutes`, so routes may carry path parameters
 * (`/settings/passkeys/:id/remove`) and exact paths cost one tree walk, not a scan.
 * Immutable after construction; `match` is a pure lookup, safe from any fiber.
 *
 * A path that exists under other methods answers 405 with `Allow` (RFC 9110 §15.5.6):
 * /mcp relies on it (docs/decisions/http-and-mcp.md: GET and DELETE /mcp → 405, never 401).
 */
import FindMyWay from "find-my-way"
import type { Route } from "./Route.js"

export type RouteMatch =
  | { readonly _tag: "Found"; readonly route: Route; readonly params: Readonly<Record<string, string>> }
  | { readonly _tag: "MethodNotAllowed"; readonly allow: ReadonlyArray<string> }
  | { readonly _tag: "NotFound" }

const NOT_FOUND: RouteMatch = { _tag: "NotFound" }
const NO_PARAMS: Readonly<Record<string, string>> = Object.freeze({})

/** Methods a Route may declare, in the order `Allow` lists them. */
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const
type Method = (typeof METHODS)[number]

const isMethod = (method: string): method is Method => (METHODS as ReadonlyArray<string>).includes(method)

export interface Router {
  readonly match: (method: string, path: string) => RouteMatch
}

/** Fails at start-up on two routes for one method and path (find-my-way throws). */
export const makeRouter = (routes: ReadonlyArray<Route>): Router => {
  const tree = FindMyWay({ ignoreTrailingSlash: false, caseSensitive: true })
  const used = new Set<Method>()
  // Routes without parameters, by method and exact path, each with its match made once: POST /mcp is found without
  // the tree's walk or an object per request. A path the tree would match only after decoding (`/%6dcp`) is not here
  // and goes to the tree, which matches it as before; an exact path the tree also finds first (static before
  // parametric segments), so both ways give the same route.
  const exact = new Map<string, RouteMatch>()
  for (const route of routes) {
    used.add(route.method)
    // The handler slot is unused: the Route travels as the route's store.
    tree.on(route.method, route.path, () => undefined, route)
    if (!/[:*]/.test(route.path)) exact.set(`${route.method} ${route.path}`, { _tag: "Found", route, params: NO_PARAMS })
  }

  // OPTIONS is the CORS preflight (Cors.ts), not a method of the resource: `Allow` names the
  // others, as docs/decisions/http-and-mcp.md fixes for /mcp (`Allow: POST`).
  const allowed = (path: string): ReadonlyArray<string> =>
    METHODS.filter((method) => method !== "OPTIONS" && used.has(method) && tree.find(method, path) !== null)

  const match = (method: string, path: string): RouteMatch => {
    const known = exact.get(`${method} ${path}`)
    if (known !== undefined) return known
    if (isMethod(method)) {
      const found = tree.find(method, path)
      if (found !== null) {
        const params = found.params
        let clean: Record<string, string> | undefined
        let empty = false
        for (const key in params) {
          const value = params[key]
          // find-my-way matches `/a//b` with an empty `:id`; an empty segment names nothing.
          if (value === undefined || value === "") empty = true
          else (clean ??= {})[key] = value
        }
        if (empty) return NOT_FOUND
        return { _tag: "Found", route: found.store as Route, params: clean ?? NO_PARAMS }
      }
    }
    const allow = allowed(path)
    return allow.length === 0 ? NOT_FOUND : { _tag: "MethodNotAllowed", allow }
  }

  return { match }
}
