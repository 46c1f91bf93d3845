// SecretBox's keys derived for other uses (the cluster's direct channel): the same on every node given the same
// BELAY_SECRET_KEY, whichever way it is written, and different for another purpose or another key.
import * as Crypto from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { appConfigFromMap } from "../../../src/services/AppConfig.js"
import { SecretBox } from "../../../src/services/crypto/SecretBox.js"

const boxOf = (secretKey: string) =>
  Effect.provide(SecretBox, SecretBox.Default.pipe(Layer.provide(appConfigFromMap({ BELAY_SECRET_KEY: secretKey })))).pipe(
    Effect.orDie
  )

describe("SecretBox.derive", () => {
  it.effect("one key per purpose, the same from the same secret in base64 or hex", () =>
    Effect.gen(function*() {
      const secret = Crypto.randomBytes(32)
      const base64 = yield* boxOf(secret.toString("base64"))
      const hex = yield* boxOf(secret.toString("hex"))
      const other = yield* boxOf(Crypto.randomBytes(32).toString("base64"))
      const key = base64.derive("cluster-direct-channel")
      expect(key.length).toBe(32)
      expect(hex.derive("cluster-direct-channel").equals(key)).toBe(true)
      expect(base64.derive("another-use").equals(key)).toBe(false)
      expect(other.derive("cluster-direct-channel").equals(key)).toBe(false)
      // Not the secret itself: a derived key given away does not open the stored secrets.
      expect(key.equals(secret)).toBe(false)
    }))
})
