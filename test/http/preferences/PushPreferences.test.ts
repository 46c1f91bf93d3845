/**
 * Web Push as the member chose (docs/contract.md "Preferences"), against the whole app and a local push service: a
 * muted conversation, or one at level `none`, pushes nothing; `all` pushes every line of a channel; `highlights` (the
 * default) only the highlights. Each silence is proved by a later message that does arrive, in order.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { MemberEvents } from "../../../src/services/events/MemberEvents.js"
import { MessageWriter } from "../../../src/services/history/MessageWriter.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import { describeMode } from "../../support/TestDatabase.js"
import { bearer, passwordToken } from "../auth/MemberHarness.js"
import { type OAuthApp, postJson, startOAuthApp } from "../oauth/OAuthHarness.js"
import * as LocalPushService from "../push/LocalPushService.js"

const network = (app: OAuthApp) =>
  app.service(Networks).add("alice", {
    name: "testnet",
    host: "irc.test",
    port: 6667,
    tls: false,
    tlsInsecure: false,
    nick: "alice",
    username: Option.none(),
    realname: Option.none(),
    serverPassword: Option.none(),
    sasl: Option.none(),
    join: []
  }).pipe(Effect.orDie)

/** A line from bob in `target`, stored as the actors store one. */
const line = (app: OAuthApp, networkId: number, target: string, text: string) =>
  Effect.gen(function*() {
    const writer = app.service(MessageWriter)
    yield* writer.append({
      networkId,
      target,
      targetFolded: target.toLowerCase(),
      bufferKind: target.startsWith("#") ? "channel" : "dm",
      time: new Date(),
      kind: "privmsg",
      nick: "bob",
      text,
      self: false
    })
    yield* writer.flush
  })

const put = (url: string, token: string, networkId: number, target: string, body: unknown) =>
  Effect.promise(() =>
    fetch(`${url}/api/buffers/${networkId}/${encodeURIComponent(target)}/preferences`, {
      method: "PUT",
      headers: { ...bearer(token), "content-type": "application/json" },
      body: JSON.stringify(body)
    }).then((res) => res.status)
  )

describe(`Web Push as the member chose, on ${describeMode}`, () => {
  it.scopedLive("muted and none push nothing, all pushes every line, highlights only highlights", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({ BELAY_PUSH_INSECURE_ENDPOINTS: "true" })
      const pushService = yield* LocalPushService.make
      const networkId = yield* network(app)
      const token = yield* passwordToken(app.url)
      const browser = pushService.subscription("tab")
      expect((yield* postJson(`${app.url}/api/push/subscriptions`, browser.json, bearer(token))).status).toBe(201)
      // The member's nick on the network, as its actor would report it (highlights are judged against it).
      app.service(MemberEvents).actorEvents.status(app.accountId, "testnet", {
        networkId,
        state: "connected",
        nick: "alice",
        nextRetryAt: null,
        lastError: null,
        caseMapping: "rfc1459",
        channelTypes: "#&"
      })
      const nextBody = Effect.map(pushService.next, (pushed) => (JSON.parse(LocalPushService.decrypt(browser.keys, pushed.body)) as { body: string }).body)

      // The default: a direct message pushes, a plain channel line does not, a highlight does.
      yield* line(app, networkId, "bob", "dm one")
      expect(yield* nextBody).toBe("dm one")
      yield* line(app, networkId, "#belay", "plain line")
      yield* line(app, networkId, "#belay", "alice: a highlight")
      expect(yield* nextBody).toBe("alice: a highlight")

      // Muted conversation: nothing; level none on a channel: not even a highlight.
      expect(yield* put(app.url, token, networkId, "Bob", { muted: true })).toBe(200)
      expect(yield* put(app.url, token, networkId, "#belay", { notify: "none" })).toBe(200)
      yield* line(app, networkId, "bob", "dm while muted")
      yield* line(app, networkId, "#belay", "alice: highlight while none")
      // Level all on another channel: every line of it.
      expect(yield* put(app.url, token, networkId, "#all", { notify: "all" })).toBe(200)
      yield* line(app, networkId, "#all", "any line at all")
      expect(yield* nextBody).toBe("any line at all")

      // Back to the defaults: both push again.
      expect(yield* put(app.url, token, networkId, "bob", { muted: false })).toBe(200)
      expect(yield* put(app.url, token, networkId, "#belay", { notify: "highlights" })).toBe(200)
      yield* line(app, networkId, "bob", "dm after unmute")
      expect(yield* nextBody).toBe("dm after unmute")
      yield* line(app, networkId, "#belay", "alice: highlight again")
      expect(yield* nextBody).toBe("alice: highlight again")
    }), 60_000)
})
