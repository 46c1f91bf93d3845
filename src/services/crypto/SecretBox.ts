/**
 * SecretBox owns encryption at rest of secrets Belay must be able to read back:
 * upstream server and SASL passwords, stored channel keys, FiSH keys, a cluster's VAPID private key.
 * AES-256-GCM with a random 96-bit nonce per value; the column's purpose is bound as
 * associated data so a ciphertext cannot be moved to another column and still open.
 *
 * The key comes from `BELAY_SECRET_KEY` (base64 or hex of 32 bytes) or is generated
 * once into `$BELAY_DATA_DIR/secret.key` (mode 0600). Stateless after construction.
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Effect, Option, Redacted } from "effect"
import { AppConfig } from "../AppConfig.js"

const VERSION = 1

export type SecretPurpose = "server-password" | "sasl-password" | "channel-key" | "e2e-key" | "vapid-private-key"

interface Sealer {
  readonly seal: (purpose: SecretPurpose, plaintext: string) => Buffer
  /** Throws (a defect where it is called) only if the key changed or the row was tampered with. */
  readonly open: (purpose: SecretPurpose, sealed: Uint8Array) => string
  /**
   * A 32-byte key for one other use of the same secret (HKDF-SHA256, `purpose` as its info), e.g. the cluster nodes'
   * direct channel, which every node with the same BELAY_SECRET_KEY derives alike and nothing else can.
   */
  readonly derive: (purpose: string) => Buffer
}

const makeSealer = (key: Buffer): Sealer => {
  if (key.length !== 32) throw new Error("secret key must be 32 bytes")
  return {
    derive: (purpose) => Buffer.from(Crypto.hkdfSync("sha256", key, Buffer.alloc(0), `belay ${purpose}`, 32)),
    seal: (purpose, plaintext) => {
      const nonce = Crypto.randomBytes(12)
      const cipher = Crypto.createCipheriv("aes-256-gcm", key, nonce)
      cipher.setAAD(Buffer.from(purpose))
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
      return Buffer.concat([Buffer.from([VERSION]), nonce, body, cipher.getAuthTag()])
    },
    open: (purpose, sealed) => {
      const buf = Buffer.from(sealed)
      if (buf[0] !== VERSION || buf.length < 1 + 12 + 16) throw new Error("unknown secret format")
      const decipher = Crypto.createDecipheriv("aes-256-gcm", key, buf.subarray(1, 13))
      decipher.setAAD(Buffer.from(purpose))
      decipher.setAuthTag(buf.subarray(buf.length - 16))
      return Buffer.concat([decipher.update(buf.subarray(13, buf.length - 16)), decipher.final()]).toString("utf8")
    }
  }
}

const decodeKey = (raw: string): Buffer | undefined => {
  const trimmed = raw.trim()
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Buffer.from(trimmed, "hex")
  const b64 = Buffer.from(trimmed, "base64")
  return b64.length === 32 ? b64 : undefined
}

export class SecretBox extends Effect.Service<SecretBox>()("belay/SecretBox", {
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    if (Option.isSome(config.secretKey)) {
      const key = decodeKey(Redacted.value(config.secretKey.value))
      if (!key) return yield* Effect.dieMessage("BELAY_SECRET_KEY must be 32 bytes in base64 or hex")
      return makeSealer(key)
    }
    const file = Path.join(config.dataDir, "secret.key")
    const key = yield* Effect.sync(() => {
      Fs.mkdirSync(config.dataDir, { recursive: true, mode: 0o700 })
      try {
        // "wx": never overwrite an existing key, or every stored secret becomes unreadable
        Fs.writeFileSync(file, Crypto.randomBytes(32).toString("base64") + "\n", { flag: "wx", mode: 0o600 })
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
      }
      return decodeKey(Fs.readFileSync(file, "utf8"))
    })
    if (!key) return yield* Effect.dieMessage(`${file} does not hold a 32-byte base64 key`)
    return makeSealer(key)
  })
}) {}
