/**
 * Preferences over REST and the browser WebSocket, against the whole app (fake network actors, real database): a
 * buffer's choice and the client document stored, folded by the network's CASEMAPPING, announced to every tab of the
 * member and to no one else's, refused with a clear 4xx that changes nothing, bounded per account, gone with the
 * network and with the account, and in the export (docs/contract.md "Preferences").
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Exit, Option, Stream } from "effect"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { AccountExport } from "../../../src/services/memberdata/AccountExport.js"
import { erasureSteps } from "../../../src/services/memberdata/AccountData.js"
import { Networks } from "../../../src/services/networks/Networks.js"
import { BUFFER_PREFERENCES_PER_ACCOUNT, BufferPreferences } from "../../../src/services/preferences/BufferPreferences.js"
import { ClientPreferences } from "../../../src/services/preferences/ClientPreferences.js"
import { describeMode } from "../../support/TestDatabase.js"
import { bearer, passwordToken, signedIn } from "../auth/MemberHarness.js"
import { fetchP, jsonOf, type OAuthApp, PASSWORD, postJson, startOAuthApp } from "../oauth/OAuthHarness.js"
import { connect, type Frame } from "../ws/SocketClient.js"

const networkOf = (app: OAuthApp, account: string, name = `${account}net`) =>
  app.service(Networks).add(account, {
    name,
    host: "irc.test",
    port: 6667,
    tls: false,
    tlsInsecure: false,
    nick: account,
    username: Option.none(),
    realname: Option.none(),
    serverPassword: Option.none(),
    sasl: Option.none(),
    join: []
  }).pipe(Effect.orDie)

const put = (url: string, path: string, body: unknown, headers: Record<string, string>) =>
  Effect.gen(function*() {
    const res = yield* fetchP(`${url}${path}`, {
      method: "PUT",
      headers: { "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body)
    })
    const text = yield* Effect.promise(() => res.text())
    let json: Record<string, unknown> = {}
    try {
      json = JSON.parse(text) as Record<string, unknown>
    } catch {
      // not JSON (a refusal before the route): left empty
    }
    return { status: res.status, json }
  })

const bufferPath = (networkId: number | string, target: string) => `/api/buffers/${networkId}/${encodeURIComponent(target)}/preferences`

const getAll = (url: string, headers: Record<string, string>) =>
  Effect.gen(function*() {
    const res = yield* fetchP(`${url}/api/preferences`, { headers })
    expect(res.status).toBe(200)
    expect(res.headers.get("cache-control")).toBe("no-store")
    return (yield* jsonOf(res)) as { client: Record<string, unknown>; buffers: ReadonlyArray<Record<string, unknown>> }
  })

const rowsOf = (app: OAuthApp, accountId: number) =>
  Effect.map(
    app.sql<{ n: number }>`SELECT count(*)::int AS n FROM buffer_preferences WHERE account_id = ${accountId}`.pipe(Effect.orDie),
    (r) => r[0]!.n
  )

describe(`preferences on ${describeMode}`, () => {
  it.scopedLive("a buffer's choice: stored folded, to every tab of the member only, back to the default deletes it", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const networkId = yield* networkOf(app, "alice")
      yield* app.service(Accounts).create("bob", PASSWORD).pipe(Effect.orDie)
      const bobNetwork = yield* networkOf(app, "bob")
      const jar = yield* signedIn(app.url)
      const cookie = { ...jar.header(), origin: app.url }
      const token = bearer(yield* passwordToken(app.url))
      const bobLogin = yield* postJson(`${app.url}/api/auth/login/token`, { username: "bob", password: PASSWORD })
      const bob = bearer((yield* jsonOf(bobLogin)).access_token as string)

      const tab = yield* connect(app.url, { headers: token })
      const bobTab = yield* connect(app.url, { headers: bob })
      for (const s of [tab, bobTab]) expect((yield* s.next()).type).toBe("hello")

      // Stored by the cookie (same origin), folded: "#Belay" and "#BELAY" are one buffer.
      const first = yield* put(app.url, bufferPath(networkId, "#Belay"), { pinned: true }, cookie)
      expect(first).toEqual({
        status: 200,
        json: { networkId, target: "#Belay", pinned: true, muted: false, detached: false, notify: "highlights" }
      })
      const frames = yield* tab.until((f: Frame) => f.type === "buffer-preference")
      expect(frames.at(-1)).toEqual({ type: "buffer-preference", networkId, target: "#Belay", pinned: true, muted: false, detached: false, notify: "highlights" })
      const second = yield* put(app.url, bufferPath(networkId, "#BELAY"), { notify: "all", muted: true }, token)
      expect(second.json).toEqual({ networkId, target: "#BELAY", pinned: true, muted: true, detached: false, notify: "all" })
      expect((yield* getAll(app.url, token)).buffers).toEqual([second.json])
      expect(yield* rowsOf(app, app.accountId)).toBe(1)

      // Refusals change nothing: another member's network, bad bodies, bad targets, a foreign origin, a paused account.
      const refusals: ReadonlyArray<readonly [string, unknown, Record<string, string>, number, string]> = [
        [bufferPath(bobNetwork, "#x"), { pinned: true }, token, 404, "not_found"],
        [bufferPath(999999, "#x"), { pinned: true }, token, 404, "not_found"],
        [bufferPath("abc", "#x"), { pinned: true }, token, 404, "not_found"],
        [bufferPath(networkId, "#belay"), { pinned: "yes" }, token, 400, "invalid_request"],
        [bufferPath(networkId, "#belay"), { notify: "loud" }, token, 400, "invalid_request"],
        [bufferPath(networkId, "#belay"), { pinned: true, colour: "red" }, token, 400, "invalid_request"],
        [bufferPath(networkId, "#belay"), [true], token, 400, "invalid_request"],
        [bufferPath(networkId, "#belay"), "not json", token, 400, "invalid_request"],
        [bufferPath(networkId, "#a b"), { pinned: true }, token, 400, "invalid_request"],
        [bufferPath(networkId, "#a,b"), { pinned: true }, token, 400, "invalid_request"],
        // A path segment past the router's bound (100 characters) matches no route.
        [bufferPath(networkId, `#${"x".repeat(250)}`), { pinned: true }, token, 404, ""],
        [bufferPath(networkId, "#belay"), { pinned: false }, { ...jar.header(), origin: "https://evil.example" }, 403, ""],
        [bufferPath(networkId, "#belay"), { pinned: false }, {}, 401, "invalid_token"]
      ]
      for (const [path, body, headers, status, error] of refusals) {
        const answer = yield* put(app.url, path, body, headers)
        expect([path, answer.status]).toEqual([path, status])
        if (error !== "") expect(answer.json.error).toBe(error)
        if (status === 400 && typeof body !== "string") expect(typeof answer.json.error_description).toBe("string")
      }
      expect((yield* getAll(app.url, token)).buffers).toEqual([second.json])
      expect(yield* rowsOf(app, app.accountId)).toBe(1)

      // Bob's tab heard nothing of alice's choices; his own list is empty.
      yield* bobTab.send({ type: "focus", focused: true })
      expect((yield* getAll(app.url, bob)).buffers).toEqual([])
      const bobFrames = yield* Effect.exit(bobTab.until((f: Frame) => f.type === "buffer-preference", "300 millis"))
      expect(Exit.isFailure(bobFrames)).toBe(true)

      // Back to the default: the row goes, the tab hears the default.
      const cleared = yield* put(app.url, bufferPath(networkId, "#belay"), { pinned: false, muted: false, notify: "highlights" }, token)
      expect(cleared.json).toMatchObject({ pinned: false, muted: false, detached: false, notify: "highlights" })
      expect(yield* rowsOf(app, app.accountId)).toBe(0)
      const back = yield* tab.until((f: Frame) => f.type === "buffer-preference" && f.notify === "highlights" && f.pinned === false)
      expect(back.at(-1)).toMatchObject({ target: "#belay", muted: false })
    }), 60_000)

  it.scopedLive("the client document: merged, checked, sized, announced", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const token = bearer(yield* passwordToken(app.url))
      const tab = yield* connect(app.url, { headers: token })
      expect((yield* tab.next()).type).toBe("hello")
      expect((yield* getAll(app.url, token)).client).toEqual({ theme: "system", linkPreviews: true })

      const dark = yield* put(app.url, "/api/preferences/client", { theme: "dark", fontSize: 14 }, token)
      expect(dark).toEqual({ status: 200, json: { client: { theme: "dark", linkPreviews: true, fontSize: 14 } } })
      const heard = yield* tab.until((f: Frame) => f.type === "client-preferences")
      expect(heard.at(-1)).toEqual({ type: "client-preferences", preferences: { theme: "dark", linkPreviews: true, fontSize: 14 } })
      const off = yield* put(app.url, "/api/preferences/client", { linkPreviews: false, fontSize: null }, token)
      expect(off.json).toEqual({ client: { theme: "dark", linkPreviews: false } })

      const bad: ReadonlyArray<unknown> = [
        { theme: "purple" },
        { linkPreviews: "no" },
        { "Bad Key": true },
        { nested: { a: 1 } },
        { long: "x".repeat(300) },
        Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, true])),
        Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`key${i}`, "y".repeat(255)])),
        [1, 2],
        "text",
        null
      ]
      for (const body of bad) {
        const answer = yield* put(app.url, "/api/preferences/client", JSON.stringify(body), token)
        expect([body, answer.status, answer.json.error]).toEqual([body, 400, "invalid_request"])
      }
      expect((yield* getAll(app.url, token)).client).toEqual({ theme: "dark", linkPreviews: false })
      expect(yield* app.service(ClientPreferences).get(app.accountId)).toEqual({ theme: "dark", linkPreviews: false })
    }), 60_000)

  it.scopedLive("bounded per account; gone with the network and with the account; in the export", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp()
      const networkId = yield* networkOf(app, "alice")
      const other = yield* networkOf(app, "alice", "second")
      const token = bearer(yield* passwordToken(app.url))
      // At the bound: a new buffer is refused with 409; an existing one still changes.
      yield* app.sql`
        INSERT INTO buffer_preferences (account_id, network_id, target_folded, target, pinned)
        SELECT ${app.accountId}, ${networkId}, '#c' || i, '#c' || i, true
        FROM generate_series(1, ${BUFFER_PREFERENCES_PER_ACCOUNT}) AS i`.pipe(Effect.orDie)
      const full = yield* put(app.url, bufferPath(other, "#new"), { muted: true }, token)
      expect(full.status).toBe(409)
      expect(full.json).toMatchObject({ error: "quota_exceeded", limit: "buffer-preferences", max: BUFFER_PREFERENCES_PER_ACCOUNT })
      expect((yield* put(app.url, bufferPath(networkId, "#C1"), { muted: true }, token)).status).toBe(200)
      expect((yield* put(app.url, bufferPath(networkId, "#c2"), { pinned: false }, token)).status).toBe(200)
      expect(yield* rowsOf(app, app.accountId)).toBe(BUFFER_PREFERENCES_PER_ACCOUNT - 1)
      expect((yield* put(app.url, bufferPath(other, "#new"), { muted: true }, token)).status).toBe(200)

      // The export carries each choice and the client document.
      yield* app.service(ClientPreferences).update(app.accountId, { theme: "light" })
      const lines = Chunk.toReadonlyArray(yield* Stream.runCollect(yield* app.service(AccountExport).byId(app.accountId)))
        .join("").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Record<string, unknown>)
      const choices = lines.filter((l) => l.kind === "buffer-preference")
      expect(choices).toHaveLength(BUFFER_PREFERENCES_PER_ACCOUNT)
      expect(choices).toContainEqual({
        kind: "buffer-preference",
        bufferPreference: { networkId: other, target: "#new", pinned: false, muted: true, detached: false, notify: "highlights" }
      })
      expect(lines.filter((l) => l.kind === "client-preferences")).toEqual([
        { kind: "client-preferences", clientPreferences: { theme: "light", linkPreviews: true } }
      ])
      expect((lines.at(-1)!.end as { counts: Record<string, number> }).counts["buffer-preference"]).toBe(BUFFER_PREFERENCES_PER_ACCOUNT)

      // The network's rows go with it.
      yield* app.service(Networks).remove("alice", other).pipe(Effect.orDie)
      expect(yield* rowsOf(app, app.accountId)).toBe(BUFFER_PREFERENCES_PER_ACCOUNT - 1)
      expect(yield* app.service(BufferPreferences).ofNetwork(other)).toEqual([])

      // The account's erasure steps delete the rest, in batches, and the client document.
      const steps = erasureSteps(app.sql).filter((s) => s.kind === "buffer-preferences" || s.kind === "client-preferences")
      expect(steps.map((s) => s.kind)).toEqual(["buffer-preferences", "client-preferences"])
      for (const step of steps) while ((yield* step.erase(app.accountId).pipe(Effect.orDie)) === step.batch);
      expect(yield* rowsOf(app, app.accountId)).toBe(0)
      expect(yield* app.service(ClientPreferences).get(app.accountId)).toEqual({ theme: "system", linkPreviews: true })
    }), 120_000)
})
