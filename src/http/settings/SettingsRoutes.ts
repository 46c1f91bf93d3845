/**
 * SettingsRoutes gathers the member's pages (docs/decisions/web.md):
 * `/settings` (→ the first section) and the five sections (`/` is the web client, pages/ClientAssets.ts). Without a session every
 * one of them answers 303 to `/login?next=<its path>` (SettingsHttp). Stateless.
 */
import { Effect } from "effect"
import { MemberPaths } from "../../schema/MemberApi.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import type { Route } from "../HttpServer.js"
import { seeOther } from "../oauth/OAuthHttp.js"
import { accountSettingsRoutes } from "./AccountSettings.js"
import { apiTokensSettingsRoutes } from "./ApiTokensSettings.js"
import { authorizedAppsSettingsRoutes } from "./AuthorizedAppsSettings.js"
import { passkeysSettingsRoutes } from "./PasskeysSettings.js"
import { passwordSettingsRoutes } from "./PasswordSettings.js"
import { guarded, makeSettingsHttp } from "./SettingsHttp.js"

const settingsIndexRoutes = Effect.gen(function*() {
  const http = makeSettingsHttp(yield* AppConfig, { sessions: yield* BrowserSessions, accounts: yield* Accounts })
  return [
    {
      method: "GET",
      path: MemberPaths.settings,
      name: "settings",
      handler: (request) => guarded(http.visit(request), () => Effect.succeed(seeOther(MemberPaths.apiTokens)))
    }
  ] satisfies ReadonlyArray<Route>
})

export const settingsRoutes = Effect.map(
  Effect.all([settingsIndexRoutes, apiTokensSettingsRoutes, authorizedAppsSettingsRoutes, passkeysSettingsRoutes, passwordSettingsRoutes, accountSettingsRoutes]),
  (groups): ReadonlyArray<Route> => groups.flat()
)
