/**
 * Assets owns `GET /assets/:file`, the static files our pages load from their own origin
 * (no third-party resource, RFC 9700 §4.2.4): today the passkey script. Each name carries
 * its content's hash, so an answer may be cached for a year (`immutable`); any other name
 * is 404. Held in memory; stateless.
 */
import { Effect } from "effect"
import { MemberPaths } from "../../schema/MemberApi.js"
import { json, type Route } from "../HttpServer.js"
import { PASSKEY_SCRIPT, PASSKEY_SCRIPT_FILE } from "./PasskeyScript.js"

const files: ReadonlyMap<string, { readonly type: string; readonly body: Buffer }> = new Map([
  [PASSKEY_SCRIPT_FILE, { type: "text/javascript; charset=utf-8", body: Buffer.from(PASSKEY_SCRIPT) }]
])

export const assetRoutes: ReadonlyArray<Route> = [
  {
    method: "GET",
    path: MemberPaths.assets,
    name: "assets",
    handler: (request) => {
      const file = files.get(request.params["file"] ?? "")
      return Effect.succeed(
        file === undefined ? json(404, { error: "not_found" }) : {
          status: 200,
          headers: {
            "content-type": file.type,
            "cache-control": "public, max-age=31536000, immutable",
            "x-content-type-options": "nosniff"
          },
          body: file.body
        }
      )
    }
  }
]
