/**
 * ApiTokensSettings owns Settings > API tokens (interface "API token"; docs/decisions/web.md): the list (name, scope, created, last used, the revoked
 * marker — a revoked token stays listed), minting (name and scope; the raw value is in
 * the answer to the POST and nowhere else, never in a URL or a log), and revoking, which
 * stops the token at /mcp from the next request on (ApiTokens.revoke drops cached
 * authentications). Hosted deployments show only a notice, and minting is refused
 * (interface "Authentication" 2). Checks: SettingsHttp. Stateless.
 */
import { Effect } from "effect"
import { MemberPaths } from "../../schema/MemberApi.js"
import { ApiTokens, type TokenScope } from "../../services/identity/ApiTokens.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { CredentialUsage } from "../../services/identity/CredentialUsage.js"
import type { HttpRequest, Route } from "../HttpServer.js"
import { page, seeOther } from "../oauth/OAuthHttp.js"
import { type ApiTokensPageInput, apiTokensPage, type Notice, SettingsFields } from "../pages/SettingsPages.js"
import { field, guarded, makeSettingsHttp, type PageVisit } from "./SettingsHttp.js"

const notices: Readonly<Record<string, Notice>> = {
  revoked: { kind: "ok", text: "The token was revoked. It no longer works." }
}

export const apiTokensSettingsRoutes = Effect.gen(function*() {
  const config = yield* AppConfig
  const tokens = yield* ApiTokens
  const usage = yield* CredentialUsage
  const http = makeSettingsHttp(config, { sessions: yield* BrowserSessions, accounts: yield* Accounts })

  const render = (visit: PageVisit, status: number, input: Omit<ApiTokensPageInput, "tokens" | "hosted">) =>
    Effect.gen(function*() {
      yield* usage.flush
      const list = config.hosted ? [] : yield* Effect.orDie(tokens.list(visit.context.accountName))
      return page(status, apiTokensPage(visit.context, { ...input, tokens: list, hosted: config.hosted }))
    })

  const show: Route = {
    method: "GET",
    path: MemberPaths.apiTokens,
    name: "settings.api-tokens",
    handler: (request: HttpRequest) =>
      guarded(http.visit(request), (visit) => render(visit, 200, { notice: notices[request.query.get("done") ?? ""] }))
  }

  const mint: Route = {
    method: "POST",
    path: MemberPaths.apiTokens,
    name: "settings.api-tokens.create",
    handler: (request) =>
      guarded(http.formPost(request, MemberPaths.apiTokens), (post) => {
        const name = field(post.form, SettingsFields.name).trim()
        const scope = field(post.form, SettingsFields.scope)
        const form = { name, scope }
        if (scope !== "read" && scope !== "read-write") {
          return render(post, 400, { form, notice: { kind: "error", text: "Choose a scope: read, or read and write." } })
        }
        return tokens.create(post.context.accountName, name, scope satisfies TokenScope).pipe(
          Effect.flatMap((token) => render(post, 200, { created: { name, token } })),
          Effect.catchTags({
            ApiTokensDisabled: () => render(post, 403, { notice: { kind: "error", text: "API tokens are not offered on this server." } }),
            InvalidTokenName: () =>
              render(post, 400, { form, notice: { kind: "error", text: "A token name is 1 to 64 printable characters." } }),
            TokenNameTaken: () =>
              render(post, 409, { form, notice: { kind: "error", text: "You already have a token with that name. Choose another." } }),
            AccountNotFound: () => Effect.dieMessage("the signed-in account is gone")
          })
        )
      }).pipe(Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)))
  }

  const revoke: Route = {
    method: "POST",
    path: MemberPaths.apiTokensRevoke,
    name: "settings.api-tokens.revoke",
    handler: (request) =>
      guarded(http.formPost(request, MemberPaths.apiTokens), (post) =>
        tokens.revoke(post.context.accountName, field(post.form, SettingsFields.name)).pipe(
          Effect.as(seeOther(`${MemberPaths.apiTokens}?done=revoked`)),
          Effect.catchTags({
            TokenNotFound: () => render(post, 404, { notice: { kind: "error", text: "You have no token with that name." } }),
            AccountNotFound: () => Effect.dieMessage("the signed-in account is gone")
          })
        )).pipe(Effect.catchTag("BodyRefused", (refused) => Effect.succeed(refused.response)))
  }

  return [show, mint, revoke] as ReadonlyArray<Route>
})
