/**
 * A local Web Push service for tests (RFC 8030 §5): an HTTP server on 127.0.0.1 that accepts push messages at
 * `/push/<name>`, answers each path with the status the test set (201 by default), and keeps every request. It also
 * plays the browser: `subscription(name)` makes a PushSubscription with a fresh P-256 key pair and auth secret, and
 * `decrypt` opens an aes128gcm message with them, as RFC 8291 §3.4 and RFC 8188 §2 describe — written here on
 * node:crypto (ECDH, HKDF, AES-128-GCM), independent of the web-push package that encrypted it.
 *
 * Concurrency rule: the server's callbacks push into an unbounded queue; one fiber reads it.
 */
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import { Effect, Queue } from "effect"

export interface PushRequest {
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: Buffer
}

export interface BrowserKeys {
  readonly ecdh: Crypto.ECDH
  readonly publicKey: Buffer
  readonly auth: Buffer
}

/** RFC 8291 §3.4 and RFC 8188 §2: the plaintext of a one-record aes128gcm push message. */
export const decrypt = (keys: BrowserKeys, body: Buffer): string => {
  const salt = body.subarray(0, 16)
  const idlen = body[20]!
  const asPublic = body.subarray(21, 21 + idlen)
  const record = body.subarray(21 + idlen)
  const ecdhSecret = keys.ecdh.computeSecret(asPublic)
  const keyInfo = Buffer.concat([Buffer.from("WebPush: info\0"), keys.publicKey, asPublic])
  const ikm = Buffer.from(Crypto.hkdfSync("sha256", ecdhSecret, keys.auth, keyInfo, 32))
  const cek = Buffer.from(Crypto.hkdfSync("sha256", ikm, salt, Buffer.from("Content-Encoding: aes128gcm\0"), 16))
  const nonce = Buffer.from(Crypto.hkdfSync("sha256", ikm, salt, Buffer.from("Content-Encoding: nonce\0"), 12))
  const decipher = Crypto.createDecipheriv("aes-128-gcm", cek, nonce)
  decipher.setAuthTag(record.subarray(record.length - 16))
  const padded = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()])
  // The last record ends with the delimiter 0x02 and zero padding (RFC 8188 §2).
  let end = padded.length - 1
  while (end >= 0 && padded[end] === 0) end--
  if (padded[end] !== 2) throw new Error("not the last record of an aes128gcm message")
  return padded.subarray(0, end).toString("utf8")
}

/** RFC 8292 §3: the JWT and key of `Authorization: vapid t=…, k=…`, the signature checked with `k`. */
export const verifyVapid = (authorization: string) => {
  const match = /^vapid t=([^,]+), k=(.+)$/.exec(authorization)
  if (!match) throw new Error(`not a vapid Authorization: ${authorization}`)
  const [header, claims, signature] = match[1]!.split(".")
  const k = Buffer.from(match[2]!, "base64url")
  const key = Crypto.createPublicKey({
    key: { kty: "EC", crv: "P-256", x: k.subarray(1, 33).toString("base64url"), y: k.subarray(33, 65).toString("base64url") },
    format: "jwk"
  })
  const valid = Crypto.verify("sha256", Buffer.from(`${header}.${claims}`), { key, dsaEncoding: "ieee-p1363" }, Buffer.from(signature!, "base64url"))
  return { valid, key: match[2]!, claims: JSON.parse(Buffer.from(claims!, "base64url").toString()) as Record<string, unknown> }
}

export const make = Effect.gen(function*() {
  const requests = yield* Queue.unbounded<PushRequest>()
  const statuses = new Map<string, number>()
  const server = yield* Effect.acquireRelease(
    Effect.async<Http.Server>((resume) => {
      const s = Http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (c: Buffer) => chunks.push(c))
        req.on("end", () => {
          const path = req.url ?? "/"
          requests.unsafeOffer({ path, headers: req.headers, body: Buffer.concat(chunks) })
          res.writeHead(statuses.get(path) ?? 201).end()
        })
      })
      s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
    }),
    (s) =>
      Effect.async<void>((resume) => {
        s.close(() => resume(Effect.void))
        s.closeAllConnections()
      })
  )
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  const base = `http://127.0.0.1:${port}`

  /** A browser's PushSubscription at `/push/<name>`, and the keys that open its messages. */
  const subscription = (name: string) => {
    const ecdh = Crypto.createECDH("prime256v1")
    ecdh.generateKeys()
    const keys: BrowserKeys = { ecdh, publicKey: ecdh.getPublicKey(), auth: Crypto.randomBytes(16) }
    return {
      json: {
        endpoint: `${base}/push/${name}`,
        expirationTime: null,
        keys: { p256dh: keys.publicKey.toString("base64url"), auth: keys.auth.toString("base64url") }
      },
      keys,
      path: `/push/${name}`
    }
  }

  return {
    base,
    subscription,
    /** The next push message received, within 10 s. */
    next: Queue.take(requests).pipe(Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("no push arrived") }), Effect.orDie),
    answer: (path: string, status: number) => {
      statuses.set(path, status)
    }
  } as const
})
