/**
 * PasswordSettings owns Settings > Password: the member changes it with the current and a
 * new one. It revokes nothing — the session, approved apps, password-sign-in tokens and
 * API tokens all stay (interface "States and transitions": only account recovery revokes).
 * A wrong current password is a failed sign-in for SignInLimiter (by address and account),
 * so a borrowed session cannot be used to guess it. Checks: SettingsHttp. Stateless.
 */
import { Effect, Either } from "effect"
import { MemberPaths } from "../../schema/MemberApi.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { SignInLimiter } from "../../services/identity/SignInLimiter.js"
import type { Route } from "../HttpServer.js"
import { page, seeOther } from "../oauth/OAuthHttp.js"
import { type Notice, passwordPage, SettingsFields } from "../pages/SettingsPages.js"
import { field, guarded, makeSettingsHttp, recheckPassword } from "./SettingsHttp.js"

const notices: Readonly<Record<string, Notice>> = {
  changed: { kind: "ok", text: "Your password was changed. Everything stays signed in." }
}

export const passwordSettingsRoutes = Effect.gen(function*() {
  const config = yield* AppConfig
  const accounts = yield* Accounts
  const limiter = yield* SignInLimiter
  const http = makeSettingsHttp(config, { sessions: yield* BrowserSessions, accounts: yield* Accounts })

  const show: Route = {
    method: "GET",
    path: MemberPaths.password,
    name: "settings.password",
    handler: (request) =>
      guarded(http.visit(request), (visit) =>
        Effect.succeed(page(200, passwordPage(visit.context, { notice: notices[request.query.get("done") ?? ""] }))))
  }

  const change: Route = {
    method: "POST",
    path: MemberPaths.password,
    name: "settings.password.change",
    handler: (request) =>
      guarded(http.formPost(request, MemberPaths.password), (post) =>
        Effect.gen(function*() {
          const refuse = (status: number, text: string, headers: Readonly<Record<string, string>> = {}) =>
            page(status, passwordPage(post.context, { notice: { kind: "error", text } }), headers)
          const name = post.context.accountName
          const checked = yield* recheckPassword(
            { config, accounts, limiter },
            request,
            { accountName: name, accountId: post.member.session.accountId },
            field(post.form, SettingsFields.currentPassword),
            "The current password is not correct."
          )
          if (Either.isLeft(checked)) return refuse(checked.left.status, checked.left.text, checked.left.headers)
          return yield* accounts.changePassword(name, field(post.form, SettingsFields.newPassword)).pipe(
            Effect.tap(() => Effect.logInfo("password changed in settings").pipe(Effect.annotateLogs({ account: name }))),
            Effect.as(seeOther(`${MemberPaths.password}?done=changed`)),
            Effect.catchTags({
              InvalidAccountInput: () => Effect.succeed(refuse(400, "The new password must be 8 to 1024 characters.")),
              AccountNotFound: () => Effect.dieMessage("the signed-in account is gone")
            })
          )
        })).pipe(Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)))
  }

  return [show, change] as ReadonlyArray<Route>
})
