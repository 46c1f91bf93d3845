/**
 * AccountLimitsAdmin answers `belay account limits NAME …` and `belay account show NAME` (docs/contract.md "Account
 * limits"): the overrides set through AccountLimits, and each limit with where it comes from beside what the account
 * holds now, counted by the services that own each table. Stateless; every answer is read afresh.
 */
import { Effect } from "effect"
import type { AdminAccountShow, AdminRequest } from "../schema/Admin.js"
import { LIMIT_NAMES } from "../schema/ToolErrors.js"
import { AppConfig } from "../services/AppConfig.js"
import { AccountLimits } from "../services/identity/AccountLimits.js"
import { Accounts } from "../services/identity/Accounts.js"
import { BrowserSessions } from "../services/identity/BrowserSessions.js"
import { OAuthTokens } from "../services/identity/OAuthTokens.js"
import { Passkeys } from "../services/identity/Passkeys.js"
import { Networks } from "../services/networks/Networks.js"
import { PushSubscriptions } from "../services/push/PushSubscriptions.js"
import { Uploads } from "../services/uploads/Uploads.js"

export const makeAccountLimitsAdmin = Effect.gen(function*() {
  const config = yield* AppConfig
  const limits = yield* AccountLimits
  const accounts = yield* Accounts
  const networks = yield* Networks
  const tokens = yield* OAuthTokens
  const passkeys = yield* Passkeys
  const sessions = yield* BrowserSessions
  const push = yield* PushSubscriptions
  const uploads = yield* Uploads

  const show = (name: string) =>
    Effect.gen(function*() {
      const account = yield* accounts.require(name)
      const described = yield* limits.describe(account.id)
      const owned = yield* networks.listForAccount(account.id)
      const autojoin = yield* networks.autojoin(account.id)
      const channels = owned.map((n) => ({ networkId: n.id, name: n.name, channels: autojoin.get(n.id)?.length ?? 0 }))
      const used = {
        networks: owned.length,
        channels: Math.max(0, ...channels.map((c) => c.channels)),
        apps: yield* tokens.liveCount(account.id).pipe(Effect.orDie),
        "push-subscriptions": (yield* push.forAccount(account.id)).length,
        passkeys: (yield* passkeys.list(account.id)).length,
        sessions: yield* sessions.liveCount(account.id),
        // The uploads limit is in MiB (docs/decisions/uploads.md "Limits"); a part of one counts as one.
        uploads: Math.ceil((yield* uploads.usage(account.id)) / (1024 * 1024))
      }
      const shown: AdminAccountShow = {
        name: account.name,
        status: account.status,
        limits: Object.fromEntries(LIMIT_NAMES.map((l) => [l, { ...described[l], used: used[l] }])) as AdminAccountShow["limits"],
        channels,
        historyRetentionDays: config.historyRetentionDays._tag === "Some" ? config.historyRetentionDays.value : null
      }
      return shown
    })

  const set = (request: Extract<AdminRequest, { readonly _tag: "AccountLimits" }>) =>
    Effect.gen(function*() {
      const account = yield* accounts.require(request.name)
      yield* limits.set(account.id, request.limits)
      return yield* show(request.name)
    })

  return { show, set } as const
})
