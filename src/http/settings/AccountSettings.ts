/**
 * AccountSettings owns Settings › Your data (docs/decisions/leaving.md): the export, streamed as a download of JSON
 * Lines (AccountExport) at the pace the browser takes it, and the deletion of the account, after the member's
 * password — as Settings › Password asks for it, a wrong one counting as a failed sign-in (SignInLimiter), so a
 * borrowed session can neither delete the account nor guess its password. Passkey re-authentication is not offered
 * here: a member with only passkeys asks the operator (`belay account delete`). On success the account is unusable at
 * once (AccountDeletion.begin: this very session is ended with the rest) and the browser goes to sign-in.
 * Checks: SettingsHttp. Stateless.
 */
import { Effect, Either } from "effect"
import { MemberPaths } from "../../schema/MemberApi.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { SignInLimiter } from "../../services/identity/SignInLimiter.js"
import { AccountDeletion } from "../../services/memberdata/AccountDeletion.js"
import { AccountExport } from "../../services/memberdata/AccountExport.js"
import type { Route } from "../HttpServer.js"
import { page, seeOther } from "../oauth/OAuthHttp.js"
import { securityHeaders } from "../pages/Pages.js"
import { accountPage, SettingsFields } from "../pages/SettingsPages.js"
import { field, guarded, makeSettingsHttp, recheckPassword } from "./SettingsHttp.js"

/** A name safe in a quoted `filename` (RFC 6266): account names are already letters, digits, `.`, `_` and `-`. */
const fileName = (account: string) => `belay-${account.replace(/[^A-Za-z0-9._-]/g, "_")}.jsonl`

export const accountSettingsRoutes = Effect.gen(function*() {
  const config = yield* AppConfig
  const accounts = yield* Accounts
  const limiter = yield* SignInLimiter
  const deletion = yield* AccountDeletion
  const exporter = yield* AccountExport
  const http = makeSettingsHttp(config, { sessions: yield* BrowserSessions, accounts })

  const show: Route = {
    method: "GET",
    path: MemberPaths.account,
    name: "settings.account",
    handler: (request) => guarded(http.visit(request), (visit) => Effect.succeed(page(200, accountPage(visit.context))))
  }

  const download: Route = {
    method: "GET",
    path: MemberPaths.accountExport,
    name: "settings.account.export",
    handler: (request) =>
      guarded(http.visit(request), (visit) =>
        exporter.byId(visit.member.session.accountId).pipe(
          Effect.map((lines) => ({
            status: 200,
            headers: {
              ...securityHeaders,
              "content-type": "application/x-ndjson; charset=utf-8",
              "content-disposition": `attachment; filename="${fileName(visit.member.accountName)}"`,
              "cache-control": "no-store",
              "x-content-type-options": "nosniff"
            },
            stream: lines
          })),
          Effect.catchTag("AccountNotFound", () => Effect.succeed(seeOther(MemberPaths.login)))
        ))
  }

  const remove: Route = {
    method: "POST",
    path: MemberPaths.accountDelete,
    name: "settings.account.delete",
    handler: (request) =>
      guarded(http.formPost(request, MemberPaths.account), (post) =>
        Effect.gen(function*() {
          const refuse = (status: number, text: string, headers: Readonly<Record<string, string>> = {}) =>
            page(status, accountPage(post.context, { notice: { kind: "error", text } }), headers)
          const name = post.context.accountName
          const checked = yield* recheckPassword(
            { config, accounts, limiter },
            request,
            { accountName: name, accountId: post.member.session.accountId },
            field(post.form, SettingsFields.currentPassword),
            "The password is not correct. Nothing was deleted."
          )
          if (Either.isLeft(checked)) return refuse(checked.left.status, checked.left.text, checked.left.headers)
          return yield* deletion.begin(name).pipe(
            Effect.tap(() => Effect.logInfo("account deletion asked for in settings").pipe(Effect.annotateLogs({ account: name }))),
            Effect.as(seeOther(MemberPaths.login)),
            Effect.catchTag("AccountNotFound", () => Effect.succeed(seeOther(MemberPaths.login)))
          )
        })).pipe(Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)))
  }

  return [show, download, remove] as ReadonlyArray<Route>
})
