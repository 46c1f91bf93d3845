/**
 * The `uploads` limit through the admin commands (docs/contract.md "Account limits"): `belay account limits NAME
 * --uploads N` reads as an override in MiB, `belay account show` counts what the account's files hold (a part of a MiB
 * as one) beside the limit and where it comes from, and the hosted default is 256 MiB.
 */
import { randomBytes } from "node:crypto"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Option, Stream } from "effect"
import { makeAccountLimitsAdmin } from "../../src/admin/AccountLimitsAdmin.js"
import { limitsRequest, showLines } from "../../src/cli/AccountLimitsCommand.js"
import { Accounts } from "../../src/services/identity/Accounts.js"
import { Uploads } from "../../src/services/uploads/Uploads.js"
import { describeMode, settingsFrom } from "../support/TestDatabase.js"
import { TestServicesLive } from "../support/TestServices.js"

describe("the uploads limit in the CLI's arguments", () => {
  layer(TestServicesLive(), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(`--uploads and account show, on ${describeMode}`, () =>
      Effect.gen(function*() {
        expect(limitsRequest("bob", new Map([["uploads", "512"]]))).toEqual({
          request: { _tag: "AccountLimits", name: "bob", limits: { uploads: 512 } }
        })
        expect(limitsRequest("bob", new Map([["uploads", "lots"]]))).toHaveProperty("usage")
        // Past the request's bounds (0 to 1,000,000): refused before it is sent, with the bound named.
        const past = limitsRequest("bob", new Map([["uploads", "2000000"]]))
        expect(past).toEqual({ usage: "--uploads must be a whole number from 0 to 1000000, unlimited or default, got 2000000" })

        const account = yield* (yield* Accounts).create("sizer", "a long password").pipe(Effect.orDie)
        const admin = yield* makeAccountLimitsAdmin
        const before = yield* admin.show("sizer")
        expect(before.limits.uploads).toEqual({ max: null, source: "none", used: 0 })
        const bytes = randomBytes(1024 * 1024 + 1)
        yield* (yield* Uploads).store({ accountId: account.id, name: "a.bin", contentType: undefined, declaredSize: bytes.length }, Stream.make(bytes))
        const shown = yield* admin.set({ _tag: "AccountLimits", name: "sizer", limits: { uploads: 3 } })
        expect(shown.limits.uploads).toEqual({ max: 3, source: "override", used: 2 })
        expect(showLines(shown).split("\n")).toContain("uploads\t2 of 3 MiB\toverride")
      }))
  })

  it.effect("hosted: 256 MiB unless set; `unlimited` lifts it", () =>
    Effect.gen(function*() {
      const hosted = { BELAY_HOSTED: "true", PUBLIC_BASE_URL: "https://belay.example", BELAY_SERVER_NAME: "b1" }
      const settings = yield* settingsFrom(hosted)
      expect(settings.accountMaxUploadMib).toEqual(Option.some(256))
      expect((yield* settingsFrom({ ...hosted, BELAY_ACCOUNT_MAX_UPLOAD_MIB: "unlimited" })).accountMaxUploadMib._tag).toBe("None")
      expect((yield* settingsFrom({})).accountMaxUploadMib._tag).toBe("None")
      expect((yield* settingsFrom({})).uploadMaxBytes).toBe(25 * 1024 * 1024)
      const bad = yield* Effect.exit(settingsFrom({ BELAY_UPLOAD_MAX_BYTES: "0" }))
      expect(bad._tag).toBe("Failure")
    }))
})
