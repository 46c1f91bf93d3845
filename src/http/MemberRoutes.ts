/**
 * MemberRoutes gathers the member's side of the web (CONTRACT "The member's browser
 * surface") for `RoutesLive` in main.ts — sign-in and out (`/login`, passkeys), the REST
 * routes of /api/auth, Settings and the start page, and the static assets — with the
 * services only these routes use. Stateless.
 */
import { Effect, Layer } from "effect"
import { CredentialUsage } from "../services/CredentialUsage.js"
import { PasskeyCeremonies } from "../services/PasskeyCeremonies.js"
import { Passkeys } from "../services/Passkeys.js"
import { SignInLimiter } from "../services/SignInLimiter.js"
import { authApiRoutes } from "./auth/AuthApi.js"
import type { Route } from "./HttpServer.js"
import { loginRoutes } from "./auth/LoginRoutes.js"
import { assetRoutes } from "./pages/Assets.js"
import { settingsRoutes } from "./settings/SettingsRoutes.js"

export const memberRoutes = Effect.map(
  Effect.all([loginRoutes, authApiRoutes, settingsRoutes]),
  (groups): ReadonlyArray<Route> => [...groups.flat(), ...assetRoutes]
)

/** The services of the member's routes (and of the authorization page's sign-in). */
export const MemberServicesLive = Layer.mergeAll(
  SignInLimiter.Default,
  PasskeyCeremonies.Default,
  Passkeys.Default,
  CredentialUsage.Default
)
