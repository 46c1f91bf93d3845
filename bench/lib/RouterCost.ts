/**
 * RouterCost owns one figure: what Belay's router (src/http/Router.ts, find-my-way) costs one /mcp request. It builds
 * the router Belay builds, over every path Belay declares (OAuthPaths, MemberPaths, NetworkPaths, PushPaths) under
 * every method a Route may have — more routes than Belay registers, so the tree is at least as large — and times
 * `match("POST", "/mcp")` in a loop in the bench process. Pure CPU; the caller runs it while no load runs.
 */
import { Effect } from "effect"
import type { Route } from "../../src/http/HttpServer.js"
import { NetworkPaths } from "../../src/http/networks/NetworkRoutes.js"
import { PushPaths } from "../../src/http/push/PushRoutes.js"
import { makeRouter } from "../../src/http/Router.js"
import { MemberPaths } from "../../src/schema/MemberApi.js"
import { OAuthPaths } from "../../src/schema/OAuth.js"

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const
const MATCHES = 1_000_000
const TRIES = 5

export interface RouterCost {
  readonly routes: number
  /** The fastest of TRIES loops of MATCHES matches, per match. */
  readonly nanosecondsPerMatch: number
}

export const routerCost = (): RouterCost => {
  const paths = [...new Set([OAuthPaths, MemberPaths, NetworkPaths, PushPaths].flatMap((p) => Object.values(p)))]
  const routes: Array<Route> = paths.flatMap((path) =>
    METHODS.map((method): Route => ({ method, path, handler: () => Effect.die("never called: the router is only matched") }))
  )
  const router = makeRouter(routes)
  let found = 0
  const loop = (n: number) => {
    for (let i = 0; i < n; i++) if (router.match("POST", OAuthPaths.mcp)._tag === "Found") found++
  }
  loop(MATCHES / 5)
  let best = Infinity
  for (let t = 0; t < TRIES; t++) {
    const started = process.hrtime.bigint()
    loop(MATCHES)
    best = Math.min(best, Number(process.hrtime.bigint() - started) / MATCHES)
  }
  // Every match must have found the route, or the loop timed something else.
  if (found !== MATCHES / 5 + TRIES * MATCHES) throw new Error("the router did not find POST /mcp")
  return { routes: routes.length, nanosecondsPerMatch: best }
}
