/**
 * Settings › Your data over HTTP (docs/decisions/leaving.md): the export downloads as JSON Lines, whole (its `archive`
 * line first, its `end` line last); the deletion needs the password (a wrong one deletes nothing) or one of the
 * member's passkeys (software authenticator, test/support/SoftAuthenticator.ts: any other answer deletes nothing),
 * then ends this session and every other credential at once, and the account is gone once the job has run.
 */
import { describe, expect, it as plainIt, layer } from "@effect/vitest"
import { Duration, Effect, Option } from "effect"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { describeMode } from "../../support/TestDatabase.js"
import { softAuthenticator } from "../../support/SoftAuthenticator.js"
import { CookieJar, fetchP, fixtureLayer, OAuthFixture, PASSWORD, postJson, randomIp, startOAuthApp } from "../oauth/OAuthHarness.js"
import { bearer, getPage, passwordToken, postJsonAs, postSettings, signedIn } from "../auth/MemberHarness.js"

layer(fixtureLayer(), { excludeTestServices: true, timeout: "120 seconds" })(`Settings › Your data on ${describeMode}`, (it) => {
  it.effect("the export downloads whole; deleting needs the password, then signs everything out and deletes the account", () =>
    Effect.gen(function*() {
      const fixture = yield* OAuthFixture
      const url = fixture.url
      const jar = yield* signedIn(url)
      const page = yield* getPage(url, jar, "/settings/account")
      expect(page.res.status).toBe(200)
      expect(page.html).toContain(`<a href="/settings/account" aria-current="page">`)
      expect(page.html).toContain(`action="/settings/account/delete"`)

      const download = yield* fetchP(`${url}/settings/account/export`, { headers: jar.header() })
      expect(download.status).toBe(200)
      expect(download.headers.get("content-type")).toBe("application/x-ndjson; charset=utf-8")
      expect(download.headers.get("content-disposition")).toBe(`attachment; filename="belay-alice.jsonl"`)
      const lines = (yield* Effect.promise(() => download.text())).trimEnd().split("\n").map((l) => JSON.parse(l) as { kind: string })
      expect(lines[0]).toMatchObject({ kind: "archive", archive: { account: { name: "alice" } } })
      expect(lines.at(-1)?.kind).toBe("end")
      expect(JSON.stringify(lines)).not.toContain(PASSWORD)

      const token = yield* passwordToken(url)
      const wrong = yield* postSettings(url, jar, "/settings/account/delete", { current_password: "not it" }, { csrfFrom: "/settings/account" })
      expect(wrong.res.status).toBe(400)
      expect(wrong.html).toContain("Nothing was deleted")
      expect((yield* fetchP(`${url}/api/auth/me`, { headers: bearer(token) })).status).toBe(200)

      const right = yield* postSettings(url, jar, "/settings/account/delete", { current_password: PASSWORD }, { csrfFrom: "/settings/account" })
      expect(right.res.status).toBe(303)
      expect(right.location).toBe("/login")
      // At once: this session, the password-sign-in token and the password itself stop working.
      expect((yield* fetchP(`${url}/settings/account`, { headers: jar.header() })).status).toBe(303)
      expect((yield* fetchP(`${url}/api/auth/me`, { headers: bearer(token) })).status).toBe(401)
      expect((yield* postJson(`${url}/api/auth/login/token`, { username: "alice", password: PASSWORD })).status).toBe(401)

      const accounts = fixture.service(Accounts)
      expect(yield* accounts.findByName("alice")).toEqual(Option.none())
      // The name is free once the job is done: taking it again succeeds.
      let created = false
      for (let i = 0; i < 100 && !created; i++) {
        created = yield* accounts.create("alice", "a new long password").pipe(
          Effect.as(true),
          Effect.catchTag("AccountExists", () => Effect.as(Effect.sleep(Duration.millis(100)), false))
        )
      }
      expect(created).toBe(true)
    }))
})

type Options = { readonly challenge: string; readonly user: { readonly id: string } } & Record<string, unknown>

describe(`Settings › Delete account with a passkey on ${describeMode}`, () => {
  plainIt.scopedLive("a passkey of the account, for this session, deletes it; any other answer deletes nothing", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({ BELAY_TRUST_PROXY: "true" })
      const url = app.url
      const rp = { origin: url, rpId: "127.0.0.1" }
      const accounts = app.service(Accounts)
      const jar = yield* signedIn(url)
      const OPTIONS = "/settings/account/delete/passkey/options"
      const DELETE = "/settings/account/delete/passkey"
      const post = (path: string, body: unknown, as: CookieJar = jar) => postJsonAs(url, as, path, body, { "x-forwarded-for": randomIp() })

      // No passkey yet: the page does not offer it, and the options say to use the password.
      expect((yield* getPage(url, jar, "/settings/account")).html).not.toContain(OPTIONS)
      const none = yield* post(OPTIONS, {})
      expect(none.status).toBe(400)
      expect(none.json.message).toContain("no passkey")

      const laptop = softAuthenticator(rp)
      const registration = yield* post("/settings/passkeys/options", { name: "Laptop" })
      expect((yield* post("/settings/passkeys", { credential: laptop.create(registration.json as Options) })).status).toBe(201)
      const page = yield* getPage(url, jar, "/settings/account")
      expect(page.html).toContain(`data-options="${OPTIONS}" data-submit="${DELETE}"`)
      expect(page.html).toMatch(/<script src="\/assets\/passkeys\.[A-Za-z0-9_-]{12}\.js" defer>/)

      const options = yield* post(OPTIONS, {})
      expect(options.status).toBe(200)
      expect(options.res.headers.get("cache-control")).toBe("no-store")
      expect(options.json).toMatchObject({ rpId: "127.0.0.1", userVerification: "required" })
      expect((options.json.allowCredentials as Array<{ id: string }>).map((c) => c.id)).toEqual([laptop.credentialId])

      // Another member, whom nothing here touches, and a second session of alice's.
      yield* accounts.create("bob", "bob's long password").pipe(Effect.orDie)
      const second = yield* signedIn(url)
      const signInOptions = yield* post("/login/passkey/options", {}, new CookieJar())

      const failures = [
        ["an unknown credential", () => Effect.map(post(OPTIONS, {}), (o) => softAuthenticator(rp).get(o.json as Options))],
        ["no user verification", () => Effect.map(post(OPTIONS, {}), (o) => laptop.get(o.json as Options, { userVerified: false }))],
        ["another origin", () => Effect.map(post(OPTIONS, {}), (o) => laptop.get(o.json as Options, { origin: "https://evil.example" }))],
        ["a counter that went back", () => Effect.map(post(OPTIONS, {}), (o) => laptop.get(o.json as Options, { counter: 1 }))],
        ["another user handle", () => Effect.map(post(OPTIONS, {}), (o) => laptop.get(o.json as Options, { userHandle: "AAAA" }))],
        ["a sign-in challenge", () => Effect.succeed(laptop.get(signInOptions.json as Options))],
        ["another session's challenge", () => Effect.map(post(OPTIONS, {}, second), (o) => laptop.get(o.json as Options))],
        ["a challenge never issued", () => Effect.succeed(laptop.get({ challenge: "A".repeat(43) }))]
      ] as const
      for (const [name, credential] of failures) {
        const res = yield* post(DELETE, { credential: yield* credential() })
        expect({ name, status: res.status, body: res.json }).toEqual({
          name,
          status: 401,
          body: { error: "invalid_credentials", message: "That passkey was not accepted. Nothing was deleted." }
        })
      }
      expect((yield* post(DELETE, { credential: { id: "x" } })).status).toBe(400)
      expect((yield* post(DELETE, { credential: laptop.get(options.json as Options) }, new CookieJar())).status).toBe(401)
      expect((yield* postJsonAs(url, jar, DELETE, { credential: laptop.get(options.json as Options) }, { origin: "https://evil.example" })).status)
        .toBe(403)
      expect(Option.isSome(yield* accounts.findByName("alice"))).toBe(true)

      // The right one (a fresh challenge: the last one was spent above).
      const good = yield* post(OPTIONS, {})
      const deleted = yield* post(DELETE, { credential: laptop.get(good.json as Options), next: "/" })
      expect(deleted.status).toBe(200)
      expect(deleted.json).toEqual({ redirect: "/login" })
      // At once: both sessions end, the passkey signs nobody in, the password is refused.
      expect((yield* fetchP(`${url}/settings/account`, { headers: jar.header() })).status).toBe(303)
      expect((yield* fetchP(`${url}/settings/account`, { headers: second.header() })).status).toBe(303)
      const again = yield* post("/login/passkey/options", {}, new CookieJar())
      expect((yield* post("/login/passkey", { credential: laptop.get(again.json as Options) }, new CookieJar())).status).toBe(401)
      expect((yield* postJson(`${url}/api/auth/login/token`, { username: "alice", password: PASSWORD })).status).toBe(401)
      expect(yield* accounts.findByName("alice")).toEqual(Option.none())
      expect(Option.isSome(yield* accounts.findByName("bob"))).toBe(true)
    }))
})
