import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Route } from "../../src/http/HttpServer.js"
import { makeRouter } from "../../src/http/Router.js"

const route = (method: Route["method"], path: string): Route => ({ method, path, name: `${method} ${path}`, handler: () => Effect.succeed({ status: 204 }) })

const routes = [
  route("POST", "/mcp"),
  route("OPTIONS", "/mcp"),
  route("GET", "/settings/passkeys"),
  route("POST", "/settings/passkeys"),
  route("POST", "/settings/passkeys/options"),
  route("POST", "/settings/passkeys/:id/remove"),
  route("POST", "/settings/authorized-apps/:clientId/revoke"),
  route("POST", "/settings/authorized-apps/password-sign-in/:tokenId/revoke")
]
const router = makeRouter(routes)

describe("Router", () => {
  it.each([
    { method: "POST", path: "/mcp", name: "POST /mcp", params: {} },
    { method: "OPTIONS", path: "/mcp", name: "OPTIONS /mcp", params: {} },
    { method: "POST", path: "/settings/passkeys/options", name: "POST /settings/passkeys/options", params: {} },
    { method: "POST", path: "/settings/passkeys/42/remove", name: "POST /settings/passkeys/:id/remove", params: { id: "42" } },
    {
      method: "POST",
      path: "/settings/authorized-apps/password-sign-in/7/revoke",
      name: "POST /settings/authorized-apps/password-sign-in/:tokenId/revoke",
      params: { tokenId: "7" }
    },
    {
      method: "POST",
      path: "/settings/authorized-apps/a%2Fb%20c/revoke",
      name: "POST /settings/authorized-apps/:clientId/revoke",
      params: { clientId: "a/b c" }
    }
  ])("$method $path → $name", ({ method, path, name, params }) => {
    const match = router.match(method, path)
    expect(match._tag).toBe("Found")
    if (match._tag !== "Found") return
    expect(match.route.name).toBe(name)
    expect(match.params).toEqual(params)
  })

  it("a path known under other methods is 405, and Allow never names OPTIONS (the CORS preflight)", () => {
    expect(router.match("GET", "/mcp")).toEqual({ _tag: "MethodNotAllowed", allow: ["POST"] })
    expect(router.match("DELETE", "/settings/passkeys")).toEqual({ _tag: "MethodNotAllowed", allow: ["GET", "POST"] })
    expect(router.match("HEAD", "/settings/passkeys")).toEqual({ _tag: "MethodNotAllowed", allow: ["GET", "POST"] })
  })

  it("unknown paths, a trailing slash, another case and an empty parameter are 404", () => {
    for (const path of ["/nope", "/mcp/", "/MCP", "/settings/passkeys//remove", "/settings/passkeys/1/remove/x"]) {
      expect(router.match("POST", path)).toEqual({ _tag: "NotFound" })
    }
  })

  it("a route without parameters is the same route whether its path is written plainly or percent-encoded", () => {
    const plain = router.match("POST", "/settings/passkeys/options")
    const encoded = router.match("POST", "/settings/passkeys/%6Fptions")
    expect(plain._tag).toBe("Found")
    expect(encoded).toEqual(plain)
    // A static path beside a parametric one: the static route, as the tree decides.
    expect(makeRouter([route("GET", "/a/:id"), route("GET", "/a/b")]).match("GET", "/a/b")).toMatchObject({
      _tag: "Found",
      route: { name: "GET /a/b" },
      params: {}
    })
  })

  it("two routes for one method and path are refused at start-up", () => {
    expect(() => makeRouter([route("GET", "/a"), route("GET", "/a")])).toThrow()
  })
})
