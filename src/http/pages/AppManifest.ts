/**
 * AppManifest owns `GET /app.webmanifest` and `GET /icons/:file`: what makes the web client installable (W3C Web App
 * Manifest) — its name, start URL, standalone display and colours, and its icons of 192 and 512 pixels, ordinary and
 * maskable (AppIcons.ts, drawn once when the routes are built). An installed Belay opens `/` in its own window, and
 * there (on iOS only there) receives Web Push through the service worker. Neither needs a session: a browser fetches
 * the manifest without credentials (its `crossorigin` is absent), and both name nothing of a member.
 * `application/manifest+json` (the manifest's registered type), `nosniff`; the manifest is `no-cache` (it may change
 * with a release), the icons cached for a day. Stateless.
 */
import { Effect } from "effect"
import { json, type Route } from "../HttpServer.js"
import { drawIcon } from "./AppIcons.js"

export const MANIFEST_PATH = "/app.webmanifest"
export const ICON_PATH = "/icons/:file"
export const MANIFEST_CONTENT_TYPE = "application/manifest+json"
/** The client's light and dark top-bar colours (client/src/styles.css), for the installed window's title bar. */
export const THEME_COLOR = "#0b5cad"
export const THEME_COLOR_DARK = "#161b22"

const ICONS = [
  { file: "icon-192.png", size: 192, purpose: "any" },
  { file: "icon-512.png", size: 512, purpose: "any" },
  { file: "maskable-192.png", size: 192, purpose: "maskable" },
  { file: "maskable-512.png", size: 512, purpose: "maskable" }
] as const

export const webAppManifest = {
  id: "/",
  name: "Belay",
  short_name: "Belay",
  description: "Your IRC networks, channels and history, always connected.",
  start_url: "/",
  scope: "/",
  display: "standalone",
  background_color: "#f6f8fa",
  theme_color: THEME_COLOR,
  icons: ICONS.map((i) => ({ src: `/icons/${i.file}`, sizes: `${i.size}x${i.size}`, type: "image/png", purpose: i.purpose }))
} as const

export const manifestRoutes = Effect.sync((): ReadonlyArray<Route> => {
  const body = Buffer.from(JSON.stringify(webAppManifest, null, 2) + "\n")
  const icons = new Map<string, Buffer>(ICONS.map((i) => [i.file, drawIcon(i.size, i.purpose === "maskable")]))
  return [
    {
      method: "GET",
      path: MANIFEST_PATH,
      name: "web-app-manifest",
      handler: () =>
        Effect.succeed({
          status: 200,
          headers: { "content-type": MANIFEST_CONTENT_TYPE, "cache-control": "no-cache", "x-content-type-options": "nosniff" },
          body
        })
    },
    {
      method: "GET",
      path: ICON_PATH,
      name: "web-app-icons",
      handler: (request) => {
        const icon = icons.get(request.params["file"] ?? "")
        return Effect.succeed(
          icon === undefined ? json(404, { error: "not_found" }) : {
            status: 200,
            headers: { "content-type": "image/png", "cache-control": "public, max-age=86400", "x-content-type-options": "nosniff" },
            body: icon
          }
        )
      }
    }
  ]
})
