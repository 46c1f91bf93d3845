/**
 * MemberRoutes gathers the member's side of the web (docs/decisions/web.md) for `RoutesLive` in main.ts — sign-in and out (`/login`, passkeys), the REST
 * routes of /api/auth, Settings, the web client at `/` (pages/ClientAssets.ts), and the static assets. Stateless.
 */
import { Effect } from "effect"
import { authApiRoutes } from "./auth/AuthApi.js"
import type { Route } from "./HttpServer.js"
import { loginRoutes } from "./auth/LoginRoutes.js"
import { assetRoutes } from "./pages/Assets.js"
import { clientRoutes } from "./pages/ClientAssets.js"
import { settingsRoutes } from "./settings/SettingsRoutes.js"

export const memberRoutes = Effect.map(
  Effect.all([loginRoutes, authApiRoutes, settingsRoutes, clientRoutes]),
  (groups): ReadonlyArray<Route> => [...groups.flat(), ...assetRoutes]
)

