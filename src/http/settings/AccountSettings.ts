/**
 * AccountSettings owns Settings › Your data (docs/decisions/leaving.md): the export, streamed as a download of JSON
 * Lines (AccountExport) at the pace the browser takes it, and the deletion of the account, after the member's
 * password — as Settings › Password asks for it, a wrong one counting as a failed sign-in (SignInLimiter), so a
 * borrowed session can neither delete the account nor guess its password — or after one of the member's passkeys:
 * `POST /settings/account/delete/passkey/options` → request options naming the account's passkeys, the challenge
 * bound to this session; `POST /settings/account/delete/passkey` `{credential}` → verified
 * (PasskeyCeremonies.reauthenticate; a refusal counts as a failed sign-in too, 401 `{error, message}` for
 * PasskeyScript to show) → 200 `{redirect: "/login"}`. On success the account is unusable at once
 * (AccountDeletion.begin: this very session is ended with the rest) and the browser goes to sign-in.
 * Checks: SettingsHttp. Stateless.
 */
import { Effect, Either, Option, Schema } from "effect"
import { MemberPaths, PasskeySignInRequest } from "../../schema/MemberApi.js"
import { rateLimitKey } from "../../net/RateLimitKey.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { PasskeyCeremonies } from "../../services/identity/PasskeyCeremonies.js"
import { Passkeys } from "../../services/identity/Passkeys.js"
import { SignInLimiter } from "../../services/identity/SignInLimiter.js"
import { AccountDeletion } from "../../services/memberdata/AccountDeletion.js"
import { AccountExport } from "../../services/memberdata/AccountExport.js"
import { clientIp } from "../ClientIp.js"
import { json, type Route } from "../HttpServer.js"
import { noStore, oauthError, page, seeOther } from "../oauth/OAuthHttp.js"
import { securityHeaders } from "../pages/Pages.js"
import { accountPage, SettingsFields } from "../pages/SettingsPages.js"
import { field, guarded, makeSettingsHttp, recheckPassword } from "./SettingsHttp.js"

/** A name safe in a quoted `filename` (RFC 6266): account names are already letters, digits, `.`, `_` and `-`. */
const fileName = (account: string) => `belay-${account.replace(/[^A-Za-z0-9._-]/g, "_")}.jsonl`

/** The body PasskeyScript posts (`{credential, next}`; `next` is not used: the deleted member goes to sign-in). */
const decodePasskey = Schema.decodeUnknownEither(PasskeySignInRequest)

const refusal = (status: number, message: string) => json(status, { error: "invalid_request", message }, noStore)

export const accountSettingsRoutes = Effect.gen(function*() {
  const config = yield* AppConfig
  const accounts = yield* Accounts
  const limiter = yield* SignInLimiter
  const deletion = yield* AccountDeletion
  const exporter = yield* AccountExport
  const passkeys = yield* Passkeys
  const ceremonies = yield* PasskeyCeremonies
  const http = makeSettingsHttp(config, { sessions: yield* BrowserSessions, accounts })

  /** Whether the page offers deletion after a passkey: only to a member who has one. */
  const hasPasskeys = (accountId: number) => Effect.map(passkeys.list(accountId), (list) => list.length > 0)

  const show: Route = {
    method: "GET",
    path: MemberPaths.account,
    name: "settings.account",
    handler: (request) =>
      guarded(http.visit(request), (visit) =>
        Effect.map(hasPasskeys(visit.member.session.accountId), (withPasskey) =>
          page(200, accountPage(visit.context, { passkeys: withPasskey }))))
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
          const withPasskey = yield* hasPasskeys(post.member.session.accountId)
          const refuse = (status: number, text: string, headers: Readonly<Record<string, string>> = {}) =>
            page(status, accountPage(post.context, { notice: { kind: "error", text }, passkeys: withPasskey }), headers)
          const name = post.context.accountName
          const checked = yield* recheckPassword(
            { config, accounts, limiter },
            request,
            { accountName: name, accountId: post.member.session.accountId },
            field(post.form, SettingsFields.currentPassword),
            "The password is not correct. Nothing was deleted."
          )
          if (Either.isLeft(checked)) return refuse(checked.left.status, checked.left.text, checked.left.headers)
          return yield* Effect.as(deleteAccount(name, "password"), seeOther(MemberPaths.login))
        })).pipe(Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)))
  }

  /** Starts the deletion (an account already being deleted is as good as deleted). */
  const deleteAccount = (name: string, after: "password" | "passkey") =>
    deletion.begin(name).pipe(
      Effect.tap(() => Effect.logInfo("account deletion asked for in settings").pipe(Effect.annotateLogs({ account: name, after }))),
      Effect.asVoid,
      Effect.catchTag("AccountNotFound", () => Effect.void)
    )

  const passkeyOptions: Route = {
    method: "POST",
    path: MemberPaths.accountDeletePasskeyOptions,
    name: "settings.account.delete.passkey-options",
    handler: (request) =>
      guarded(http.jsonPost(request), (post) =>
        Effect.map(
          ceremonies.reauthenticationOptions(post.issuer, { accountId: post.member.session.accountId, sessionId: post.member.session.sessionId }),
          Option.match({
            onNone: () => refusal(400, "You have no passkey. Use your password instead."),
            onSome: (body) => json(200, body, noStore)
          })
        )).pipe(Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)))
  }

  const passkeyDelete: Route = {
    method: "POST",
    path: MemberPaths.accountDeletePasskey,
    name: "settings.account.delete.passkey",
    handler: (request) =>
      guarded(http.jsonPost(request), (post) =>
        Effect.gen(function*() {
          const decoded = decodePasskey(post.json)
          if (Either.isLeft(decoded)) return refusal(400, "The passkey answer could not be read. Nothing was deleted.")
          const name = post.member.accountName
          // The same limiter and bucket as the password: a borrowed session cannot try passkeys without end either.
          const attempt = { ipKey: rateLimitKey(clientIp(request, config.trustProxy)), account: name }
          const limited = yield* Effect.either(limiter.check(attempt))
          if (Either.isLeft(limited)) return oauthError(limited.left)
          const member = { accountId: post.member.session.accountId, sessionId: post.member.session.sessionId }
          if (!(yield* ceremonies.reauthenticate(post.issuer, member, decoded.right.credential))) {
            yield* limiter.recordFailure(attempt)
            return json(401, { error: "invalid_credentials", message: "That passkey was not accepted. Nothing was deleted." }, noStore)
          }
          yield* deleteAccount(name, "passkey")
          return json(200, { redirect: MemberPaths.login }, noStore)
        })).pipe(Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)))
  }

  return [show, download, remove, passkeyOptions, passkeyDelete] as ReadonlyArray<Route>
})
