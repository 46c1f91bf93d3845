/**
 * A software WebAuthn authenticator for HTTP tests: one ES256 (P-256) credential, built the
 * way W3C WebAuthn Level 3 lays the bytes out — authenticator data (§6.1), the "none"
 * attestation object (§6.5, §8.7) with its COSE key (RFC 9052/9053), client data (§5.8.1)
 * and an assertion signature over authData ‖ SHA-256(clientDataJSON) (§6.3.3) — so the
 * server's verification runs exactly as it does for a browser. Every knob a test needs to
 * make a response wrong (origin, UV flag, counter, user handle, type) is an override.
 * Mutable counter; one instance per test.
 */
import * as Crypto from "node:crypto"

// --- a minimal CBOR encoder (RFC 8949): unsigned and negative integers, byte and text strings, maps

type Cbor = number | string | Uint8Array | ReadonlyArray<readonly [Cbor, Cbor]>

const head = (major: number, value: number): Buffer => {
  if (value < 24) return Buffer.from([(major << 5) | value])
  if (value < 0x100) return Buffer.from([(major << 5) | 24, value])
  if (value < 0x10000) return Buffer.from([(major << 5) | 25, value >> 8, value & 0xff])
  const b = Buffer.alloc(5)
  b[0] = (major << 5) | 26
  b.writeUInt32BE(value, 1)
  return b
}

const cbor = (value: Cbor): Buffer => {
  if (typeof value === "number") return value >= 0 ? head(0, value) : head(1, -1 - value)
  if (typeof value === "string") {
    const bytes = Buffer.from(value, "utf8")
    return Buffer.concat([head(3, bytes.length), bytes])
  }
  if (value instanceof Uint8Array) return Buffer.concat([head(2, value.length), Buffer.from(value)])
  const pairs = value as ReadonlyArray<readonly [Cbor, Cbor]>
  return Buffer.concat([head(5, pairs.length), ...pairs.flatMap(([k, v]) => [cbor(k), cbor(v)])])
}

const b64url = (bytes: Uint8Array | Buffer) => Buffer.from(bytes).toString("base64url")

export interface CeremonyOverrides {
  /** The origin the "browser" puts in client data. */
  readonly origin?: string
  /** The RP ID hashed into authenticator data. */
  readonly rpId?: string
  /** User verified (the UV flag); default true. */
  readonly userVerified?: boolean
  /** The signature counter to report; default: one more than last time. */
  readonly counter?: number
  /** The user handle of an assertion; default the one given at creation. */
  readonly userHandle?: string | null
  readonly type?: string
}

export const softAuthenticator = (defaults: { readonly origin: string; readonly rpId: string }) => {
  const { privateKey, publicKey } = Crypto.generateKeyPairSync("ec", { namedCurve: "P-256" })
  const jwk = publicKey.export({ format: "jwk" })
  const credentialId = Crypto.randomBytes(16)
  let counter = 0
  let userHandle: string | undefined

  const clientData = (type: string, challenge: string, o: CeremonyOverrides) =>
    Buffer.from(JSON.stringify({ type: o.type ?? type, challenge, origin: o.origin ?? defaults.origin, crossOrigin: false }))

  const authData = (o: CeremonyOverrides, attested?: Buffer) => {
    const rpIdHash = Crypto.createHash("sha256").update(o.rpId ?? defaults.rpId).digest()
    const flags = 0x01 | ((o.userVerified ?? true) ? 0x04 : 0) | (attested === undefined ? 0 : 0x40)
    counter = o.counter ?? counter + 1
    const count = Buffer.alloc(4)
    count.writeUInt32BE(counter)
    return Buffer.concat([rpIdHash, Buffer.from([flags]), count, ...(attested === undefined ? [] : [attested])])
  }

  const coseKey = cbor([
    [1, 2], // kty: EC2
    [3, -7], // alg: ES256
    [-1, 1], // crv: P-256
    [-2, Buffer.from(jwk.x!, "base64url")],
    [-3, Buffer.from(jwk.y!, "base64url")]
  ])

  return {
    credentialId: b64url(credentialId),
    get counter() {
      return counter
    },

    /** `navigator.credentials.create()` for options `{challenge, user: {id}}`, as JSON. */
    create(options: { readonly challenge: string; readonly user: { readonly id: string } }, o: CeremonyOverrides = {}) {
      userHandle = options.user.id
      const length = Buffer.alloc(2)
      length.writeUInt16BE(credentialId.length)
      const attested = Buffer.concat([Buffer.alloc(16), length, credentialId, coseKey])
      const attestationObject = cbor([["fmt", "none"], ["attStmt", []], ["authData", authData(o, attested)]])
      return {
        id: b64url(credentialId),
        rawId: b64url(credentialId),
        type: "public-key",
        response: {
          clientDataJSON: b64url(clientData("webauthn.create", options.challenge, o)),
          attestationObject: b64url(attestationObject),
          transports: ["internal"]
        },
        authenticatorAttachment: "platform",
        clientExtensionResults: {}
      }
    },

    /** `navigator.credentials.get()` for options `{challenge}`, as JSON. */
    get(options: { readonly challenge: string }, o: CeremonyOverrides = {}) {
      const data = authData(o)
      const client = clientData("webauthn.get", options.challenge, o)
      const signature = Crypto.sign("sha256", Buffer.concat([data, Crypto.createHash("sha256").update(client).digest()]), privateKey)
      const handle = o.userHandle === undefined ? userHandle : o.userHandle
      return {
        id: b64url(credentialId),
        rawId: b64url(credentialId),
        type: "public-key",
        response: {
          clientDataJSON: b64url(client),
          authenticatorData: b64url(data),
          signature: b64url(signature),
          ...(handle === null || handle === undefined ? {} : { userHandle: handle })
        },
        authenticatorAttachment: "platform",
        clientExtensionResults: {}
      }
    }
  }
}
