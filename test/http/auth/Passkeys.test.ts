/**
 * Passkeys over HTTP with a software authenticator (test/support/SoftAuthenticator.ts), so
 * every check of both WebAuthn ceremonies can be broken on purpose: Settings > Passkeys
 * (options, registration, removal) and passkey sign-in (`/login/passkey/options`,
 * `/login/passkey`). Relying party: the issuer http://127.0.0.1:<port>, RP ID 127.0.0.1.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { AccountLimits } from "../../../src/services/identity/AccountLimits.js"
import { describeMode } from "../../support/TestDatabase.js"
import { softAuthenticator } from "../../support/SoftAuthenticator.js"
import { CookieJar, fetchP, jsonOf, postForm, randomIp, startOAuthApp } from "../oauth/OAuthHarness.js"
import { getPage, postJsonAs, postSettings, signedIn } from "./MemberHarness.js"

type Options = { readonly challenge: string; readonly user: { readonly id: string } } & Record<string, unknown>

/** Adds a passkey named `name` with `authenticator`; returns the registration's answer. */
const register = (url: string, jar: CookieJar, authenticator: ReturnType<typeof softAuthenticator>, name = "Laptop") =>
  Effect.gen(function*() {
    const options = yield* postJsonAs(url, jar, "/settings/passkeys/options", { name })
    expect(options.status).toBe(200)
    return yield* postJsonAs(url, jar, "/settings/passkeys", { credential: authenticator.create(options.json as Options) })
  })

const signInOptions = (url: string) =>
  Effect.map(postJsonAs(url, new CookieJar(), "/login/passkey/options", {}), (r) => r.json as { challenge: string } & Record<string, unknown>)

const passkeySignIn = (url: string, credential: unknown, next?: string) =>
  postJsonAs(url, new CookieJar(), "/login/passkey", { credential, ...(next === undefined ? {} : { next }) }, { "x-forwarded-for": randomIp() })

describe(`passkeys over HTTP on ${describeMode}`, () => {
  it.scopedLive("registration: options bound to the session, user verification required; refused replays, origins and sessions", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({ BELAY_TRUST_PROXY: "true" })
      const url = app.url
      const jar = yield* signedIn(url)
      const rp = { origin: url, rpId: "127.0.0.1" }

      const options = yield* postJsonAs(url, jar, "/settings/passkeys/options", { name: "Laptop" })
      expect(options.status).toBe(200)
      expect(options.res.headers.get("cache-control")).toBe("no-store")
      expect(options.json).toMatchObject({
        rp: { id: "127.0.0.1", name: "Belay" },
        user: { name: "alice" },
        attestation: "none",
        authenticatorSelection: { residentKey: "required", userVerification: "required" }
      })
      expect((options.json as Options).challenge).toMatch(/^[A-Za-z0-9_-]{43}$/)

      // Not verified by the user → refused, and the challenge is spent.
      const noUv = softAuthenticator(rp)
      const refusedUv = yield* postJsonAs(url, jar, "/settings/passkeys", { credential: noUv.create(options.json as Options, { userVerified: false }) })
      expect(refusedUv.status).toBe(400)
      expect(refusedUv.json.message).toContain("could not be verified")
      const again = yield* postJsonAs(url, jar, "/settings/passkeys", { credential: noUv.create(options.json as Options) })
      expect(again.status).toBe(400)
      expect(again.json.message).toContain("expired")

      // Another origin in client data → refused.
      const other = softAuthenticator({ ...rp, origin: "https://evil.example" })
      const options2 = yield* postJsonAs(url, jar, "/settings/passkeys/options", { name: "Evil" })
      expect((yield* postJsonAs(url, jar, "/settings/passkeys", { credential: other.create(options2.json as Options) })).status).toBe(400)

      // Options of one session cannot be completed by another.
      const second = yield* signedIn(url)
      const options3 = yield* postJsonAs(url, jar, "/settings/passkeys/options", { name: "Stolen" })
      const stolen = yield* postJsonAs(url, second, "/settings/passkeys", { credential: softAuthenticator(rp).create(options3.json as Options) })
      expect(stolen.status).toBe(400)
      expect(stolen.json.message).toContain("another sign-in")

      // The good one.
      const laptop = softAuthenticator(rp)
      const added = yield* register(url, jar, laptop)
      expect(added.status).toBe(201)
      expect(typeof added.json.id).toBe("number")
      const page = yield* getPage(url, jar, "/settings/passkeys")
      expect(page.html).toContain("<th scope=\"row\">Laptop</th>")
      // The same authenticator again: its credential is already known (and excluded in the options).
      const options4 = yield* postJsonAs(url, jar, "/settings/passkeys/options", { name: "Twice" })
      expect((options4.json.excludeCredentials as Array<{ id: string }>).map((c) => c.id)).toEqual([laptop.credentialId])
      expect((yield* postJsonAs(url, jar, "/settings/passkeys", { credential: laptop.create(options4.json as Options) })).status).toBe(400)
      // Once the account has a passkey, its user handle is the one every later passkey gets.
      const options5 = yield* postJsonAs(url, jar, "/settings/passkeys/options", { name: "Later" })
      expect((options5.json as Options).user.id).toBe((options4.json as Options).user.id)

      // Refusals before any ceremony.
      expect((yield* postJsonAs(url, jar, "/settings/passkeys/options", { name: "" })).status).toBe(400)
      expect((yield* postJsonAs(url, jar, "/settings/passkeys/options", { name: "x".repeat(65) })).status).toBe(400)
      expect((yield* postJsonAs(url, jar, "/settings/passkeys/options", { name: "ok" }, { origin: "https://evil.example" })).status).toBe(403)
      expect((yield* postJsonAs(url, new CookieJar(), "/settings/passkeys/options", { name: "ok" })).status).toBe(401)
      expect((yield* postJsonAs(url, jar, "/settings/passkeys", { credential: { id: "x" } })).status).toBe(400)
      expect((yield* postForm(`${url}/settings/passkeys`, { name: "x" }, { origin: url, ...jar.header() })).status).toBe(400)
    }))

  it.scopedLive("sign-in: a session and the redirect; every failed check is the same 401, counts toward the limit, starts no session", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({ BELAY_TRUST_PROXY: "true" })
      const url = app.url
      const jar = yield* signedIn(url)
      const laptop = softAuthenticator({ origin: url, rpId: "127.0.0.1" })
      expect((yield* register(url, jar, laptop)).status).toBe(201)

      const options = yield* signInOptions(url)
      expect(options).toMatchObject({ rpId: "127.0.0.1", userVerification: "required" })
      expect(options.allowCredentials ?? []).toEqual([])
      const ok = yield* passkeySignIn(url, laptop.get(options), "/settings/passkeys")
      expect(ok.status).toBe(200)
      expect(ok.json).toEqual({ redirect: "/settings/passkeys" })
      const session = new CookieJar()
      session.take(ok.res)
      const me = yield* fetchP(`${url}/api/auth/me`, { headers: session.header() })
      expect(yield* jsonOf(me)).toMatchObject({ account: { name: "alice" }, credential: "session" })
      // An unsafe next falls back to /.
      expect((yield* passkeySignIn(url, laptop.get(yield* signInOptions(url)), "//evil.example")).json).toEqual({ redirect: "/" })
      // The replayed response: its challenge is spent.
      expect((yield* passkeySignIn(url, laptop.get(options))).status).toBe(401)

      const failures = [
        ["a counter that went back", () => Effect.map(signInOptions(url), (o) => laptop.get(o, { counter: 1 }))],
        ["another origin", () => Effect.map(signInOptions(url), (o) => laptop.get(o, { origin: "https://evil.example" }))],
        ["another RP ID", () => Effect.map(signInOptions(url), (o) => laptop.get(o, { rpId: "evil.example" }))],
        ["no user verification", () => Effect.map(signInOptions(url), (o) => laptop.get(o, { userVerified: false }))],
        ["a create response", () => Effect.map(signInOptions(url), (o) => laptop.get(o, { type: "webauthn.create" }))],
        ["another user handle", () => Effect.map(signInOptions(url), (o) => laptop.get(o, { userHandle: "AAAA" }))],
        ["no user handle", () => Effect.map(signInOptions(url), (o) => laptop.get(o, { userHandle: null }))],
        ["an unknown credential", () => Effect.map(signInOptions(url), (o) => softAuthenticator({ origin: url, rpId: "127.0.0.1" }).get(o))],
        ["a challenge never issued", () => Effect.succeed(laptop.get({ challenge: "A".repeat(43) }))]
      ] as const
      for (const [name, credential] of failures) {
        const res = yield* passkeySignIn(url, yield* credential())
        expect({ name, status: res.status, body: res.json }).toEqual({
          name,
          status: 401,
          body: { error: "invalid_credentials", message: "That passkey was not accepted." }
        })
        expect(res.res.headers.get("set-cookie")).toBeNull()
      }
      // Seven of them named alice's credential, each from another address: three more make ten
      // failures for the account (the limit, docs/decisions/web.md), and then even a good passkey waits.
      for (let i = 0; i < 3; i++) {
        expect((yield* passkeySignIn(url, laptop.get(yield* signInOptions(url), { userVerified: false }))).status).toBe(401)
      }
      const limited = yield* passkeySignIn(url, laptop.get(yield* signInOptions(url)))
      expect(limited.status).toBe(429)
      expect(limited.res.headers.get("retry-after")).not.toBeNull()

      // Malformed and cross-origin requests.
      expect((yield* passkeySignIn(url, { id: "x" })).status).toBe(400)
      expect((yield* postJsonAs(url, new CookieJar(), "/login/passkey/options", {}, { origin: "https://evil.example" })).status).toBe(403)
      expect((yield* postJsonAs(url, new CookieJar(), "/login/passkey", { credential: {} }, { origin: "https://evil.example" })).status).toBe(403)
    }))

  it.scopedLive("the passkeys limit: refused when the ceremony starts, and still at its end when two raced", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({ BELAY_TRUST_PROXY: "true" })
      const url = app.url
      const jar = yield* signedIn(url)
      const rp = { origin: url, rpId: "127.0.0.1" }
      yield* app.service(AccountLimits).set(app.accountId, { passkeys: 1 })
      const count = () => Effect.map(app.sql<{ n: number }>`SELECT count(*)::int AS n FROM passkeys WHERE account_id = ${app.accountId}`.pipe(Effect.orDie), (r) => r[0]!.n)

      // Two ceremonies started while there was room: both get options; the first to finish is stored, the second
      // is refused by the final check, naming the limit.
      const first = yield* postJsonAs(url, jar, "/settings/passkeys/options", { name: "Laptop" })
      const second = yield* postJsonAs(url, jar, "/settings/passkeys/options", { name: "Phone" })
      expect([first.status, second.status]).toEqual([200, 200])
      const laptop = softAuthenticator(rp)
      expect((yield* postJsonAs(url, jar, "/settings/passkeys", { credential: laptop.create(first.json as Options) })).status).toBe(201)
      const raced = yield* postJsonAs(url, jar, "/settings/passkeys", { credential: softAuthenticator(rp).create(second.json as Options) })
      expect(raced.status).toBe(409)
      expect(raced.json).toMatchObject({ error: "quota_exceeded", limit: "passkeys", max: 1 })
      expect(yield* count()).toBe(1)

      // At the limit: the options are refused before any challenge, with the limit named for the member to read.
      const refused = yield* postJsonAs(url, jar, "/settings/passkeys/options", { name: "Tablet" })
      expect(refused.status).toBe(409)
      expect(refused.res.headers.get("cache-control")).toBe("no-store")
      expect(refused.json).toEqual({
        error: "quota_exceeded",
        message: `limit reached: at most 1 passkeys on this account (limit "passkeys"); remove one first or ask the operator`,
        limit: "passkeys",
        max: 1
      })
      expect(refused.json).not.toHaveProperty("challenge")
      expect(yield* count()).toBe(1)

      // Raised: the ceremony starts again.
      yield* app.service(AccountLimits).set(app.accountId, { passkeys: 2 })
      const again = yield* postJsonAs(url, jar, "/settings/passkeys/options", { name: "Tablet" })
      expect(again.status).toBe(200)
      expect((yield* postJsonAs(url, jar, "/settings/passkeys", { credential: softAuthenticator(rp).create(again.json as Options) })).status).toBe(201)
      expect(yield* count()).toBe(2)
    }))

  it.scopedLive("removing a passkey (CSRF form) stops it signing in; another member's id is not found", () =>
    Effect.gen(function*() {
      const app = yield* startOAuthApp({ BELAY_TRUST_PROXY: "true" })
      const url = app.url
      const jar = yield* signedIn(url)
      const laptop = softAuthenticator({ origin: url, rpId: "127.0.0.1" })
      const id = (yield* register(url, jar, laptop)).json.id as number

      const forged = yield* postSettings(url, jar, `/settings/passkeys/${id}/remove`, { csrf_token: "forged" })
      expect(forged.res.status).toBe(403)
      const missing = yield* postSettings(url, jar, `/settings/passkeys/${id + 1000}/remove`, {})
      expect(missing.location).toBe("/settings/passkeys?done=not-found")
      const bogus = yield* postSettings(url, jar, "/settings/passkeys/abc/remove", {})
      expect(bogus.location).toBe("/settings/passkeys?done=not-found")

      const removed = yield* postSettings(url, jar, `/settings/passkeys/${id}/remove`, {})
      expect(removed.res.status).toBe(303)
      expect(removed.location).toBe("/settings/passkeys?done=removed")
      const page = yield* getPage(url, jar, removed.location!)
      expect(page.html).toContain("The passkey was removed.")
      expect(page.html).not.toContain("<th scope=\"row\">Laptop</th>")
      expect((yield* passkeySignIn(url, laptop.get(yield* signInOptions(url)))).status).toBe(401)
    }))
})
