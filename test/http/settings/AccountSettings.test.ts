/**
 * Settings › Your data over HTTP (docs/decisions/leaving.md): the export downloads as JSON Lines, whole (its `archive`
 * line first, its `end` line last); the deletion needs the password (a wrong one deletes nothing), then ends this
 * session and every other credential at once, and the account is gone once the job has run.
 */
import { expect, layer } from "@effect/vitest"
import { Duration, Effect, Option } from "effect"
import { Accounts } from "../../../src/services/identity/Accounts.js"
import { describeMode } from "../../support/TestDatabase.js"
import { fetchP, fixtureLayer, OAuthFixture, PASSWORD, postJson } from "../oauth/OAuthHarness.js"
import { bearer, getPage, passwordToken, postSettings, signedIn } from "../auth/MemberHarness.js"

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
