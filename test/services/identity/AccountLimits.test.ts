/**
 * Per-account limits (docs/decisions/account-limits.md) against a real database: each limit refuses at its edge with
 * QuotaExceeded naming it, and nothing of the refused creation is left; overrides set through the admin socket's
 * handler move the edge; concurrent creations never pass it; sign-in at the session limit ends the oldest session.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Option } from "effect"
import { makeAdminHandler } from "../../../src/admin/AdminServer.js"
import { QuotaExceeded } from "../../../src/schema/ToolErrors.js"
import { appSettings, describeConfigError } from "../../../src/services/AppConfig.js"
import { AccountLimits } from "../../../src/services/identity/AccountLimits.js"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { BrowserSessions } from "../../../src/services/identity/BrowserSessions.js"
import { OAuthTokens } from "../../../src/services/identity/OAuthTokens.js"
import { Passkeys } from "../../../src/services/identity/Passkeys.js"
import { type NetworkSettings, Networks } from "../../../src/services/networks/Networks.js"
import { OAuthCodes } from "../../../src/services/oauth/OAuthCodes.js"
import { PushSubscriptions } from "../../../src/services/push/PushSubscriptions.js"
import { fakeNetworkControlLayer, makeFakeNetworkControl } from "../../support/FakeNetworkControl.js"
import { describeMode, settingsFrom } from "../../support/TestDatabase.js"
import { TestServicesLive } from "../../support/TestServices.js"

let seq = 0
const freshAccount = Effect.gen(function*() {
  const name = `lim${++seq}`
  const account = yield* (yield* Accounts).create(name, "a long password").pipe(Effect.orDie)
  return { name, id: account.id }
})

const network = (name: string, join: ReadonlyArray<string> = []): NetworkSettings => ({
  name,
  host: "irc.example.org",
  port: 6697,
  tls: true,
  tlsInsecure: false,
  nick: "me",
  username: Option.none(),
  realname: Option.none(),
  serverPassword: Option.none(),
  sasl: Option.none(),
  join
})

const count = (table: string, accountId: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(table)} WHERE account_id = ${accountId}`, (r) => r[0]!.n))

const admin = (request: unknown) =>
  Effect.gen(function*() {
    const fake = yield* makeFakeNetworkControl
    const handle = yield* makeAdminHandler.pipe(Effect.provide(fakeNetworkControlLayer(fake)))
    return yield* handle(JSON.stringify(request))
  })

const refusal = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.flip(effect), (e) => (e instanceof QuotaExceeded ? { limit: e.limit, max: e.max, message: e.message } : e))

const env = { BELAY_ACCOUNT_MAX_NETWORKS: "2", BELAY_NETWORK_MAX_CHANNELS: "3" }

describe(`AccountLimits on ${describeMode}`, () => {
  it.layer(TestServicesLive(env), { timeout: 120_000 })((it) => {
    it.effect("networks: the third is refused naming the limit, and not created", () =>
      Effect.gen(function*() {
        const networks = yield* Networks
        const account = yield* freshAccount
        yield* networks.add(account.name, network("one"))
        yield* networks.add(account.name, network("two"))
        const refused = yield* refusal(networks.add(account.name, network("three", ["#a"])))
        expect(refused).toMatchObject({ limit: "networks", max: 2 })
        expect(String((refused as { message: string }).message)).toContain(`limit "networks"`)
        expect(yield* count("networks", account.id)).toBe(2)
      }))

    it.effect("channels: a network whose autojoin list passes the limit is refused whole; an edit too", () =>
      Effect.gen(function*() {
        const networks = yield* Networks
        const account = yield* freshAccount
        // The same channel twice, however cased, is one channel.
        const id = yield* networks.add(account.name, network("n", ["#a", "#B", "#b", "#c"]))
        expect(yield* refusal(networks.add(account.name, network("m", ["#a", "#b", "#c", "#d"])))).toMatchObject({
          limit: "channels",
          max: 3
        })
        expect(yield* count("networks", account.id)).toBe(1)
        expect(yield* refusal(networks.update(account.id, id, { name: "x", join: ["#1", "#2", "#3", "#4"] })))
          .toMatchObject({ limit: "channels", max: 3 })
        const kept = yield* networks.channels(id)
        expect(kept.map((c) => c.name)).toEqual(["#a", "#B", "#c"])
        expect((yield* networks.listForAccount(account.id))[0]!.name).toBe("n")
      }))

    it.effect("an override through the admin socket moves the edge; default and unlimited as asked", () =>
      Effect.gen(function*() {
        const networks = yield* Networks
        const account = yield* freshAccount
        yield* networks.add(account.name, network("one"))
        yield* networks.add(account.name, network("two"))
        const raised = yield* admin({ _tag: "AccountLimits", name: account.name, limits: { networks: 3, passkeys: 5 } })
        expect(raised).toMatchObject({
          ok: true,
          result: { limits: { networks: { max: 3, source: "override", used: 2 }, passkeys: { max: 5, source: "override" } } }
        })
        yield* networks.add(account.name, network("three"))
        expect(yield* refusal(networks.add(account.name, network("four")))).toMatchObject({ limit: "networks", max: 3 })

        expect(yield* admin({ _tag: "AccountLimits", name: account.name, limits: { networks: "unlimited" } })).toMatchObject({
          ok: true,
          result: { limits: { networks: { max: null, source: "override", used: 3 } } }
        })
        yield* networks.add(account.name, network("four"))

        expect(yield* admin({ _tag: "AccountLimits", name: account.name, limits: { networks: "default" } })).toMatchObject({
          ok: true,
          result: { limits: { networks: { max: 2, source: "setting", used: 4 }, sessions: { max: 50, source: "fixed" } } }
        })
        expect(yield* refusal(networks.add(account.name, network("five")))).toMatchObject({ limit: "networks", max: 2 })

        // Bounded always: no override makes passkeys unlimited, and a bad value changes nothing.
        const bad = yield* admin({ _tag: "AccountLimits", name: account.name, limits: { passkeys: "unlimited", networks: 9 } })
        expect(bad).toMatchObject({ ok: false })
        expect(yield* admin({ _tag: "AccountShow", name: account.name })).toMatchObject({
          ok: true,
          result: { limits: { networks: { max: 2 }, passkeys: { max: 5 } } }
        })
        expect(yield* admin({ _tag: "AccountShow", name: "nobody-here" })).toMatchObject({ ok: false })
      }))

    it.effect("concurrent additions never pass the limit", () =>
      Effect.gen(function*() {
        const networks = yield* Networks
        const account = yield* freshAccount
        const outcomes = yield* Effect.forEach(
          Array.from({ length: 8 }, (_, i) => i),
          (i) => Effect.either(networks.add(account.name, network(`c${i}`))),
          { concurrency: "unbounded" }
        )
        expect(outcomes.filter((o) => o._tag === "Right")).toHaveLength(2)
        expect(yield* count("networks", account.id)).toBe(2)
      }))

    it.effect("passkeys: at the limit the next is refused and not stored", () =>
      Effect.gen(function*() {
        const passkeys = yield* Passkeys
        const account = yield* freshAccount
        yield* (yield* AccountLimits).set(account.id, { passkeys: 1 })
        const key = (n: number) => ({
          accountId: account.id,
          name: `key ${n}`,
          credentialId: Buffer.from(`cred-${account.id}-${n}`),
          publicKey: Buffer.from("pk"),
          signCount: 0,
          transports: [],
          userHandle: Buffer.from("handle")
        })
        yield* passkeys.add(key(1))
        expect(yield* refusal(passkeys.add(key(2)))).toMatchObject({ limit: "passkeys", max: 1 })
        expect((yield* passkeys.list(account.id)).map((p) => p.name)).toEqual(["key 1"])
      }))

    it.effect("push subscriptions: the endpoint registered again is not counted; a new one past the limit is refused", () =>
      Effect.gen(function*() {
        const push = yield* PushSubscriptions
        const account = yield* freshAccount
        yield* (yield* AccountLimits).set(account.id, { "push-subscriptions": 1 })
        const token = yield* (yield* OAuthTokens).issueForPassword(account.id)
        const owner = { _tag: "Token", tokenId: token.tokenId } as const
        const sub = (endpoint: string) => ({ endpoint, p256dh: "p", auth: "a" })
        yield* push.add(account.id, owner, sub(`https://push.example/${account.id}/a`))
        yield* push.add(account.id, owner, sub(`https://push.example/${account.id}/a`))
        expect(yield* refusal(push.add(account.id, owner, sub(`https://push.example/${account.id}/b`)))).toMatchObject({
          limit: "push-subscriptions",
          max: 1
        })
        expect((yield* push.forAccount(account.id)).map((s) => s.endpoint)).toEqual([`https://push.example/${account.id}/a`])
      }))

    it.effect("apps: password sign-in tokens and approvals count live tokens and pending codes", () =>
      Effect.gen(function*() {
        const tokens = yield* OAuthTokens
        const account = yield* freshAccount
        yield* (yield* AccountLimits).set(account.id, { apps: 1 })
        const first = yield* tokens.issueForPassword(account.id)
        expect(yield* refusal(tokens.issueForPassword(account.id))).toMatchObject({ limit: "apps", max: 1 })
        expect(yield* refusal((yield* OAuthCodes).issue({
          clientId: "no-such-client",
          accountId: account.id,
          redirectUri: "https://app.example/cb",
          codeChallenge: "x".repeat(43)
        }))).toMatchObject({ limit: "apps", max: 1 })
        expect(yield* count("oauth_codes", account.id)).toBe(0)
        expect(yield* count("oauth_tokens", account.id)).toBe(1)
        // A revoked token frees its place.
        yield* tokens.revokeById(first.tokenId)
        yield* tokens.issueForPassword(account.id)
      }))

    it.effect("sessions: a sign-in at the limit ends the oldest session instead of refusing", () =>
      Effect.gen(function*() {
        const sessions = yield* BrowserSessions
        const account = yield* freshAccount
        yield* (yield* AccountLimits).set(account.id, { sessions: 2 })
        const first = yield* sessions.create(account.id)
        const second = yield* sessions.create(account.id)
        const third = yield* sessions.create(account.id)
        expect(Option.isNone(yield* sessions.lookup(first))).toBe(true)
        expect(Option.isSome(yield* sessions.lookup(second))).toBe(true)
        expect(Option.isSome(yield* sessions.lookup(third))).toBe(true)
        expect(yield* sessions.liveCount(account.id)).toBe(2)
      }))
  })

  it.effect("the settings: hosted defaults 10 and 50, none self-hosted, unlimited, and bad values named", () =>
    Effect.gen(function*() {
      const hosted = { BELAY_HOSTED: "true", PUBLIC_BASE_URL: "https://belay.example.org", BELAY_SERVER_NAME: "s1" }
      const self = yield* settingsFrom({})
      expect([self.accountMaxNetworks, self.networkMaxChannels, self.historyRetentionDays]).toEqual([
        Option.none(),
        Option.none(),
        Option.none()
      ])
      const h = yield* settingsFrom(hosted)
      expect([h.accountMaxNetworks, h.networkMaxChannels]).toEqual([Option.some(10), Option.some(50)])
      const open = yield* settingsFrom({ ...hosted, BELAY_ACCOUNT_MAX_NETWORKS: "unlimited", BELAY_NETWORK_MAX_CHANNELS: "0" })
      expect([open.accountMaxNetworks, open.networkMaxChannels]).toEqual([Option.none(), Option.some(0)])
      expect((yield* settingsFrom({ BELAY_HISTORY_RETENTION_DAYS: "30" })).historyRetentionDays).toEqual(Option.some(30))
      for (const [name, value] of [
        ["BELAY_ACCOUNT_MAX_NETWORKS", "-1"],
        ["BELAY_ACCOUNT_MAX_NETWORKS", "1000001"],
        ["BELAY_NETWORK_MAX_CHANNELS", "ten"],
        ["BELAY_HISTORY_RETENTION_DAYS", "0"],
        ["BELAY_HISTORY_RETENTION_DAYS", "36501"]
      ] as const) {
        const refused = yield* Effect.either(Effect.withConfigProvider(appSettings, ConfigProvider.fromMap(new Map([[name, value]]))))
        expect(Either.isLeft(refused) ? describeConfigError(refused.left) : "accepted").toContain(name)
      }
    }))
})
