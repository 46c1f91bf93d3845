/**
 * AuthorizedAppsSettings owns Settings > Authorized apps (interface "States and
 * transitions"; docs/decisions/web.md): each app the member approved and
 * still has a live token for (name, website host, approved, last used), and each live
 * password-sign-in token as a "Password sign-in" row.
 *
 * Revoking an app revokes every token of that app for this member at once — the next /mcp
 * call with one gets 401 — while the registration itself stays approved (the app may ask
 * again). OAuthTokens announces each revocation on CredentialRevocations after the commit,
 * for the consumers that must also act: the credential cache now, open WebSockets (close
 * 4001) and push subscriptions later. Checks: SettingsHttp. Stateless.
 */
import { Effect } from "effect"
import { MemberPaths } from "../../schema/MemberApi.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { CredentialUsage } from "../../services/identity/CredentialUsage.js"
import { OAuthTokens } from "../../services/identity/OAuthTokens.js"
import type { Route } from "../HttpServer.js"
import { page, seeOther } from "../oauth/OAuthHttp.js"
import { authorizedAppsPage, type Notice } from "../pages/SettingsPages.js"
import { guarded, makeSettingsHttp, type PageVisit } from "./SettingsHttp.js"

const notices: Readonly<Record<string, Notice>> = {
  "app-revoked": { kind: "ok", text: "The app's access was revoked. It must be approved again to use your account." },
  "sign-in-revoked": { kind: "ok", text: "The password sign-in was revoked." },
  "nothing-revoked": { kind: "error", text: "There was nothing left to revoke." }
}

export const authorizedAppsSettingsRoutes = Effect.gen(function*() {
  const config = yield* AppConfig
  const tokens = yield* OAuthTokens
  const usage = yield* CredentialUsage
  const http = makeSettingsHttp(config, { sessions: yield* BrowserSessions, accounts: yield* Accounts })

  const render = (visit: PageVisit, notice: Notice | undefined) =>
    Effect.gen(function*() {
      yield* usage.flush
      const accountId = visit.member.session.accountId
      const apps = yield* tokens.listApps(accountId)
      const passwordSignIns = yield* tokens.listPasswordSignIns(accountId)
      return page(200, authorizedAppsPage(visit.context, { apps, passwordSignIns, notice }))
    })

  const done = (revoked: boolean, what: "app-revoked" | "sign-in-revoked") =>
    seeOther(`${MemberPaths.authorizedApps}?done=${revoked ? what : "nothing-revoked"}`)

  const show: Route = {
    method: "GET",
    path: MemberPaths.authorizedApps,
    name: "settings.authorized-apps",
    handler: (request) => guarded(http.visit(request), (visit) => render(visit, notices[request.query.get("done") ?? ""]))
  }

  const revokeApp: Route = {
    method: "POST",
    path: MemberPaths.revokeApp,
    name: "settings.authorized-apps.revoke",
    handler: (request) =>
      guarded(http.formPost(request, MemberPaths.authorizedApps), (post) =>
        Effect.gen(function*() {
          const clientId = request.params["clientId"] ?? ""
          const count = yield* tokens.revokeForClient(post.member.session.accountId, clientId)
          yield* Effect.logInfo("app revoked in settings").pipe(
            Effect.annotateLogs({ accountId: post.member.session.accountId, clientId, tokens: count })
          )
          return done(count > 0, "app-revoked")
        })).pipe(Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)))
  }

  const revokePasswordSignIn: Route = {
    method: "POST",
    path: MemberPaths.revokePasswordSignIn,
    name: "settings.authorized-apps.revoke-password-sign-in",
    handler: (request) =>
      guarded(http.formPost(request, MemberPaths.authorizedApps), (post) =>
        Effect.gen(function*() {
          const tokenId = Number(request.params["tokenId"])
          const revoked = Number.isSafeInteger(tokenId) && tokenId > 0
            ? yield* tokens.revokePasswordSignIn(post.member.session.accountId, tokenId)
            : false
          return done(revoked, "sign-in-revoked")
        })).pipe(Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)))
  }

  return [show, revokeApp, revokePasswordSignIn] as ReadonlyArray<Route>
})
